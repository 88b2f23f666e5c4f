#!/usr/bin/env python3
"""On the GPU machine: opens a run profiled there with `scalescope profile`,
prints what the Python API sees, and checks the analysis against the CLI's
`analyze --json` of the same run. Usage: gpu_check.py RUN.ssrun CLI.json"""
import json
import sys
import time

import numpy as np

t0 = time.perf_counter()
import scalescope  # noqa: E402
import pandas as pd  # noqa: E402

print(f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}, "
      f"scalescope {scalescope.__version__} from {scalescope.library_path}")
t1 = time.perf_counter()
run = scalescope.open(sys.argv[1])
print(run, [repr(r) for r in run.ranks])
rank = max(run.ranks, key=lambda r: r.event_counts["kernels"])
k = rank.kernels
t2 = time.perf_counter()
print(f"import {t1 - t0:.3f} s, open + kernels DataFrame {t2 - t1:.3f} s: {len(k)} kernels")
print("zero copy:", np.shares_memory(k["start"].to_numpy(), rank.columns("kernels")["start"]))
print(rank.devices.to_string(index=False))
print(rank.host[["hostname", "pid", "rank", "local_rank", "world_size", "launcher"]].to_string(index=False))
top = k.groupby("name", observed=True)["duration"].sum().nlargest(5)
top.index = top.index.astype(str).str.slice(0, 80)
print(top.to_string())
print("nccl ops:", rank.nccl["op"].value_counts().to_dict())
a = run.analyze()
t3 = time.perf_counter()
print(f"analyze {t3 - t2:.3f} s")
print(a.breakdown[["rank", "wall_ns", "compute_ns", "exposed_communication_ns", "copy_ns", "idle_ns"]].to_string(index=False))
print(a.iterations[["rank", "source", "count", "warmup_count", "steady_median_ns"]].to_string(index=False))
print("findings:", [f.id for f in a.findings])
cli = json.load(open(sys.argv[2]))
same = a.json["analysis"] == cli["analysis"] and a.json["findings"] == cli["findings"]
print("analysis equals `scalescope analyze --json`:", same)
sys.exit(0 if same else 1)
