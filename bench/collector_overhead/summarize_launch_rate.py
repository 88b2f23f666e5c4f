#!/usr/bin/env python3
"""Summary of bench/collector_overhead/run_launch_rate.sh: per mode, the cost
inside a window and between windows, from launch_rate's block lines.

  summarize_launch_rate.py OUT_DIR      reads OUT_DIR/blocks.jsonl, prints the table,
                                        writes OUT_DIR/summary.json
  summarize_launch_rate.py --self-test

Each line of blocks.jsonl is one block of one job: job (mode), round, phase
(warmup|lead|off|on), pair, launches_per_s, and
launches_per_cpu_s, launches per second of the launching thread's CPU time,
and launches_per_ginstr, launches per 10^9 user-mode
instructions the launching thread retired in the launch loop (null where the
host refuses perf_event_open). Instructions do not depend on clock speed or
on other tenants, so they resolve a per-call hook that wall and CPU time
(equal block for block on the H200 hosts) cannot. The table is made for each
measure present. Per
mode (over its jobs):
- in window: 1 - median over pairs of on/off launch rates (ABBA pairs in one
  process, as run.sh does);
- between windows, in-job: 1 - (off/lead)_mode / (off/lead)_none, where
  off/lead is the median "off" rate over the median "lead" rate of the same
  job (lead blocks come before any window), and the uninjected job's own
  off/lead ratio takes out what the method does to "off" blocks (they follow a
  settle pause, the lead blocks do not);
- between windows, against the uninjected job of the same round: 1 -
  median off rate / median off rate of "none".
- between windows, pooled: 1 - median of all the mode's "off" blocks over the
  median of all of the uninjected job's "off" blocks, with a 95 % percentile
  bootstrap interval (blocks resampled within each side; seeded, so the
  summary is reproducible).
Spreads are min..max over the mode's jobs (rounds), each a median over its
blocks."""
import json
import random
import statistics
import sys

MEASURES = (("launches_per_s", "wall clock"), ("launches_per_cpu_s", "launching thread's CPU time"),
            ("launches_per_ginstr", "launches per 1e9 user-mode instructions of the launch loop"))


def median(xs):
    return statistics.median(xs) if xs else None


def pooled_cost(mode_off, none_off, resamples=2000, seed=1):
    """1 - median(mode_off)/median(none_off) and its 95 % bootstrap interval."""
    if not mode_off or not none_off:
        return None
    rng = random.Random(seed)
    point = 1 - median(mode_off) / median(none_off)
    boot = sorted(1 - median(rng.choices(mode_off, k=len(mode_off))) / median(rng.choices(none_off, k=len(none_off)))
                  for _ in range(resamples))
    return {"median": point, "low": boot[int(0.025 * resamples)], "high": boot[int(0.975 * resamples) - 1],
            "blocks": len(mode_off)}


def per_job(rows, key):
    jobs = {}
    for r in rows:
        jobs.setdefault((r["job"], r["round"]), []).append(r)
    out = {}
    for job_key, blocks in jobs.items():
        blocks = [b for b in blocks if b.get(key)]
        if not blocks:
            continue  # this job has no figure of this measure (null: e.g. no instruction counter)
        rate = {ph: [b[key] for b in blocks if b["phase"] == ph] for ph in ("lead", "off", "on")}
        pairs = {}
        for b in blocks:
            if b["phase"] in ("off", "on"):
                pairs.setdefault(b["pair"], {})[b["phase"]] = b[key]
        ratios = [p["on"] / p["off"] for p in pairs.values() if "on" in p and "off" in p]
        out[job_key] = {"lead": median(rate["lead"]), "off": median(rate["off"]), "on": median(rate["on"]),
                        "on_off": median(ratios), "pairs": len(ratios), "off_blocks": rate["off"]}
    return out


def summarize(rows):
    """Per measure present in the rows: {"measure", "label", "modes": [...]}."""
    out = []
    for key, label in MEASURES:
        if any(r.get(key) for r in rows):
            out.append({"measure": key, "label": label, **summarize_measure(rows, key)})
    return {"measures": out}


