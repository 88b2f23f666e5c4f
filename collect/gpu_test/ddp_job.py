#!/usr/bin/env python3
"""A small real DDP job for run_gpu_tests.sh: torchvision resnet18 on synthetic
data, a DataLoader with forked workers (they must stay untraced), one NVTX
range per iteration. Run under torchrun --nproc_per_node=2."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision


class Synthetic(torch.utils.data.Dataset):
    def __len__(self):
        return 64 * 40

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 112, 112, generator=g), i % 10


def main():
    dist.init_process_group("nccl")
    rank, local = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    model = torchvision.models.resnet18(num_classes=10).cuda().to(memory_format=torch.channels_last)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sampler = torch.utils.data.distributed.DistributedSampler(Synthetic())
    loader = torch.utils.data.DataLoader(Synthetic(), batch_size=64, sampler=sampler, num_workers=2,
                                         pin_memory=True, multiprocessing_context="fork")
    steps = 0
    t0 = time.time()
    for x, y in loader:
        torch.cuda.nvtx.range_push(f"step {steps}")
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        steps += 1
    torch.cuda.synchronize()
    if rank == 0:
        print(f"ddp_job: {steps} steps in {time.time() - t0:.1f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
