#!/usr/bin/env python3
"""Summary of cost_device.sh's measurements, with the method's own
noise beside every figure.

  cost_summary.py abba BLOCKS.jsonl       # in-process ABBA jobs of one workload
  cost_summary.py whole STEPS.jsonl WALL.jsonl PROC.jsonl
  cost_summary.py interleave STEPS.jsonl PROC.jsonl SKIP K EVERY [GAP]
  cost_summary.py --self-test

abba: per job (window_ab.py's blocks), the cost of an open window per pair,
100 * (on / off - 1), by two estimators of a block's step time: the block's
mean (its total time / steps) and the median of its steps (robust to one slow
step). Per job and estimator: the median over pairs, a 95 % percentile
bootstrap interval of that median (pairs resampled, 4000 times, fixed seed),
the sign-test interval, the range and the pairs' interquartile range; and the
ABBA quads (pairs 2k and 2k+1 together: off on on off, which cancels a linear
drift). A job named control* (no profiler: both blocks alike) gives the floor:
its interval is what "no cost" looks like with this method in this call.

whole: whole processes (window_ab.py --steps-only under each mode, the order
rotating per round). Per round, each mode against the uninjected process
(none) of the same round: the steady steps after the window (iterations 31
on, where a long job spends its time: the "between windows" cost), the
window's steps (10-29), all steps from 10 on, the start-up (launch to first
step), the exit (last step to the process's end) and the whole wall time.
Median over rounds, range, bootstrap interval over rounds. Self-measured
perturbation: the collector's figure (process summary) beside the same ratio
computed from the driver's own step times, and the same ratio in the
uninjected process (iterations 10-29 against 31 on with no profiler: what
the drift alone gives)."""
import json
import math
import random
import statistics
import sys

from window_ab_summary import sign_interval  # the same folder: one distribution-free median interval

SKIP, TRACED = 10, 20  # the default schedule: 10 warm-up iterations, 20 traced
INSIDE = range(SKIP, SKIP + TRACED)
OUTSIDE_FROM = SKIP + TRACED + 1  # iteration 30 is the transition (detach)


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def median_ci(values, resamples=4000, seed=1, level=0.95):
    """Percentile bootstrap interval of the median."""
    if len(values) < 3:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    lo = meds[int((1 - level) / 2 * resamples)]
    hi = meds[int((1 + level) / 2 * resamples) - 1]
    return (lo, hi)


def iqr(values):
    if len(values) < 4:
        return float("nan")
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def describe(values, unit="%"):
    """'+9.7 % (95 % CI +3.0 to +12.0; range -1.0 to +20.0; IQR 5.0; n 16)'."""
    if not values:
        return "n/a"
    med = statistics.median(values)
    lo, hi = median_ci(values)
    return (f"{med:+.1f} {unit} (95 % CI {lo:+.1f} to {hi:+.1f}; range {min(values):+.1f} to {max(values):+.1f}; "
            f"IQR {iqr(values):.1f}; n {len(values)})")


def block_time(block, estimator):
    if estimator == "mean":
        return block["ms_per_step"]
    return statistics.median(block["step_ms"])


def abba_pairs(rows):
    """{job: {pair: {on: block}}} for pairs with both blocks."""
    by = {}
    for r in rows:
        by.setdefault(r["job"], {}).setdefault(r["pair"], {})[bool(r["on"])] = r
    return {job: {p: b for p, b in pairs.items() if True in b and False in b} for job, pairs in by.items()}


def abba_costs(pairs, estimator):
    """Per-pair costs and per-quad costs (pairs 2k, 2k+1) in %."""
    costs = [100.0 * (block_time(b[True], estimator) / block_time(b[False], estimator) - 1)
             for _, b in sorted(pairs.items())]
    quads = []
    for p in sorted(pairs):
        if p % 2 == 0 and p + 1 in pairs:
            on = block_time(pairs[p][True], estimator) + block_time(pairs[p + 1][True], estimator)
            off = block_time(pairs[p][False], estimator) + block_time(pairs[p + 1][False], estimator)
            quads.append(100.0 * (on / off - 1))
    return costs, quads


