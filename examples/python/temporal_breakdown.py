#!/usr/bin/env python3
"""Where each rank's time went (HTA: get_temporal_breakdown).
Usage: temporal_breakdown.py [TRACE]   (default: the shipped sample)"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
b = scalescope.open(path).analyze().breakdown
parts = ["compute_ns", "exposed_communication_ns", "copy_ns", "idle_ns"]
pct = b[parts].div(b["wall_ns"], axis=0).mul(100).round(1).add_suffix("_pct")
print(b[["rank", "wall_ns"] + parts].join(pct).to_string(index=False))
