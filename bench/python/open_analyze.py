#!/usr/bin/env python3
"""Times one round of the Python API on a trace: import scalescope, open the
trace and build the kernels DataFrame, then analyze. Prints one JSON line.
Usage: open_analyze.py TRACE"""
import json
import sys
import time

t0 = time.perf_counter()
import scalescope  # noqa: E402

t1 = time.perf_counter()
run = scalescope.open(sys.argv[1])
kernels = run.ranks[0].kernels
t2 = time.perf_counter()
a = run.analyze()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_kernels_s": t2 - t1, "analyze_s": t3 - t2, "kernels": len(kernels),
                  "findings": len(a.findings), "numpy": __import__("numpy").__version__,
                  "pandas": __import__("pandas").__version__, "python": sys.version.split()[0]}))
