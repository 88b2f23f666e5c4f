#!/usr/bin/env python3
"""One figure: each rank's time breakdown as stacked bars, and its iteration times.
Usage: plot_breakdown.py [TRACE] [OUT.png]"""
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import scalescope  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "sample" / "kineto-sample.json.gz"
out = sys.argv[2] if len(sys.argv) > 2 else "breakdown.png"
a = scalescope.open(path).analyze()
b = a.breakdown.set_index("rank")
parts = ["compute_ns", "exposed_communication_ns", "copy_ns", "idle_ns"]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
(b[parts] / 1e6).plot.bar(stacked=True, ax=left, ylabel="ms", title="Time breakdown per rank")
it = a.iteration_times
for rank, g in it.groupby("rank"):
    right.plot(g["index"], g["duration_ns"] / 1e6, marker="o", label=f"rank {rank}")
right.set(xlabel="iteration", ylabel="ms", title="Iteration times")
if len(it):
    right.legend()
fig.tight_layout()
fig.savefig(out)
print(f"wrote {out}")
