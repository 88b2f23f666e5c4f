#!/usr/bin/env bash
# Quick GPU smoke test of the reference workloads, before the study: every
# workload option once for a few steps on 1 GPU, one 2-GPU torchrun of each
# workload when 2 GPUs are there, and (given BUILD_DIR) one run under
# `scalescope profile` whose trace must show the ProfilerStep#N iterations.
# Each check needs exit status 0, one 'scalescope_result' line with
# status=success, and for the image workload the MLLOG run_start/run_stop lines.
# It also prints each run's wall time: the fixed cost per run that
# run_study.sh's budget assumes (~9-12 s).
#
# Usage: bench/study/smoke.sh OUT_DIR [BUILD_DIR]
#   SMOKE_PARTS (environment, default "image llm"): which workloads' checks run.
#   OUT_DIR gets smoke.txt (the table) and smoke-logs.tar.gz. About 2-3 minutes on an H200.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: smoke.sh OUT_DIR [BUILD_DIR]" >&2; exit 2; }
out="$1"; build="${2:-}"
mkdir -p "$out/smoke-logs" || exit 1
out="$(cd "$out" && pwd)"
python="${PYTHON:-python3}"
data="${STUDY_DATA:-$repo/.devcarry/fashion-mnist}"
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
passed=0 failed=0
table="$out/smoke.txt"
printf '%-28s %-6s %7s  %s\n' check result wall_s "summary (selected fields)" | tee "$table"

# check NAME KIND(image|llm) COMMAND...
check() {
  local name="$1" kind="$2"; shift 2
  local log="$out/smoke-logs/$name.log" t0=$SECONDS rc=0 why=""
  (cd "$repo" && timeout 300 "$@") >"$log" 2>&1 || rc=$?
  local wall=$((SECONDS - t0))
  local line; line="$(grep -a '^scalescope_result ' "$log" | tail -1)"
  if [ "$rc" -ne 0 ]; then why="exit status $rc"
  elif [ -z "$line" ]; then why="no scalescope_result line"
  elif ! grep -q 'status=success' <<<"$line"; then why="status is not success"
  elif [ "$kind" = image ] && ! grep -q '"key": "run_start"' "$log"; then why="no MLLOG run_start"
  elif [ "$kind" = image ] && ! grep -q '"key": "run_stop".*"status": "success"' "$log"; then why="no MLLOG run_stop success"
  fi
  local fields
  fields="$(tr ' ' '\n' <<<"$line" | grep -E '^(world_size|precision|loader|method|throughput_images_per_s|step_time_ms_median|tokens_per_s|peak_mem_alloc_mib|test_accuracy)=' | tr '\n' ' ')"
  if [ -z "$why" ]; then
    passed=$((passed + 1)); printf '%-28s %-6s %7s  %s\n' "$name" PASS "$wall" "$fields" | tee -a "$table"
  else
    failed=$((failed + 1)); printf '%-28s %-6s %7s  %s\n' "$name" FAIL "$wall" "$why; see smoke-logs/$name.log" | tee -a "$table"
    tail -5 "$log" | sed 's/^/    /'
  fi
}

img=(workloads/image_ddp.py --data-dir "$data" --image-size 224 --batch-size 128 --steps 25 --warmup-steps 5
     --log-every 5)
parts="${SMOKE_PARTS:-image llm}"
want() { grep -qw "$1" <<<"$parts"; }
if ! want image; then :
elif [ -s "$data/train-images-idx3-ubyte.gz" ]; then
  check image-fp64-cpuloader image "$python" "${img[@]}" --precision fp64 --loader cpu --workers 4
  check image-fp32-pin-cpuloader image "$python" "${img[@]}" --precision fp32 --pin-memory --loader cpu --workers 4
  check image-fp16-nhwc-pin-gpuload image "$python" "${img[@]}" --precision fp16 --channels-last --pin-memory --loader gpu
  check image-accuracy-eval image "$python" "${img[@]}" --precision bf16 --channels-last --loader gpu --eval \
    --target-accuracy 0
else
  echo "Fashion-MNIST is not staged in $data (bench/study/stage_data.sh): real-data checks skipped" | tee -a "$table"
  failed=$((failed + 1))
fi
want image && check image-bf16-synthetic image "$python" "${img[@]}" --synthetic --precision bf16 --loader gpu

llm=(workloads/llm_finetune.py --size 125m --seq-len 256 --batch-size 4 --steps 12 --warmup-steps 4 --log-every 4)
if want llm; then
  for method in lora dpo qlora qat; do
    check "llm-$method" llm "$python" "${llm[@]}" --method "$method"
  done
  check llm-lora-builtin llm "$python" "${llm[@]}" --method lora --lora-impl builtin
  check llm-1b-qlora-memory llm "$python" workloads/llm_finetune.py --size 1b --method qlora --steps 8 --warmup-steps 3
fi

if [ "${ngpu:-0}" -ge 2 ]; then
  want image && check image-2gpu-torchrun image torchrun --standalone --nnodes=1 --nproc_per_node=2 bench/study/image_variant.sh \
    tuned ref "${img[@]:1}"
  want llm && check llm-2gpu-dpo llm torchrun --standalone --nnodes=1 --nproc_per_node=2 "${llm[@]}" --method dpo
fi

if want image && [ -n "$build" ] && [ -x "$build/cli/scalescope" ]; then
  ss="$build/cli/scalescope"
  rm -rf "$out/smoke-profile.ssrun"
  check image-profiled image "$ss" profile -o "$out/smoke-profile.ssrun" -- "$python" "${img[@]}" --synthetic \
    --precision fp16 --channels-last --pin-memory --loader gpu
  "$ss" analyze "$out/smoke-profile.ssrun" >"$out/smoke-logs/analyze.txt" 2>&1
  if grep -q 'nvtx:ProfilerStep#' "$out/smoke-logs/analyze.txt"; then
    passed=$((passed + 1)); printf "%-28s %-6s %7s  %s\n" analyze-finds-iterations PASS - "ProfilerStep# ranges in the analysis" | tee -a "$table"
  else
    failed=$((failed + 1)); printf "%-28s %-6s %7s  %s\n" analyze-finds-iterations FAIL - "see smoke-logs/analyze.txt" | tee -a "$table"
  fi
fi

tar -C "$out" -czf "$out/smoke-logs.tar.gz" smoke-logs && rm -rf "$out/smoke-logs"
rm -rf "$out/smoke-profile.ssrun"
echo "smoke: ${passed} passed, ${failed} failed" | tee -a "$table"
[ "$failed" -eq 0 ]
