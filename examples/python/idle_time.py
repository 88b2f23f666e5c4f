#!/usr/bin/env python3
"""GPU idle time per rank and busy share per stream (HTA: get_idle_time_breakdown).
Usage: idle_time.py [TRACE]"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
a = scalescope.open(path).analyze()
print(a.breakdown[["rank", "wall_ns", "idle_ns", "idle_pct"]].round(1).to_string(index=False))
launch = a.launch[["rank", "gpu_gap_ns", "gap_count", "launch_bound"]]
print(launch.to_string(index=False))
print(a.stream_utilization.sort_values("busy_ns", ascending=False).to_string(index=False))
