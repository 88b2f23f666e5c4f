#!/usr/bin/env python3
"""GPU checks of the Python bootstrap (docs/collector.md "The Python
bootstrap") on one GPU, with PyTorch and torchvision, synthetic data, in
about 6 minutes on one H200:

  python3 bench/python_bootstrap/check.py all --scalescope build/cli/scalescope --out "$OUT"

1. cost: a plain launch-bound MobileNetV2 loop (fp16 autocast, channels-last,
   batch 128, no NVTX, no torch.profiler), alternately under the default
   `scalescope profile` and with no profiler, ROUNDS rounds of STEPS steps
   each (default 5 x 1000). Per round: the process's wall time and the
   median step time after 50 steps; the profiled run's sampling facts
   (iteration marker, iterations traced). Figure: the median over rounds of
   profiled/plain - 1 for both.
2. outside windows, in one process: the same loop under `profile` with no
   window after the first mark (--skip-iterations beyond the run), the
   bootstrap's optimizer hook taken out of torch's global hook table and put
   back in alternate blocks (ABBA); figure: median step time with the hook
   against without it.
3. loader: a DataLoader-bound ResNet-18 (2 workers, a costly numpy
   __getitem__, 66 steps) under `profile --full`, with and without the
   bootstrap (--no-python); figure: the iterations `analyze` finds against
   the 66 steps run, and the loader-bound finding's evidence.
4. operators: the plain MobileNetV2 loop's top 10 operators by self GPU
   time from torch.profiler key_averages() (steps 10 to 29) against
   `analyze`'s operators of the default sampled window (the same steps), per
   step; and the module ranges present.

Everything goes to --out: results.json (every figure with its raw values),
summary.txt (one line per check), the run directories and logs. The job
modes (`job mobilenet|launches|gpubound|loader|ops|ab`) are what the driver runs; each prints
one JSON line.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)


# ---------------------------------------------------------------- the jobs


def mobilenet_setup(torch):
    import torchvision

    model = torchvision.models.mobilenet_v2().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(128, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()  # reads the inf flag back: the host waits for the step

    return step


def launches_setup(torch):
    """A launch-bound step: about 600 tiny kernels (a chain of elementwise ops,
    its backward, an SGD step) and a synchronize. The host issues every kernel,
    so whatever a profiler leaves on the launch path shows in its time."""
    p = torch.nn.Parameter(torch.ones(1024, device="cuda"))
    opt = torch.optim.SGD([p], lr=1e-6)

    def step():
        opt.zero_grad(set_to_none=True)
        x = p
        for _ in range(100):
            x = x * 1.0001 + 0.0001
        x.sum().backward()
        opt.step()
        torch.cuda.synchronize()

    return step


def gpubound_setup(torch):
    """A GPU-bound step: four 6144-wide bf16 layers on 6144 rows, forward,
    backward and an SGD step (about 5.6 TFLOP, some 30 kernels), then a
    synchronize. The GPU's time decides the step, so runs in separate
    processes agree to a fraction of a percent and a residue of a profiler
    on the GPU side (serialized or still-recorded kernels) would show."""
    width = 6144
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.GELU())])
    model = model.cuda().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    x = torch.randn(width, width, device="cuda", dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).float().square().mean().backward()
        opt.step()
        torch.cuda.synchronize()

    return step


def job_mobilenet(args):
    t0 = time.monotonic()
    import torch

    step = {"launches": launches_setup, "gpubound": gpubound_setup}.get(args.mode, mobilenet_setup)(torch)
    times = []
    last = time.perf_counter()
    for _ in range(args.steps):
        step()
        now = time.perf_counter()
        times.append((now - last) * 1e3)
        last = now
    torch.cuda.synchronize()
    print(json.dumps({"steps": args.steps, "step_ms": times, "process_s": time.monotonic() - t0}))


def job_ab(args):
    import torch
    from torch.optim import optimizer as optim_mod

    step = mobilenet_setup(torch)
    for _ in range(30):
        step()
    table = optim_mod._global_optimizer_post_hooks
    ours = [(k, h) for k, h in table.items() if type(h).__module__.startswith("scalescope_bootstrap")]
    if len(ours) != 1:
        print(json.dumps({"error": "the bootstrap's optimizer hook is not installed (run under scalescope profile)"}))
        return
    key, hook = ours[0]
    blocks = []
    for b in range(args.blocks):
        on = (b % 4) in (1, 2)  # off on on off: ABBA
        if on:
            table[key] = hook
        else:
            table.pop(key, None)
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(args.block_steps):
            step()
        torch.cuda.synchronize()
        blocks.append({"on": on, "ms_per_step": (time.perf_counter() - t) * 1e3 / args.block_steps})
    table[key] = hook
    print(json.dumps({"blocks": blocks}))


class CostlyDataset:
    """Synthetic images made on the CPU at a cost (a few numpy passes), as a
    decoding and augmenting __getitem__ would be."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        import numpy as np

        rng = np.random.default_rng(i)
        img = rng.random((3, 224, 224), dtype=np.float32)
        for _ in range(6):
            img = np.sqrt(img * img + 0.5) - 0.25
        return img, int(i % 1000)


