#!/usr/bin/env bash
# The collector's cost on a launch-bound probe, quieter than run.sh's
# MobileNetV2 blocks: launch_rate (empty kernels launched back to back, timed
# in blocks; launch_rate.cu says how) under each mode, ROUNDS rounds of all
# modes in turn (none first and last in each round's order), one process each.
#
#   bench/collector_overhead/run_launch_rate.sh BUILD_DIR OUT_DIR [ROUNDS]
#
# BUILD_DIR: cli/scalescope, collect/libscalescope-collector.so and
# collect/gpu_test/launch_rate (collect/gpu_test/build.sh). Modes:
#   none              uninjected, --on nothing (same pauses, no windows)
#   default           scalescope profile --capture-range cudaProfilerApi (probe --on cuda-profiler)
#   default_attached  the same with --no-detach
#   api_all           the same with --api all
#   discard           the same with --discard (CUPTI's floor, nothing kept)
#   default_nonvml    default with --nvml-hz 0 (no GPU counter sampler in the process)
#   subscribed_idle   injected, CUPTI subscribed with no callback enabled, no
#                     window ever (--delay 1000 --nvml-hz 0, probe --on nothing):
#                     what being attached costs with nothing to record
# MODES (space-separated names) picks modes; default: none default default_attached api_all discard.
# PROBE_ARGS: more launch_rate options for every job (e.g. "--call get-device --launches 5000000").
# About 15-20 s a job; 3 rounds of 5 jobs ~ 5 minutes on an H200.
# OUT_DIR gets blocks.jsonl, jobs.log, summary.txt, summary.json.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "${1:?usage: run_launch_rate.sh BUILD_DIR OUT_DIR [ROUNDS]}" && pwd)" || exit 1
out="${2:?usage: run_launch_rate.sh BUILD_DIR OUT_DIR [ROUNDS]}"
rounds="${3:-3}"
mkdir -p "$out" && out="$(cd "$out" && pwd)" || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ss="$build/cli/scalescope" probe="$build/collect/gpu_test/launch_rate"
for f in "$ss" "$probe" "$build/collect/libscalescope-collector.so"; do
  [ -x "$f" ] || [ -e "$f" ] || { echo "FAIL missing $f"; exit 1; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/scalescope-launch-rate.XXXXXX")"
: > "$out/blocks.jsonl"
: > "$out/jobs.log"
fails=0
cap="--capture-range cudaProfilerApi"
all_modes=("none|-" "default|$cap" "default_attached|$cap --no-detach" "api_all|$cap --api all" "discard|$cap --discard"
           "default_nonvml|$cap --nvml-hz 0" "subscribed_idle|--delay 1000 --nvml-hz 0|nothing")
modes=()
for name in ${MODES:-none default default_attached api_all discard}; do
  found=""
  for spec in "${all_modes[@]}"; do [ "${spec%%|*}" = "$name" ] && found="$spec"; done
  [ -n "$found" ] || { echo "FAIL unknown mode '$name' in MODES"; exit 1; }
  modes+=("$found")
done
for ((r = 0; r < rounds; r++)); do
  for spec in "${modes[@]}"; do
    IFS='|' read -r name opts on <<< "$spec"
    if [ "$opts" = "-" ]; then
      # shellcheck disable=SC2086  # PROBE_ARGS is a list of words on purpose
      cmd=("$probe" --on nothing ${PROBE_ARGS:-})
    else
      # shellcheck disable=SC2206  # opts is a list of words on purpose
      cmd=("$ss" profile --force $opts -o "$work/$name-$r" -- "$probe" --on "${on:-cuda-profiler}" ${PROBE_ARGS:-})
    fi
    timeout -k 5 120 "${cmd[@]}" > "$work/$name-$r.out" 2> "$work/$name-$r.err"
    rc=$?
    { echo "=== $name round $r (exit $rc): ${cmd[*]}"; tail -n 5 "$work/$name-$r.err"; } >> "$out/jobs.log"
    if [ $rc -ne 0 ]; then echo "FAIL $name round $r: exit $rc (see jobs.log)"; fails=$((fails + 1)); continue; fi
    python3 - "$work/$name-$r.out" "$name" "$r" >> "$out/blocks.jsonl" << 'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        row = json.loads(line)
        row.update(job=sys.argv[2], round=int(sys.argv[3]))
        print(json.dumps(row))
PY
    # Windows seen by the collector: one per "on" block (10 with the default 10 pairs).
    for j in "$work/$name-$r".ssrun/*.json; do
      [ -e "$j" ] && [ "$(basename "$j")" != run.json ] || continue
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('  $name round $r:', {k: j.get(k) for k in ('windows_opened','cupti_detaches','events_written','collector_cpu_ns')})" "$j" >> "$out/jobs.log"
    done
  done
done
python3 "$here/summarize_launch_rate.py" "$out" | tee "$out/summary.txt"
rm -rf "$work"
echo "SUMMARY: $fails failed"
[ "$fails" -eq 0 ]
