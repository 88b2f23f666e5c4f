#!/usr/bin/env bash
# Whole-process A/B of sampled windows: ROUNDS rounds, each mode
# once per round (the order rotates from round to round), one GPU.
#
#   bench/collector_overhead/sampled_ab.sh SCALESCOPE COLLECTOR_SO OUT_DIR WORKLOAD [BUDGET_S]
#
# WORKLOAD: mobilenet (workloads/image_ddp.py: MobileNetV2, channels-last,
# fp16 autocast, batch 128, 224x224, synthetic input; launch-bound, about
# 20 ms a step) or lora (workloads/llm_finetune.py --method lora; GPU-bound).
# Modes (MODES overrides): none (no profiler), sampled (`scalescope profile`
# with its defaults: skip 10 iterations, trace 20, detach), full (--full),
# full_discard (--full --discard: CUPTI's own floor for the same kinds);
# with "inject" also sampled_lean, detached, idle_nvtx (below). The
# lean modes, all sampled (the default schedule): sampled_cb (API calls from
# the collector's callbacks, SCALESCOPE_API_RECORDS=callbacks), sampled_kmm
# (--activities kernel,memcpy,memset --api none), sampled_discard (--discard:
# CUPTI's floor for the default kinds), sampled_hooks (NVTX through the
# collector's own hooks, SCALESCOPE_NVTX_RECORDS=hooks). PROFILE_ARGS (default "--nvml-hz 0")
# are given to every `profile`; set it empty for the true defaults.
# SCALESCOPE may be the word "inject": then no CLI is used, and each profiled
# job gets the collector's variables directly (CUDA_INJECTION64_PATH,
# NVTX_INJECTION64_PATH, SCALESCOPE_RUN_DIR, SCALESCOPE_NVML_HZ=0,
# SCALESCOPE_FULL, SCALESCOPE_DISCARD), which is what `profile` sets; CUPTI_DIR,
# when set, is prepended to the injected jobs' LD_LIBRARY_PATH.
# Each job's steady throughput comes from its scalescope_result line; each
# profiled job's self-measured perturbation from its run.json (sampling).
# Writes OUT_DIR/results.jsonl (one line per job) and OUT_DIR/jobs.log;
# summarize with sampled_ab_summary.py. BUDGET_S (default 540): no round is
# started that would not end before it.
set -uo pipefail
scalescope="${1:?usage: sampled_ab.sh SCALESCOPE COLLECTOR_SO OUT_DIR WORKLOAD [BUDGET_S]}"
collector="${2:?collector}"
out="${3:?out dir}"
workload="${4:?mobilenet|lora}"
budget="${5:-540}"
rounds="${ROUNDS:-5}"
python="${PYTHON:-python3}"
here="${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"  # the checkout with workloads/
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SCALESCOPE_COLLECTOR="$collector"
# An older CLI has no --full: the collector reads SCALESCOPE_FULL=1 from the environment then.
full_flag=(--full)
[ "$scalescope" = inject ] || "$scalescope" profile --help 2>/dev/null | grep -q -- '--full' || full_flag=()
inject() {  # inject RUN_DIR [VAR=VALUE...] -- CMD...
  local dir="$1.ssrun"
  local -a vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  mkdir -p "$dir"
  env CUDA_INJECTION64_PATH="$collector" NVTX_INJECTION64_PATH="$collector" SCALESCOPE_RUN_DIR="$dir" \
    SCALESCOPE_NVML_HZ=0 LD_LIBRARY_PATH="${CUPTI_DIR:+$CUPTI_DIR:}${LD_LIBRARY_PATH:-}" "${vars[@]}" "$@"
}
read -r -a modes <<< "${MODES:-none sampled full full_discard}"
read -r -a pargs <<< "${PROFILE_ARGS---nvml-hz 0}"
case "$workload" in
  mobilenet) job=("$python" "$here/workloads/image_ddp.py" --synthetic --channels-last on --precision fp16 --batch-size 128
                  --image-size 224 --steps "${STEPS:-400}" --warmup-steps 10 --log-every 0 --eval off --loader gpu) ;;
  lora) job=("$python" "$here/workloads/llm_finetune.py" --method lora --steps "${STEPS:-80}" --warmup-steps 10 --log-every 0) ;;
  *) echo "sampled_ab.sh: unknown workload $workload" >&2; exit 2 ;;
