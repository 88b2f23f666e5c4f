"""A plain training loop (no NVTX, no profiler) for the bootstrap's tests.

Usage: train_loop.py STEPS [HOLD_SECONDS]   (with the fake torch on PYTHONPATH)
Each step: a forward through named modules, a backward, an optimizer step,
then a wait of 1 to 6 ms that changes from step to step, as a job waiting
on its DataLoader would. HOLD_SECONDS: how long the process stays after its
last step (default 0), so that a sampler looking from outside, which finds
new processes a few times a second, finds it on a loaded machine.
"""
import sys
import time

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(), torch.nn.Linear())
        self.head = torch.nn.Linear()

    def forward(self, x):
        return self.head(self.encoder(x))


def main():
    steps = int(sys.argv[1])
    model = Net()
    optimizer = torch.optim.SGD(model.parameters())
    for step in range(steps):
        model(step)
        torch.autograd.backward()
        optimizer.step()
        time.sleep(0.001 * (1 + (step * 7919) % 6))
    print("trained %d steps" % steps)
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)


if __name__ == "__main__":
    main()
