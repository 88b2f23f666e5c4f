#!/usr/bin/env python3
"""Summarises bench/collector_overhead results: per mode the median, min and
max images/s over reps, the overhead of the median against 'none', and for
scalescope runs the trace bytes per second of training and collector CPU time
(from each run's run.json)."""
import csv
import json
import os
import statistics
import sys

out = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl")) if l.strip()]
with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["mode", "rep", "steps", "seconds", "images_per_s", "trace_bytes", "duration_s", "collector_cpu_s"])
    for r in rows:
        run_json = os.path.join(out, "runs", f"{r['mode']}-{r['rep']}.ssrun", "run.json")
        tb = dur = cpu = ""
        if os.path.exists(run_json):
            j = json.load(open(run_json))
            tb, dur = j.get("trace_bytes", ""), j.get("duration_s", "")
            cpu = sum(p.get("collector_cpu_ns", 0) for p in j.get("processes", [])) / 1e9
            r.update(trace_bytes=tb, duration_s=dur, collector_cpu_s=cpu)
        w.writerow([r["mode"], r["rep"], r["steps"], f"{r['seconds']:.3f}", f"{r['images_per_s']:.1f}", tb, dur, cpu])

by_mode = {}
for r in rows:
    by_mode.setdefault(r["mode"], []).append(r)
base = statistics.median(r["images_per_s"] for r in by_mode.get("none", [])) if "none" in by_mode else None
print(f"{'mode':28} {'n':>2} {'median img/s':>13} {'min':>9} {'max':>9} {'overhead':>9} {'trace MB/s':>11} {'coll. CPU s':>11}")
for mode, rs in by_mode.items():
    v = [r["images_per_s"] for r in rs]
    med = statistics.median(v)
    over = f"{(1 - med / base) * 100:8.1f}%" if base else "      n/a"
    rates = [r["trace_bytes"] / r["duration_s"] / 1e6 for r in rs if r.get("trace_bytes") and r.get("duration_s")]
    cpus = [r["collector_cpu_s"] for r in rs if r.get("collector_cpu_s") not in (None, "")]
    rate = f"{statistics.median(rates):11.2f}" if rates else f"{'':11}"
    cpu = f"{statistics.median(cpus):11.2f}" if cpus else f"{'':11}"
    print(f"{mode:28} {len(v):2d} {med:13.1f} {min(v):9.1f} {max(v):9.1f} {over} {rate} {cpu}")
print("trace MB/s: trace bytes / whole job wall time (incl. startup); coll. CPU s: encoder + NVML threads, all ranks")
