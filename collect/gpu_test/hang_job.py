"""A job that hangs on the GPU in the middle of a collective, for the hang
report's check on one GPU (docs/collector.md, "When a job hangs").

World size 1 by default (no torchrun needed). Each step is an NVTX range
"ProfilerStep#N" around a small matmul and one all-reduce. At step HANG_AT
(default 30) a GPU kernel that spins for about an hour is queued before the
all-reduce, so the all-reduce's kernel never runs and the host blocks in the
synchronize after it: NCCL's call itself has returned (it only queues the
kernel), the step never ends. Run under `scalescope profile --hang-after`
and end it with a timeout's SIGTERM.
"""
import faulthandler
import os
import signal

import torch
import torch.distributed as dist

HANG_AT = int(os.environ.get("HANG_AT", "30"))  # -1: never
STEPS = int(os.environ.get("STEPS", "10000"))


def main():
    # SIGUSR1 prints every thread's Python stack: where a hung job waits.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    a = torch.randn(1024, 1024, device="cuda")
    x = torch.ones((1 << 20) + 7, device="cuda")
    for step in range(STEPS):
        torch.cuda.nvtx.range_push(f"ProfilerStep#{step}")
        a = a @ a
        a = a / a.norm()
        if step == HANG_AT:
            print(f"step {step}: blocking the GPU before all-reduce #{step + 1}", flush=True)
            torch.cuda._sleep(1 << 62)  # spins far longer than any timeout
        dist.all_reduce(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
