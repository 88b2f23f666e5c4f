"""Shared pieces of the scalescope reference workloads.

Distributed set-up (torchrun or a single process), MLPerf-style log lines, a
per-iteration timer built on CUDA events, the NVTX step ranges that scalescope's
iteration detection recognises, and the one-line parseable summary.
"""

import json
import os
import sys
import time

# Multicast (NVLS) is unavailable on the lent H200 machines and hangs NCCL and
# symmetric-memory initialisation there. Set before torch.distributed starts; a
# value the user exported wins.
for _key, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_key, _value)

import torch  # noqa: E402  (after the environment above on purpose)
import torch.distributed as dist  # noqa: E402


class WorkloadError(Exception):
    """A bad input or environment: printed as one line, exit status 2."""


def fail(message):
    raise WorkloadError(message)


def run_main(main):
    """Runs main(), turning WorkloadError into one line on stderr and exit 2."""
    try:
        main()
    except WorkloadError as e:
        print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


class Dist:
    """The process's place in the job. Without torchrun it is rank 0 of 1 and
    no process group is created, so the workload also runs as a plain script."""

    def __init__(self, device_kind):
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if device_kind == "auto":
            device_kind = "cuda" if torch.cuda.is_available() else "cpu"
        if device_kind == "cuda":
            if not torch.cuda.is_available():
                fail("--device cuda: no CUDA device is visible (use --device cpu for a smoke test)")
            if self.local_rank >= torch.cuda.device_count():
                fail(f"LOCAL_RANK {self.local_rank} but only {torch.cuda.device_count()} CUDA devices are visible")
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        self.is_cuda = self.device.type == "cuda"
        self.enabled = self.world_size > 1
        if self.enabled:
            # gloo is only for CPU smoke tests; GPU runs use NCCL.
            backend = "nccl" if self.is_cuda else "gloo"
            kwargs = {"backend": backend}
            if self.is_cuda:
                kwargs["device_id"] = self.device  # binds the communicator eagerly (torch >= 2.3)
            try:
                dist.init_process_group(**kwargs)
            except TypeError:
                kwargs.pop("device_id", None)
                dist.init_process_group(**kwargs)

    @property
    def is_main(self):
        return self.rank == 0

    def barrier(self):
        if self.enabled:
            if self.is_cuda:
                dist.barrier(device_ids=[self.local_rank])
            else:
                dist.barrier()

    def all_reduce_max(self, value):
        if not self.enabled:
            return float(value)
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def all_reduce_sum(self, value):
        if not self.enabled:
            return float(value)
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return float(t.item())

    def close(self):
        if self.enabled:
            dist.destroy_process_group()

    def finish(self, exit_code):
        """Ends the process. A CPU (gloo) job leaves through os._exit: with
        torch 1.13, tearing down the gloo process group at interpreter exit can
        deadlock (the main thread joins a gloo thread that waits for the GIL).
        GPU jobs exit normally so the collector's exit handlers still run."""
        sys.stdout.flush()
        sys.stderr.flush()
        if self.enabled and not self.is_cuda:
            os._exit(exit_code)
        sys.exit(exit_code)


class MLLogger:
    """MLPerf-style ':::MLLOG {json}' lines, printed by rank 0 only, in the
    layout of the MLPerf logging library so scalescope's MLLOG parser reads them."""

    def __init__(self, is_main, source_file):
        self.is_main = is_main
        self.file = os.path.basename(source_file)

    def _emit(self, event_type, key, value, metadata):
        if not self.is_main:
            return
        meta = {"file": self.file, "lineno": sys._getframe(2).f_lineno}
        meta.update(metadata or {})
        record = {"namespace": "", "time_ms": int(time.time() * 1000), "event_type": event_type,
                  "key": key, "value": value, "metadata": meta}
        print(":::MLLOG " + json.dumps(record), flush=True)

    def event(self, key, value=None, metadata=None):
        self._emit("POINT_IN_TIME", key, value, metadata)

    def start(self, key, value=None, metadata=None):
        self._emit("INTERVAL_START", key, value, metadata)

    def end(self, key, value=None, metadata=None):
        self._emit("INTERVAL_END", key, value, metadata)


