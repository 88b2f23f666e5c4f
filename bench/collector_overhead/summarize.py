#!/usr/bin/env python3
"""Summarises bench/collector_overhead (run.sh): OUT/results.jsonl (one line
per timed block) and OUT/jobs.jsonl (per job: exit code, start-up, the
collectors' summaries). Writes OUT/summary.json and prints a table.

Per mode:
  cost        1 - median over pairs of (on-block images/s / off-block images/s),
              with the pairs' min-max and a distribution-free (sign-test) CI
              of that median: order statistics [x(k), x(n-k+1)], confidence
              1 - 2 P(Binomial(n, 1/2) <= k-1), the largest k that reaches
              95% (n <= 5 cannot: then k = 1 and its real confidence is shown).
  outside     1 - median off-block images/s / median images/s of the
              uninjected control blocks (both control jobs pooled); the
              control jobs' own difference (first vs last) bounds the drift.
              Lead blocks (before any window) are not "off" blocks here.
  in-job      1 - median images/s of the off blocks after the first "on"
              block / median of the job's blocks before it (its lead blocks
              and a first off block): the cost outside a window within one
              process, free of the difference between jobs.
  trace MB/s  trace bytes of the job / seconds of its on blocks (both ranks'
              bytes over wall seconds, i.e. bytes per second of training).
  CPU         extra CPU of rank 0 per second of training, on minus off
              (process CPU time: CUPTI's, the collector's and the job's own
              threads), and the collector's own threads (encoder + NVML)
              summed over ranks per second of on blocks.
  windows     windows opened per rank (collector summaries) against on blocks.
  --self-test runs the maths on synthetic data (a ctest)."""
import json
import math
import os
import statistics
import sys


def sign_test_ci(values, level=0.95):
    """(low, high, confidence) for the median of values."""
    x = sorted(values)
    n = len(x)
    if n == 0:
        return None
    def conf(k):  # P(x(k) <= median <= x(n-k+1)) = 1 - 2 P(B <= k-1)
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and conf(k + 1) >= level:
        k += 1
    return x[k - 1], x[n - k], conf(k)


def pair_ratios(blocks):
    """on/off images/s per pair (pairs with both blocks only; the control's
    pairs of two jobs are different pairs)."""
    by_pair = {}
    for b in blocks:
        by_pair.setdefault((b["job"], b["pair"]), {})[b["on"]] = b
    return [p[True]["images_per_s"] / p[False]["images_per_s"]
            for _, p in sorted(by_pair.items()) if True in p and False in p]


def summarize(rows, jobs):
    blocks = [r for r in rows if "seconds" in r]
    modes = []
    for r in blocks:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    control = [b for b in blocks if b["mode"] == "none"]
    control_ips = statistics.median(b["images_per_s"] for b in control) if control else None
    # Drift: the control blocks of the first job against those of the last.
    control_jobs = []
    for b in control:
        if b["job"] not in control_jobs:
            control_jobs.append(b["job"])
    drift = None
    if len(control_jobs) >= 2:
        first = statistics.median(b["images_per_s"] for b in control if b["job"] == control_jobs[0])
        last = statistics.median(b["images_per_s"] for b in control if b["job"] == control_jobs[-1])
        drift = {"first_job": control_jobs[0], "last_job": control_jobs[-1], "first_images_per_s": first,
                 "last_images_per_s": last, "change": last / first - 1}
    job_info = {j["job"]: j for j in jobs}
    out = {"modes": [], "control_images_per_s": control_ips, "drift": drift}
    for mode in modes:
        mb = [b for b in blocks if b["mode"] == mode]
        on = [b for b in mb if b["on"]]
        off = [b for b in mb if not b["on"] and not b.get("lead")]
        # Before/after the first window, in the order the job wrote its blocks.
        first_on = next((i for i, b in enumerate(mb) if b["on"]), None)
        if mode != "none" and first_on is not None:
            before = [b["images_per_s"] for b in mb[:first_on]]
            after = [b["images_per_s"] for b in mb[first_on:] if not b["on"]]
            if before and after:
                m_before, m_after = statistics.median(before), statistics.median(after)
                in_job = {"in_job_cost": 1 - m_after / m_before, "in_job_before": len(before),
                          "in_job_after": len(after)}
            else:
                in_job = {}
        else:
            in_job = {}
        ratios = pair_ratios(mb)
        m = {"mode": mode, "pairs": len(ratios), **in_job}
        if ratios:
            med = statistics.median(ratios)
            low, high, conf = sign_test_ci(ratios)
            m.update(cost=1 - med, cost_min=1 - max(ratios), cost_max=1 - min(ratios),
                     cost_ci_low=1 - high, cost_ci_high=1 - low, ci_confidence=conf)
        m["on_images_per_s"] = statistics.median(b["images_per_s"] for b in on) if on else None
        m["off_images_per_s"] = statistics.median(b["images_per_s"] for b in off) if off else None
        if mode != "none" and control_ips and off:
            m["outside_cost"] = 1 - m["off_images_per_s"] / control_ips
        on_s = sum(b["seconds"] for b in on)
        off_s = sum(b["seconds"] for b in off)
        if on_s > 0 and off_s > 0:
            m["extra_cpu_per_s"] = sum(b["cpu_s"] for b in on) / on_s - sum(b["cpu_s"] for b in off) / off_s
        m["block_seconds"] = statistics.median(b["seconds"] for b in mb) if mb else None
        j = job_info.get(mode)
        if j and mode != "none":
            run = j.get("run") or {}
            collectors = j.get("collectors") or []
            if run.get("trace_bytes") is not None and on_s > 0 and not (run.get("options") or {}).get("discard"):
                m["trace_mb_per_s"] = run["trace_bytes"] / on_s / 1e6
            if collectors and on_s > 0:
                m["collector_cpu_per_s"] = sum(c.get("collector_cpu_ns", 0) for c in collectors) / 1e9 / on_s
            ranked = [c for c in collectors if c.get("rank", -1) >= 0]
            if ranked:
                m["windows_opened"] = sorted({c.get("windows_opened") for c in ranked}, key=str)
                m["windows_expected"] = len(on)
                m["activities"] = ranked[0].get("activities")
            if j.get("check"):  # none for --discard: it writes no trace
                m["window_check_failures"] = sum(1 for l in j["check"] if l.startswith("FAIL"))
            m["exit_code"] = j.get("exit_code")
            m["startup_s"] = j.get("startup_s")
        out["modes"].append(m)
    return out


