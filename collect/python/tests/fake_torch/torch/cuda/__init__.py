"""torch.cuda over the fake CUPTI (FAKE_TORCH_CUPTI=1), or nothing at all."""
import ctypes
import os
import time

from . import nvtx  # noqa: F401

_cupti = None
_loaded = False


def _init():
    """CUDA's start: loads the collector named by CUDA_INJECTION64_PATH and calls it."""
    global _cupti, _loaded
    if _loaded:
        return _cupti
    _loaded = True
    if os.environ.get("FAKE_TORCH_CUPTI") != "1":
        return None
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return None
    collector = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    _cupti = ctypes.CDLL("libcupti.so.13", mode=os.RTLD_NOLOAD)
    collector.InitializeInjection()
    return _cupti


def _launch(kernel):
    cupti = _init()
    if cupti is None:
        return
    now = time.monotonic_ns()
    name = _names.setdefault(kernel, ctypes.c_char_p(kernel.encode()))
    cupti.fake_cupti_named_launch(name, ctypes.c_uint64(now), ctypes.c_uint64(now + 50000), 0)


_names = {}  # kept alive: the fake CUPTI keeps the pointer


def synchronize():
    pass


def is_available():
    return os.environ.get("FAKE_TORCH_CUPTI") == "1"
