#!/usr/bin/env bash
# Collector overhead on 2 GPUs, as in-process A/B pairs: each
# torchrun job (MobileNetV2 DDP, train.py) warms up once, then alternates
# timed "off" and "on" blocks (ABBA order), so every mode gets >= 5 paired
# repetitions from ONE job and start-up costs are paid once per mode.
#
#   bench/collector_overhead/run.sh BUILD_DIR OUT_DIR [BUDGET_S]
#   ONLY="default none" (environment): run only the named jobs.
#
# BUILD_DIR holds cli/scalescope, collect/libscalescope-collector.so and
# collect/collect_gpu_check (release build). Jobs, in this order:
#   torch_profiler  no injection: 5 control pairs (both blocks identical: the
#                   A/B method's own noise, and the uninjected baseline), then
#                   5 pairs with torch.profiler(CPU+CUDA) around "on" blocks
#   default, default_attached, default_sync, api_all, kernel, kernel_copy,
#   kernel_copy_sync, api_none, discard
#                   under `scalescope profile --capture-range cudaProfilerApi`;
#                   "on" blocks are torch.cuda.profiler.start()/stop() windows.
#                   default_attached: --no-detach (CUPTI stays attached between
#                   windows: what detaching buys outside them); default_sync:
#                   --activities all (the SYNCHRONIZATION records the default leaves out).
#                   The breakdown chain (all --api none): kernel -> +memcpy,
#                   memset -> +sync -> +nvtx (= api_none); default adds the
#                   API records; discard keeps nothing (CUPTI's own cost);
#                   discard_api_all: the same floor for --api all.
#   none            no injection, control pairs again (drift from first to last)
# "Off" blocks of an injected job against the uninjected jobs' blocks give the
# cost outside the window; against the job's own 2 lead blocks (timed before
# its first window, train.py --lead-blocks) they give it within one process.
#
# Timing: BUDGET_S (default 480) covers everything; each job gets a share of
# what is left and train.py shortens its blocks (3 s down to 1 s) to fit.
# Expected duration: 12 jobs x (~25-35 s start-up and exit + 10-20 blocks of
# 1-3 s) = the budget, about 8 minutes (a job overrunning its share is cut
# 60 s after it); the checks and summary take seconds.
#
# Writes under OUT_DIR (5 files): results.jsonl (one line per block),
# jobs.jsonl (per job: command, exit code, wall and start-up time, the
# collector summaries of run.json, window checks), jobs.log (last lines of
# every job's output), summary.txt and summary.json (summarize.py). The
# traces are written to a temporary directory and deleted (KEEP_RUNS=1 keeps
# them, path printed).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "${1:?usage: run.sh BUILD_DIR OUT_DIR [BUDGET_S]}" && pwd)"
out="${2:?usage: run.sh BUILD_DIR OUT_DIR [BUDGET_S]}"
budget="${3:-480}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
scalescope="$build/cli/scalescope"
checker="$build/collect/collect_gpu_check"
for f in "$scalescope" "$checker" "$build/collect/libscalescope-collector.so"; do
  [ -e "$f" ] || { echo "FAIL missing $f"; exit 1; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/scalescope-overhead.XXXXXX")"
results="$out/results.jsonl" jobs="$out/jobs.jsonl" log="$out/jobs.log"
: > "$results"
: > "$jobs"
: > "$log"
pairs=5
start=$(date +%s)
deadline=$((start + budget - 25))  # 25 s kept for checks, summary and clean-up

# name | weight (blocks, plus window switching) | how "on" is done | scalescope options ("-" = no injection)
specs=(
  "torch_profiler|32|torch-profiler|-"  # 22 blocks + torch.profiler stops (seconds each)
  "default|12|cuda-profiler|"
  "default_attached|12|cuda-profiler|--no-detach"
  "default_sync|12|cuda-profiler|--activities all"
  "api_all|12|cuda-profiler|--api all"
  "kernel|12|cuda-profiler|--activities kernel --api none"
  "kernel_copy|12|cuda-profiler|--activities kernel,memcpy,memset --api none"
  "kernel_copy_sync|12|cuda-profiler|--activities kernel,memcpy,memset,sync --api none"
  "api_none|12|cuda-profiler|--api none"
  "discard|12|cuda-profiler|--discard"
  "discard_api_all|12|cuda-profiler|--discard --api all"
  "none|12|nothing|-"
)
# ONLY="default none" keeps just those jobs (a re-run of modes a budget cut),
# so the budget is shared among them alone.
if [ -n "${ONLY:-}" ]; then
  kept=()
  for s in "${specs[@]}"; do
    if grep -qw -- "${s%%|*}" <<< "$ONLY"; then kept+=("$s"); else echo "NOTE ${s%%|*} not in ONLY"; fi
  done
  specs=("${kept[@]}")
fi
startup_est=30  # seconds of start-up + exit per job; replaced by the median measured
startups=()
for i in "${!specs[@]}"; do
  IFS='|' read -r name blocks on opts <<< "${specs[$i]}"
  now=$(date +%s)
  # This job's share of what is left: start-up estimate for every job left,
  # the rest split by block count.
  left_blocks=0
  for s in "${specs[@]:$i}"; do left_blocks=$((left_blocks + $(cut -d'|' -f2 <<< "$s"))); done
  left_jobs=$((${#specs[@]} - i))
  left=$((deadline - now))
  block_time=$(python3 -c "print(max(0.0, ($left - $left_jobs * $startup_est) * $blocks / $left_blocks))")
  end_time=$(python3 -c "print($now + $startup_est * 0.7 + $block_time)")
  # The first and the last job (the control's two ends) always run.
  if [ "$i" -eq 0 ] || [ "$left_jobs" -eq 1 ] ||
     python3 -c "import sys; sys.exit(0 if $block_time >= $blocks * 1.0 else 1)"; then :; else
    echo "NOTE $name skipped: $left s left for $left_jobs jobs"
    echo "{\"job\": \"$name\", \"skipped\": true}" >> "$jobs"
    continue
  fi
  train=(torchrun --standalone --nproc_per_node=2 "$here/train.py" --job "$name" --on "$on" --out "$results"
         --pairs "$pairs" --end-time "$end_time")
  [ "$name" = torch_profiler ] && train+=(--control-pairs "$pairs")
  run="$work/$name"
  if [ "$opts" = "-" ]; then
    cmd=("${train[@]}")
  else
    # shellcheck disable=SC2206  # opts is a list of words on purpose
    cmd=("$scalescope" profile --force --capture-range cudaProfilerApi $opts -o "$run" -- "${train[@]}")
  fi
  limit=$(python3 -c "print(int($end_time - $now + 60))")
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" "${cmd[@]}" > "$work/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  { echo "=== $name (exit $rc): ${cmd[*]}"; tail -n 40 "$work/$name.log"; } >> "$log"
  # Start-up + exit = wall time - the timed part (first block start to last block end).
  startup=$(python3 - "$results" "$name" "$t0" "$t1" << 'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("job") == sys.argv[2] and "seconds" in r]
wall = float(sys.argv[4]) - float(sys.argv[3])
if not rows:
    print(f"{wall:.1f}")
else:
    first = min(r["unix_end"] - r["seconds"] - r["start_s"] for r in rows)
    last = max(r["unix_end"] for r in rows)
    print(f"{wall - (last - first):.1f}")
PY
)
  startups+=("$startup")
  startup_est=$(printf '%s\n' "${startups[@]}" | sort -n | awk '{a[NR]=$1} END {print int(a[int((NR+1)/2)] + 3)}')
  # The trace must hold exactly the "on" blocks: windows opened = on blocks,
  # NVTX train_step ranges = steps in on blocks, absent groups absent.
  check=""
  if [ "$opts" != "-" ] && [[ "$name" != discard* ]]; then
    on_steps=$(python3 -c "
import json
rows = [json.loads(l) for l in open('$results') if l.strip()]
print(sum(r['steps'] for r in rows if r.get('job') == '$name' and r.get('on') and 'seconds' in r))")
    check=$("$checker" window "$run.ssrun" train_step "$on_steps" "$pairs" 2>&1)
    echo "$check" | sed "s/^/  $name: /"
  fi
  python3 - "$jobs" "$name" "$rc" "$t0" "$t1" "$startup" "$run.ssrun" "$check" "${cmd[*]}" << 'PY'
import glob, json, os, sys
jobs, name, rc, t0, t1, startup, run, check, cmd = sys.argv[1:]
entry = {"job": name, "exit_code": int(rc), "wall_s": float(t1) - float(t0), "startup_s": float(startup),
         "command": cmd, "check": [l for l in check.splitlines() if l]}
if os.path.exists(os.path.join(run, "run.json")):
    j = json.load(open(os.path.join(run, "run.json")))
    entry["run"] = {k: j.get(k) for k in ("trace_bytes", "duration_s", "options", "processes")}
    # The collectors' own summaries: windows opened, activities.
    entry["collectors"] = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(run, "*.json")))
                           if os.path.basename(p) != "run.json"]
open(jobs, "a").write(json.dumps(entry) + "\n")
PY
  echo "$name: exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall, start-up+exit $startup s"
  [ $rc -eq 0 ] || echo "FAIL $name exit $rc (see $log)"
done
python3 "$here/summarize.py" "$out" | tee "$out/summary.txt"
if [ "${KEEP_RUNS:-0}" = 1 ]; then echo "runs kept in $work"; else rm -rf "$work"; fi
echo "total $(($(date +%s) - start)) s"