def summarize_abba(rows):
    lines = []
    result = {}
    for job, pairs in abba_pairs(rows).items():
        if not pairs:
            continue
        offs = [b[False]["ms_per_step"] for b in pairs.values()]
        cpu = [1000.0 * (b[True]["cpu_seconds"] / b[True]["steps"] - b[False]["cpu_seconds"] / b[False]["steps"])
               for b in pairs.values()]
        result[job] = {}
        for est in ("mean", "median"):
            costs, quads = abba_costs(pairs, est)
            s = sign_interval(costs)
            result[job][est] = {"pairs": costs, "quads": quads, "median": statistics.median(costs),
                                "ci": median_ci(costs)}
            lines.append(f"{job} [{est} of block]: pairs {describe(costs)}; sign-test "
                         f"{'n/a' if s is None else f'{s[0]:+.1f} to {s[1]:+.1f}'}; quads {describe(quads)}")
        lines.append(f"{job}: off blocks {statistics.median(offs):.2f} ms/step ({min(offs):.2f}-{max(offs):.2f}); "
                     f"extra process CPU in on blocks {statistics.median(cpu):+.2f} ms/step; pairs (mean): "
                     + ", ".join(f"{c:+.1f}" for c in result[job]["mean"]["pairs"]))
    return lines, result


def step_median(steps, lo, hi=None):
    part = steps[lo:hi]
    return statistics.median(part) if part else float("nan")


def whole_rows(steps_path, wall_path, proc_path):
    """{(round, mode): row} with the driver's steps, the shell's wall clock and the collector's summary."""
    rows = {}
    for r in read_jsonl(steps_path):
        rows.setdefault((r["round"], r["job"]), {})["steps"] = r
    for r in read_jsonl(wall_path):
        rows.setdefault((r["round"], r["mode"]), {})["wall"] = r
    for r in read_jsonl(proc_path) if proc_path else []:
        rows.setdefault((r["round"], r["mode"]), {})["proc"] = r
    return rows


def whole_metrics(row):
    """The figures of one process, or None if it did not finish."""
    s, w = row.get("steps"), row.get("wall")
    if not s or not w or w.get("rc") != 0:
        return None
    t = s["step_ms"]
    m = {"outside": step_median(t, OUTSIDE_FROM), "inside": step_median(t, SKIP, SKIP + TRACED),
         "steady": step_median(t, SKIP), "startup": s["first_step_epoch"] - w["launch_epoch"],
         "exit": w["end_epoch"] - s["last_step_epoch"], "wall": w["end_epoch"] - w["launch_epoch"]}
    m["own_inside_vs_outside"] = 100.0 * (m["inside"] / m["outside"] - 1)
    p = row.get("proc") or {}
    samp = p.get("sampling") or {}
    if samp.get("perturbation_measured"):
        m["self_measured"] = samp["perturbation_pct"]
        m["self_ci"] = (samp.get("perturbation_ci_low_pct"), samp.get("perturbation_ci_high_pct"))
    for k in ("collector_cpu_ns", "host_sampler_cpu_ns", "nvml_cpu_ns"):
        if k in p:
            m[k] = p[k] / 1e9
    return m


