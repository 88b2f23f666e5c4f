#!/usr/bin/env python3
"""Iteration times per rank, and the slowest rank.
Usage: iteration_times.py [TRACE]"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
a = scalescope.open(path).analyze()
it = a.iteration_times
print(it.pivot(index="index", columns="rank", values="duration_ns").to_string())
print(a.iterations[["rank", "source", "count", "warmup_count", "steady_median_ns", "steady_cv"]].to_string(index=False))
