#!/usr/bin/env bash
# The advisor on real runs (a GPU test): the same MobileNetV2 DDP job
# (workloads/image_ddp.py) profiled with one setting spoiled at a time, and
# tuned. Expected: pinned-memory flagged on pageable input, channels-last on
# NCHW, mixed-precision on FP32, and none of the three on the tuned run.
#
#   bench/advisor_gpu_check/run.sh BUILD_DIR OUT_DIR [NGPU]     (NGPU: 1 or 2, default 2)
#
# BUILD_DIR holds cli/scalescope and the collector (cmake --build BUILD --target
# scalescope scalescope-collector). Writes OUT_DIR/advisor_check.txt (the table
# of checks), OUT_DIR/<variant>.analyze.txt and .json. Exit 0 when every check
# passes, 1 otherwise. About 4 x (startup + 30 steps): ~3-4 min on 2xH200.
set -u
build=${1:?usage: run.sh BUILD_DIR OUT_DIR [NGPU]}
out=${2:?usage: run.sh BUILD_DIR OUT_DIR [NGPU]}
ngpu=${3:-2}
ss="$build/cli/scalescope"
python="${PYTHON:-python3}"
[ -x "$ss" ] || { echo "run.sh: $ss not found or not executable" >&2; exit 1; }
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# CPU loader so that pin_memory decides the host memory kind of the input copies.
common=(workloads/image_ddp.py --synthetic --image-size 224 --batch-size 128 --steps 30 --warmup-steps 5
        --log-every 0 --loader cpu --workers 4)
launcher=("$python")
if [ "$ngpu" -ge 2 ]; then launcher=(torchrun --standalone --nnodes=1 --nproc_per_node="$ngpu"); fi

declare -A args=(
  [tuned]="--pin-memory on --channels-last on --precision bf16"
  [pageable]="--pin-memory off --channels-last on --precision bf16"
  [nchw]="--pin-memory on --channels-last off --precision bf16"
  [fp32]="--pin-memory on --channels-last on --precision fp32"
)
# variant -> finding id expected (the other two of the three must be absent)
declare -A expect=([tuned]="" [pageable]="pinned-memory" [nchw]="channels-last" [fp32]="mixed-precision")
watched=(pinned-memory channels-last mixed-precision)

table="$out/advisor_check.txt"
printf "%-10s %-16s %-8s %s\n" variant finding result detail >"$table"
failed=0
for v in tuned pageable nchw fp32; do
  rm -rf "$out/$v.ssrun"
  # shellcheck disable=SC2086
  if ! "$ss" profile -o "$out/$v.ssrun" --force -- "${launcher[@]}" "${common[@]}" ${args[$v]} >"$out/$v.job.log" 2>&1; then
    printf "%-10s %-16s %-8s %s\n" "$v" - FAIL "profiled job failed, see $v.job.log" | tee -a "$table"
    failed=$((failed + 1)); continue
  fi
  "$ss" analyze "$out/$v.ssrun" >"$out/$v.analyze.txt" 2>&1
  if ! "$ss" analyze "$out/$v.ssrun" --json >"$out/$v.json" 2>"$out/$v.analyze.err"; then
    printf "%-10s %-16s %-8s %s\n" "$v" - FAIL "analyze failed, see $v.analyze.err" | tee -a "$table"
    failed=$((failed + 1)); continue
  fi
  ids=$("$python" -c 'import json,sys; print(" ".join(f["id"] for f in json.load(open(sys.argv[1]))["findings"]))' "$out/$v.json")
  for id in "${watched[@]}"; do
    present=no
    case " $ids " in *" $id "*) present=yes ;; esac
    want=no
    [ "${expect[$v]}" = "$id" ] && want=yes
    if [ "$present" = "$want" ]; then result=PASS; else result=FAIL; failed=$((failed + 1)); fi
    printf "%-10s %-16s %-8s %s\n" "$v" "$id" "$result" "expected=$want found=$present (all findings: ${ids:-none})" | tee -a "$table"
  done
done
# What changed between the pageable and the tuned run, for the record.
"$ss" diff "$out/pageable.ssrun" "$out/tuned.ssrun" >"$out/diff_pageable_tuned.txt" 2>&1 || true
echo "failed checks: $failed" | tee -a "$table"
[ "$failed" -eq 0 ]
