#!/usr/bin/env python3
"""One measurement of the collector-overhead benchmark: torchvision MobileNetV2
under DDP (channels_last, fp16 autocast, pinned input, batch 128 per GPU,
224x224 synthetic data). Warms up, then times steady-state steps for
--seconds and appends one JSON line to --out (rank 0 only).

--torch-profiler wraps the timed steps in torch.profiler with CPU and CUDA
activities (its trace is not exported: export time is not training time)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True)
    p.add_argument("--rep", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--torch-profiler", action="store_true")
    a = p.parse_args()

    dist.init_process_group("nccl")
    rank, world, local = dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.mobilenet_v2(num_classes=1000).cuda().to(memory_format=torch.channels_last)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    # Pinned host batches, copied each step as a real input pipeline would.
    host_x = [torch.randn(a.batch, 3, 224, 224).pin_memory() for _ in range(2)]
    host_y = [torch.randint(0, 1000, (a.batch,)).pin_memory() for _ in range(2)]

    def step(i):
        torch.cuda.nvtx.range_push("train_step")
        x = host_x[i % 2].cuda(non_blocking=True).to(memory_format=torch.channels_last)
        y = host_y[i % 2].cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        torch.cuda.nvtx.range_pop()

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    dist.barrier()

    prof = None
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    # Every rank runs the same number of steps: rank 0 decides when time is up.
    steps = 0
    t0 = time.perf_counter()
    stop = torch.zeros(1, device="cuda")
    while True:
        for _ in range(10):
            step(steps)
            steps += 1
        if rank == 0 and time.perf_counter() - t0 >= a.seconds:
            stop.fill_(1)
        dist.broadcast(stop, 0)
        if stop.item() > 0:
            break
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    if prof is not None:
        prof.__exit__(None, None, None)  # stops tracing; no export
    if rank == 0:
        with open(a.out, "a") as f:
            f.write(json.dumps({"mode": a.mode, "rep": a.rep, "steps": steps, "seconds": elapsed,
                                "images_per_s": steps * a.batch * world / elapsed, "world": world}) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
