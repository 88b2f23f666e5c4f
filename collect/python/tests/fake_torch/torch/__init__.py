"""A fake torch for the bootstrap's tests on machines without PyTorch or a GPU.

It has what the bootstrap hooks, with torch's names and call order: the
global optimizer step post-hooks, global module forward hooks, the NVTX
operator profiler (autograd.profiler.emit_nvtx), torch.cuda.nvtx and
torch.distributed's state. Over the fake CUPTI (FAKE_TORCH_CUPTI=1) a
module's forward "launches" a kernel and NVTX goes to the fake CUPTI, and
the first launch loads the collector as CUDA would (CUDA_INJECTION64_PATH).

Switches (environment), each one failure the bootstrap must survive:
  FAKE_TORCH_IMPORT_ERROR=1     `import torch` raises ImportError
  FAKE_TORCH_NO_STEP_HOOK=1     no global optimizer step hook (torch < 2.0)
  FAKE_TORCH_NVTX_PROFILER_BUSY=1  turning the NVTX profiler on raises (another profiler)
  FAKE_TORCH_NVTX_FAILS=1       torch.cuda.nvtx.range_push raises
"""
import os

if os.environ.get("FAKE_TORCH_IMPORT_ERROR") == "1":
    raise ImportError("fake torch: broken on purpose")

__version__ = "2.99.0+fake"

from . import autograd, cuda, distributed, nn, optim  # noqa: E402,F401
