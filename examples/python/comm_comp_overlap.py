#!/usr/bin/env python3
"""How much communication is hidden under compute (HTA: get_comm_comp_overlap).
Usage: comm_comp_overlap.py [TRACE]"""
import sys
from pathlib import Path

import scalescope

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
b = scalescope.open(path).analyze().breakdown
b["overlap_pct"] = (100 * b["overlap_fraction"]).round(1)
print(b[["rank", "communication_ns", "overlap_ns", "exposed_communication_ns", "overlap_pct"]].to_string(index=False))
