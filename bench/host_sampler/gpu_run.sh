#!/usr/bin/env bash
# The host sampler's GPU check, one call: the tuned arm's DataLoader (--loader cpu) and
# GPU-pipeline (--loader gpu) configurations of docs/study.md (fp16, NHWC,
# pinned, batch 128, 224 px, 4 workers) on ONE GPU, profiled with the host
# sampler, and the sampler's cost as interleaved whole-process rounds with
# SCALESCOPE_HOST_HZ=100 against 0 (the collector otherwise identical).
#
# Usage (from the repository root): bench/host_sampler/gpu_run.sh CARRY_DIR OUT_DIR
#   CARRY_DIR: cli/scalescope, collect/libscalescope-collector.so, lib/*.so,
#              fashion-mnist/train-*-ubyte.gz
# Env: BUDGET_S (360): no new run starts after this many seconds;
#      SS, LAUNCH: stand-ins for scalescope and torchrun (tests).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
[ $# -eq 2 ] || { echo "usage: gpu_run.sh CARRY_DIR OUT_DIR" >&2; exit 2; }
carry="$(cd "$1" && pwd)"; out="$2"
mkdir -p "$out" || exit 1
out="$(cd "$out" && pwd)"
work="${WORK:-/tmp/hostwork}"
rm -rf "$work"; mkdir -p "$work"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ss="${SS:-$carry/cli/scalescope}"
launch="${LAUNCH:-python3 -m torch.distributed.run}"
budget="${BUDGET_S:-360}"
start=$SECONDS
summary="$out/summary.txt"
: > "$summary"
{ nvidia-smi -L; echo "cpus: $(nproc)"; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA'; numactl -H 2>&1 | head -4;
  python3 -c 'import torch; print("torch", torch.__version__)'; uname -r; } > "$out/env.txt" 2>&1

common=(workloads/image_ddp.py --data-dir "$carry/fashion-mnist" --image-size 224 --batch-size 128 --steps 40
        --warmup-steps 10 --log-every 0 --precision fp16 --pin-memory on --channels-last on --workers 4)
run() {  # NAME HZ LOADER
  local name="$1" hz="$2" loader="$3"
  if (( SECONDS - start > budget )); then echo "$name skipped: over the ${budget} s budget" >> "$summary"; return; fi
  local t0=$SECONDS rc=0
  SCALESCOPE_HOST_HZ="$hz" timeout 90 "$ss" profile -o "$work/$name" --nvml-hz 10 -- \
    $launch --standalone --nproc_per_node=1 "${common[@]}" --loader "$loader" > "$work/$name.log" 2>&1 || rc=$?
  local line fields
  line="$(grep -a '^scalescope_result ' "$work/$name.log" | tail -1)"
  fields="$(tr ' ' '\n' <<<"$line" | grep -E '^(step_time_ms_median|step_time_ms_p10|step_time_ms_p90|throughput_images_per_s|steady_seconds|status)=' | tr '\n' ' ')"
  echo "$name hz=$hz loader=$loader rc=$rc wall_s=$((SECONDS - t0)) $fields" >> "$summary"
}

# ABBA rounds on the DataLoader configuration (the most threads), then the
# GPU loader; more GPU-loader rounds if the budget allows.
run loader-on-1 100 cpu
run loader-off-1 0 cpu
run loader-off-2 0 cpu
run loader-on-2 100 cpu
run gpu-on-1 100 gpu
run gpu-off-1 0 gpu
run loader-on-3 100 cpu
run loader-off-3 0 cpu
run gpu-off-2 0 gpu
run gpu-on-2 100 gpu

# What comes back: the summary, the logs and collector summaries of every run,
# the traces of the first traced run of each configuration.
(cd "$work" && tar czf "$out/runs.tar.gz" *.log $(find . -path '*.ssrun/*.json' | sort)) ||
  echo "runs.tar.gz: tar failed" >> "$summary"
(cd "$work" && tar czf "$out/traces.tar.gz" $(ls -d loader-on-1.ssrun gpu-on-1.ssrun 2>/dev/null)) ||
  echo "traces.tar.gz: tar failed" >> "$summary"
ls -l "$out" >> "$summary"
echo "total_s=$((SECONDS - start))" >> "$summary"
cat "$summary"
