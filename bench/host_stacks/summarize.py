#!/usr/bin/env python3
"""Summarises bench/host_stacks results: the in-process A B B A groups of
collect_host_sampler_abba (cost = 1 - rate(on) / rate(off) per group) and the
whole-process rounds (whole.jsonl: 'round=R mode=M' lines, then the tool's
output for one process). Usage: summarize.py RESULTS_DIR"""
import collections, json, statistics as st, sys, os

def spread(v):
    q = st.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return f"median {st.median(v):+.2f} %, quartiles {q[0]:+.2f} to {q[2]:+.2f} %, range {min(v):+.2f} to {max(v):+.2f} % (n={len(v)})"

d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not (f.startswith("abba-") and f.endswith(".jsonl")):
        continue
    rows = [json.loads(l) for l in open(os.path.join(d, f)) if l.startswith("{")]
    blocks = [r for r in rows if "group" in r]
    costs = []
    for g in sorted({b["group"] for b in blocks}):
        bb = [b for b in blocks if b["group"] == g]
        off = st.mean(b["rate"] for b in bb if b["sampler"] == "off")
        on = st.mean(b["rate"] for b in bb if b["sampler"] == "on")
        costs.append(100 * (1 - on / off))
    share = [100 * b["sampler_core_share"] for b in blocks if b["sampler"] == "on"]
    print(f"{f}: cost {spread(costs)}; sampler thread {st.median(share):.2f} % of one core "
          f"({min(share):.2f}-{max(share):.2f})")
w = os.path.join(d, "whole.jsonl")
if os.path.exists(w):
    per = collections.defaultdict(list)
    shares = []
    cur = None
    for l in open(w):
        if l.startswith("round="):
            cur = dict(x.split("=") for x in l.split())
            continue
        r = json.loads(l)
        if r.get("summary"):
            continue
        per[(int(cur["round"]), cur["mode"])].append(r["rate"])
        if cur["mode"] == "on":
            shares.append(100 * r["sampler_core_share"])
    rounds = sorted({k[0] for k in per})
    costs = [100 * (1 - st.mean(per[(r, "on")]) / st.mean(per[(r, "off")])) for r in rounds]
    print(f"whole processes: cost {spread(costs)}; per round {', '.join(f'{c:+.2f}' for c in costs)}; "
          f"sampler thread {st.median(shares):.2f} % of one core")
