#!/usr/bin/env python3
"""One job of the collector-overhead benchmark: torchvision MobileNetV2 under
DDP (channels_last, fp16 autocast, pinned input, batch 128 per GPU, 224x224
synthetic data). After warm-up it times PAIRS pairs of blocks, one "off" and
one "on" block per pair, in ABBA order (off,on / on,off / ...) so that slow
drift cancels within a pair. What "on" means depends on --on:

  cuda-profiler   torch.cuda.profiler.start()/stop() around the block (the job
                  runs under `scalescope profile --capture-range cudaProfilerApi`)
  torch-profiler  a torch.profiler.profile(CPU+CUDA) around the block
  nothing         both blocks identical (the control: the method's own noise)

--control-pairs N first times N pairs of identical blocks (before anything
touches CUPTI), so one uninjected job gives the control and torch.profiler.
--lead-blocks N then times N "off" blocks before the first window (records
with "lead": true), the job's own speed before any window to compare its
later "off" blocks with: the cost outside a window, measured inside one
process instead of against another job.

Each block appends one JSON line to --out (rank 0): job, mode, pair, on,
steps, seconds, images/s, and the process CPU time of rank 0 during the block
(all threads: CUPTI's and the collector's included). Window start/stop costs
are timed apart from the blocks (start_s, stop_s). Every step is one NVTX
range "train_step", so a trace can be checked to hold exactly the on-blocks'
steps. The block length adapts so that all pairs end by --end-time."""
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
    p.add_argument("--job", required=True, help="job label (mode name)")
    p.add_argument("--on", choices=["cuda-profiler", "torch-profiler", "nothing"], required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--control-pairs", type=int, default=0)
    p.add_argument("--lead-blocks", type=int, default=2)
    p.add_argument("--block-seconds", type=float, default=3.0, help="longest block")
    p.add_argument("--min-block-seconds", type=float, default=1.0)
    p.add_argument("--end-time", type=float, default=0, help="unix time by which the timed blocks must end")
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--batch", type=int, default=128)
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

    # Block length: what fits before --end-time, decided by rank 0 before
    # every block from the time left, the blocks left and the window switch
    # costs seen so far (torch.profiler's stop converts its events: seconds).
    total_blocks = 2 * (a.pairs + a.control_pairs) + a.lead_blocks
    switched_blocks = 0 if a.on == "nothing" else a.pairs
    block_s = torch.zeros(1, dtype=torch.float64, device="cuda")
    switch_costs = []
    done_blocks = 0
    done_switched = 0

    def next_block_seconds():
        if rank == 0:
            length = a.block_seconds
            if a.end_time > 0:
                guess = 3.0 if a.on == "torch-profiler" else 0.2
                per_switch = sum(switch_costs) / len(switch_costs) if switch_costs else guess
                left = a.end_time - time.time() - (switched_blocks - done_switched) * per_switch
                length = min(a.block_seconds, left / max(1, total_blocks - done_blocks) - 0.3)
            block_s[0] = max(a.min_block_seconds, length)
        dist.broadcast(block_s, 0)
        return float(block_s.item())

    stop = torch.zeros(1, device="cuda")
    steps_total = 0
    on_steps = 0

    def timed_block(block_seconds):
        # Every rank runs the same number of steps: rank 0 decides when time is up.
        nonlocal steps_total
        steps = 0
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        stop.zero_()
        while True:
            for _ in range(10):
                step(steps_total)
                steps += 1
                steps_total += 1
            if rank == 0 and time.perf_counter() - t0 >= block_seconds:
                stop.fill_(1)
            dist.broadcast(stop, 0)
            if stop.item() > 0:
                break
        torch.cuda.synchronize()
        return steps, time.perf_counter() - t0, time.process_time() - cpu0

    prof = None

    def switch(on):
        nonlocal prof
        t = time.perf_counter()
        if a.on == "cuda-profiler":
            torch.cuda.synchronize()
            (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()
        elif a.on == "torch-profiler":
            from torch.profiler import ProfilerActivity, profile
            if on:
                prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                prof.__enter__()
            else:
                prof.__exit__(None, None, None)  # stops tracing; no export (not training time)
                prof = None
        return time.perf_counter() - t

    def run_pairs(mode, pairs, on_kind):
        nonlocal on_steps, done_blocks, done_switched
        for pair in range(pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for on in order:
                start_s = stop_s = 0.0
                block_seconds = next_block_seconds()
                dist.barrier()
                if on and on_kind != "nothing":
                    start_s = switch(True)
                steps, seconds, cpu = timed_block(block_seconds)
                if on and on_kind != "nothing":
                    stop_s = switch(False)
                    switch_costs.append(start_s + stop_s)
                    done_switched += 1
                done_blocks += 1
                if on:
                    on_steps += steps
                if rank == 0:
                    with open(a.out, "a") as f:
                        f.write(json.dumps({
                            "job": a.job, "mode": mode, "pair": pair, "on": on, "steps": steps,
                            "seconds": seconds, "images_per_s": steps * a.batch * world / seconds,
                            "cpu_s": cpu, "start_s": start_s, "stop_s": stop_s, "world": world,
                            "block_seconds": block_seconds, "unix_end": time.time()}) + "\n")

    if a.control_pairs:
        run_pairs("none", a.control_pairs, "nothing")
        on_steps = 0  # the control's "on" blocks are not traced by anything
    for _ in range(a.lead_blocks):
        dist.barrier()
        steps, seconds, cpu = timed_block(next_block_seconds())
        done_blocks += 1
        if rank == 0:
            with open(a.out, "a") as f:
                f.write(json.dumps({
                    "job": a.job, "mode": a.job, "pair": -1, "on": False, "lead": True, "steps": steps,
                    "seconds": seconds, "images_per_s": steps * a.batch * world / seconds, "cpu_s": cpu,
                    "start_s": 0.0, "stop_s": 0.0, "world": world, "block_seconds": seconds,
                    "unix_end": time.time()}) + "\n")
    run_pairs(a.job, a.pairs, a.on)
    if rank == 0:
        with open(a.out, "a") as f:
            f.write(json.dumps({"job": a.job, "summary": True, "on_steps_per_rank": on_steps,
                                "on_blocks": a.pairs}) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
