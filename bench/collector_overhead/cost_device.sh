#!/usr/bin/env bash
# The collector's profiling cost with the method's own noise measured beside it, one device call per phase:
#   bash .devcarry/cost_device.sh abba|whole|lorawhole|interleave|floor [BUDGET_S]
# run from a checkout (workloads/) whose .devcarry/ holds scalescope.xz (release CLI, stripped, xz),
# lib/ (its Debian libraries), libscalescope-collector.so, window_ab.py, window_check.py, cost_summary.py
# and this script. Writes $OUT/summary.txt, $OUT/env.txt and $OUT/cost-PHASE.tgz (every log, block and
# process summary, and `vmstat -t 1` for the whole phase: the guest's own view of steal time).
#
# Every job (profiled or not) is pinned to the same cores (COST_CPUS, default 2-9: window_ab.py --cpus, set
# before torch starts a thread, so the collector's and CUDA's threads inherit it) and runs the same warm-up.
# abba:  in-process ABBA blocks (window_ab.py; "on" = one collector window under
#        `profile --capture-range cudaProfilerApi`, pause 0.6 s and 2 untimed steps before every block):
#        MobileNetV2 (16 pairs of 15 steps) control (no profiler, both blocks alike: the floor), default,
#        --discard (CUPTI's own floor), NVTX hooks; LoRA (10 pairs of 8 steps) the same four. The default and
#        hooks traces are checked (window_check.py: exactly pairs x steps ProfilerStep ranges, kernels with
#        their launch call).
# whole: whole processes of MobileNetV2 (window_ab.py --steps-only 120: every step timed), rounds of the
#        modes none, default (`profile` as a user runs it), discard, stacks0 (SCALESCOPE_HOST_STACKS=0),
#        the order rotating per round, as many rounds as the budget allows (WHOLE_MODES, WHOLE_ROUNDS).
# lorawhole: the same for the LoRA step (LORA_WHOLE_STEPS, 60; LORA_WHOLE_ARGS, e.g. "--lora-batch 16
#        --lora-seq 1024"; LORA_WHOLE_EST seconds a process, 40), modes none and default.
# interleave: (1) the default sampled `profile` of MobileNetV2 (60 steps), its trace checked: exactly
#        ProfilerStep#10..#29, each whole, no malformed event; (2) rounds of uninjected processes and
#        `profile --iterations K --repeat-every M` (REPEAT_K, REPEAT_M: 10, 30) of INTERLEAVE_STEPS (430) steps,
#        the first one's trace checked the same way, summarized by `cost_summary.py interleave` (per-window
#        pairs from the driver's clock beside the collector's own figure); (3) MobileNetV2 ABBA, control and
#        default, 16 pairs of 15 steps (the independent figure); (4) the default profile of the LoRA step at
#        llm_finetune's batch (8 x 512) and at LORA_BIG (batch 16 x 1024), traces checked (GPU busy share).
# floor: in-process ABBA of control, default and the fewest CUPTI features (--activities kernel --api none)
#        and its --discard, MobileNetV2 (10 pairs) and LoRA (FLOOR_LORA_ARGS, 10 pairs).
# where: MobileNetV2 ABBA (WHERE_PAIRS, 16) of control, default, kernel only and the default without the
#        collector's host and NVML samplers, every block with each thread's CPU (window_ab.py's thread_cpu_ns);
#        the default's and kernel-only's traces exported here and split by cost_where.py: each thread's leaf
#        modules and functions inside the windows against outside them.
# where2: the default's and kernel-only's split again with more stack samples (WHERE_HZ, 500 Hz; WHERE_PAIRS, 14).
# loragpu: the GPU-bound LoRA step (LORA_BIG, 16 x 1024): ABBA control and default (LORA_PAIRS, 10, of 5 steps),
#        then --iterations 5 --repeat-every 15 (the self-measured figure in the same call).
# A job is started only if it should end before BUDGET_S (default 565).
# CPU test of the logic: COST_FAKE_MS=5 SS=path/to/scalescope OUT=/tmp/x bash cost_device.sh abba 60
# (window_ab.py --fake-step-ms: sleeps instead of a GPU step).
set -u
c="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:?OUT must name the folder for results}"
phase="${1:?usage: cost_device.sh abba|whole|lorawhole|interleave|floor|final|where|loragpu [BUDGET_S]}"
budget="${2:-565}"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if [ -n "${SS:-}" ]; then
  ss="$SS"
