#!/usr/bin/env bash
# The collector's in-window cost on one GPU, in one device call (about 9 minutes):
#   bash .devcarry/window_cost_device.sh [BUDGET_S]
# run from a checkout (workloads/) whose .devcarry/ holds: scalescope
# (release CLI, stripped), lib/ (its Debian libraries), libscalescope-collector.so,
# and the bench/collector_overhead scripts window_ab.py, window_ab_summary.py,
# window_check.py, sampled_ab.sh, sampled_ab_summary.py. Writes under $OUT.
#
# A. In-process ABBA blocks (window_ab.py, 10 pairs), MobileNetV2: the
#    uninjected control, then under `profile --capture-range cudaProfilerApi`:
#    default, default with API calls from callbacks (SCALESCOPE_API_RECORDS),
#    --activities kernel,memcpy,memset --api none, --discard. Each profiled
#    job's trace is checked (window_check.py): ProfilerStep ranges kept (exactly
#    pairs x block steps) and kernels with their launch call.
# B. The same for the GPU-bound LoRA step: default and --discard.
# C. Whole processes (sampled_ab.sh), MobileNetV2, 5 rounds of none and the
#    default `profile` (sampled windows), the order rotating; the default
#    runs' self-measured perturbation comes from their run.json.
# A job is started only if it should end before BUDGET_S (default 560).
# PHASES (default "A B C") picks the parts; ROUNDS (default 5) part C's rounds.
set -u
c="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:?OUT must name the folder for results}"
budget="${1:-560}"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
cat > "$c/scalescope.sh" <<SH
#!/bin/sh
exec /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$c/scalescope" "\$@"
SH
chmod +x "$c/scalescope.sh"
ss="$c/scalescope.sh"
export SCALESCOPE_COLLECTOR="$c/libscalescope-collector.so"
work="$(mktemp -d /tmp/window-cost.XXXXXX)"
logs="$out/logs"
mkdir -p "$logs"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  "$ss" --version
  nproc
  ls -la "$c"
} > "$out/env.txt" 2>&1
left() { echo $((budget - ($(date +%s) - t0))); }
note() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$out/summary.txt"; }

# One ABBA job: abba WORKLOAD LABEL EST_S BLOCK_STEPS [profile options...] (LABEL "control": uninjected).
# Started only if EST_S (the expected time) is left; killed after twice that.
abba() {
  local w="$1" label="$2" est="$3" steps="$4"
  shift 4
  if (($(left) < est)); then
    note "skipped $w/$label: $(left) s left, needs about $est s"
    return
  fi
  local blocks="$logs/abba-$w.jsonl" run="$work/$w-$label"
  local -a job=(python3 "$c/window_ab.py" --workload "$w" --job "$label" --out "$blocks" --pairs 10
                --block-steps "$steps" --warmup 15 --pause 0.6)
  local s=$(date +%s) rc
  if [ "$label" = control ]; then
    timeout $((2 * est)) "${job[@]}" --on nothing > "$logs/abba-$w-$label.log" 2>&1
    rc=$?
  else
    timeout $((2 * est)) env "${ABBA_ENV[@]}" "$ss" profile -o "$run" --capture-range cudaProfilerApi "$@" -- \
      "${job[@]}" --on cuda-profiler > "$logs/abba-$w-$label.log" 2>&1
    rc=$?
  fi
  note "$w/$label: exit $rc in $(($(date +%s) - s)) s"
  if [ -d "$run.ssrun" ]; then
    cp "$run.ssrun/run.json" "$logs/abba-$w-$label.run.json" 2>/dev/null
    if "$ss" export --format sqlite -o "$work/t.sqlite" --force "$run.ssrun" > /dev/null 2>&1; then
      python3 "$c/window_check.py" "$work/t.sqlite" ${CHECK_STEPS:-} 2>&1 | sed "s|^|  check $w/$label: |" | tee -a "$out/summary.txt"
    else
      note "  export of $w/$label failed"
    fi
    rm -rf "$run.ssrun" "$work/t.sqlite"
  fi
}

phases=" ${PHASES:-A B C} "
if [[ "$phases" == *" A "* ]]; then
note "A. MobileNetV2 ABBA (10 pairs of 15 steps)"
ABBA_ENV=(SCALESCOPE_API_RECORDS=activity)
abba mobilenet control 45 15
CHECK_STEPS=150 abba mobilenet default 45 15
ABBA_ENV=(SCALESCOPE_API_RECORDS=callbacks)
CHECK_STEPS=150 abba mobilenet callbacks 45 15
ABBA_ENV=(SCALESCOPE_API_RECORDS=activity)
abba mobilenet kmm 45 15 --activities kernel,memcpy,memset --api none
abba mobilenet discard 45 15 --discard
python3 "$c/window_ab_summary.py" "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"

fi
if [[ "$phases" == *" B "* ]]; then
note "B. LoRA ABBA (10 pairs of 8 steps)"
CHECK_STEPS=80 abba lora default 70 8
abba lora discard 70 8 --discard
[ -f "$logs/abba-lora.jsonl" ] && python3 "$c/window_ab_summary.py" "$logs/abba-lora.jsonl" 2>&1 | tee -a "$out/summary.txt"

fi
if [[ "$phases" == *" C "* ]]; then
note "C. whole processes, MobileNetV2, none and default"
mkdir -p "$out/whole"
if (($(left) > 60)); then
  MODES="none sampled" PROFILE_ARGS="" STEPS=80 ROUNDS="${ROUNDS:-5}" REPO="$PWD" \
    bash "$c/sampled_ab.sh" "$ss" "$c/libscalescope-collector.so" "$out/whole" mobilenet "$(($(left) - 15))" \
    > "$logs/whole.log" 2>&1
  python3 "$c/sampled_ab_summary.py" "$out/whole/results.jsonl" 2>&1 | tee -a "$out/summary.txt"
  # The first sampled trace: launch calls inside its window (the "median launch call 0 ns" question).
  if tar -C "$work" -xzf "$out/whole/sampled-mobilenet-round0.ssrun.tar.gz" 2>/dev/null; then
    r0="$(ls -d "$work"/sampled-*.ssrun | head -1)"
    "$ss" export --format sqlite -o "$work/t.sqlite" --force "$r0" > /dev/null 2>&1 &&
      python3 "$c/window_check.py" "$work/t.sqlite" 2>&1 | sed 's|^|  check whole/sampled round 0: |' | tee -a "$out/summary.txt"
    "$ss" analyze "$r0" > "$logs/whole-sampled-round0-analyze.txt" 2>&1
    grep -o 'median kernel [^;]*;' "$logs/whole-sampled-round0-analyze.txt" | sed 's|^|  analyze launch-bound evidence: |' | tee -a "$out/summary.txt"
  fi
fi
fi
note "done"
tar -C "$out" -czf "$out/logs.tar.gz" logs whole 2>/dev/null && rm -rf "$logs" "$out/whole"
rm -rf "$work"
