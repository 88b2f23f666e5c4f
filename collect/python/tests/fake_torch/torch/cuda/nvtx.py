import ctypes
import os

events = []  # what was pushed and popped, in order


def _cupti():
    from . import _init

    return _init()


def range_push(msg):
    """torch.cuda.nvtx.range_push (the module ranges use it)."""
    if os.environ.get("FAKE_TORCH_NVTX_FAILS") == "1":
        raise RuntimeError("fake torch: NVTX broken on purpose")
    return _push(msg)


def _push(msg):
    """The NVTX profiler's own push (C++ in torch, not torch.cuda.nvtx)."""
    events.append(("push", msg))
    c = _cupti()
    if c is not None:
        c.fake_cupti_nvtx_push(_keep(msg))
    return len(events)


def range_pop():
    events.append(("pop", None))
    c = _cupti()
    if c is not None:
        c.fake_cupti_nvtx_pop()
    return 0


_texts = {}


def _keep(msg):
    return _texts.setdefault(msg, ctypes.c_char_p(msg.encode()))