else
  xz -dc "$c/scalescope.xz" > /tmp/scalescope-cost && chmod +x /tmp/scalescope-cost
  printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path "%s/lib" /tmp/scalescope-cost "$@"\n' "$c" \
    > /tmp/scalescope-cost.sh
  chmod +x /tmp/scalescope-cost.sh
  ss=/tmp/scalescope-cost.sh
fi
export SCALESCOPE_COLLECTOR="$c/libscalescope-collector.so"
cpus="${COST_CPUS:-2-9}"
fake=()
[ -n "${COST_FAKE_MS:-}" ] && fake=(--fake-step-ms "$COST_FAKE_MS")
work="$(mktemp -d /tmp/cost.XXXXXX)"
logs="$out/logs"
mkdir -p "$logs"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
    --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  "$ss" --version
  echo "nproc $(nproc); pinned jobs to cores $cpus; load $(cat /proc/loadavg)"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|NUMA node|MHz'
  ls -la "$c"
} > "$out/env.txt" 2>&1
left() { echo $((budget - ($(date +%s) - t0))); }
note() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$out/summary.txt"; }
note "phase $phase, budget $budget s, cores $cpus, $(head -1 "$out/env.txt")"
# The host's own view of its CPU each second (the st column: time the hypervisor ran something else).
vmstat -t 1 > "$logs/vmstat.log" 2>&1 &
vmstat_pid=$!

# The collector's process summary (<host>-<pid>.json beside the trace) of a run directory, one JSON line.
proc_line() {  # proc_line RUN.ssrun ROUND MODE
  python3 - "$@" <<'PY'
import glob, json, os, sys
d, rnd, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    if isinstance(j, dict) and "pid" in j and "sampling" in j:
        keep = {k: j.get(k) for k in ("pid", "sampling", "collector_cpu_ns", "host_sampler_cpu_ns", "nvml_cpu_ns",
                                      "windows_opened", "cupti_detaches", "events_written", "bytes_written",
                                      "cupti_dropped_records", "status")}
        print(json.dumps(dict(keep, round=rnd, mode=mode)))
        break
PY
}

# One ABBA job: abba WORKLOAD LABEL EST_S PAIRS BLOCK_STEPS [profile options...]; LABEL control: no profiler.
# ABBA_ENV: variables for the profiled job. CHECK=1: export the trace and check it.
abba() {
  local w="$1" label="$2" est="$3" pairs="$4" steps="$5"
  shift 5
  if (($(left) < est)); then
    note "skipped $w/$label: $(left) s left, needs about $est s"
    return
  fi
  local run="$work/$w-$label" s rc
  local -a job=(python3 "$c/window_ab.py" --workload "$w" --job "$label" --out "$logs/abba-$w.jsonl"
                --pairs "$pairs" --block-steps "$steps" --warmup 15 --pause 0.6 --cpus "$cpus" "${fake[@]}"
                ${ABBA_JOB_ARGS[@]+"${ABBA_JOB_ARGS[@]}"})
  s=$(date +%s)
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
    proc_line "$run.ssrun" 0 "$label" >> "$logs/abba-$w-proc.jsonl"
    if [ "${KEEP:-0}" = 1 ] && (($(left) > est + 20)); then
      # Where the window's cost goes: each thread's leaf modules inside the windows against outside (named here,
      # where the libraries are), and the run itself for later reading.
      if "$ss" export --format sqlite -o "$work/t.sqlite" --force "$run.ssrun" > "$logs/export-$w-$label.log" 2>&1; then
        python3 "$c/cost_where.py" leaves "$work/t.sqlite" > "$logs/leaves-$w-$label.txt" 2>&1
        head -40 "$logs/leaves-$w-$label.txt" | sed "s|^|  leaves $w/$label: |" | tee -a "$out/summary.txt"
        python3 "$c/cost_where.py" owners "$work/t.sqlite" 2>&1 | tee "$logs/owners-$w-$label.txt" |
          sed "s|^|  owners $w/$label: |" | tee -a "$out/summary.txt"
        python3 "$c/window_check.py" "$work/t.sqlite" 2>&1 | sed "s|^|  check $w/$label: |" | tee -a "$out/summary.txt"
      else
        note "  export of $w/$label failed"
      fi
      tar -C "$work" -cf "$logs/run-$w-$label.tar" "$(basename "$run").ssrun"
      rm -f "$work/t.sqlite"
    fi
    if [ "${CHECK:-0}" = 1 ] && (($(left) > est + 20)); then
      if "$ss" export --format sqlite -o "$work/t.sqlite" --force "$run.ssrun" > /dev/null 2>&1; then
        python3 "$c/window_check.py" "$work/t.sqlite" "$((pairs * steps))" 2>&1 | sed "s|^|  check $w/$label: |" |
          tee -a "$out/summary.txt"
      else
        note "  export of $w/$label failed"
      fi
    fi
    rm -rf "$run.ssrun" "$work/t.sqlite"
  fi
}