def job_loader(args):
    import torch
    import torchvision

    model = torchvision.models.resnet18().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(CostlyDataset(), batch_size=64, num_workers=2, pin_memory=True)
    steps = 0
    for x, y in loader:
        x, y = torch.as_tensor(x).cuda(non_blocking=True), torch.as_tensor(y).cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
        if steps == args.steps:
            break
    torch.cuda.synchronize()
    print(json.dumps({"steps": steps}))


def job_ops(args):
    import torch

    step = mobilenet_setup(torch)
    if not args.torch_profiler:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        print(json.dumps({"steps": args.steps}))
        return
    from torch.profiler import ProfilerActivity, profile, schedule

    # The same steps as the sampled window: 10 skipped, 20 recorded.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=9, warmup=1, active=20, repeat=1)) as prof:
        for _ in range(args.steps):
            step()
            prof.step()
    torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        # Operators only: key_averages() also lists each kernel as a row of its
        # own (device_type CUDA) and the ProfilerStep#N annotations.
        if not str(getattr(e, "device_type", "CPU")).endswith("CPU") or e.key.startswith("ProfilerStep"):
            continue
        ns = getattr(e, "self_device_time_total", None)
        if ns is None:
            ns = getattr(e, "self_cuda_time_total", 0)
        if ns > 0:
            rows.append({"name": e.key, "self_gpu_ns": ns * 1e3, "calls": e.count})
    rows.sort(key=lambda r: -r["self_gpu_ns"])
    print(json.dumps({"steps": 20, "operators": rows[:40]}))


# ---------------------------------------------------------------- helpers


