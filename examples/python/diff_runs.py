#!/usr/bin/env python3
"""What changed between two runs (HTA: TraceDiff).
Usage: diff_runs.py A B"""
import sys

import scalescope

d = scalescope.diff(sys.argv[1], sys.argv[2])
print(d.note or f"steady iteration: {d.iteration['a']:.0f} ns -> {d.iteration['b']:.0f} ns")
print(d.breakdown.to_string(index=False))
top = d.top_kernels.head(5)
top["what"] = top["what"].str.slice(0, 60)
print(top.to_string(index=False))
