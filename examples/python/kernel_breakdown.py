#!/usr/bin/env python3
"""Kernel time by class and by name (HTA: get_gpu_kernel_breakdown).
Usage: kernel_breakdown.py [TRACE]"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
run = scalescope.open(path)
a = run.analyze()
print(a.kernel_classes.pivot(index="class", columns="rank", values="total_ns").to_string())
rank = next(r for r in run.ranks if r.event_counts["kernels"])  # the first rank with GPU work
k = rank.kernels
by_name = k.groupby("name", observed=True)["duration"].agg(["count", "sum", "mean"]).sort_values("sum", ascending=False)
by_name["share_pct"] = (100 * by_name["sum"] / k["duration"].sum()).round(1)
by_name.index = by_name.index.astype(str).str.slice(0, 70)
print(by_name.head(10).to_string())
