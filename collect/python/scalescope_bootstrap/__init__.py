"""scalescope's Python bootstrap (loaded by sitecustomize.py beside it).

What it does in each Python process of a profiled job, with no change to
the job's code:

- steps: once torch is imported, a global optimizer step post-hook marks
  the end of every training step for the collector
  (scalescope_step_mark in libscalescope-collector.so, called through
  ctypes once CUDA has loaded the collector), so the sampled windows
  (skip, trace, detach, repeat) work on plain scripts;
- operators and modules, inside windows only: when a step mark answers
  that a window is open, operator ranges (torch's NVTX profiler, what
  emit_nvtx turns on) and module ranges ("nn.Module: features.3.conv.0",
  global forward hooks) go on; when the window closes they go off;
- identity: rank, local rank, world size and every process group (name,
  ranks, backend) from torch.distributed itself.

It never changes what the job does: nothing is imported before the job
imports torch, every hook catches its own errors (counted, the hook then
stays off), and what was missing or failed is written to
<run dir>/python-<host>-<pid>.json, which `scalescope profile` adds to
run.json.
"""

import os
import sys

from . import _record

_started = False


def start():
    """Called once by sitecustomize.py at interpreter start-up."""
    global _started
    if _started:
        return
    _started = True
    record = _record.Record()
    try:
        if not os.environ.get("SCALESCOPE_RUN_DIR"):
            return  # not under `scalescope profile`: nothing to do
        from . import _torch_watch

        _torch_watch.install(record)
        record.arm()
    except Exception as e:  # never the job's problem
        record.error("bootstrap", e)
