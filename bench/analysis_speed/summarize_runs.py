#!/usr/bin/env python3
"""Medians of the runs of bench/analysis_speed's scripts, and how they grow with size.

Input: lines "SIZE SIDE WALL_S USER_S SYS_S MAXRSS_KIB" (/usr/bin/time -f "%e %U %S %M"), other
lines ignored. Prints per size and side the medians with ranges of wall, CPU (user+sys) and peak RSS,
then per side with two sizes or more the fitted exponent of its median wall and CPU against size
(least squares of the logs).
Usage: summarize_runs.py RUNS_FILE
"""
import collections
import math
import statistics
import sys


def fit(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main(path):
    runs = collections.defaultdict(list)
    for line in open(path):
        p = line.split()
        if len(p) == 6:
            runs[(int(p[0]), p[1])].append([float(x) for x in p[2:]])
    med = {}
    for (size, side), v in sorted(runs.items()):
        w = [x[0] for x in v]
        c = [x[1] + x[2] for x in v]
        m = [x[3] / 1024 for x in v]
        med[(size, side)] = (statistics.median(w), statistics.median(c))
        print(f"{size:>11} {side}: n={len(v)} wall {statistics.median(w):.2f} s ({min(w):.2f}-{max(w):.2f}), "
              f"cpu {statistics.median(c):.2f} s ({min(c):.2f}-{max(c):.2f}), "
              f"peak RSS {statistics.median(m):.0f} MiB ({min(m):.0f}-{max(m):.0f})")
    for side in sorted({sd for (_, sd) in med}):
        sizes = sorted(s for (s, sd) in med if sd == side)
        if len(sizes) >= 2 and all(min(med[(s, side)]) > 0 for s in sizes):
            print(f"{side}: exponent wall {fit(sizes, [med[(s, side)][0] for s in sizes]):.2f}, "
                  f"cpu {fit(sizes, [med[(s, side)][1] for s in sizes]):.2f} ({sizes[0]}..{sizes[-1]} events)")


if __name__ == "__main__":
    main(sys.argv[1])