class StepTimer:
    """Per-iteration times without a host synchronisation each step: a CUDA
    event is recorded at the start of every step and all are read once at the
    end (on CPU, host clocks). Steps before warmup are excluded from the
    steady-state figures (cudnn autotuning, allocator growth, NCCL set-up)."""

    def __init__(self, is_cuda, warmup_steps):
        self.is_cuda = is_cuda
        self.warmup_steps = warmup_steps
        self.marks = []

    def mark(self):
        if self.is_cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.marks.append(e)
        else:
            self.marks.append(time.perf_counter())

    def step_times_ms(self):
        """Durations of the steps after warmup, in ms (needs one mark after the last step)."""
        if self.is_cuda:
            torch.cuda.synchronize()
            times = [a.elapsed_time(b) for a, b in zip(self.marks, self.marks[1:])]
        else:
            times = [(b - a) * 1000.0 for a, b in zip(self.marks, self.marks[1:])]
        return times[self.warmup_steps:]


def percentile(values, q):
    """Linear-interpolated percentile of a non-empty list, q in [0, 100]."""
    s = sorted(values)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


class StepRange:
    """NVTX range 'ProfilerStep#N' around one iteration: the name PyTorch's
    profiler uses, which scalescope's iteration detection recognises. With
    emit_nvtx, PyTorch also emits one NVTX range per operator inside the step
    (torch.autograd.profiler.emit_nvtx), so that `scalescope analyze` shows GPU
    time by operator for a collector trace (docs/attribution.md)."""

    def __init__(self, is_cuda, step, emit_nvtx=False):
        self.is_cuda = is_cuda
        self.step = step
        self.operators = torch.autograd.profiler.emit_nvtx() if (is_cuda and emit_nvtx) else None

    def __enter__(self):
        if self.is_cuda:
            torch.cuda.nvtx.range_push(f"ProfilerStep#{self.step}")
        if self.operators is not None:
            self.operators.__enter__()
        return self

    def __exit__(self, *exc):
        if self.operators is not None:
            self.operators.__exit__(*exc)
        if self.is_cuda:
            torch.cuda.nvtx.range_pop()
        return False


def add_emit_nvtx_option(parser):
    parser.add_argument("--emit-nvtx", action="store_true",
                        help="one NVTX range per PyTorch operator in each step (torch.autograd.profiler.emit_nvtx): "
                             "GPU time by operator in `scalescope analyze` of a collector trace; adds host overhead")


def peak_memory_mib(dist_info):
    """(allocated, reserved) peak GPU memory in MiB, the maximum over ranks."""
    if not dist_info.is_cuda:
        return float("nan"), float("nan")
    alloc = torch.cuda.max_memory_allocated(dist_info.device) / 2**20
    reserved = torch.cuda.max_memory_reserved(dist_info.device) / 2**20
    return dist_info.all_reduce_max(alloc), dist_info.all_reduce_max(reserved)


def format_summary(workload, fields):
    """The one-line result: 'scalescope_result workload=NAME key=value ...'.
    Values never contain spaces, so a regex such as
    'throughput_images_per_s=([0-9.]+)' extracts any field."""
    parts = [f"scalescope_result workload={workload}"]
    for key, value in fields.items():
        if isinstance(value, float):
            text = "nan" if value != value else f"{value:.4f}"
        else:
            text = str(value).replace(" ", "_")
        parts.append(f"{key}={text}")
    return " ".join(parts)


def autocast_dtype(precision):
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)


def make_grad_scaler(enabled):
    """GradScaler across torch versions (torch.amp.GradScaler since 2.3)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)
