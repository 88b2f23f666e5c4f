"""One small training step under torch.profiler, for checking scalescope's
attribution against torch.profiler's own key_averages() (bench/RESULTS.md,
"Attribution"). Writes, into the folder given:
  key_averages.txt   key_averages(sort_by="cuda_time_total") as torch prints it
  key_averages.json  [{name, count, device_time_total_us, self_device_time_total_us}], by device time
  trace.json.gz      the Kineto trace of the same profiled steps (with_stack: nn.Module ranges)
With --emit-nvtx and no folder, it runs the same steps inside
torch.autograd.profiler.emit_nvtx() instead (for `scalescope profile`)."""
import argparse
import gzip
import json
import os
import shutil
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(Block(3, 32, 2), Block(32, 64, 1), Block(64, 128, 2), Block(128, 256, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 100))

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


def step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?", default="")
    p.add_argument("--emit-nvtx", action="store_true")
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = SmallNet().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(128, 3, 96, 96, device=dev)
    y = torch.randint(0, 100, (128,), device=dev)
    if args.emit_nvtx:
        for i in range(args.steps):
            torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
            with torch.autograd.profiler.emit_nvtx():
                step(model, opt, loss_fn, x, y)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        return
    from torch.profiler import ProfilerActivity, profile, schedule
    sched = schedule(wait=1, warmup=2, active=args.steps - 3, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched, with_stack=True) as prof:
        for _ in range(args.steps):
            step(model, opt, loss_fn, x, y)
            torch.cuda.synchronize()
            prof.step()
    avgs = prof.key_averages()
    try:
        table = avgs.table(sort_by="cuda_time_total", row_limit=30)
    except Exception as e:  # newer PyTorch names it device_time_total
        print("cuda_time_total:", e, file=sys.stderr)
        table = avgs.table(sort_by="device_time_total", row_limit=30)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "key_averages.txt"), "w") as f:
        f.write(f"torch {torch.__version__}, {torch.cuda.get_device_name()}\n{table}\n")
    rows = []
    for e in avgs:
        total = getattr(e, "device_time_total", None)
        if total is None:
            total = e.cuda_time_total
        self_total = getattr(e, "self_device_time_total", None)
        if self_total is None:
            self_total = e.self_cuda_time_total
        rows.append({"name": e.key, "count": e.count, "device_time_total_us": total, "self_device_time_total_us": self_total})
    rows.sort(key=lambda r: -r["device_time_total_us"])
    with open(os.path.join(args.out, "key_averages.json"), "w") as f:
        json.dump(rows, f, indent=1)
    raw = os.path.join(args.out, "trace.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as fin, gzip.open(raw + ".gz", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    os.remove(raw)
    print(table)


if __name__ == "__main__":
    main()
