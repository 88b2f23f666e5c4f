#!/usr/bin/env bash
# Quick GPU check of the collector's defaults and of detaching CUPTI after a
# timed window, about 30 s:
#   collect/gpu_test/run_detach_check.sh BUILD_DIR OUT_DIR
# 1. ground truth under the default options (no SYNCHRONIZATION records: the
#    synchronizing calls must come out exact from the API records);
# 2. ground truth under --duration 0.3: the window closes on a timer, CUPTI is
#    detached at the next API exit, the program runs on untraced to exit 0.
# (Repeated cudaProfilerStart/Stop windows with detach and attach again are
# checked by bench/collector_overhead/run.sh's window checks.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_test_init run_detach_check.sh collect_gpu_check "$@"
ss="$scalescope" gt="$build/collect/gpu_test/ground_truth"
timeout 180 "$ss" profile --force -o "$out/gt" -- "$gt" > "$out/gt.log" 2>&1 \
  && pass "ground_truth under the default options" || fail "ground_truth exit $? (see gt.log)"
"$checker" ground-truth "$out/gt.ssrun" | tee "$out/gt-check.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails + 1))
timeout 180 "$ss" profile --force --duration 0.3 -o "$out/gt-timed" -- "$gt" > "$out/gt-timed.log" 2>&1 \
  && pass "ground_truth with --duration 0.3 ran to the end" || fail "ground_truth --duration 0.3 exit $? (see gt-timed.log)"
for j in "$out"/gt-timed.ssrun/*.json; do
  [ "$(basename "$j")" = run.json ] && continue
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('  timed window:', {k: j.get(k) for k in ('status','windows_opened','cupti_detaches','events_written')})" "$j"
done
"$ss" stats "$out/gt-timed.ssrun" > "$out/gt-timed-stats.txt" 2>&1 \
  && pass "the timed-window trace reads back" || fail "stats of the timed-window trace (see gt-timed-stats.txt)"
grep -c "scalescope: warning" "$out/gt-timed.log" | sed 's/^/  warnings: /'
echo "SUMMARY: $fails failed"
[ "$fails" -eq 0 ]
