"""NCCL collectives of known sizes for the collector's NCCL check.

Run under torchrun on 2 GPUs (run_nccl_tests.sh does it under `scalescope
profile`). Every rank makes REPEATS calls of each collective in SPEC; the
sizes are odd so that no other collective of PyTorch or NCCL has them. Rank 0
writes what the traces must contain to the file named by the first argument:
one OP:BYTES:CALLS per call kind, BYTES being NCCL's message size (the count
passed to NCCL times the element size: the send count of an all-gather, the
receive count of a reduce-scatter).
"""
import os
import sys

import torch
import torch.distributed as dist

REPEATS = 5
# (NCCL op as the checker names it, element type, elements per rank)
SPEC = [
    ("AllReduce", torch.float32, (1 << 20) + 7),
    ("AllReduce", torch.bfloat16, (3 << 18) + 5),
    ("AllReduce", torch.float32, 12345),
    ("Broadcast", torch.float32, 4099),
    ("AllGather", torch.float32, 65537),
    ("ReduceScatter", torch.float32, 8193),
]


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    world = dist.get_world_size()
    for _ in range(REPEATS):
        for op, dtype, n in SPEC:
            x = torch.ones(n, dtype=dtype, device="cuda")
            if op == "AllReduce":
                dist.all_reduce(x)
            elif op == "Broadcast":
                dist.broadcast(x, src=0)
            elif op == "AllGather":
                out = torch.empty(n * world, dtype=dtype, device="cuda")
                dist.all_gather_into_tensor(out, x)
            elif op == "ReduceScatter":
                big = torch.ones(n * world, dtype=dtype, device="cuda")
                dist.reduce_scatter_tensor(x, big)
    torch.cuda.synchronize()
    if dist.get_rank() == 0 and len(sys.argv) > 1:
        kinds = [f"{op}:{n * torch.tensor([], dtype=dtype).element_size()}:{REPEATS}" for op, dtype, n in SPEC]
        with open(sys.argv[1], "w") as f:
            f.write(" ".join(kinds) + "\n")
    dist.barrier()
    dist.destroy_process_group()
    print(f"nccl_sizes_job: rank {local_rank} ok")


if __name__ == "__main__":
    main()
