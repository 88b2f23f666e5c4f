#!/usr/bin/env python3
"""Summary of window_ab.py's blocks: per job, the cost of an open
window as the median over ABBA pairs of 100 * (ms per step on / off - 1), with
the range and a sign-test 95 % interval (order statistics of the pair costs;
n >= 6 pairs), and the extra process CPU per step in the on blocks (CUPTI's
and the collector's threads included).

  window_ab_summary.py BLOCKS.jsonl    # prints one line per job
  window_ab_summary.py --self-test
"""
import json
import math
import statistics
import sys


def sign_interval(values, level=0.95):
    """Distribution-free interval for the median: the order statistics
    (s[k], s[n-1-k]) cover it with probability 1 - 2 P(B <= k), B ~ Bin(n, 1/2);
    the largest k whose coverage is >= level. None when even k = 0 falls short."""
    s = sorted(values)
    n = len(s)
    best = None
    for k in range(n // 2):
        cover = 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
        if cover < level:
            break
        best = (s[k], s[n - 1 - k], cover)
    return best


def pair_costs(rows):
    """{job: [(pair, cost %, extra CPU ms per step)]} from the block rows."""
    by = {}
    for r in rows:
        by.setdefault((r["job"], r["pair"]), {})[bool(r["on"])] = r
    out = {}
    for (job, pair), b in sorted(by.items()):
        if True not in b or False not in b:
            continue
        on, off = b[True], b[False]
        cost = 100.0 * (on["ms_per_step"] / off["ms_per_step"] - 1)
        cpu = 1000.0 * (on["cpu_seconds"] / on["steps"] - off["cpu_seconds"] / off["steps"])
        out.setdefault(job, []).append((pair, cost, cpu, off["ms_per_step"]))
    return out


def summarize(rows):
    lines = []
    for job, pairs in pair_costs(rows).items():
        costs = [c for _, c, _, _ in pairs]
        cpus = [c for _, _, c, _ in pairs]
        offs = [o for _, _, _, o in pairs]
        ci = sign_interval(costs)
        ci_text = f"{ci[0]:+.1f} to {ci[1]:+.1f} % ({100 * ci[2]:.0f} % sign test)" if ci else "n/a (< 6 pairs)"
        lines.append(f"{job}: in-window cost {statistics.median(costs):+.1f} % (range {min(costs):+.1f} to "
                     f"{max(costs):+.1f} %, {len(costs)} pairs; interval {ci_text}); extra CPU "
                     f"{statistics.median(cpus):+.2f} ms/step; off blocks {statistics.median(offs):.2f} ms/step "
                     f"(range {min(offs):.2f}-{max(offs):.2f}); each: " + ", ".join(f"{c:+.1f}" for c in costs))
    return lines


def self_test():
    rows = []
    for pair in range(10):
        for on in (False, True):
            ms = 20.0 * (1.10 if on else 1.0) * (1 + 0.01 * pair)  # 10 % cost, slow drift
            rows.append({"job": "x", "pair": pair, "on": on, "steps": 20, "ms_per_step": ms,
                         "cpu_seconds": 0.02 * ms * (1.5 if on else 1.0)})
    rows.append({"job": "x", "pair": 10, "on": True, "steps": 20, "ms_per_step": 99.0, "cpu_seconds": 1})  # unpaired
    costs = pair_costs(rows)["x"]
    assert len(costs) == 10, costs
    assert all(abs(c - 10.0) < 1e-9 for _, c, _, _ in costs), costs
    lo, hi, cover = sign_interval([float(i) for i in range(10)])
    assert (lo, hi) == (1.0, 8.0) and cover >= 0.95, (lo, hi, cover)
    assert sign_interval([1.0, 2.0, 3.0]) is None
    text = summarize(rows)
    assert len(text) == 1 and "+10.0 %" in text[0] and "10 pairs" in text[0], text
    print("window_ab_summary self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) == 2:
        with open(sys.argv[1]) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        print("\n".join(summarize(rows)) or "no complete pairs")
    else:
        sys.exit("usage: window_ab_summary.py BLOCKS.jsonl | --self-test")
