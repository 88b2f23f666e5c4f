#!/usr/bin/env bash
# GPU tests of the collector's NCCL bytes, communicators and sequence numbers
# (from NCCL's NVTX payloads). Run on the 2-GPU machine from the repo root:
#   collect/gpu_test/run_nccl_tests.sh BUILD_DIR OUT_DIR
# BUILD_DIR must hold cli/scalescope, collect/libscalescope-collector.so and
# collect/collect_nccl_check; ground_truth is (re)built there when nvcc is
# present, else taken from BUILD_DIR/collect/gpu_test/ground_truth. Prints
# PASS/FAIL lines; runs and logs go to OUT_DIR. Expected time: under 90 s.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_test_init run_nccl_tests.sh collect_nccl_check "$@"

# 1. ground_truth: 2 devices x 10 grouped all-reduces of 4 MiB in one process.
gt="$build/collect/gpu_test/ground_truth"
if command -v "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" > /dev/null; then
  "$here/build.sh" "$build" > "$out/nccl-gt-build.log" 2>&1 || fail "ground_truth build (see $out/nccl-gt-build.log)"
fi
if [ -x "$gt" ]; then
  timeout 120 "$scalescope" profile --force -o "$out/nccl-gt" -- "$gt" > "$out/nccl-gt.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "ground_truth ran under profile" || fail "ground_truth exit code $rc (see $out/nccl-gt.log)"
  "$checker" ground-truth "$out/nccl-gt.ssrun"
  [ $? -eq 0 ] || fails=$((fails + 1))
  "$scalescope" stats --report nccl,problems "$out/nccl-gt.ssrun" > "$out/nccl-gt-stats.txt" 2>&1
  cat "$out/nccl-gt-stats.txt"
else
  fail "no ground_truth binary at $gt"
fi

# 2. torchrun, 2 ranks, PyTorch collectives of known sizes.
if python3 -c "import torch" 2> /dev/null; then
  rm -f "$out/nccl-expected.txt"
  timeout 180 "$scalescope" profile --force -o "$out/nccl-sizes" -- \
    torchrun --standalone --nproc_per_node=2 "$here/nccl_sizes_job.py" "$out/nccl-expected.txt" > "$out/nccl-sizes.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "nccl_sizes_job ran under profile" || fail "nccl_sizes_job exit code $rc (see $out/nccl-sizes.log)"
  if [ -s "$out/nccl-expected.txt" ]; then
    # shellcheck disable=SC2046
    "$checker" sizes "$out/nccl-sizes.ssrun" 2 $(cat "$out/nccl-expected.txt")
    [ $? -eq 0 ] || fails=$((fails + 1))
  else
    fail "nccl_sizes_job wrote no expected calls"
  fi
  "$scalescope" stats --report nccl,problems "$out/nccl-sizes.ssrun" > "$out/nccl-sizes-stats.txt" 2>&1
  cat "$out/nccl-sizes-stats.txt"
else
  fail "python3 with torch not found: the torchrun NCCL test did not run"
fi
echo "SUMMARY: $fails failed"
[ $fails -eq 0 ]