def pct(v, width=7):
    return f"{v * 100:{width}.1f}%" if v is not None else " " * (width + 1)


def table(s):
    lines = [f"{'mode':17} {'n':>2} {'cost':>8} {'min':>8} {'max':>8} {'CI':>17} {'on img/s':>9} "
             f"{'off img/s':>9} {'outside':>8} {'in-job':>8} {'MB/s':>6} {'CPU+/s':>7} {'coll/s':>7} {'windows':>9} {'check':>7}"]
    for m in s["modes"]:
        ci = (f"{m['cost_ci_low'] * 100:5.1f}..{m['cost_ci_high'] * 100:5.1f}% ({m['ci_confidence'] * 100:2.0f})"
              if "cost" in m else "")
        win = ""
        if "windows_opened" in m:
            win = f"{'/'.join(str(w) for w in m['windows_opened'])} of {m['windows_expected']}"
        num = lambda k, f: format(m[k], f) if m.get(k) is not None else ""
        check = ""
        if m.get("window_check_failures") is not None:
            check = "ok" if m["window_check_failures"] == 0 else f"{m['window_check_failures']} FAIL"
        lines.append(f"{m['mode']:17} {m['pairs']:2d} {pct(m.get('cost'))} {pct(m.get('cost_min'))} "
                     f"{pct(m.get('cost_max'))} {ci:>17} {num('on_images_per_s', '9.1f'):>9} "
                     f"{num('off_images_per_s', '9.1f'):>9} {pct(m.get('outside_cost'))} {pct(m.get('in_job_cost'))} "
                     f"{num('trace_mb_per_s', '6.2f'):>6} {num('extra_cpu_per_s', '7.3f'):>7} "
                     f"{num('collector_cpu_per_s', '7.3f'):>7} {win:>9} {check:>7}")
    if s["control_images_per_s"]:
        lines.append(f"control (uninjected) median {s['control_images_per_s']:.1f} images/s")
    if s["drift"]:
        d = s["drift"]
        lines.append(f"drift: control blocks of '{d['first_job']}' {d['first_images_per_s']:.1f}, of "
                     f"'{d['last_job']}' {d['last_images_per_s']:.1f} images/s ({d['change'] * 100:+.1f}%)")
    lines.append("cost: 1 - median on/off images/s over pairs; CI: sign-test CI of that median (confidence %); "
                 "outside: off blocks vs the control blocks; in-job: off blocks after the first window vs the "
                 "job's blocks before it; MB/s: trace bytes per second of on blocks; "
                 "CPU+/s: rank 0's extra CPU s per s, on minus off; coll/s: collector threads' CPU s per s "
                 "of on blocks, all ranks")
    return "\n".join(lines)


