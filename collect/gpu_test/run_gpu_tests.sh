#!/usr/bin/env bash
# GPU tests of the collector. Run on the 2-GPU machine:
#   collect/gpu_test/run_gpu_tests.sh BUILD_DIR OUT_DIR
# BUILD_DIR must hold cli/scalescope, collect/libscalescope-collector.so and
# collect/collect_gpu_check (built on the dev machine); the ground-truth
# program is built here if nvcc is present, else taken from
# BUILD_DIR/collect/gpu_test/ground_truth. Prints PASS/FAIL lines; logs and
# runs go to OUT_DIR. Expected time: about 2 minutes.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_test_init run_gpu_tests.sh collect_gpu_check "$@"
nvidia-smi -L > "$out/nvidia-smi.txt" 2>&1 || true
"$scalescope" topo > "$out/topo.txt" 2>&1 && pass "scalescope topo" || fail "scalescope topo (see $out/topo.txt)"

# 1. Ground truth: exact counts.
gt="$build/collect/gpu_test/ground_truth"
if command -v "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" > /dev/null; then
  "$here/build.sh" "$build" > "$out/gt-build.log" 2>&1 || fail "ground_truth build (see $out/gt-build.log)"
fi
if [ -x "$gt" ]; then
  timeout 180 "$scalescope" profile --force -o "$out/gt" -- "$gt" > "$out/gt.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "ground_truth ran under profile" || fail "ground_truth exit code $rc (see $out/gt.log)"
  "$checker" ground-truth "$out/gt.ssrun" | tee "$out/gt-check.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
  # Kernels only (--activities kernel): exact kernel counts, no other record.
  timeout 180 "$scalescope" profile --force --activities kernel -o "$out/gt-kernel" -- "$gt" > "$out/gt-kernel.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "ground_truth with --activities kernel" || fail "ground_truth --activities kernel exit code $rc"
  "$checker" ground-truth-kernels "$out/gt-kernel.ssrun" | tee "$out/gt-kernel-check.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
  # The same program with --api all and in discard mode must still run and exit 0.
  timeout 180 "$scalescope" profile --force --api all -o "$out/gt-all" -- "$gt" > "$out/gt-all.log" 2>&1 \
    && pass "ground_truth with --api all" || fail "ground_truth with --api all (see $out/gt-all.log)"
  timeout 180 "$scalescope" profile --force --capture-range nvtx:gt_copies -o "$out/gt-window" -- "$gt" \
    > "$out/gt-window.log" 2>&1 && pass "ground_truth with --capture-range nvtx:gt_copies" \
    || fail "ground_truth with --capture-range (see $out/gt-window.log)"
  "$scalescope" stats --format json "$out/gt-window.ssrun" > "$out/gt-window-stats.json" 2>&1 || true
else
  fail "no ground_truth binary at $gt"
fi

# 2. A real DDP job on 2 GPUs with DataLoader workers.
if python3 -c "import torch, torchvision" 2> /dev/null; then
  timeout 300 "$scalescope" profile --force -o "$out/ddp" -- \
    torchrun --standalone --nproc_per_node=2 "$here/ddp_job.py" > "$out/ddp.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "DDP job ran under profile" || fail "DDP job exit code $rc (see $out/ddp.log)"
  "$checker" ddp "$out/ddp.ssrun" 2 | tee "$out/ddp-check.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
  grep -q "scalescope: warning" "$out/ddp.log" && echo "NOTE warnings in $out/ddp.log:" && grep "scalescope: warning" "$out/ddp.log" | sort | uniq -c
  "$scalescope" stats "$out/ddp.ssrun" > "$out/ddp-stats.txt" 2>&1 || true
else
  fail "python3 with torch and torchvision not found: DDP test not run"
fi

# 3. CUPTI already in use: a second subscriber must warn and leave the job running.
if python3 -c "import torch" 2> /dev/null; then
  cat > "$out/torch_profiler_job.py" << 'PY'
import torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(10):
        x = x @ x
    torch.cuda.synchronize()
print("torch_profiler_job: ok")
PY
  timeout 120 "$scalescope" profile --force -o "$out/conflict" -- python3 "$out/torch_profiler_job.py" \
    > "$out/conflict.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "torch_profiler_job: ok" "$out/conflict.log"; then
    pass "job with torch.profiler runs to the end under profile (warnings: $(grep -c 'scalescope: warning' "$out/conflict.log"))"
  else
    fail "job with torch.profiler under profile: exit $rc (see $out/conflict.log)"
  fi
fi

echo "SUMMARY: $fails failed"
[ "$fails" -eq 0 ]
