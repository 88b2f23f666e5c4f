import os

_nvtx_profiler_on = False
events = []  # ("on" | "off") as the profiler was switched


class emit_nvtx:
    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False

    def __enter__(self):
        global _nvtx_profiler_on
        if self.entered or _nvtx_profiler_on:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        if os.environ.get("FAKE_TORCH_NVTX_PROFILER_BUSY") == "1":
            raise RuntimeError("Profiler is already enabled on this thread")
        self.entered = True
        _nvtx_profiler_on = True
        events.append("on")
        return self

    def __exit__(self, *exc):
        global _nvtx_profiler_on
        _nvtx_profiler_on = False
        events.append("off")
        return False
