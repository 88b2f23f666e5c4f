#!/usr/bin/env python3
"""Summary of sampled_ab.sh's results.jsonl.

Per mode, the cost against the uninjected job of the same round: how much
longer a step took, 100 * (throughput none / throughput mode - 1), as the
median over rounds with the range; and, for profiled modes, the collector's
self-measured perturbation (inside traced windows against detached
iterations; median over rounds, range, and each run's 95 % CI). The
comparison the issue asks for: the sampled runs' self-measured perturbation
against the independent A/B figure for traced iterations, which is the
--full runs' cost (every steady iteration traced).

  sampled_ab_summary.py RESULTS.jsonl      # prints the summary
  sampled_ab_summary.py --self-test
"""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def throughput(row):
    r = row.get("result") or {}
    for key in ("throughput_images_per_s", "tokens_per_s"):
        if key in r:
            try:
                return float(r[key])
            except ValueError:
                return None
    return None


def summarize(rows):
    by_round = {}
    for row in rows:
        if row["rc"] == 0 and throughput(row):
            by_round.setdefault(row["round"], {})[row["mode"]] = row
    modes = sorted({m for r in by_round.values() for m in r if m != "none"})
    out = {"rounds": len(by_round), "modes": {}}
    for mode in modes:
        costs, selfs, cis = [], [], []
        for rnd in sorted(by_round):
            r = by_round[rnd]
            if mode in r and "none" in r:
                costs.append(100.0 * (throughput(r["none"]) / throughput(r[mode]) - 1.0))
            for s in (r.get(mode, {}).get("sampling") or []):
                if s.get("perturbation_measured"):
                    selfs.append(s["perturbation_pct"])
                    cis.append((s["perturbation_ci_low_pct"], s["perturbation_ci_high_pct"]))
        m = {"pairs": len(costs)}
        if costs:
            m.update(cost_median=statistics.median(costs), cost_min=min(costs), cost_max=max(costs), costs=costs)
        if selfs:
            m.update(self_median=statistics.median(selfs), self_min=min(selfs), self_max=max(selfs), self=selfs, self_ci=cis)
        out["modes"][mode] = m
    full, sampled = out["modes"].get("full", {}), out["modes"].get("sampled", {})
    if "cost_median" in full and "self_median" in sampled:
        out["self_minus_ab_points"] = sampled["self_median"] - full["cost_median"]
    return out


def text(s):
    lines = [f"rounds with results: {s['rounds']}"]
    for mode, m in s["modes"].items():
        line = f"{mode:>13}: "
        if "cost_median" in m:
            line += (f"whole-job cost {m['cost_median']:+.1f} % (range {m['cost_min']:+.1f} to {m['cost_max']:+.1f} %, "
                     f"{m['pairs']} rounds; each: {', '.join(f'{c:+.1f}' for c in m['costs'])})")
        else:
            line += "no pair with an uninjected job"
        if "self_median" in m:
            cis = "; ".join(f"{a:+.1f}..{b:+.1f}" for a, b in m["self_ci"])
            line += (f"; self-measured inside windows {m['self_median']:+.1f} % (range {m['self_min']:+.1f} to "
                     f"{m['self_max']:+.1f} %; per-run 95 % CIs {cis})")
        lines.append(line)
    if "self_minus_ab_points" in s:
        lines.append(f"self-measured (sampled) minus independent A/B (full vs none): {s['self_minus_ab_points']:+.1f} points "
                     f"(target: within 3)")
    return "\n".join(lines)


def self_test():
    rows = []
    for rnd in range(5):
        base = 6000.0 + 100 * rnd
        rows.append({"round": rnd, "mode": "none", "rc": 0, "result": {"throughput_images_per_s": str(base)}, "sampling": None})
        rows.append({"round": rnd, "mode": "full", "rc": 0, "result": {"throughput_images_per_s": str(base / 1.20)},
                     "sampling": [{"mode": "full"}]})
        rows.append({"round": rnd, "mode": "sampled", "rc": 0, "result": {"throughput_images_per_s": str(base / 1.01)},
                     "sampling": [{"mode": "sampled", "perturbation_measured": True, "perturbation_pct": 18.0 + rnd,
                                   "perturbation_ci_low_pct": 15.0, "perturbation_ci_high_pct": 25.0}]})
    rows.append({"round": 5, "mode": "sampled", "rc": 1, "result": {}, "sampling": None})  # a failed job is left out
    s = summarize(rows)
    assert s["rounds"] == 5, s
    assert abs(s["modes"]["full"]["cost_median"] - 20.0) < 1e-6, s
    assert abs(s["modes"]["sampled"]["cost_median"] - 1.0) < 1e-6, s
    assert s["modes"]["sampled"]["self_median"] == 20.0, s
    assert abs(s["self_minus_ab_points"]) < 1e-6, s
    t = text(s)
    assert "whole-job cost +20.0 %" in t and "self-measured inside windows +20.0 %" in t, t
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) == 2:
        print(text(summarize(load(sys.argv[1]))))
    else:
        sys.exit(__doc__)