def self_test():
    # Low-level maths.
    lo, hi, conf = sign_test_ci([5, 1, 4, 2, 3])
    assert (lo, hi) == (1, 5) and abs(conf - (1 - 2 / 32)) < 1e-12, (lo, hi, conf)
    lo, hi, conf = sign_test_ci(list(range(1, 11)))  # n=10: k=2, 1 - 2*(1+10)/1024
    assert (lo, hi) == (2, 9) and abs(conf - (1 - 22 / 1024)) < 1e-12, (lo, hi, conf)
    # Synthetic run: the control has identical blocks, "slow" costs 20% on, 2% off.
    rows, jobs = [], []
    def block(job, mode, pair, on, ips, cpu_per_s):
        seconds = 2.0
        rows.append({"job": job, "mode": mode, "pair": pair, "on": on, "steps": int(ips * seconds / 256),
                     "seconds": seconds, "images_per_s": ips, "cpu_s": cpu_per_s * seconds, "start_s": 0.1,
                     "stop_s": 0.2, "world": 2, "block_seconds": 2.0, "unix_end": 0})
    for p in range(5):
        block("torch_profiler", "none", p, False, 1000 + p, 1.0)
        block("torch_profiler", "none", p, True, 1000 + p, 1.0)
    for _ in range(2):  # lead blocks: the job's speed before any window
        block("slow", "slow", -1, False, 1000.0, 1.0)
        rows[-1]["lead"] = True
    for p in range(5):
        off = 980.0 + p  # 2% below the control outside the window
        block("slow", "slow", p, False, off, 1.0)
        block("slow", "slow", p, True, off * (0.8 + 0.01 * p), 1.5)
    for p in range(5):
        block("none", "none", p, False, 1010, 1.0)
        block("none", "none", p, True, 1010, 1.0)
    rows.append({"job": "slow", "summary": True})
    jobs.append({"job": "slow", "exit_code": 0, "startup_s": 20.0, "check": ["PASS a", "FAIL b"],
                 "run": {"trace_bytes": 20e6, "options": {"discard": False}},
                 "collectors": [{"rank": 0, "windows_opened": 5, "collector_cpu_ns": 1e9, "activities": "kernel"},
                                {"rank": 1, "windows_opened": 5, "collector_cpu_ns": 1e9, "activities": "kernel"}]})
    s = summarize(rows, jobs)
    modes = {m["mode"]: m for m in s["modes"]}
    assert list(modes) == ["none", "slow"], list(modes)
    none, slow = modes["none"], modes["slow"]
    assert none["pairs"] == 10 and none["cost"] == 0 and none["cost_min"] == 0, none
    assert slow["pairs"] == 5 and abs(slow["cost"] - 0.18) < 1e-12, slow
    assert abs(slow["cost_min"] - 0.16) < 1e-12 and abs(slow["cost_max"] - 0.20) < 1e-12, slow
    assert abs(slow["cost_ci_low"] - 0.16) < 1e-12 and abs(slow["cost_ci_high"] - 0.20) < 1e-12, slow
    # Control median over 20 blocks: ten at 1010, the others 1000..1004 -> (1004+1010)/2.
    assert s["control_images_per_s"] == 1007, s["control_images_per_s"]
    assert abs(slow["outside_cost"] - (1 - 982 / 1007)) < 1e-12, slow
    assert abs(s["drift"]["change"] - (1010 / 1002 - 1)) < 1e-12, s["drift"]
    assert abs(slow["trace_mb_per_s"] - 2.0) < 1e-12, slow  # 20 MB over 5 on blocks of 2 s
    assert abs(slow["extra_cpu_per_s"] - 0.5) < 1e-12, slow
    assert abs(slow["collector_cpu_per_s"] - 0.2) < 1e-12, slow  # 2 s of CPU over 10 s
    assert slow["windows_opened"] == [5] and slow["windows_expected"] == 5, slow
    assert slow["window_check_failures"] == 1, slow
    # In-job: pair 0's off block comes before the first on block (ABBA's order
    # is not followed by this synthetic job: every pair is off, on), so before
    # = 1000, 1000, 980 (median 1000), after = 981..984 (median 982.5).
    assert slow["in_job_before"] == 3 and slow["in_job_after"] == 4, slow
    assert abs(slow["in_job_cost"] - (1 - 982.5 / 1000)) < 1e-12, slow
    assert "in_job_cost" not in none, none
    text = table(s)
    assert "slow" in text and "18.0%" in text and "+0.8%" in text and "1 FAIL" in text, text
    # A pair missing its on block (job killed) is left out, not paired wrongly.
    rows2 = [r for r in rows if not (r.get("mode") == "slow" and r.get("pair") == 4 and r.get("on"))]
    assert {m["mode"]: m for m in summarize(rows2, jobs)["modes"]}["slow"]["pairs"] == 4
    print("summarize self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    out = sys.argv[1]
    rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl")) if l.strip()]
    jobs_path = os.path.join(out, "jobs.jsonl")
    jobs = [json.loads(l) for l in open(jobs_path) if l.strip()] if os.path.exists(jobs_path) else []
    s = summarize(rows, jobs)
    s["jobs"] = [{k: j.get(k) for k in ("job", "exit_code", "wall_s", "startup_s", "skipped")} for j in jobs]
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
    print(table(s))
    for j in s["jobs"]:
        print(f"job {j['job']}: exit {j['exit_code']}, wall {j['wall_s'] or 0:.1f} s, start-up+exit "
              f"{j['startup_s'] or 0:.1f} s{' (skipped)' if j.get('skipped') else ''}")


if __name__ == "__main__":
    main()
