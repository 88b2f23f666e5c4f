#!/usr/bin/env python3
"""Where the Python API's memory goes: resident and peak resident size of
the process (VmRSS / VmHWM) after each step of open_analyze.py, and what
Python itself allocated (tracemalloc), so that the interpreter + numpy +
pandas baseline, the library's C++ memory and the package's Python objects
can be told apart. Usage: memory_steps.py TRACE (prints one JSON line)."""
import json
import sys
import tracemalloc


def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) // 1024  # MiB
    return out


steps = {"start": status()}
import numpy  # noqa: E402,F401
import pandas  # noqa: E402,F401

steps["numpy+pandas"] = status()
import scalescope  # noqa: E402

steps["scalescope imported"] = status()
tracemalloc.start()
run = scalescope.open(sys.argv[1])
steps["open"] = status()
kernels = run.ranks[0].kernels
steps["kernels DataFrame"] = status()
analysis = run.analyze()
steps["analyze"] = status()
_, py_peak = tracemalloc.get_traced_memory()
steps["python objects peak (tracemalloc, MiB)"] = py_peak // (1 << 20)
print(json.dumps(steps))
