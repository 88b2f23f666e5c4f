#!/usr/bin/env python3
"""The HTML report shows the very figures `analyze --json` and `scaling` print.

For each input (the shipped sample, a study .ssrun, a study .db)
this runs the command a user would run and `scalescope report` on the same
input, takes the data the page embeds (<script id="scalescope-data">), and
compares them figure by figure: findings, the per-rank breakdown, idle time,
iterations and stragglers (each the very table `analyze --format json` prints,
cell by cell, and the analysis' figures; the boxplot's median against the
steady median), top kernels and
copies of all ranks, host threads by CPU time, NCCL collectives by operation and message size and stragglers for a run; every row of the scaling, break-even and
comparison tables for a sweep. Any figure the page computed differently fails.

Usage: check_page_data.py SCALESCOPE SOURCE_DIR WORK_DIR [--perturb]
--perturb changes one figure of each page before comparing and passes only
when exactly those are caught (ctest `page_data_detects_a_difference`).
"""
import html
import json
import math
import pathlib
import re
import subprocess
import sys

FAILURES: list[str] = []
COMPARED = [0]
PERTURBED = [0]  # figures changed by --perturb


def run(*args: str) -> str:
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_page_data: {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def page_data(scalescope: str, inputs: list[str], out: pathlib.Path, extra: list[str]) -> dict:
    run(scalescope, "report", *inputs, "-o", str(out), "--quiet", *extra)
    text = out.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="scalescope-data">(.*?)</script>', text, re.S)
    if not m:
        sys.exit(f"check_page_data: {out}: no embedded data")
    return json.loads(m.group(1))


def same(page, cli, what: str, rel: float = 1e-12) -> None:
    """Numbers equal up to the JSON round trip; None (NaN/inf on the page) matches a non-finite or null."""
    COMPARED[0] += 1
    if isinstance(cli, (bool, str, list, dict)) or isinstance(page, (bool, str, list, dict)):
        ok = page == cli
    elif cli is None or (isinstance(cli, float) and not math.isfinite(cli)):
        ok = page is None
    elif page is None:
        ok = False
    else:
        ok = math.isclose(float(page), float(cli), rel_tol=rel, abs_tol=1e-12)
    if not ok:
        FAILURES.append(f"{what}: page {page!r}, command {cli!r}")


def blocks(doc: dict, section_prefix: str) -> list[dict]:
    out = []
    for s in doc["sections"]:
        if s["title"].startswith(section_prefix):
            out.extend(s["blocks"])
    return out


def table(bs: list[dict], title_prefix: str) -> dict | None:
    found = [b for b in bs if b.get("type") == "table" and b["title"].startswith(title_prefix)]
    return found[0] if found else None


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, R's type 7)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def check_run(name: str, doc: dict, cli: dict, cli_tables: dict, perturb: bool) -> None:
    analysis, findings = cli["analysis"], cli["findings"]
    ranks = analysis["ranks"]
    run_blocks = blocks(doc, "Run: ")
    if not run_blocks:
        FAILURES.append(f"{name}: the page has no run section")
        return
    ms = 1e6
    # Findings: the page's first section, every field as the advisor gave it.
    page_findings = [b for s in doc["sections"] if s["title"] == "Advisor findings" for b in s["blocks"]][0]["items"]
    if perturb and page_findings:
        page_findings[0]["saving_fraction"] += 1e-6
        PERTURBED[0] += 1
    same(len(page_findings), len(findings), f"{name}: number of findings")
    by_id = {f["id"]: f for f in page_findings}
    for f in findings:
        p = by_id.get(f["id"])
        if p is None:
            FAILURES.append(f"{name}: finding {f['id']} missing from the page")
            continue
        for key in ("title", "severity", "evidence", "saving_method", "fix"):
            same(p[key], f[key], f"{name}: finding {f['id']} {key}")
        same(p["saving_fraction"], f["saving_fraction"], f"{name}: finding {f['id']} saving")
        same(p["ranks"], f["ranks"], f"{name}: finding {f['id']} ranks")
        same(len(p["figures"]), len(f["figures"]), f"{name}: finding {f['id']} figures")
        for pf, cf in zip(p["figures"], f["figures"]):
            same(pf["name"], cf["name"], f"{name}: finding {f['id']} figure name")
            same(pf["value"], cf["value"], f"{name}: finding {f['id']} {cf['name']}")
    # The tables `analyze` prints and the page shows (report/run_tables.hpp):
    # every cell of the page's table equals the command's, and the figures
    # are the analysis' own.
    printed = {t["id"]: t for t in cli_tables["tables"]}

    def shared(title: str, table_id: str) -> tuple[dict | None, list[dict]]:
        """The page's table and its rows as objects keyed by column, checked cell by cell against `analyze`'s."""
        t = table(run_blocks, title)
        c = printed.get(table_id)
        if t is None:
            if c and c["rows"]:
                FAILURES.append(f"{name}: {title!r} is printed by analyze but not on the page")
            return None, []
        if c is None:
            FAILURES.append(f"{name}: {table_id} is on the page but analyze does not print it")
            return t, []
        same(t["title"], c["title"], f"{name}: {table_id} title")
        same(t["columns"], c["columns"], f"{name}: {table_id} columns")
        same(len(t["rows"]), len(c["rows"]), f"{name}: {table_id} rows")
        same(t.get("notes", []), c.get("notes", []), f"{name}: {table_id} notes")
        for i, (prow, crow) in enumerate(zip(t["rows"], c["rows"])):
            for k, col in enumerate(t["columns"]):
                v = crow[col]
                same(prow[k], ("yes" if v else "no") if isinstance(v, bool) else v, f"{name}: {table_id} row {i} {col}")
        return t, [dict(zip(t["columns"], row)) for row in t["rows"]]

    # Breakdown per rank: the table and the stacked chart.
    t, rows = shared("Time breakdown per rank", "time_breakdown_per_rank")
    with_breakdown = [r for r in ranks if r["breakdown"]["availability"]["available"]]
    same(len(rows), len(with_breakdown), f"{name}: breakdown rows")
    chart = next((b for b in run_blocks if b.get("title") == "Per-rank breakdown"), None)
    for i, (row, r) in enumerate(zip(rows, with_breakdown)):
        b = r["breakdown"]
        what = f"{name}: breakdown {r['label']}"
        same(row["rank"], r["rank"], what + " rank")
        for col, key in (("wall_ns", "wall_ns"), ("compute_ns", "compute_ns"),
                         ("exposed_comm_ns", "exposed_communication_ns"), ("copies_sets_ns", "copy_ns"),
                         ("idle_ns", "idle_ns"), ("comm_overlapped_ns", "overlap_ns")):
            same(row[col], b[key], f"{what} {key}")
        same(row["comm_overlap_pct"], 100 * b["overlap_fraction"], what + " overlap")
        if chart:
            same(chart["categories"][i], r["label"], what + " chart label")
            for series, key in zip(chart["series"], ("compute_ns", "exposed_communication_ns", "copy_ns", "idle_ns")):
                same(series["values"][i], b[key] / ms, f"{what} chart {key}")
    # GPU idle time inside the iterations: host wait, kernel wait, other.
    t, rows = shared("GPU idle time inside the iterations", "idle_time_breakdown")
    with_idle = [r for r in ranks if r["idle_breakdown"]["availability"]["available"]]
    same(len(rows), len(with_idle), f"{name}: idle breakdown rows")
    for row, r in zip(rows, with_idle):
        b = r["idle_breakdown"]
        what = f"{name}: idle breakdown {r['label']}"
        same(row["rank"], r["rank"], what + " rank")
        for key in ("idle_ns", "host_wait_ns", "kernel_wait_ns", "other_ns"):
            same(row[key], b[key], f"{what} {key}")
    # Iterations per rank, and the boxplot's median against the steady median.
    t, rows = shared("Iterations", "iterations")
    with_its = [r for r in ranks if r["iterations"]["availability"]["available"]]
    same(len(rows), len(with_its), f"{name}: iteration rows")
    box = next((b for b in run_blocks if b.get("kind") == "boxplot"), None)
    box_i = 0
    for row, r in zip(rows, with_its):
        it = r["iterations"]
        what = f"{name}: iterations {r['label']}"
        same(row["rank"], r["rank"], what + " rank")
        for col, key in (("count", "count"), ("warmup", "warmup_count"), ("median_ns", "median_ns"),
                         ("p95_ns", "p95_ns"), ("cv", "cv"), ("steady_median_ns", "steady_median_ns"),
                         ("steady_p95_ns", "steady_p95_ns"), ("steady_cv", "steady_cv"), ("source", "source")):
            same(row[col], it[key], f"{what} {key}")
        steady = sorted((x["end_ns"] - x["start_ns"]) / ms for x in it["iterations"] if not x["warmup"])
        if steady and box:
            lo, q1, med, q3, hi = box["boxes"][box_i]
            same(box["categories"][box_i], r["label"], what + " box label")
            # One median: the page's box and the analysis agree (one quantile).
            same(med, it["steady_median_ns"] / ms, what + " box median = steady median", rel=1e-9)
            same(q1, quantile(steady, 0.25), what + " box q1", rel=1e-9)
            same(q3, quantile(steady, 0.75), what + " box q3", rel=1e-9)
            box_i += 1
    # Top kernels of all ranks: `analyze`'s table, each row the sum of the ranks' top kernels by name.
    sums: dict[str, list] = {}
    for r in ranks:
        for k in r["top_kernels"]:
            s = sums.setdefault(k["name"], [k["class"], k["precision"], 0, 0])
            s[2] += k["count"]
            s[3] += k["total_ns"]
    t, rows = shared("Top kernels (all ranks", "top_kernels_all_ranks")
    shown_names = set()
    for row in rows:
        s = sums.get(row["name"])
        if s is None:
            FAILURES.append(f"{name}: kernel {row['name']!r} is on the page but in no rank's top kernels")
            continue
        what = f"{name}: kernel {row['short_name'][:40]}"
        if row["short_name"] in shown_names:
            FAILURES.append(f"{what}: two rows show this short name")
        shown_names.add(row["short_name"])
        same(t.get("hidden"), [t["columns"].index("name")], what + " full name hidden")
        same(row["class"], s[0], what + " class")
        same(row["precision"], s[1], what + " precision")
        same(row["count"], s[2], what + " calls")
        same(row["total_ns"], s[3], what + " total")
    if sums and not rows:
        FAILURES.append(f"{name}: no top-kernel table on the page")
    # Copies of all ranks: `analyze`'s table, summed over ranks by kind and memory kinds.
    copies: dict[str, list] = {}
    for r in ranks:
        if not r["copies"]["availability"]["available"]:
            continue
        for g in r["copies"]["groups"]:
            c = copies.setdefault(f"{g['kind']} {g['src_kind']} -> {g['dst_kind']}", [0, 0, 0])
            c[0] += g["count"]
            c[1] += g["bytes"]
            c[2] += g["time_ns"]
    t, rows = shared("Copies by kind and memory kind (all ranks)", "copies_all_ranks")
    for row in rows:
        if row["copy"] == "memset":
            continue
        c = copies.get(row["copy"])
        if c is None:
            FAILURES.append(f"{name}: copy {row['copy']!r} on the page but not in the analysis")
            continue
        same(row["count"], c[0], f"{name}: copy {row['copy']} count")
        same(row["bytes"], c[1], f"{name}: copy {row['copy']} bytes")
        same(row["time_ns"], c[2], f"{name}: copy {row['copy']} time")
    # Host threads by CPU time (traces with host samples): `analyze`'s table.
    shared("Host threads by CPU time", "host_threads_by_cpu_time")
    # NCCL collectives by operation and message size: the analysis' table, and
    # each rank's time per operation in the chart.
    nccl = analysis["nccl_ops"]
    t, rows = shared("NCCL collectives by operation and message size", "nccl_collectives_by_operation_and_message_size")
    same(len(rows), len(nccl["groups"]), f"{name}: NCCL rows")
    for row, g in zip(rows, nccl["groups"]):
        what = f"{name}: NCCL {g['operation']} {g['message_bytes']} bytes"
        same(row["operation"], g["operation"], what + " operation")
        same(row["message_bytes"], g["message_bytes"] if g["message_bytes"] else None, what + " message bytes")
        for key in ("count", "time_ns", "mean_ns", "algorithm_gbps", "bus_gbps"):
            same(row[key], g[key], f"{what} {key}")
    chart = next((b for b in run_blocks if b.get("title") == "NCCL time per rank by operation"), None)
    if nccl["groups"] and not chart:
        FAILURES.append(f"{name}: no NCCL chart on the page")
    for series in (chart["series"] if chart else []):
        for i, r in enumerate(ranks):
            ns = sum(g["time_ns"] for g in r["nccl_ops"]["groups"] if g["operation"] == series["name"])
            same(series["values"][i], ns / ms, f"{name}: NCCL {series['name']} time of {r['label']}")
    # Stragglers (runs of several ranks).
    s = analysis["stragglers"]
    if len(ranks) > 1 and s["availability"]["available"]:
        t, rows = shared("Stragglers", "stragglers")
        same(len(rows), len(s["ranks"]), f"{name}: straggler rows")
        for row, r in zip(rows, s["ranks"]):
            what = f"{name}: lateness of rank {r['rank']}"
            same(row["rank"], r["rank"], what)
            for key in ("total_late_ns", "late_per_iteration_ns", "max_late_ns", "times_last", "steady_late_ns",
                        "steady_late_per_iteration_ns", "steady_times_last"):
                same(row[key], r[key], f"{what} {key}")
    # The run's subtitle counts the analysis' ranks (launchers left out).
    subtitle = next(s["subtitle"] for s in doc["sections"] if s["title"].startswith("Run: "))
    same(int(subtitle.split(" rank(s)")[0]), len(ranks), f"{name}: ranks in the subtitle")


def check_sweep(name: str, doc: dict, cli: dict, perturb: bool) -> None:
    study = cli["scaling"]  # `scaling --format json`: the typed study
    rows_of = {c["label"]: c["scaling"]["rows"] for c in study["configs"] if c["scaling"]}
    sweep_blocks = blocks(doc, "Sweep: ")
    compared = 0
    for page in (b for b in sweep_blocks if b.get("type") == "table" and b["title"].startswith("Scaling: ")):
        label = page["title"][len("Scaling: "):]
        rows = rows_of.get(label, [])
        same(len(page["rows"]), len(rows), f"{name}: rows of {label}")
        for i, (p, c) in enumerate(zip(page["rows"], rows)):
            if perturb and compared == 0:
                p[6] = (p[6] or 0) + 1e-6
                PERTURBED[0] += 1
            what = f"{name}: {label} {c['gpus']} GPUs"
            same(p[0], c["gpus"], what)
            same(p[1], c["time"]["n"], what + " runs")
            values = {"median": c["time"]["median"], "ci_low": c["time"]["ci_low"], "ci_high": c["time"]["ci_high"],
                      "speedup": c["speedup"], "efficiency": c["efficiency"], "efficiency_low": c["efficiency_ci"][0],
                      "efficiency_high": c["efficiency_ci"][1], "gpu_hours": c["gpu_hours"]}
            for k, key in enumerate(values, start=2):
                same(p[k], values[key], f"{what} {key}")
            same(p[10] == "yes", bool(c["pareto"]), what + " Pareto")
            compared += 1
    same(compared, sum(len(r) for r in rows_of.values()), f"{name}: every row of `scaling` is on the page")
    # Break-even points: the notes of each page table against the study's.
    for label in rows_of:
        be = next(c["scaling"]["break_even"] for c in study["configs"] if c["label"] == label)
        page = table(sweep_blocks, f"Scaling: {label}")
        notes = " ".join(page.get("notes", [])) if page else ""
        for rule, key, pattern in (("(a)", "by_threshold", r"Break-even by the E' rule [^:]*: (\d+) GPUs"),
                                   ("(b)", "by_knee", r"Break-even by the Pareto knee .*?: (\d+) GPUs\.")):
            m = re.search(pattern, notes)
            same(int(m.group(1)) if m else None, be[key], f"{name}: break-even {rule} of {label}")
    cmp_cli = study["comparisons"]
    cmp_page = table(sweep_blocks, "Configurations compared")
    if cmp_cli:
        if not cmp_page:
            FAILURES.append(f"{name}: the comparisons are not on the page")
            return
        same(len(cmp_page["rows"]), len(cmp_cli), f"{name}: comparison rows")
        columns = ("key", "a", "b", "others", "gpus", "n_a", "n_b", "median_a", "median_b", "ratio", "ratio_low",
                   "ratio_high", "welch_p", "mann_whitney_p", "differs")
        for i, (p, x) in enumerate(zip(cmp_page["rows"], cmp_cli)):
            r = x["result"]
            c = {**{k: x[k] for k in ("key", "a", "b", "others", "gpus")}, **r,
                 "ratio_low": r["ratio_ci"][0], "ratio_high": r["ratio_ci"][1]}
            for k, col in enumerate(columns):
                v = c[col]
                same(p[k], ("yes" if v else "no") if isinstance(v, bool) else v, f"{name}: comparison {i} {col}")


def main() -> int:
    scalescope, src, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    perturb = "--perturb" in sys.argv[4:]
    work.mkdir(parents=True, exist_ok=True)
    runs = [("sample", src / "examples/sample/kineto-sample.json.gz"),
            ("study run", src / "examples/h200/llm/traces/0004-g2-method_lora-r0.ssrun")]
    for name, path in runs:
        if not path.exists():
            print(f"check_page_data: {path}: missing (the inputs of this check ship with the source)")
            return 1
        cli = json.loads(run(scalescope, "analyze", str(path), "--json"))
        # --top: as many kernels as the page shows (its default).
        cli_tables = json.loads(run(scalescope, "analyze", str(path), "--format", "json", "--top", "20"))
        doc = page_data(scalescope, [str(path)], work / f"{name.replace(' ', '-')}.html", [])
        check_run(name, doc, cli, cli_tables, perturb)
    db = src / "examples/h200/llm.db"
    # The page draws the study with a prediction one doubling past the
    # largest measured count; `scaling --predict` that count gives the same study.
    largest = max(int(r["gpus"]) for r in
                  json.loads(run(scalescope, "scaling", str(db), "--format", "json"))["scaling"]["runs"])
    cli = json.loads(run(scalescope, "scaling", str(db), "--format", "json", "--predict", str(2 * largest)))
    doc = page_data(scalescope, [str(db)], work / "study-db.html", [])
    check_sweep("study db", doc, cli, perturb)
    for f in FAILURES[:40]:
        print(f)
    print(f"check_page_data: {COMPARED[0]} figures compared, {len(FAILURES)} differ")
    if COMPARED[0] < 50:
        print("check_page_data: too few figures compared to prove anything")
        return 1
    if perturb:  # passes when exactly the changed figures were caught
        print(f"check_page_data: {PERTURBED[0]} figure(s) changed on purpose")
        return 0 if PERTURBED[0] > 0 and len(FAILURES) == PERTURBED[0] else 1
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
