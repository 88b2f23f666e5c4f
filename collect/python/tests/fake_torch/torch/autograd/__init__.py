from . import profiler  # noqa: F401

_seq = [0]


def _op(name, kernel, x):
    """One operator: its NVTX range while the NVTX profiler is on, and its kernel."""
    from .. import cuda

    _seq[0] += 1
    on = profiler._nvtx_profiler_on
    if on:
        cuda.nvtx._push("%s, seq = %d" % (name, _seq[0]))
    cuda._launch(kernel)
    if on:
        cuda.nvtx.range_pop()
    return x


def backward(tag="fake"):
    """A backward pass: one operator charged by sequence number to the last forward."""
    from .. import cuda

    on = profiler._nvtx_profiler_on
    if on:
        cuda.nvtx._push("AddmmBackward0, seq = %d" % _seq[0])
    cuda._launch("fake_gemm_backward_kernel")
    if on:
        cuda.nvtx.range_pop()
