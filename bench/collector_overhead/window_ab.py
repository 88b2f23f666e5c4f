#!/usr/bin/env python3
"""In-process ABBA blocks of one workload step: the cost of an open
collector window inside one process, free of process-to-process noise.

  python3 window_ab.py --workload mobilenet|lora --job LABEL --on cuda-profiler|nothing --out FILE.jsonl

The step is the workload's own: workloads/image_ddp.py's MobileNetV2
(channels-last, fp16 autocast, batch 128, 224x224, synthetic input, GPU
loader; launch-bound) or workloads/llm_finetune.py's LoRA step (1b, seq 512,
batch 8 unless --lora-seq/--lora-batch say otherwise), built by those modules'
functions. After --warmup steps
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
seconds, ms per step, the process CPU seconds during the block (every
thread: CUPTI's and the collector's too), the same split by thread
(thread_cpu_ns: schedstat's on-CPU time, read just outside the timed span,
by thread name, "main" for the main thread), the block's CLOCK_MONOTONIC
start and end (mono_ns), and each step's own time (step_ms:
host clock from the end of one step to the end of the next; MobileNetV2's
GradScaler reads a flag back every step, so on that launch-bound step the
host clock is the step time).

--steps-only N times N consecutive steps and nothing else (one JSON line with
every step's time and the start-up: from --launch-epoch, the shell's clock
when it started the process, to the first step), for whole-process rounds
under the default sampled `profile`. --cpus LIST pins the process (every
thread it starts later inherits the mask) to fixed cores, the same for every
mode. --fake-step-ms MS replaces the workload by a sleep of about MS per step
(no torch, no GPU: to test the scripts' logic on a CPU machine; the "on" blocks
and FAKE_PROFILED=1's iterations 10-29 take --fake-cost longer)."""
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


def lora_step(batch=8, seq=512):
    import torch
    import llm_finetune as w
    import workload_common as wc
    args = w.parse_args(["--method", "lora", "--batch-size", str(batch), "--seq-len", str(seq)])
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


def fake_step(ms, cost, profiled):
    """A CPU stand-in for a step: sleeps about MS (with a little noise),
    longer by COST inside an "on" block or, with FAKE_PROFILED=1, in the
    default schedule's window (iterations 10-29)."""
    import random
    rng = random.Random(1)
    state = {"on": False}

    def step(i):
        slow = state["on"] or (profiled and 10 <= i < 30)
        time.sleep(ms / 1000.0 * (1 + (cost if slow else 0)) * rng.uniform(0.97, 1.03))
    return step, state


class FakeTorch:
    """What the driver calls of torch, for --fake-step-ms."""

    def __init__(self, state):
        class Cuda:
            class profiler:
                @staticmethod
                def start():
                    state["on"] = True

                @staticmethod
                def stop():
                    state["on"] = False

            @staticmethod
            def synchronize():
                pass
        self.cuda = Cuda


def thread_cpu_ns():
    """On-CPU nanoseconds of every thread of this process (schedstat's first
    field), summed by thread: "main" for the main thread, else its name
    (comm). The collector's threads inherit the main thread's name, so they
    are "python3" here; torch's autograd threads are "pt_autograd_N"."""
    out = {}
    pid = os.getpid()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
        key = "main" if int(tid) == pid else name
        out[key] = out.get(key, 0) + ns
    return out


def cpu_delta(before, after):
    """Per thread name, the CPU nanoseconds of a block (a thread born inside it counts from 0)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


def parse_cpus(text):
    """'2-9' or '2,3,8-11' -> {2, ..., 9}."""
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def steps_only(a, torch, step):
    """--steps-only: every step timed, no blocks, no pauses."""
    t_first = time.time()
    c0 = time.process_time()
    times = []
    last = time.perf_counter()
    for i in range(a.steps_only):
        step(i)
        now = time.perf_counter()
        times.append(1000.0 * (now - last))
        last = now
    torch.cuda.synchronize()
    t_end = time.time()
    row = {"job": a.job, "workload": a.workload, "round": a.round, "steps": a.steps_only, "step_ms": times,
           "launch_epoch": a.launch_epoch, "first_step_epoch": t_first, "last_step_epoch": t_end,
           "startup_s": (t_first - a.launch_epoch) if a.launch_epoch else None,
           "cpu_seconds": time.process_time() - c0, "cpus": sorted(os.sched_getaffinity(0))}
    with open(a.out, "a") as out:
        out.write(json.dumps(row) + "\n")
    print(f"window_ab {a.job}: {a.steps_only} steps, median {sorted(times)[len(times) // 2]:.2f} ms", flush=True)


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
    p.add_argument("--cpus", default="", help="pin to these cores, e.g. 2-9 (default: not pinned)")
    p.add_argument("--steps-only", type=int, default=0)
    p.add_argument("--round", type=int, default=0)
    p.add_argument("--launch-epoch", type=float, default=0.0)
    p.add_argument("--fake-step-ms", type=float, default=0.0)
    p.add_argument("--fake-cost", type=float, default=0.1)
    p.add_argument("--lora-batch", type=int, default=8, help="LoRA sequences per step (llm_finetune's default 8)")
    p.add_argument("--lora-seq", type=int, default=512, help="LoRA sequence length (llm_finetune's default 512)")
    a = p.parse_args()

    if a.cpus:
        os.sched_setaffinity(0, parse_cpus(a.cpus))  # before torch starts any thread
    if a.fake_step_ms > 0:
        step, state = fake_step(a.fake_step_ms, a.fake_cost, os.environ.get("FAKE_PROFILED") == "1")
        torch = FakeTorch(state)
    else:
        import torch
        step = mobilenet_step() if a.workload == "mobilenet" else lora_step(a.lora_batch, a.lora_seq)
    if a.steps_only:
        steps_only(a, torch, step)
        return
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
                th0 = thread_cpu_ns()
                m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                c0, t0 = time.process_time(), time.perf_counter()
                step_ms, last = [], t0
                for _ in range(a.block_steps):
                    step(i)
                    i += 1
                    now = time.perf_counter()
                    step_ms.append(1000.0 * (now - last))
                    last = now
                torch.cuda.synchronize()
                t1, c1 = time.perf_counter(), time.process_time()
                m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                th1 = thread_cpu_ns()
                if on and a.on == "cuda-profiler":
                    torch.cuda.profiler.stop()
                out.write(json.dumps({"job": a.job, "workload": a.workload, "pair": pair, "on": on,
                                      "steps": a.block_steps, "seconds": t1 - t0,
                                      "ms_per_step": 1000.0 * (t1 - t0) / a.block_steps,
                                      "cpu_seconds": c1 - c0, "step_ms": step_ms,
                                      "mono_ns": [m0, m1], "thread_cpu_ns": cpu_delta(th0, th1),
                                      "cpus": len(os.sched_getaffinity(0))}) + "\n")
                out.flush()
    print(f"window_ab {a.job}: {a.pairs} pairs of {a.block_steps} steps, {i} steps in all", flush=True)


if __name__ == "__main__":
    main()
