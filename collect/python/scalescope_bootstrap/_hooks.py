"""The hooks put into torch once it is imported.

- optimizer steps: torch.optim.optimizer.register_optimizer_step_post_hook
  (torch >= 2.0). Only the first optimizer that steps marks steps (a GAN's
  second optimizer would count every step twice); when it is garbage
  collected, the next one to step takes over.
- the collector: libscalescope-collector.so is loaded by CUDA at its
  first call (CUDA_INJECTION64_PATH), usually after torch is imported, so
  it is looked up at step marks (dlopen with RTLD_NOLOAD: never loaded by
  the bootstrap) until found, less often as the misses add up.
- windows: a step mark answers 1 while a window is open; operator and
  module ranges (_ranges.py) follow it.
- torch.distributed: rank and process groups read at the first step mark,
  when a window opens and at exit (_identity.py).
- Python stacks: sampled while a window is open (_pystacks.py); the step
  hook sets the window flag its forked DataLoader workers share.

Every hook catches its own exceptions: the first one turns that hook off
and is written to the record; the job never sees it.
"""

import os
import weakref

from . import _identity

MAX_LOOKUP_GAP = 64  # step marks between two look-ups of the collector at most


class Collector:
    """scalescope_step_mark in the collector CUDA loaded, once it is loaded."""

    def __init__(self, record, path=None):
        self.record = record
        self.path = path if path is not None else os.environ.get("CUDA_INJECTION64_PATH", "")
        self.fn = None
        self.misses = 0
        self.next_lookup = 0

    def mark(self, step):
        fn = self.fn
        if fn is None:
            if step < self.next_lookup:
                return -1
            fn = self._lookup()
            if fn is None:
                self.misses += 1
                self.next_lookup = step + min(MAX_LOOKUP_GAP, 1 << min(self.misses, 6))
                return -1
        return fn(step)

    def _lookup(self):
        if not self.path:
            return None
        import ctypes

        try:
            lib = ctypes.CDLL(self.path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            return None  # not loaded (yet): CUDA loads it at its first call
        fn = lib.scalescope_step_mark
        fn.argtypes = [ctypes.c_uint64]
        fn.restype = ctypes.c_int
        self.fn = fn
        self.record.set("collector", "loaded")
        return fn


class StepMarks:
    """The global optimizer step post-hook and what it drives."""

    def __init__(self, torch, record, collector, ranges, stacks=None):
        self.torch = torch
        self.record = record
        self.collector = collector
        self.ranges = ranges
        self.stacks = stacks  # the Python stack sampler, or None
        self.stepper = None  # weak reference to the optimizer that marks steps
        self.steps = 0
        self.window = False
        self.failed = False
        self.in_child = False
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        self.in_child = True  # a DataLoader worker: no collector, no steps

    def __call__(self, optimizer, args, kwargs):
        if self.failed or self.in_child:
            return
        try:
            stepper = self.stepper() if self.stepper is not None else None
            if stepper is None:
                self.stepper = weakref.ref(optimizer)
            elif stepper is not optimizer:
                return
            self.steps += 1
            answer = self.collector.mark(self.steps)
            self.record.data["steps_marked"] = self.steps
            window = answer == 1
            if window != self.window:
                self.window = window
                if self.stacks is not None:
                    self.stacks.window(window)
                if window:
                    self.record.data["windows_opened"] += 1
                    self.ranges.on()
                    _identity.snapshot(self.torch, self.record)
                else:
                    self.ranges.off()
            elif self.steps == 1:
                _identity.snapshot(self.torch, self.record)
        except Exception as e:
            self.failed = True
            self.record.error("optimizer step hook", e)
            self.record.hook("optimizer_steps", "failed: %s" % type(e).__name__)
            try:
                self.ranges.off()
                if self.stacks is not None:
                    self.stacks.window(False)
            except Exception:
                pass


def install(torch, record):
    record.set("torch", str(getattr(torch, "__version__", "unknown version")))
    from . import _ranges

    from . import _pystacks

    ranges = _ranges.Ranges(torch, record)
    stacks = _pystacks.install(record)  # before the job forks its DataLoader workers
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except Exception:
        register_optimizer_step_post_hook = None
    if register_optimizer_step_post_hook is None:
        record.hook("optimizer_steps", "missing: torch.optim has no global step hook (torch < 2.0)")
    else:
        try:
            marks = StepMarks(torch, record, Collector(record), ranges, stacks)
            register_optimizer_step_post_hook(marks)
            record.hook("optimizer_steps", "on")
        except Exception as e:
            record.error("optimizer step hook", e)
            record.hook("optimizer_steps", "failed: %s" % type(e).__name__)
    record.before_exit.append(lambda: _identity.snapshot(torch, record))