# Whole processes: whole WORKLOAD STEPS EST_S MODES...; rounds until WHOLE_ROUNDS or the budget.
whole() {
  local w="$1" nsteps="$2" est="$3"
  shift 3
  local -a modes=("$@")
  local n=${#modes[@]} round mode k launch end rc run
  for ((round = 0; round < ${WHOLE_ROUNDS:-20}; round++)); do
    if (($(left) < n * est)); then
      note "whole $w: stopped before round $round ($(left) s left, a round needs about $((n * est)) s)"
      break
    fi
    for ((k = 0; k < n; k++)); do
      mode="${modes[$(((k + round) % n))]}"
      run="$work/$w-$mode-$round"
      local -a job=(python3 "$c/window_ab.py" --workload "$w" --job "$mode" --on nothing --round "$round"
                    --out "$logs/whole-$w-steps.jsonl" --steps-only "$nsteps" --cpus "$cpus" "${fake[@]}"
                    ${WHOLE_JOB_ARGS[@]+"${WHOLE_JOB_ARGS[@]}"})
      local -a pre=()
      case "$mode" in
        none) pre=() ;;
        default) pre=("$ss" profile -o "$run" --) ;;
        discard) pre=("$ss" profile -o "$run" --discard --) ;;
        stacks0) pre=(env SCALESCOPE_HOST_STACKS=0 "$ss" profile -o "$run" --) ;;
        nohost) pre=("$ss" profile -o "$run" --host-hz 0 --nvml-hz 0 --) ;;
        hooks) pre=(env SCALESCOPE_NVTX_RECORDS=hooks "$ss" profile -o "$run" --) ;;
        repeat) pre=("$ss" profile -o "$run" --iterations "$rep_k" --repeat-every "$rep_m" --) ;;
        *) note "unknown mode $mode"; return ;;
      esac
      [ -n "${COST_FAKE_MS:-}" ] && [ "$mode" != none ] && pre=(env FAKE_PROFILED=1 "${pre[@]}")
      launch=$(date +%s.%N)
      timeout $((3 * est)) "${pre[@]}" "${job[@]}" --launch-epoch "$launch" > "$logs/whole-$w-$mode-$round.log" 2>&1
      rc=$?
      end=$(date +%s.%N)
      echo "{\"round\": $round, \"mode\": \"$mode\", \"rc\": $rc, \"launch_epoch\": $launch, \"end_epoch\": $end}" \
        >> "$logs/whole-$w-wall.jsonl"
      [ -d "$run.ssrun" ] && proc_line "$run.ssrun" "$round" "$mode" >> "$logs/whole-$w-proc.jsonl"
      note "whole $w round $round $mode: exit $rc, $(python3 -c "print(round($end - $launch, 1))") s"
      if [ "$mode" = repeat ] && [ "$round" = 0 ] && [ -d "$run.ssrun" ]; then
        keep_run "$run" "$w-repeat"
        check_run "$run" "$w/repeat" "$(python3 -c "
