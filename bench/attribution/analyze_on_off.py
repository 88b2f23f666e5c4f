#!/usr/bin/env python3
"""The cost of attribution on the `analyze` command.
Usage: analyze_on_off.py SCALESCOPE INPUT ROUNDS
A = `analyze INPUT --format csv --no-attribution`, B = the same with attribution
(the default), alternated A B per round; CPU (user+sys of the child) and wall."""
import os, resource, subprocess, sys, time, statistics
ss, inp, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = {"A": [], "B": []}; ratios = []
for r in range(rounds):
    row = {}
    for side in "AB":
        args = [ss, "analyze", inp, "--format", "csv"] + (["--no-attribution"] if side == "A" else [])
        before = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t0; after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        row[side] = cpu; res[side].append((cpu, wall))
    ratios.append(row["B"] / row["A"])
    print(f"round {r+1}: A cpu {row['A']:.3f} s, B cpu {row['B']:.3f} s, B/A {ratios[-1]:.3f}, load {os.getloadavg()[0]:.1f}", flush=True)
for s in "AB":
    c = [x[0] for x in res[s]]; w = [x[1] for x in res[s]]
    print(f"{s}: cpu median {statistics.median(c):.3f} ({min(c):.3f}-{max(c):.3f}), wall median {statistics.median(w):.3f} ({min(w):.3f}-{max(w):.3f})")
print(f"B/A per round median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