def summarize_whole(rows):
    lines = []
    result = {}
    metrics = {k: whole_metrics(v) for k, v in rows.items()}
    rounds = sorted({r for r, _ in metrics})
    modes = []
    for _, mode in sorted(metrics, key=lambda k: k[1]):
        if mode not in modes:
            modes.append(mode)
    if "none" in modes:
        modes.remove("none")
        modes.insert(0, "none")
    for mode in modes:
        per = [metrics.get((r, mode)) for r in rounds]
        ok = [m for m in per if m]
        if not ok:
            lines.append(f"{mode}: no finished process")
            continue
        result[mode] = {}
        absolute = "; ".join(f"{k} {statistics.median([m[k] for m in ok]):.2f}"
                             for k in ("outside", "inside", "steady"))
        lines.append(f"{mode}: {len(ok)} processes; median ms/step {absolute}; start-up "
                     f"{statistics.median([m['startup'] for m in ok]):.1f} s, exit "
                     f"{statistics.median([m['exit'] for m in ok]):.1f} s, wall "
                     f"{statistics.median([m['wall'] for m in ok]):.1f} s; own inside/outside "
                     f"{describe([m['own_inside_vs_outside'] for m in ok])}")
        if mode != "none":
            for k in ("outside", "inside", "steady", "wall"):
                costs = []
                for r in rounds:
                    a, b = metrics.get((r, "none")), metrics.get((r, mode))
                    if a and b:
                        costs.append(100.0 * (b[k] / a[k] - 1))
                result[mode][k] = costs
                lines.append(f"  {mode} vs none, {k}: {describe(costs)}; rounds: "
                             + ", ".join(f"{c:+.1f}" for c in costs))
            extra = []
            for r in rounds:
                a, b = metrics.get((r, "none")), metrics.get((r, mode))
                if a and b:
                    extra.append(f"start-up {b['startup'] - a['startup']:+.1f} s exit {b['exit'] - a['exit']:+.1f} s")
            lines.append(f"  {mode} vs none, seconds per round: " + "; ".join(extra))
            selfs = [m["self_measured"] for m in ok if "self_measured" in m]
            if selfs:
                result[mode]["self"] = selfs
                lines.append(f"  {mode} self-measured (collector): {describe(selfs)}; each: " + ", ".join(
                    f"{m['self_measured']:+.1f} ({m['self_ci'][0]:+.1f}..{m['self_ci'][1]:+.1f})"
                    for m in ok if "self_measured" in m))
            cpu = [m["collector_cpu_ns"] for m in ok if "collector_cpu_ns" in m]
            if cpu:
                lines.append(f"  {mode} collector threads' CPU s: " + ", ".join(
                    f"{m['collector_cpu_ns']:.2f} (host {m.get('host_sampler_cpu_ns', 0):.2f}, "
                    f"nvml {m.get('nvml_cpu_ns', 0):.2f})" for m in ok if "collector_cpu_ns" in m))
    return lines, result


def paired_windows(steps, skip, k, every, gap=5):
    """Per-window costs in % (the window's median step against the median of up to k detached steps before and
    after it, the gap steps after each window left out), and the pooled cost (all window steps against all
    detached ones), from one process's step times."""
    n = len(steps)
    starts = list(range(skip, n - k + 1, every)) if every else [skip]
    inside = set()
    for s0 in starts:
        inside.update(range(s0, s0 + k))
    excluded = set(inside)
    for s0 in starts:
        excluded.update(range(s0 + k, min(s0 + k + gap, n)))
    outside = [i for i in range(skip, n) if i not in excluded]
    costs = []
    for w, s0 in enumerate(starts):
        lo = starts[w - 1] + k + gap if w > 0 else skip
        hi = starts[w + 1] if w + 1 < len(starts) else n
        before = [steps[i] for i in range(lo, s0) if i not in excluded][-k:]
        after = [steps[i] for i in range(s0 + k + gap, hi) if i not in excluded][:k]
        near = before + after
        if near:
            costs.append(100.0 * (statistics.median(steps[s0:s0 + k]) / statistics.median(near) - 1))
    pooled = (100.0 * (statistics.median([steps[i] for i in sorted(inside)]) /
                       statistics.median([steps[i] for i in outside]) - 1)) if outside else float("nan")
    return costs, pooled