def summarize_measure(rows, key):
    jobs = per_job(rows, key)
    none_off = [x for (job, _), j in jobs.items() if job == "none" for x in j["off_blocks"]]
    modes = []
    for mode in dict.fromkeys(j for j, _ in jobs):
        entries = []
        for (job, rnd), j in jobs.items():
            if job != mode:
                continue
            none = jobs.get(("none", rnd))
            e = {"round": rnd, "pairs": j["pairs"], "off_per_s": j["off"], "on_per_s": j["on"],
                 "in_window_cost": None if j["on_off"] is None else 1 - j["on_off"]}
            if j["lead"] and j["off"] and none and none["lead"] and none["off"]:
                e["between_in_job_cost"] = 1 - (j["off"] / j["lead"]) / (none["off"] / none["lead"])
            if j["off"] and none and none["off"]:
                e["between_vs_none_cost"] = 1 - j["off"] / none["off"]
            entries.append(e)

        def spread(key):
            xs = [e[key] for e in entries if e.get(key) is not None]
            return {"median": median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None

        modes.append({"mode": mode, "jobs": len(entries), "pairs": sum(e["pairs"] for e in entries),
                      "in_window_cost": spread("in_window_cost"),
                      "between_in_job_cost": spread("between_in_job_cost"),
                      "between_vs_none_cost": spread("between_vs_none_cost"),
                      "between_pooled_cost": pooled_cost(
                          [x for (job, _), j in jobs.items() if job == mode for x in j["off_blocks"]], none_off),
                      "off_per_s": median([e["off_per_s"] for e in entries if e["off_per_s"]]),
                      "rounds": entries})
    return {"modes": modes}


def table(s):
    def pct(v):
        if v is None:
            return "-"
        return f"{v['median'] * 100:+.1f}% ({v['min'] * 100:+.1f}..{v['max'] * 100:+.1f}, n={v['n']})"

    def pooled(v):
        if v is None:
            return "-"
        return f"{v['median'] * 100:+.1f}% ({v['low'] * 100:+.1f}..{v['high'] * 100:+.1f})"
    lines = []
    for m in s["measures"]:
        lines.append(f"measure: {m['measure']} ({m['label']})")
        lines.append(f"{'mode':<18} {'jobs':>4} {'pairs':>5}  {'in window':<28} {'between, in-job':<28} "
                     f"{'between, vs none':<28} {'between, pooled':<24} {'off median':>10}")
        for mode in m["modes"]:
            off = f"{mode['off_per_s']:.0f}" if mode["off_per_s"] else "-"
            lines.append(f"{mode['mode']:<18} {mode['jobs']:>4} {mode['pairs']:>5}  {pct(mode['in_window_cost']):<28} "
                         f"{pct(mode['between_in_job_cost']):<28} {pct(mode['between_vs_none_cost']):<28} "
                         f"{pooled(mode['between_pooled_cost']):<24} {off:>10}")
        lines.append("")
    lines.append("in window: 1 - on/off rate per ABBA pair (median in a job); between, in-job: the job's "
                 "off/lead ratio against the uninjected job's; between, vs none: off rate against the uninjected "
                 "job of the same round; spread over rounds; between, pooled: all off blocks against all of the "
                 "uninjected job's, 95 % bootstrap interval")
    return "\n".join(lines)


def self_test():
    rows = []

    def job(name, rnd, lead, off, on, cpu_off=None, ginstr=None):
        for _ in range(3):
            rows.append({"job": name, "round": rnd, "phase": "lead", "pair": -1, "launches_per_s": lead,
                         "launches_per_ginstr": ginstr})
        for p in range(4):
            rows.append({"job": name, "round": rnd, "phase": "off", "pair": p, "launches_per_s": off + p,
                         **({"launches_per_cpu_s": cpu_off + p} if cpu_off else {}),
                         "launches_per_ginstr": None if ginstr is None else ginstr * (1 - 0.003 * rnd)})
            rows.append({"job": name, "round": rnd, "phase": "on", "pair": p, "launches_per_s": on + p,
                         "launches_per_ginstr": None if ginstr is None else ginstr * 0.8})

    for rnd in (0, 1):
        job("none", rnd, 1000.0, 990.0, 990.0, cpu_off=2000.0)  # no instruction counter (null); off 1 % below lead: the settle pause's effect
        job("default", rnd, 1000.0, 980.0 - 10 * rnd, 700.0, cpu_off=1980.0, ginstr=100000.0)
    rows.append({"job": "default", "round": 2, "phase": "on", "pair": 0, "launches_per_s": 1.0})  # no off: no pair
    s = summarize(rows)
    assert [m["measure"] for m in s["measures"]] == ["launches_per_s", "launches_per_cpu_s",
                                                      "launches_per_ginstr"], s
    wall, cpu, instr = ({m["mode"]: m for m in measure["modes"]} for measure in s["measures"])
    # Instructions: the default's off blocks only (none has no counter); in a window 20 % fewer per 1e9.
    assert list(instr) == ["default"], list(instr)
    assert abs(instr["default"]["in_window_cost"]["max"] - 0.2) < 1e-12, instr  # round 0: 80000 / 100000
    assert instr["default"]["between_pooled_cost"] is None, instr  # nothing to compare with
    assert list(wall) == ["none", "default"], list(wall)
    d = wall["default"]
    assert d["jobs"] == 3 and d["pairs"] == 8, d
    # off medians 981.5 and 971.5; none's 991.5; leads 1000.
    expected = [1 - (981.5 / 1000) / (991.5 / 1000), 1 - (971.5 / 1000) / (991.5 / 1000)]
    assert abs(d["between_in_job_cost"]["min"] - min(expected)) < 1e-12, d
    assert abs(d["between_in_job_cost"]["max"] - max(expected)) < 1e-12, d
    assert abs(d["between_vs_none_cost"]["max"] - (1 - 971.5 / 991.5)) < 1e-12, d
    assert d["in_window_cost"]["n"] == 2, d
    assert 0.28 < d["in_window_cost"]["median"] < 0.29, d  # on/off ratios near 700/980
    # Pooled: off blocks 980..983 and 970..973 against none's 990..993 (twice).
    pooled = d["between_pooled_cost"]
    assert pooled["blocks"] == 8 and abs(pooled["median"] - (1 - 976.5 / 991.5)) < 1e-12, pooled
    assert pooled["low"] <= pooled["median"] <= pooled["high"] and pooled["low"] > 0.005, pooled
    n = wall["none"]
    assert abs(n["between_in_job_cost"]["median"]) < 1e-12 and abs(n["in_window_cost"]["median"]) < 0.01, n
    assert abs(n["between_pooled_cost"]["median"]) < 1e-12, n
    # The CPU-time measure: only off blocks carry it, 1 % fewer launches per CPU second.
    c = cpu["default"]["between_pooled_cost"]
    assert abs(c["median"] - (1 - 1981.5 / 2001.5)) < 1e-12 and c["low"] > 0 and c["high"] < 0.02, c
    assert cpu["default"]["in_window_cost"] is None  # no "on" block has a CPU time here
    text = table(s)
    assert "default" in text and "n=2" in text and "thread's CPU time" in text, text
    print("summarize_launch_rate self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print("usage: summarize_launch_rate.py OUT_DIR | --self-test", file=sys.stderr)
        return 2
    path = sys.argv[1] + "/blocks.jsonl"
    try:
        rows = [json.loads(line) for line in open(path) if line.strip()]
    except (OSError, ValueError) as e:
        print(f"summarize_launch_rate.py: {path}: {e}", file=sys.stderr)
        return 1
    s = summarize(rows)
    json.dump(s, open(sys.argv[1] + "/summary.json", "w"), indent=1)
    print(table(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
