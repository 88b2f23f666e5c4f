#!/usr/bin/env bash
# Collector overhead on 2 GPUs (issue 3): MobileNetV2 DDP, alternating in one
# run: no profiler, scalescope default, scalescope --api all, torch.profiler
# (CPU+CUDA), and scalescope --discard (same CUPTI kinds, records kept
# nowhere: the CUPTI floor), plus scalescope windowed (--delay past the end:
# cost outside the window). Each rep is one torchrun job: warm-up, then
# SECONDS (default 8) of timed steady-state steps.
#   bench/collector_overhead/run.sh BUILD_DIR OUT_DIR [REPS]
# Writes OUT_DIR/results.jsonl (one line per run), OUT_DIR/runs.csv,
# OUT_DIR/summary.txt (median, min, max and overhead vs none per mode, trace
# bytes per second of training, collector CPU time). Expected: 6 modes x 5
# reps x ~15 s (startup ~7 s + 8 s timed) = about 7.5 minutes; each job is
# capped at 60 s and the whole script stops starting jobs after 8.5 minutes.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "${1:?usage: run.sh BUILD_DIR OUT_DIR [REPS]}" && pwd)"
out="${2:?usage: run.sh BUILD_DIR OUT_DIR [REPS]}"
reps="${3:-5}"
seconds="${SECONDS_PER_RUN:-8}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
scalescope="$build/cli/scalescope"
[ -x "$scalescope" ] || { echo "FAIL no $scalescope"; exit 1; }
results="$out/results.jsonl"
: > "$results"
modes=(none scalescope_default scalescope_all torch_profiler scalescope_discard scalescope_outside_window)
start=$(date +%s)
for rep in $(seq 1 "$reps"); do
  # Rotate the order each rep so drift (clocks, thermals) does not favour a mode.
  n=${#modes[@]}
  for k in $(seq 0 $((n - 1))); do
    mode="${modes[$(((k + rep) % n))]}"
    if [ $(($(date +%s) - start)) -gt 510 ]; then echo "NOTE time budget reached, stopping at rep $rep"; break 2; fi
    train=(torchrun --standalone --nproc_per_node=2 "$here/train.py" --mode "$mode" --rep "$rep" --out "$results"
           --seconds "$seconds")
    run="$out/runs/$mode-$rep"
    mkdir -p "$out/runs"
    case "$mode" in
      none) cmd=("${train[@]}") ;;
      torch_profiler) cmd=("${train[@]}" --torch-profiler) ;;
      scalescope_default) cmd=("$scalescope" profile --force -o "$run" -- "${train[@]}") ;;
      scalescope_all) cmd=("$scalescope" profile --force --api all -o "$run" -- "${train[@]}") ;;
      scalescope_discard) cmd=("$scalescope" profile --force --discard -o "$run" -- "${train[@]}") ;;
      scalescope_outside_window) cmd=("$scalescope" profile --force --delay 3600 -o "$run" -- "${train[@]}") ;;
    esac
    t0=$(date +%s.%N)
    timeout 60 "${cmd[@]}" > "$out/runs/$mode-$rep.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "rep $rep $mode: exit $rc, $(echo "$t1 - $t0" | bc) s wall"
    [ $rc -eq 0 ] || echo "FAIL $mode rep $rep (see $out/runs/$mode-$rep.log)"
  done
done
python3 "$here/summarize.py" "$out" | tee "$out/summary.txt"
echo "total $(($(date +%s) - start)) s"
