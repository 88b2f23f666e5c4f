#!/usr/bin/env python3
"""Where each rank's time went (HTA: get_temporal_breakdown).
Usage: temporal_breakdown.py [TRACE]   (default: the shipped sample)"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
b = scalescope.open(path).analyze().breakdown
parts = [f"{p}_{u}" for p in ("compute", "exposed_communication", "copy", "idle") for u in ("ns", "pct")]
print(b[["rank", "wall_ns"] + parts].round(1).to_string(index=False))
