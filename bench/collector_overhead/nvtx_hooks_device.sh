#!/usr/bin/env bash
# NVTX through the collector's own hooks against CUPTI's MARKER records, on one GPU, in one device call (about 9 minutes):
#   bash .devcarry/nvtx_hooks_device.sh [BUDGET_S]
# run from a checkout (workloads/) whose .devcarry/ holds:
# scalescope (release CLI, stripped), lib/ (its Debian libraries),
# libscalescope-collector.so, and the bench/collector_overhead scripts
# window_ab.py, window_ab_summary.py, window_check.py, sampled_ab.sh,
# sampled_ab_summary.py. Writes under $OUT.
#
# A. In-process ABBA blocks (window_ab.py, 10 pairs of 15 steps), MobileNetV2,
#    under `profile --capture-range cudaProfilerApi`: the default (NVTX
#    through CUPTI: MARKER records), hooks (SCALESCOPE_NVTX_RECORDS=hooks:
#    NVTX through the collector's own hooks), --discard (CUPTI's floor for
#    the default kinds, nothing kept). The default and hooks traces are
#    checked (window_check.py): exactly 150 ProfilerStep ranges, >= 99 % of
#    kernels with their launch call, NVTX and launch thread ids shared.
# C. Whole processes (sampled_ab.sh), MobileNetV2, ROUNDS (5) rounds of none
#    and the default `profile` (sampled windows), the order rotating; the
#    default runs' self-measured perturbation comes from their run.json.
# B. If the budget allows: the LoRA step (GPU-bound), ABBA, default and hooks.
# A job is started only if it should end before BUDGET_S (default 570).
set -u
c="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:?OUT must name the folder for results}"
budget="${1:-570}"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
cat > "$c/scalescope.sh" <<SH
#!/bin/sh
exec /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$c/scalescope" "\$@"
SH
chmod +x "$c/scalescope.sh"
ss="$c/scalescope.sh"
export SCALESCOPE_COLLECTOR="$c/libscalescope-collector.so"
work="$(mktemp -d /tmp/nvtxhooks.XXXXXX)"
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

# One ABBA job: abba WORKLOAD LABEL EST_S BLOCK_STEPS [profile options...].
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
  timeout $((2 * est)) env "${ABBA_ENV[@]}" "$ss" profile -o "$run" --capture-range cudaProfilerApi "$@" -- \
    "${job[@]}" --on cuda-profiler > "$logs/abba-$w-$label.log" 2>&1
  rc=$?
  note "$w/$label: exit $rc in $(($(date +%s) - s)) s"
  if [ -d "$run.ssrun" ]; then
    cp "$run.ssrun/run.json" "$logs/abba-$w-$label.run.json" 2>/dev/null
    for f in "$run.ssrun"/*.json; do
      case "$f" in */run.json|*/node-*) ;; *) cp "$f" "$logs/abba-$w-$label.process.json" 2>/dev/null ;; esac
    done
    if [ -n "${CHECK_STEPS:-}" ]; then
      if "$ss" export --format sqlite -o "$work/t.sqlite" --force "$run.ssrun" > /dev/null 2>&1; then
        python3 "$c/window_check.py" "$work/t.sqlite" "$CHECK_STEPS" 2>&1 | sed "s|^|  check $w/$label: |" | tee -a "$out/summary.txt"
      else
        note "  export of $w/$label failed"
      fi
    fi
    rm -rf "$run.ssrun" "$work/t.sqlite"
  fi
}

note "A. MobileNetV2 ABBA (10 pairs of 15 steps): default (NVTX via CUPTI), hooks (own NVTX hooks), discard"
ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
CHECK_STEPS=150 abba mobilenet default 60 15
ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=hooks)
CHECK_STEPS=150 abba mobilenet hooks 60 15
ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
abba mobilenet discard 60 15 --discard
python3 "$c/window_ab_summary.py" "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"

note "C. whole processes, MobileNetV2, none and default (${ROUNDS:-5} rounds)"
mkdir -p "$out/whole"
if (($(left) > 60)); then
  MODES="${WHOLE_MODES:-none sampled}" PROFILE_ARGS="" STEPS=80 ROUNDS="${ROUNDS:-5}" REPO="$PWD" \
    bash "$c/sampled_ab.sh" "$ss" "$c/libscalescope-collector.so" "$out/whole" mobilenet "$(($(left) - 15))" \
    > "$logs/whole.log" 2>&1
  python3 "$c/sampled_ab_summary.py" "$out/whole/results.jsonl" 2>&1 | tee -a "$out/summary.txt"
fi

note "B. LoRA ABBA (10 pairs of 8 steps), default and hooks, if the budget allows"
ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
CHECK_STEPS=80 abba lora default 75 8
ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=hooks)
CHECK_STEPS=80 abba lora hooks 75 8
[ -f "$logs/abba-lora.jsonl" ] && python3 "$c/window_ab_summary.py" "$logs/abba-lora.jsonl" 2>&1 | tee -a "$out/summary.txt"
note "done"
rm -f "$out"/whole/*.ssrun.tar.gz
tar -C "$out" -czf "$out/logs.tar.gz" logs whole 2>/dev/null && rm -rf "$logs" "$out/whole"
rm -rf "$work"