esac
work="$(mktemp -d "${TMPDIR:-/tmp}/scalescope-sampled.XXXXXX")"
results="$out/results.jsonl" log="$out/jobs.log"
: > "$results"
: > "$log"
start=$(date +%s)
longest_round=0
for ((round = 0; round < rounds; round++)); do
  now=$(date +%s)
  if ((round > 0 && now + longest_round + 10 > start + budget)); then
    echo "budget: stopped before round $round (a round takes up to ${longest_round} s)" | tee -a "$log"
    break
  fi
  round_start=$now
  n=${#modes[@]}
  for ((k = 0; k < n; k++)); do
    mode="${modes[$(((k + round) % n))]}"
    run_dir="$work/$mode-$round"
    case "$mode" in
      none) cmd=("${job[@]}") ;;
      sampled) cmd=("$scalescope" profile -o "$run_dir" "${pargs[@]}" -- "${job[@]}") ;;
      sampled_cb) cmd=(env SCALESCOPE_API_RECORDS=callbacks "$scalescope" profile -o "$run_dir" "${pargs[@]}" -- "${job[@]}") ;;
      sampled_kmm) cmd=("$scalescope" profile -o "$run_dir" "${pargs[@]}" --activities kernel,memcpy,memset --api none
                        -- "${job[@]}") ;;
      sampled_discard) cmd=("$scalescope" profile -o "$run_dir" "${pargs[@]}" --discard -- "${job[@]}") ;;
      sampled_hooks) cmd=(env SCALESCOPE_NVTX_RECORDS=hooks "$scalescope" profile -o "$run_dir" "${pargs[@]}"
                          -- "${job[@]}") ;;
      full) cmd=(env SCALESCOPE_FULL=1 "$scalescope" profile -o "$run_dir" --nvml-hz 0 "${full_flag[@]}" -- "${job[@]}") ;;
      full_discard) cmd=(env SCALESCOPE_FULL=1 "$scalescope" profile -o "$run_dir" --nvml-hz 0 "${full_flag[@]}" --discard
                         -- "${job[@]}") ;;
      sampled_lean|detached|idle_nvtx) [ "$scalescope" = inject ] || { echo "$mode needs inject" >&2; exit 2; } ;;
      *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    if [ "$scalescope" = inject ]; then
      case "$mode" in
        sampled) cmd=(inject "$run_dir" -- "${job[@]}") ;;
        full) cmd=(inject "$run_dir" SCALESCOPE_FULL=1 -- "${job[@]}") ;;
        full_discard) cmd=(inject "$run_dir" SCALESCOPE_FULL=1 SCALESCOPE_DISCARD=1 -- "${job[@]}") ;;
        # Experiments on the state between windows: sampled with the lean
        # re-attach; a window of 0.2 s after CUDA starts, then detached for
        # good (no re-attach); CUPTI attached with NVTX callbacks and the
        # activity API set up, and never a window.
        sampled_lean) cmd=(inject "$run_dir" SCALESCOPE_LEAN_REATTACH=1 -- "${job[@]}") ;;
        detached) cmd=(inject "$run_dir" SCALESCOPE_DURATION=0.2 -- "${job[@]}") ;;
        idle_nvtx) cmd=(inject "$run_dir" SCALESCOPE_CAPTURE_RANGE=nvtx:scalescope_never -- "${job[@]}") ;;
      esac
    fi
    t0=$(date +%s.%N)
    if [ "${cmd[0]}" = inject ]; then
      text="$(export -f inject; collector="$collector" timeout 240 bash -c '"$@"' _ "${cmd[@]}" 2>&1)"
    else
      text="$(timeout 240 "${cmd[@]}" 2>&1)"
    fi
    rc=$?
    t1=$(date +%s.%N)
    { echo "=== round $round mode $mode rc $rc"; echo "$text" | grep -v "^step=" | tail -n 12; } >> "$log"
    result="$(echo "$text" | grep '^scalescope_result' | tail -n 1)"
    sampling="null"
    # From the collectors' process summaries (<host>-<pid>.json) beside the traces.
    [ -d "$run_dir.ssrun" ] && sampling="$("$python" -c '
import glob, json, os, sys
s = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    if isinstance(j, dict) and "sampling" in j and "pid" in j:
        s.append(dict(j["sampling"], pid=j["pid"], windows_opened=j.get("windows_opened"),
                      cupti_detaches=j.get("cupti_detaches"), events=j.get("events_written")))
print(json.dumps(s))' "$run_dir.ssrun")"
    "$python" - "$round" "$mode" "$rc" "$t0" "$t1" "$result" "$sampling" >> "$results" <<'PY'
import json, re, sys
round_, mode, rc, t0, t1, result, sampling = sys.argv[1:8]
fields = dict(kv.split("=", 1) for kv in result.split()[1:]) if result else {}
print(json.dumps({"round": int(round_), "mode": mode, "rc": int(rc), "wall_s": float(t1) - float(t0),
                  "result": fields, "sampling": json.loads(sampling)}))
PY
    # One sampled and one full trace come back for `analyze` (the others are deleted).
    if [ "$round" = 0 ] && [ "$mode" != none ] && [ "$mode" != full_discard ] && [ -d "$run_dir.ssrun" ]; then
      tar -C "$work" -czf "$out/$mode-$workload-round0.ssrun.tar.gz" "$(basename "$run_dir").ssrun" 2>/dev/null
    fi
    rm -rf "$run_dir.ssrun"
  done
  took=$(($(date +%s) - round_start))
  ((took > longest_round)) && longest_round=$took
done
rm -rf "$work"
echo "done in $(($(date +%s) - start)) s" | tee -a "$log"
