#!/usr/bin/env bash
# Native stacks and the host sampler's cost, one call on the GPU machine:
#  1. whether perf_event_open task-clock sampling with callchains works there
#     (paranoid level, the real-kernel tests of collect_perf_stacks_test);
#  2. the host sampler's cost in one process, A B B A (collect_host_sampler_abba):
#     one busy thread (a training main thread, idle cores beside it) and every
#     core busy, with native stacks and /proc only;
#  3. whole-process alternation of the same tool (--fixed on|off), 6 rounds;
#  4. the study's DataLoader configuration (tuned arm, 1 GPU) profiled with stacks.
# Usage (repository root): bench/host_stacks/gpu_run.sh CARRY_DIR OUT_DIR
#   CARRY_DIR: cli/scalescope, collect/libscalescope-collector.so, bin/, lib/, fashion-mnist/
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
[ $# -eq 2 ] || { echo "usage: gpu_run.sh CARRY_DIR OUT_DIR" >&2; exit 2; }
c="$(cd "$1" && pwd)"; out="$2"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
export LD_LIBRARY_PATH="$c/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SCALESCOPE_COLLECTOR="$c/collect/libscalescope-collector.so"
work=/tmp/stackswork; rm -rf "$work"; mkdir -p "$work"
start=$SECONDS
n=$(nproc)
{ id; echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)";
  echo "perf_event_mlock_kb $(cat /proc/sys/kernel/perf_event_mlock_kb)"; echo "ulimit -l $(ulimit -l)";
  grep -E 'Seccomp|CapEff' /proc/self/status; echo "nproc $n"; uname -r; nvidia-smi -L;
  python3 -c 'import torch; print("torch", torch.__version__)'; } > "$out/env.txt" 2>&1

timeout 60 "$c/bin/collect_perf_stacks_test" > "$out/perf_stacks_test.txt" 2>&1; echo "rc=$?" >> "$out/perf_stacks_test.txt"
echo "t=$((SECONDS - start)) perf test done" >> "$out/progress.txt"

abba() {  # NAME ARGS...
  local name="$1"; shift
  timeout 80 "$c/bin/collect_host_sampler_abba" "$@" > "$out/$name.jsonl" 2> "$out/$name.err"
  echo "t=$((SECONDS - start)) $name rc=$?" >> "$out/progress.txt"
}
abba abba-busy1-stacks --busy 1 --parked 64 --groups 10 --block-ms 400 --hz 100 --stacks 1
abba abba-busyall-stacks --busy "$n" --parked 64 --groups 10 --block-ms 400 --hz 100 --stacks 1
abba abba-busyall-procfs --busy "$n" --parked 64 --groups 10 --block-ms 400 --hz 100 --stacks 0
for r in 1 2 3; do  # whole processes: on off, off on
  abba whole-on-$((2 * r - 1)) --busy "$n" --parked 64 --groups 1 --block-ms 400 --hz 100 --stacks 1 --fixed on
  abba whole-off-$((2 * r - 1)) --busy "$n" --parked 64 --groups 1 --block-ms 400 --hz 100 --stacks 1 --fixed off
  abba whole-off-$((2 * r)) --busy "$n" --parked 64 --groups 1 --block-ms 400 --hz 100 --stacks 1 --fixed off
  abba whole-on-$((2 * r)) --busy "$n" --parked 64 --groups 1 --block-ms 400 --hz 100 --stacks 1 --fixed on
done

# The study's DataLoader configuration on one GPU, with native stacks.
timeout 150 "$c/cli/scalescope" profile -o "$work/loader-stacks" --nvml-hz 10 -- \
  python3 -m torch.distributed.run --standalone --nproc_per_node=1 workloads/image_ddp.py \
  --data-dir "$c/fashion-mnist" --image-size 224 --batch-size 128 --steps 30 --warmup-steps 10 --log-every 0 \
  --precision fp16 --pin-memory on --channels-last on --workers 4 --loader cpu > "$out/loader-stacks.log" 2>&1
echo "t=$((SECONDS - start)) profile rc=$?" >> "$out/progress.txt"
(cd "$work" && tar czf "$out/loader-stacks.tar.gz" loader-stacks.ssrun) || echo "tar failed" >> "$out/progress.txt"
echo "total_s=$((SECONDS - start))" >> "$out/progress.txt"
cat "$out/progress.txt"; tail -5 "$out/perf_stacks_test.txt"; grep -h summary "$out"/abba-*.jsonl
