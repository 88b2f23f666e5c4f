#!/usr/bin/env python3
"""Times one round of the Python API on a trace: import numpy, pandas and
scalescope (as a notebook has), open the trace and build the kernels
DataFrame, then analyze. Prints one JSON line. With --baseline it only
imports (the interpreter's own peak memory, for the comparison with the CLI).
Usage: open_analyze.py TRACE | --baseline"""
import json
import sys
import time

t0 = time.perf_counter()
import numpy  # noqa: E402
import pandas  # noqa: E402
import scalescope  # noqa: E402

t1 = time.perf_counter()
if sys.argv[1] == "--baseline":
    print(json.dumps({"import_s": t1 - t0}))
    sys.exit(0)
run = scalescope.open(sys.argv[1])
kernels = run.ranks[0].kernels
t2 = time.perf_counter()
a = run.analyze()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_kernels_s": t2 - t1, "analyze_s": t3 - t2, "kernels": len(kernels),
                  "findings": len(a.findings), "numpy": __import__("numpy").__version__,
                  "pandas": __import__("pandas").__version__, "python": sys.version.split()[0]}))
