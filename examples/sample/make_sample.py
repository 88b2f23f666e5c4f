#!/usr/bin/env python3
"""Cuts the bundled sample trace from the real Kineto trace in ../shared.

Keeps the trace's top-level keys (deviceProperties, distributedInfo, ...),
every metadata ("M") event, and every event whose ts lies in a window of
ITERATIONS training steps: from the end of one Optimizer.step#SGD.step
annotation to the end of the one ITERATIONS steps later (host events), plus
GPU work that starts up to 50 ms after it (the GPU runs behind the host).

Usage: examples/sample/make_sample.py [SOURCE.json.gz] [OUT.json.gz]
"""
import decimal
import gzip
import json
import re
import sys

SOURCE = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz"
OUT = sys.argv[2] if len(sys.argv) > 2 else "examples/sample/kineto-sample.json.gz"
FIRST_STEP = 20  # skip warm-up steps
ITERATIONS = 2
GPU_SLACK_US = 50_000

# Numbers stay as their original text (Decimal), so ns-resolution timestamps
# are copied exactly rather than re-printed from doubles.
with gzip.open(SOURCE, "rt") as f:
    trace = json.load(f, parse_float=decimal.Decimal)
events = trace["traceEvents"]
steps = sorted(e["ts"] + e["dur"] for e in events
               if e.get("cat") == "user_annotation" and e.get("name", "").startswith("Optimizer.step"))
start, end = steps[FIRST_STEP], steps[FIRST_STEP + ITERATIONS]
gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}


def keep(e):
    if e.get("ph") == "M":
        return True
    ts = e.get("ts")
    if not isinstance(ts, (int, decimal.Decimal)):
        return False
    if e.get("cat") in gpu_cats or (e.get("cat") == "ac2g" and e.get("ph") == "f"):
        return start <= ts <= end + GPU_SLACK_US
    return start <= ts <= end


trace["traceEvents"] = [e for e in events if keep(e)]
trace["traceName"] = "kineto-sample (cut from kineto-mobilenetv2-ddp-2xh200-rank0 by make_sample.py)"
text = json.dumps(trace, separators=(",", ":"), default=lambda d: f"__NUM__{d}__")
text = re.sub(r'"__NUM__([-0-9.eE+]+)__"', r"\1", text)
with gzip.open(OUT, "wt", compresslevel=9) as f:
    f.write(text)
print(f"{OUT}: {len(trace['traceEvents'])} events from ts {start} to {end}")
