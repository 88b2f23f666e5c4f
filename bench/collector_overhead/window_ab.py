#!/usr/bin/env python3
"""In-process ABBA blocks of one workload step (issue 23): the cost of an open
collector window inside one process, free of process-to-process noise.

  python3 window_ab.py --workload mobilenet|lora --job LABEL --on cuda-profiler|nothing --out FILE.jsonl

The step is the workload's own: workloads/image_ddp.py's MobileNetV2
(channels-last, fp16 autocast, batch 128, 224x224, synthetic input, GPU
loader; launch-bound) or workloads/llm_finetune.py's LoRA step (1b, seq 512,
batch 8; GPU-bound), built by those modules' functions. After --warmup steps
it times --pairs pairs of blocks of --block-steps steps, "off" then "on" in
even pairs and "on" then "off" in odd ones (ABBA), so linear drift cancels
within two pairs. "on" is torch.cuda.profiler.start()/stop() around the block
(the job runs under `scalescope profile --capture-range cudaProfilerApi`, so
the block is one collector window); with --on nothing both blocks are alike
(the uninjected control: the method's own noise). The start and stop calls
lie outside the timed span (start, synchronize, clock, steps, synchronize,
clock, stop). Before every block, on or off alike, the driver sleeps --pause
seconds and runs 2 untimed steps, so that a window's CUPTI detach (0.5 s
after the stop, at that thread's next API call) and the attach again happen
before the next timed block.

Each block appends one JSON line to --out: job, workload, pair, on, steps,
seconds, ms per step, and the process CPU seconds during the block (every
thread: CUPTI's and the collector's too)."""
import argparse
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
# workloads/ of the checkout: beside bench/, or under the working directory
# (the script travels to the GPU machine in a folder of its own).
for d in (os.path.join(os.getcwd(), "workloads"), os.path.join(here, "..", "..", "workloads")):
    if os.path.isfile(os.path.join(d, "image_ddp.py")):
        sys.path.insert(0, d)
        break


def mobilenet_step():
    import torch
    import torch.nn as nn
    import image_ddp as w
    import workload_common as wc
    args = w.parse_args(["--synthetic", "--channels-last", "on", "--precision", "fp16", "--batch-size", "128",
                         "--image-size", "224", "--loader", "gpu", "--eval", "off", "--max-train-samples", "12800"])
    dist_info = wc.Dist(args.device)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    train_x, train_y = w.load_split(args, "train", args.max_train_samples)
    loader = w.GpuLoader(args, train_x, train_y, dist_info)
    model = w.build_model(args, dist_info)
    opt, sched, _ = w.build_optimizer(args, model, 10 ** 6, args.batch_size)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    amp = wc.autocast_dtype(args.precision)
    scaler = wc.make_grad_scaler(True)
    state = {"batches": loader.epoch(0), "epoch": 0, "left": len(loader)}

    def step(i):
        if state["left"] == 0:
            state["batches"].close()
            state["epoch"] += 1
            state["batches"], state["left"] = loader.epoch(state["epoch"]), len(loader)
        state["left"] -= 1
        with wc.StepRange(True, i):
            x, y = next(state["batches"])
            with torch.autocast(device_type="cuda", dtype=amp):
                out = model(x)
            loss = criterion(out.float(), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
    return step


def lora_step():
    import torch
    import llm_finetune as w
    import workload_common as wc
    args = w.parse_args(["--method", "lora"])
    dist_info = wc.Dist(args.device)
    device = dist_info.device
    base, vocab = w.build_base(args, device)
    model, _ = w.setup_method(args, base)
    del base
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=w.kDefaultLr["lora"],
                            weight_decay=0.0)
    data = w.TokenSource(args, vocab, device, 0)

    def step(i):
        with wc.StepRange(True, i):
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                tokens = data.lm_batch(args.batch_size)
                loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", choices=["mobilenet", "lora"], required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--on", choices=["cuda-profiler", "nothing"], required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--block-steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=15)
    p.add_argument("--pause", type=float, default=0.7)
    a = p.parse_args()

    import torch
    step = mobilenet_step() if a.workload == "mobilenet" else lora_step()
    i = 0
    for _ in range(a.warmup):
        step(i)
        i += 1
    torch.cuda.synchronize()

    with open(a.out, "a") as out:
        for pair in range(a.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for on in order:
                time.sleep(a.pause)
                for _ in range(2):  # untimed: lets a pending detach happen at an API call
                    step(i)
                    i += 1
                torch.cuda.synchronize()
                time.sleep(0.05)  # the encoder thread's attach again
                if on and a.on == "cuda-profiler":
                    torch.cuda.profiler.start()
                torch.cuda.synchronize()
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(a.block_steps):
                    step(i)
                    i += 1
                torch.cuda.synchronize()
                t1, c1 = time.perf_counter(), time.process_time()
                if on and a.on == "cuda-profiler":
                    torch.cuda.profiler.stop()
                out.write(json.dumps({"job": a.job, "workload": a.workload, "pair": pair, "on": on,
                                      "steps": a.block_steps, "seconds": t1 - t0,
                                      "ms_per_step": 1000.0 * (t1 - t0) / a.block_steps,
                                      "cpu_seconds": c1 - c0}) + "\n")
                out.flush()
    print(f"window_ab {a.job}: {a.pairs} pairs of {a.block_steps} steps, {i} steps in all", flush=True)


if __name__ == "__main__":
    main()