def summarize_interleave(steps_rows, proc_rows, skip, k, every, gap=5):
    lines = []
    result = {}
    procs = {(r["round"], r["mode"]): r for r in proc_rows}
    for row in sorted(steps_rows, key=lambda r: (r["job"], r["round"])):
        costs, pooled = paired_windows(row["step_ms"], skip, k, every, gap)
        if not costs:
            continue
        med = statistics.median(costs)
        sgn = sign_interval(costs)
        entry = {"paired": med, "sign": sgn, "pooled": pooled, "windows": costs}
        text = (f"{row['job']} round {row['round']}: paired {med:+.1f} % (sign test "
                f"{'n/a' if sgn is None else f'{sgn[0]:+.1f} to {sgn[1]:+.1f}'}; {len(costs)} windows, range "
                f"{min(costs):+.1f} to {max(costs):+.1f}); pooled {pooled:+.1f} %")
        samp = (procs.get((row["round"], row["job"])) or {}).get("sampling") or {}
        if samp.get("perturbation_measured"):
            entry["collector"] = samp["perturbation_pct"]
            text += (f"; collector {samp['perturbation_pct']:+.1f} % ({samp.get('perturbation_ci_low_pct', 0):+.1f} "
                     f"to {samp.get('perturbation_ci_high_pct', 0):+.1f}; {samp.get('perturbation_method', 'pooled')}"
                     f", {samp.get('iterations_inside', '?')} inside, {samp.get('iterations_outside', '?')} outside)")
        lines.append(text)
        result.setdefault(row["job"], []).append(entry)
    for job, entries in sorted(result.items()):
        per = [e["paired"] for e in entries]
        every_window = [c for e in entries for c in e["windows"]]
        sgn = sign_interval(every_window)
        lines.append(f"{job}: {len(per)} processes, paired per process {describe(per)}; all "
                     f"{len(every_window)} windows together: median {statistics.median(every_window):+.1f} % (sign "
                     f"test {'n/a' if sgn is None else f'{sgn[0]:+.1f} to {sgn[1]:+.1f}'}); pooled per process "
                     + ", ".join(f"{e['pooled']:+.1f}" for e in entries))
    return lines, result


