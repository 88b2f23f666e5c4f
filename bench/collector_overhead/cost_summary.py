#!/usr/bin/env python3
"""Summary of cost_device.sh's measurements (issue 23), with the method's own
noise beside every figure.

  cost_summary.py abba BLOCKS.jsonl       # in-process ABBA jobs of one workload
  cost_summary.py whole STEPS.jsonl WALL.jsonl PROC.jsonl
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
    print("cost_summary self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) >= 3 and argv[1] == "abba":
        lines, _ = summarize_abba(read_jsonl(argv[2]))
    elif len(argv) >= 4 and argv[1] == "whole":
        lines, _ = summarize_whole(whole_rows(argv[2], argv[3], argv[4] if len(argv) > 4 else None))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