def last_json_line(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in the job's output")


def relative(a, b):
    return a / b - 1 if b else float("nan")


def compare_operators(torch_rows, ours_rows, steps_torch, steps_ours, top=10):
    """torch.profiler's top operators by self GPU time against ours, per step."""
    ours = {r["name"]: r["self_gpu_ns"] / steps_ours for r in ours_rows}
    out = []
    for r in torch_rows[:top]:
        t = r["self_gpu_ns"] / steps_torch
        o = ours.get(r["name"])
        out.append({"name": r["name"], "torch_ns_per_step": t, "scalescope_ns_per_step": o,
                    "diff": None if o is None else relative(o, t)})
    return out


def median_ratio(rounds, key):
    return statistics.median(relative(r["profiled"][key], r["plain"][key]) for r in rounds)


def self_test():
    rows = [{"name": "aten::conv", "self_gpu_ns": 2000.0}, {"name": "aten::add", "self_gpu_ns": 1000.0}]
    ours = [{"name": "aten::conv", "self_gpu_ns": 2200.0}]
    c = compare_operators(rows, ours, 2, 2)
    assert c[0]["diff"] is not None and abs(c[0]["diff"] - 0.1) < 1e-9, c
    assert c[1]["scalescope_ns_per_step"] is None, c
    rounds = [{"plain": {"x": 10.0}, "profiled": {"x": 11.0}}, {"plain": {"x": 10.0}, "profiled": {"x": 9.0}},
              {"plain": {"x": 10.0}, "profiled": {"x": 10.5}}]
    assert abs(median_ratio(rounds, "x") - 0.05) < 1e-9
    assert last_json_line("noise\n{\"a\": 1}\n") == {"a": 1}
    print("self-test passed")


# ---------------------------------------------------------------- the driver


class Driver:
    def __init__(self, args):
        self.bin = os.path.abspath(args.scalescope)
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = {"machine": self.machine()}
        self.summary = []
        self.args = args

    @staticmethod
    def machine():
        try:
            gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception:
            gpu = "unknown"
        import platform

        return {"gpu": gpu, "host": platform.node(), "python": sys.version.split()[0]}

    def job(self, name, mode, extra=(), profile=None):
        """Runs `check.py job MODE ...`, under `scalescope profile PROFILE...` when given."""
        cmd = [sys.executable, HERE, "job", mode, *extra]
        if profile is not None:
            run = os.path.join(self.out, name)
            cmd = [self.bin, "profile", "-o", run, "--force", *profile, "--", *cmd]
        t = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
        wall = time.monotonic() - t
        with open(os.path.join(self.out, name + ".log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
        if p.returncode != 0:
            raise RuntimeError("%s failed (exit %d): %s" % (name, p.returncode, p.stderr[-2000:]))
        res = last_json_line(p.stdout)
        res["wall_s"] = wall
        if profile is not None:
            with open(os.path.join(self.out, name + ".ssrun", "run.json")) as f:
                res["run"] = json.load(f)
            res["run_dir"] = os.path.join(self.out, name + ".ssrun")
            res["profile_log"] = p.stderr
        return res

    def analyze(self, run_dir):
        p = subprocess.run([self.bin, "analyze", run_dir, "--json"], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError("analyze %s: %s" % (run_dir, p.stderr[-2000:]))
        return json.loads(p.stdout)

    def cost(self):
        rounds = []
        for r in range(self.args.rounds):
            pair = {}
            for kind in (("plain", "profiled") if r % 2 == 0 else ("profiled", "plain")):
                res = self.job("cost-%s-%d" % (kind, r), "mobilenet", ["--steps", str(self.args.steps)],
                               profile=[] if kind == "profiled" else None)
                steady = statistics.median(res["step_ms"][50:])
                pair[kind] = {"wall_s": res["wall_s"], "steady_step_ms": steady}
                if kind == "profiled":
                    procs = [p for p in res["run"]["processes"] if p.get("sampling")]
                    pair[kind]["sampling"] = procs[0]["sampling"] if procs else None
            rounds.append(pair)
        wall = median_ratio(rounds, "wall_s")
        step = median_ratio(rounds, "steady_step_ms")
        self.results["cost"] = {"rounds": rounds, "median_wall_overhead": wall, "median_step_overhead": step}
        s = rounds[-1]["profiled"].get("sampling") or {}
        self.summary.append(
            "cost (%d alternating rounds of %d steps): whole process %+.2f %% (median), steady step %+.2f %%; "
            "marker %s, %s of %s iterations traced" % (
                self.args.rounds, self.args.steps, 100 * wall, 100 * step, s.get("iteration_marker"),
                s.get("iterations_inside"), s.get("iterations_seen")))

    def outside_windows(self):
        res = self.job("ab", "ab", ["--blocks", "16", "--block-steps", "150"],
                       profile=["--skip-iterations", "1000000"])
        if "error" in res:
            self.summary.append("outside windows: " + res["error"])
            return
        on = [b["ms_per_step"] for b in res["blocks"] if b["on"]]
        off = [b["ms_per_step"] for b in res["blocks"] if not b["on"]]
        d = relative(statistics.median(on), statistics.median(off))
        self.results["outside_windows"] = {"blocks": res["blocks"], "median_overhead": d}
        self.summary.append("outside windows (in-process ABBA, 16 blocks of 150 steps): hook on %+.3f %% of a step "
                            "(median %.3f ms on, %.3f ms off)" % (100 * d, statistics.median(on),
                                                                 statistics.median(off)))

    def loader(self):
        out = {}
        for label, flags in (("bootstrap", ["--full"]), ("no-python", ["--full", "--no-python"])):
            res = self.job("loader-" + label, "loader", ["--steps", "66"], profile=flags)
            a = self.analyze(res["run_dir"])
            counts = [r["iterations"].get("count") for r in a["analysis"]["ranks"]
                      if r["iterations"]["availability"]["available"]]
            sources = [r["iterations"].get("source") for r in a["analysis"]["ranks"]
                       if r["iterations"]["availability"]["available"]]
            finding = [f for f in a.get("findings", []) if "loader" in f.get("id", "") or "input" in f.get("id", "")]
            out[label] = {"steps": res["steps"], "iterations": counts, "sources": sources,
                          "findings": finding}
            self.summary.append("loader (%s): %d steps run, iterations found %s from %s; findings %s" % (
                label, res["steps"], counts, sources, [f.get("id") for f in finding]))
        self.results["loader"] = out

    def operators(self):
        theirs = self.job("ops-torch-profiler", "ops", ["--steps", "40", "--torch-profiler", "1"])
        res = self.job("ops-scalescope", "ops", ["--steps", "40"], profile=[])
        a = self.analyze(res["run_dir"])
        ranks = [r for r in a["analysis"]["ranks"] if r["attribution"]["availability"]["available"]]
        att = ranks[0]["attribution"] if ranks else {"operators": [], "ranges": []}
        steps = (ranks[0]["iterations"].get("count") if ranks else 0) or 20
        rows = compare_operators(theirs["operators"], att["operators"], theirs["steps"], steps)
        modules = sorted(r["name"] for r in att.get("ranges", []) if r.get("kind") == "module")
        same = sum(1 for r in rows if r["scalescope_ns_per_step"] is not None)
        within = sum(1 for r in rows if r["diff"] is not None and abs(r["diff"]) <= 0.10)
        self.results["operators"] = {"rows": rows, "modules": modules[:50], "module_count": len(modules),
                                     "scalescope_iterations": steps}
        self.summary.append("operators: %d of torch.profiler's top 10 named alike, %d within 10 %% per step; "
                            "%d module names (e.g. %s)" % (same, within, len(modules), modules[:3]))

    def run(self):
        for check in self.args.checks.split(","):
            try:
                getattr(self, check.replace("-", "_"))()
            except Exception as e:  # one check failing leaves the others' figures
                self.summary.append("%s: failed: %s" % (check, e))
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1)
        with open(os.path.join(self.out, "summary.txt"), "w") as f:
            f.write("\n".join(self.summary) + "\n")
        print("\n".join(self.summary))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all")
    a.add_argument("--scalescope", default="build/cli/scalescope")
    a.add_argument("--out", default=os.environ.get("OUT", "python-bootstrap-check"))
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--steps", type=int, default=1000)
    a.add_argument("--checks", default="cost,outside-windows,loader,operators")
    j = sub.add_parser("job")
    j.add_argument("mode", choices=["mobilenet", "launches", "gpubound", "loader", "ops", "ab"])
    j.add_argument("--steps", type=int, default=1000)
    j.add_argument("--blocks", type=int, default=16)
    j.add_argument("--block-steps", type=int, default=150)
    j.add_argument("--torch-profiler", default="")
    sub.add_parser("self-test")
    args = ap.parse_args()
    if args.cmd == "self-test":
        self_test()
    elif args.cmd == "job":
        {"mobilenet": job_mobilenet, "launches": job_mobilenet, "gpubound": job_mobilenet, "loader": job_loader, "ops": job_ops, "ab": job_ab}[args.mode](args)
    else:
        Driver(args).run()


if __name__ == "__main__":
    main()
