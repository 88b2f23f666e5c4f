#!/usr/bin/env python3
"""Checks behind the leave-one-round-out figures of bench/RESULTS.md ("Predictions") and docs/scaling.md.

batch-rule SCALESCOPE ROUND=PATH [ROUND=PATH ...]   (PATH 'embedded': the embedded v4.1 table)
  Whether choosing the batch rule by backtests (`mlperf validate --batch-rule chosen`) beats the fixed
  per-accelerator rule, judged on one round alone. Per round, `scalescope mlperf validate` runs on that
  round's table alone once per rule (the default model, batch extrapolated; point errors do not depend on
  the interval's spread), and compares
  - each fixed rule: its score over every case, and
  - the choice nested in leave-one-benchmark-out: for each benchmark, the rule of the smallest score over
    the other benchmarks' cases, and its errors on the held-out benchmark; the score over all held-out cases.
  Score: as `mlperf validate --batch-rule chosen` computes it, the mean over extrapolation buckets with at
  least 8 cases of the median |error|. Only the named round's cases enter its figures. With several
  rounds, also their cases together (a benchmark left out of every round at once).

coverage-band N [N ...]
  For buckets of N cases each covered independently with probability 0.8 (a perfectly calibrated 80 %
  interval): the chance that each bucket's coverage lies in 70-90 %, that all do, and the expected
  number outside.

--self-test runs the scoring, the nesting and the binomial on synthetic data (a ctest).
"""
import csv
import functools
import io
import math
import statistics
import subprocess
import sys

RULES = ["per-accelerator", "geometric middle", "kept", "fitted law"]
MIN_CASES = 8  # scaling::kMinValidatedCases
BAND = (0.70, 0.90)


def bucket(factor):
    """scaling::extrapolation_bucket."""
    r2 = math.sqrt(2.0)
    if factor < 2 * r2:
        return "2x"
    if factor < 4 * r2:
        return "4x"
    if factor < 8 * r2:
        return "8x"
    return "16x+"


def score(cases):
    """scaling::batch_rule_score: mean over buckets with >= MIN_CASES cases (all when none has) of the median |error|."""
    by = {}
    for c in cases:
        by.setdefault(bucket(c["factor"]), []).append(abs(c["error"]))
    full = [b for b, e in by.items() if len(e) >= MIN_CASES]
    keep = full if full else list(by)
    return statistics.fmean(statistics.median(by[b]) for b in keep) if keep else math.nan


def nested_choice(by_rule):
    """Leave one benchmark out: the rule chosen on the others, the held-out cases under it, and the picks."""
    benchmarks = sorted({c["benchmark"] for c in by_rule[RULES[0]]})
    held_out, picks = [], []
    for b in benchmarks:
        pick = min(RULES, key=lambda rule: score([c for c in by_rule[rule] if c["benchmark"] != b]))
        picks.append((b, pick))  # min keeps the earlier rule on a tie, as the C++ choice does
        held_out += [c for c in by_rule[pick] if c["benchmark"] == b]
    return held_out, picks


def in_band(n, p=0.8):
    """P(coverage in BAND) for n cases each covered with probability p."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1) if BAND[0] <= k / n <= BAND[1])


def cases_of(scalescope, path, rule):
    args = [scalescope, "mlperf", "validate"] + ([] if path == "embedded" else [path])
    args += ["--batch-rule", rule, "--cases", "--format", "csv"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    section = out.split("# validation_cases: Validation cases\n", 1)[1].split("\n# ", 1)[0]
    rows = []
    for r in csv.DictReader(io.StringIO(section)):
        if r["model"] != "step x converge":  # the default model, batch extrapolated
            continue
        rows.append({"benchmark": r["curve"].split(" on ", 1)[0], "factor": float(r["extrapolation"]),
                     "error": float(r["error_pct"]) / 100, "key": (r["curve"], r["fit_sizes"], r["accelerators"])})
    return rows


def batch_rule(scalescope, tables):
    rounds = []
    for t in tables:
        name, path = t.split("=", 1)
        by_rule = {rule: cases_of(scalescope, path, rule) for rule in RULES}
        for rule in RULES:  # the same cases under every rule
            assert [c["key"] for c in by_rule[rule]] == [c["key"] for c in by_rule[RULES[0]]], rule
        rounds.append((name, by_rule))
    if len(rounds) > 1:
        rounds.append(("+".join(n for n, _ in rounds),
                       {rule: [dict(c, key=(n,) + c["key"]) for n, r in rounds for c in r[rule]] for rule in RULES}))
    for name, by_rule in rounds:
        held_out, picks = nested_choice(by_rule)
        print(f"{name} ({len(by_rule[RULES[0]])} cases, {len(picks)} benchmarks)")
        for rule in RULES:
            print(f"  fixed {rule:17s} score {100 * score(by_rule[rule]):.2f}%")
        print(f"  chosen, nested    score {100 * score(held_out):.2f}%   "
              f"({'; '.join(f'{b}: {p}' for b, p in picks)})")


def coverage_band(sizes):
    for n in sizes:
        print(f"{n:4d} cases: {100 * in_band(n):.1f}% in {BAND[0]:.0%}-{BAND[1]:.0%}")
    all_in = functools.reduce(lambda a, n: a * in_band(n), sizes, 1.0)
    print(f"all {len(sizes)} buckets in the band: {100 * all_in:.2f}%; "
          f"expected outside: {sum(1 - in_band(n) for n in sizes):.2f}")


def self_test():
    assert bucket(2.82) == "2x" and bucket(2.83) == "4x" and bucket(11.3) == "8x" and bucket(11.4) == "16x+"
    # Buckets with >= 8 cases only, once any has them (as in curve_prediction_test's batch_rule_score test).
    cases = [{"factor": 2, "error": 0.05}] * 8 + [{"factor": 4, "error": -0.20}] * 8 + [{"factor": 16, "error": 0.9}]
    assert abs(score(cases) - (0.05 + 0.20) / 2) < 1e-12
    assert abs(score([{"factor": 16, "error": 0.9}]) - 0.9) < 1e-12
    # Nesting: benchmark a favours rule 'kept' on its own, b and c 'per-accelerator'; held out, each takes the
    # rule the other two favour on balance.
    def case(b, e):
        return {"benchmark": b, "factor": 2, "error": e}
    errors = {"per-accelerator": {"a": 0.30, "b": 0.05, "c": 0.05}, "geometric middle": {"a": 0.4, "b": 0.4, "c": 0.4},
              "kept": {"a": 0.01, "b": 0.10, "c": 0.10}, "fitted law": {"a": 0.5, "b": 0.5, "c": 0.5}}
    by_rule = {r: [case(b, e) for b, e in errors[r].items() for _ in range(3)] for r in RULES}
    held_out, picks = nested_choice(by_rule)
    assert dict(picks) == {"a": "per-accelerator", "b": "kept", "c": "kept"}, picks
    assert sorted(c["error"] for c in held_out) == sorted([0.30] * 3 + [0.10] * 6)
    # Binomial: 10 cases, coverage in 70-90 % means 7, 8 or 9 covered.
    p = 0.8
    assert abs(in_band(10) - sum(math.comb(10, k) * p**k * (1 - p) ** (10 - k) for k in (7, 8, 9))) < 1e-12
    assert in_band(1000) > 0.999 and in_band(12) < in_band(49)
    print("mlperf_round_checks self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) > 3 and sys.argv[1] == "batch-rule":
        batch_rule(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) > 2 and sys.argv[1] == "coverage-band":
        coverage_band([int(n) for n in sys.argv[2:]])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
