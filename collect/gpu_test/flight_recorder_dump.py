"""Writes real PyTorch NCCL flight recorder dumps, for the check of
`scalescope analyze`'s reader on one GPU (docs/collector.md, "When a job
hangs").

World size 1 (no torchrun needed). With TORCH_NCCL_TRACE_BUFFER_SIZE=2000 set
before the process group starts, it runs STEPS all-reduces to completion,
then blocks the GPU for about ten seconds and queues one more all-reduce
behind it, and while that one has not run asks PyTorch for its ring: the
pickle of torch._C._distributed_c10d._dump_nccl_trace() goes to
$TORCH_FR_DUMP_TEMP_FILE + the rank (where `scalescope profile` points it:
RUN/control/flight_recorder/rank_0), the JSON of _dump_nccl_trace_json() to
json/ beside it. Then it waits for the GPU and exits normally.

  scalescope profile -o fr -- python3 collect/gpu_test/flight_recorder_dump.py
  scalescope analyze fr.ssrun                       # the pickle
  scalescope analyze fr.ssrun --flight-recorder fr.ssrun/control/flight_recorder/json
  # expected, both: rank 0 waits in nccl:all_reduce #STEPS+1 of process group 0
  # (default_pg) (every rank with a dump reached it; it is not completed)
"""
import os
import pathlib

os.environ.setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000")

import torch  # noqa: E402  (the buffer size is read when the process group starts)
import torch.distributed as dist  # noqa: E402

STEPS = int(os.environ.get("STEPS", "17"))


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29534")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    x = torch.ones(3, 4, device="cuda")
    for _ in range(STEPS):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    torch.cuda._sleep(20_000_000_000)  # cycles: about ten seconds at 2 GHz
    dist.all_reduce(x)  # queued behind the sleep: "scheduled" in the dump
    c10d = torch._C._distributed_c10d
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get(
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "fr_dump_rank_"
    )
    pickle_path = pathlib.Path(f"{prefix}{rank}")
    pickle_path.parent.mkdir(parents=True, exist_ok=True)
    pickle_path.write_bytes(c10d._dump_nccl_trace())
    print(f"wrote {pickle_path}", flush=True)
    if hasattr(c10d, "_dump_nccl_trace_json"):
        json_path = pickle_path.parent / "json" / pickle_path.name
        json_path.parent.mkdir(exist_ok=True)
        json_path.write_text(c10d._dump_nccl_trace_json())
        print(f"wrote {json_path}", flush=True)
    else:
        print("this PyTorch has no _dump_nccl_trace_json: JSON not checked", flush=True)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