def self_test():
    # ABBA: a 10 % cost on the mean, a drifting job, one slow step per "off" block (the median ignores it).
    rows = []
    for pair in range(12):
        order = (False, True) if pair % 2 == 0 else (True, False)
        for k, on in enumerate(order):
            base = 20.0 * (1 + 0.01 * (2 * pair + k))
            steps = [base * (1.10 if on else 1.0)] * 15
            if not on:
                steps[3] = base * 4
            rows.append({"job": "default", "pair": pair, "on": on, "steps": 15, "step_ms": steps,
                         "ms_per_step": sum(steps) / 15, "cpu_seconds": 0.3})
            rows.append({"job": "control", "pair": pair, "on": on, "steps": 15, "step_ms": [base] * 15,
                         "ms_per_step": base, "cpu_seconds": 0.3})
    rows.append({"job": "default", "pair": 12, "on": True, "steps": 15, "step_ms": [1.0] * 15, "ms_per_step": 1.0,
                 "cpu_seconds": 0.1})  # unpaired: ignored
    lines, res = summarize_abba(rows)
    med = res["default"]["median"]
    assert len(med["pairs"]) == 12 and len(med["quads"]) == 6, med
    # The median estimator sees each pair's 10 % plus the drift between its two blocks (1 %, either sign);
    # the quads cancel the drift exactly.
    assert all(abs(q - 10.0) < 1e-9 for q in med["quads"]), med["quads"]
    assert 8.8 < med["median"] < 11.2, med
    assert res["default"]["mean"]["median"] < 0, res["default"]["mean"]  # the slow off step hides the cost
    assert abs(res["control"]["median"]["median"]) < 1.1, res["control"]
    lo, hi = median_ci([float(i) for i in range(20)])
    assert 5 <= lo < 9.5 < hi <= 14, (lo, hi)
    assert sign_interval([float(i) for i in range(10)])[:2] == (1.0, 8.0)
    # Whole processes: none 20 ms, default 22 ms inside its window and 20.2 ms outside, start-up +2 s.
    steps, wall, proc = [], [], []
    for rnd in range(5):
        for mode, inside, outside, extra in (("none", 20.0, 20.0, 0.0), ("default", 22.0, 20.2, 2.0)):
            t = [30.0] * SKIP + [inside] * TRACED + [25.0] + [outside] * 60
            steps.append({"round": rnd, "job": mode, "step_ms": t, "first_step_epoch": 100.0 + 10 + extra,
                          "last_step_epoch": 100.0 + 12 + extra})
            wall.append({"round": rnd, "mode": mode, "rc": 0, "launch_epoch": 100.0, "end_epoch": 113.0 + extra})
            if mode != "none":
                proc.append({"round": rnd, "mode": mode, "collector_cpu_ns": 2e9,
                             "sampling": {"perturbation_measured": True, "perturbation_pct": 9.0,
                                          "perturbation_ci_low_pct": 5.0, "perturbation_ci_high_pct": 12.0}})
    rows = {}
    for r in steps:
        rows.setdefault((r["round"], r["job"]), {})["steps"] = r
    for r in wall:
        rows.setdefault((r["round"], r["mode"]), {})["wall"] = r
    for r in proc:
        rows.setdefault((r["round"], r["mode"]), {})["proc"] = r
    lines, res = summarize_whole(rows)
    d = res["default"]
    assert all(abs(c - 1.0) < 1e-9 for c in d["outside"]), d["outside"]
    assert all(abs(c - 10.0) < 1e-9 for c in d["inside"]), d["inside"]
    assert all(abs(c - 100.0 * (15 / 13 - 1)) < 1e-9 for c in d["wall"]), d["wall"]
    assert d["self"] == [9.0] * 5
    text = "\n".join(lines)
    assert "start-up +2.0 s exit +0.0 s" in text, text
    assert "own inside/outside +8.9 %" in text, text  # 22 / 20.2
    # Interleaved windows: 10 ms steps drifting slowly (+-15 % over the run), windows of 5 steps every 20
    # 20 % slower, 5 steps after each window at 50 ms (detach and attach: left out).
    skip, k, every = 10, 5, 20
    t = []
    for i in range(400):
        base = 10.0 * (1 + 0.15 * math.sin(i / 60.0))
        s0 = (i - skip) % every if i >= skip else None
        t.append(base * 1.2 if s0 is not None and s0 < k else 50.0 if s0 is not None and s0 < k + 5 else base)
    costs, pooled = paired_windows(t, skip, k, every)
    # The first and last windows have detached steps on one side only: the drift shows there.
    assert len(costs) == 20 and all(abs(c - 20.0) < 3.0 for c in costs), costs
    assert abs(statistics.median(costs) - 20.0) < 0.5, costs
    flat = [10.0 * (1 + 0.15 * math.sin(i / 60.0)) for i in range(400)]
    costs0, _ = paired_windows(flat, skip, k, every)
    assert abs(statistics.median(costs0)) < 0.5, costs0
    lines, res = summarize_interleave(
        [{"job": "repeat", "round": 0, "step_ms": t}, {"job": "none", "round": 0, "step_ms": flat}],
        [{"round": 0, "mode": "repeat", "sampling": {"perturbation_measured": True, "perturbation_pct": 19.5,
                                                     "perturbation_ci_low_pct": 18.0, "perturbation_ci_high_pct": 21.0,
                                                     "perturbation_method": "paired_windows"}}], skip, k, every)
    assert abs(res["repeat"][0]["paired"] - 20.0) < 2.0 and res["repeat"][0]["collector"] == 19.5, res
    assert "collector +19.5 % (+18.0 to +21.0; paired_windows" in "\n".join(lines), lines
    print("cost_summary self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) >= 3 and argv[1] == "abba":
        lines, _ = summarize_abba(read_jsonl(argv[2]))
    elif len(argv) >= 7 and argv[1] == "interleave":
        lines, _ = summarize_interleave(read_jsonl(argv[2]), read_jsonl(argv[3]), int(argv[4]), int(argv[5]),
                                        int(argv[6]), int(argv[7]) if len(argv) > 7 else 5)
    elif len(argv) >= 4 and argv[1] == "whole":
        lines, _ = summarize_whole(whole_rows(argv[2], argv[3], argv[4] if len(argv) > 4 else None))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