import sys; sys.path.insert(0, '$c'); import window_check as c; print(len(c.traced_steps(10, $rep_k, $rep_m, $nsteps)))")" \
          "10:$rep_k:$rep_m:$nsteps"
      fi
      rm -rf "$run.ssrun"
    done
  done
  touch "$logs/whole-$w-proc.jsonl"
  if [ "${modes[*]}" = "none repeat" ]; then
    python3 "$c/cost_summary.py" interleave "$logs/whole-$w-steps.jsonl" "$logs/whole-$w-proc.jsonl" 10 "$rep_k" "$rep_m" \
      2>&1 | tee -a "$out/summary.txt"
  else
    python3 "$c/cost_summary.py" whole "$logs/whole-$w-steps.jsonl" "$logs/whole-$w-wall.jsonl" \
      "$logs/whole-$w-proc.jsonl" 2>&1 | tee -a "$out/summary.txt"
  fi
}

# A run's small files kept: run.json and the process summaries (sampling, perturbation), and `analyze`'s text.
keep_run() {  # keep_run RUN LABEL
  local f
  for f in "$1".ssrun/run.json "$1".ssrun/*.json; do
    [ -f "$f" ] && cp "$f" "$logs/run-$2-$(basename "$f")"
  done
  timeout 120 "$ss" analyze "$1.ssrun" > "$logs/analyze-$2.txt" 2>&1 || note "  analyze of $2: exit $?"
  grep -i -A3 "perturbation" "$logs/analyze-$2.txt" | head -8 | sed "s|^|  analyze $2: |" | tee -a "$out/summary.txt"
}

# Export a run to SQLite and check it: check_run RUN LABEL EXPECTED_STEPS [SKIP:K:EVERY:TOTAL]
check_run() {
  if "$ss" export --format sqlite -o "$work/t.sqlite" --force "$1.ssrun" > "$logs/export-${2//\//-}.log" 2>&1; then
    python3 "$c/window_check.py" "$work/t.sqlite" "$3" ${4:+"$4"} 2>&1 | sed "s|^|  check $2: |" |
      tee -a "$out/summary.txt"
  else
    note "  export of $2 failed"
  fi
  rm -f "$work/t.sqlite"
}

# One process under `profile` (PROFILE_ARGS: its options; default: none, the default sampled schedule), kept and
# checked: profile_check WORKLOAD STEPS LABEL EST_S SKIP:K:EVERY [JOB ARGS...]
profile_check() {
  local w="$1" nsteps="$2" label="$3" est="$4" sched="$5" rc s want
  shift 5
  if (($(left) < est)); then
    note "skipped $label: $(left) s left, needs about $est s"
    return
  fi
  local run="$work/$label"
  s=$(date +%s)
  timeout $((3 * est)) "$ss" profile -o "$run" ${PROFILE_ARGS[@]+"${PROFILE_ARGS[@]}"} -- python3 "$c/window_ab.py" \
    --workload "$w" --job "$label" --on nothing --out "$logs/profile-$label-steps.jsonl" --steps-only "$nsteps" \
    --cpus "$cpus" "${fake[@]}" "$@" > "$logs/profile-$label.log" 2>&1
  rc=$?
  note "$label: exit $rc in $(($(date +%s) - s)) s"
  if [ -d "$run.ssrun" ]; then
    proc_line "$run.ssrun" 0 "$label" >> "$logs/profile-proc.jsonl"
    keep_run "$run" "$label"
    want=$(python3 -c "
import sys; sys.path.insert(0, '$c'); import window_check as c; print(len(c.traced_steps(${sched//:/, }, $nsteps)))")
    check_run "$run" "$label" "$want" "$sched:$nsteps"
    rm -rf "$run.ssrun"
  fi
  if [ -f "$logs/profile-$label-steps.jsonl" ]; then
    IFS=: read -r sk sa se <<< "$sched"
    python3 "$c/cost_summary.py" interleave "$logs/profile-$label-steps.jsonl" "$logs/profile-proc.jsonl" \
      "$sk" "$sa" "$se" "${GAP:-5}" 2>&1 | grep -v "processes," | sed "s|^|  driver's clock $label: |" |
      tee -a "$out/summary.txt"
  fi
}

case "$phase" in
  abba)
    note "A. MobileNetV2 ABBA, 16 pairs of 15 steps: control, default, discard, hooks"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    abba mobilenet control 75 16 15
    CHECK=1 abba mobilenet default 75 16 15
    abba mobilenet discard 75 16 15 --discard
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=hooks)
    CHECK=1 abba mobilenet hooks 75 16 15
    python3 "$c/cost_summary.py" abba "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    note "B. LoRA ABBA, 10 pairs of 8 steps: control, default, discard, hooks"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    abba lora control 65 10 8
    CHECK=1 abba lora default 65 10 8
    abba lora discard 65 10 8 --discard
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=hooks)
    abba lora hooks 65 10 8
    [ -f "$logs/abba-lora.jsonl" ] && python3 "$c/cost_summary.py" abba "$logs/abba-lora.jsonl" 2>&1 |
      tee -a "$out/summary.txt"
    ;;
  whole)
    read -r -a wm <<< "${WHOLE_MODES:-none default discard stacks0}"
    note "C. whole processes, MobileNetV2, 120 steps: ${wm[*]}"
    whole mobilenet 120 32 "${wm[@]}"
    ;;
  lorawhole)
    read -r -a wm <<< "${WHOLE_MODES:-none default}"
    read -r -a WHOLE_JOB_ARGS <<< "${LORA_WHOLE_ARGS:-}"  # e.g. "--lora-batch 16 --lora-seq 1024"
    note "D. whole processes, LoRA ${WHOLE_JOB_ARGS[*]}, ${LORA_WHOLE_STEPS:-60} steps: ${wm[*]}"
    whole lora "${LORA_WHOLE_STEPS:-60}" "${LORA_WHOLE_EST:-40}" "${wm[@]}"
    ;;
  interleave)
    rep_k="${REPEAT_K:-10}" rep_m="${REPEAT_M:-30}"
    note "E1. default sampled profile of MobileNetV2, 60 steps: want ProfilerStep#10..#29 whole"
    profile_check mobilenet 60 mobilenet-default 30 10:20:0
    note "E2. interleaved windows (--iterations $rep_k --repeat-every $rep_m), ${INTERLEAVE_STEPS:-430} steps, rounds of none, repeat"
    WHOLE_ROUNDS="${INTERLEAVE_ROUNDS:-4}" whole mobilenet "${INTERLEAVE_STEPS:-430}" 30 none repeat
    note "E3. MobileNetV2 ABBA, 16 pairs of 15 steps: control, default"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    abba mobilenet control 75 16 15
    abba mobilenet default 75 16 15
    python3 "$c/cost_summary.py" abba "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    note "E4. LoRA under the default profile, 40 steps: batch 8 x 512, then ${LORA_BIG:-16 1024} (GPU busy share)"
    profile_check lora 40 lora-8x512 45 10:20:0
    read -r big_b big_s <<< "${LORA_BIG:-16 1024}"
    profile_check lora 40 "lora-${big_b}x${big_s}" 60 10:20:0 --lora-batch "$big_b" --lora-seq "$big_s"
    ;;
  final)
    rep_k="${REPEAT_K:-10}" rep_m="${REPEAT_M:-30}"
    note "G1. the collector's paired estimate: rounds of none, repeat (--iterations $rep_k --repeat-every $rep_m), ${INTERLEAVE_STEPS:-430} steps"
    WHOLE_ROUNDS="${INTERLEAVE_ROUNDS:-2}" whole mobilenet "${INTERLEAVE_STEPS:-430}" 50 none repeat
    note "G2. MobileNetV2 ABBA in the same call, 10 pairs of 15 steps: control, default"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    abba mobilenet control 60 10 15
    abba mobilenet default 60 10 15
    python3 "$c/cost_summary.py" abba "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    note "G3. LoRA under --iterations 5 --repeat-every 15, 100 steps: 8 x 512, then ${LORA_BIG:-16 1024} (GPU busy share, paired estimate)"
    PROFILE_ARGS=(--iterations 5 --repeat-every 15)
    GAP=2 profile_check lora 100 lora-8x512 60 10:5:15
    read -r big_b big_s <<< "${LORA_BIG:-16 1024}"
    GAP=2 profile_check lora 100 "lora-${big_b}x${big_s}" 100 10:5:15 --lora-batch "$big_b" --lora-seq "$big_s"
    PROFILE_ARGS=()
    note "G4. LoRA ABBA, kernel only (--activities kernel --api none), 10 pairs of 8 steps"
    abba lora kernel 70 10 8 --activities kernel --api none
    [ -f "$logs/abba-lora.jsonl" ] && python3 "$c/cost_summary.py" abba "$logs/abba-lora.jsonl" 2>&1 |
      tee -a "$out/summary.txt"
    ;;
  floor)
    note "F. in-process ABBA, 10 pairs: control, default, kernel only (--activities kernel --api none), its --discard"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    for w in mobilenet lora; do
      if [ "$w" = lora ]; then
        read -r -a ABBA_JOB_ARGS <<< "${FLOOR_LORA_ARGS:-}"
        est=70 steps=8
      else
        ABBA_JOB_ARGS=() est=50 steps=15
      fi
      abba "$w" control "$est" 10 "$steps"
      abba "$w" default "$est" 10 "$steps"
      abba "$w" kernel "$est" 10 "$steps" --activities kernel --api none
      abba "$w" kerneldiscard "$est" 10 "$steps" --activities kernel --api none --discard
      [ -f "$logs/abba-$w.jsonl" ] && python3 "$c/cost_summary.py" abba "$logs/abba-$w.jsonl" 2>&1 |
        tee -a "$out/summary.txt"
    done
    ;;
  where)
    note "W. where a window's cost goes, MobileNetV2 ABBA, ${WHERE_PAIRS:-16} pairs of 15 steps (thread CPU per block,"
    note "   leaf modules in and out of windows): control, default, kernel only, default without the collector's samplers"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    abba mobilenet control 80 "${WHERE_PAIRS:-16}" 15
    KEEP=1 abba mobilenet default 90 "${WHERE_PAIRS:-16}" 15
    KEEP=1 abba mobilenet kernel 90 "${WHERE_PAIRS:-16}" 15 --activities kernel --api none
    abba mobilenet nosamplers 80 "${WHERE_PAIRS:-16}" 15 --host-hz 0 --nvml-hz 0
    python3 "$c/cost_summary.py" abba "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    python3 "$c/cost_where.py" blocks "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    ;;
  where2)
    note "W2. the same split with 5x the stack samples (--host-hz ${WHERE_HZ:-500}), ${WHERE_PAIRS:-14} pairs: default, kernel only"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    KEEP=1 abba mobilenet default 95 "${WHERE_PAIRS:-14}" 15 --host-hz "${WHERE_HZ:-500}"
    KEEP=1 abba mobilenet kernel 95 "${WHERE_PAIRS:-14}" 15 --activities kernel --api none --host-hz "${WHERE_HZ:-500}"
    python3 "$c/cost_summary.py" abba "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    python3 "$c/cost_where.py" blocks "$logs/abba-mobilenet.jsonl" 2>&1 | tee -a "$out/summary.txt"
    ;;
  loragpu)
    read -r big_b big_s <<< "${LORA_BIG:-16 1024}"
    note "L. the GPU-bound LoRA step ($big_b x $big_s): ABBA control and default, ${LORA_PAIRS:-10} pairs of 5 steps,"
    note "   then the self-measured figure of --iterations 5 --repeat-every 15 in the same call"
    ABBA_ENV=(SCALESCOPE_NVTX_RECORDS=cupti)
    ABBA_JOB_ARGS=(--lora-batch "$big_b" --lora-seq "$big_s")
    abba lora control 110 "${LORA_PAIRS:-10}" 5
    KEEP=1 abba lora default 120 "${LORA_PAIRS:-10}" 5
    python3 "$c/cost_summary.py" abba "$logs/abba-lora.jsonl" 2>&1 | tee -a "$out/summary.txt"
    python3 "$c/cost_where.py" blocks "$logs/abba-lora.jsonl" 2>&1 | tee -a "$out/summary.txt"
    ABBA_JOB_ARGS=()
    PROFILE_ARGS=(--iterations 5 --repeat-every 15)
    GAP=2 profile_check lora 100 "lora-${big_b}x${big_s}" 100 10:5:15 --lora-batch "$big_b" --lora-seq "$big_s"
    PROFILE_ARGS=()
    ;;
  *) echo "cost_device.sh: unknown phase $phase" >&2; exit 2 ;;
esac
note "done"
kill "$vmstat_pid" 2>/dev/null
cp "$out/summary.txt" "$logs/" 2>/dev/null
tar -C "$out" -czf "$out/cost-$phase.tgz" logs env.txt && rm -rf "$logs"
rm -rf "$work"
