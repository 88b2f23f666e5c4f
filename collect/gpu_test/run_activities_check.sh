#!/usr/bin/env bash
# The quick GPU check of --activities, about 30-60 s on one GPU
# machine with 2 GPUs (the ground-truth program's all-reduces use both):
#   collect/gpu_test/run_activities_check.sh BUILD_DIR OUT_DIR
# 1. the ground-truth program under `profile --activities kernel`: exact
#    kernel and NCCL counts, and no copy, memset, sync or NVTX record;
# 2. the same program with the defaults: every exact count of
#    check_ground_truth (the syncs too, now that event/stream queries that
#    wait for nothing leave no record);
# 3. --activities kernel,memcpy --api none: the activity check (no memset,
#    sync or NVTX records, kernels present);
# 4. CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,0: GPU counters by
#    CUDA ordinal (NVML index 0 is CUDA ordinal 1: "1,0").
# BUILD_DIR needs cli/scalescope, collect/libscalescope-collector.so,
# collect/collect_gpu_check and collect/gpu_test/ground_truth (built here
# with nvcc when present). Prints PASS/FAIL lines and SUMMARY.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_test_init run_activities_check.sh collect_gpu_check "$@"
gt="$build/collect/gpu_test/ground_truth"
if [ ! -x "$gt" ] && command -v "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" > /dev/null; then
  "$here/build.sh" "$build" > "$out/gt-build.log" 2>&1 || echo "FAIL ground_truth build (see $out/gt-build.log)"
fi
[ -x "$gt" ] || { echo "FAIL no ground_truth binary at $gt"; echo "SUMMARY: 1 failed"; exit 1; }

run_check() {  # NAME "CHECK_MODE [ARGS]" PROFILE_OPTIONS...
  local name="$1" mode="$2"
  shift 2
  timeout 120 "$scalescope" profile --force "$@" -o "$out/$name" -- "$gt" > "$out/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: ground_truth exit code $rc (see $out/$name.log)"
    fails=$((fails + 1))
    return
  fi
  # shellcheck disable=SC2086  # mode is the check's name and its arguments
  "$checker" ${mode%% *} "$out/$name.ssrun" $(sed -n 's/^[^ ]* //p' <<< "$mode") | sed "s/^/$name: /" | tee "$out/$name-check.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
}
t0=$(date +%s)
run_check gt-kernel ground-truth-kernels --activities kernel
run_check gt-default ground-truth
run_check gt-kernel-memcpy activities --activities kernel,memcpy --api none
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,0 run_check gt-swapped "nvml-map 1,0" --activities kernel
echo "SUMMARY: $fails failed ($(($(date +%s) - t0)) s)"
[ "$fails" -eq 0 ]
