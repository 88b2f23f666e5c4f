#!/usr/bin/env bash
# What a new user meets in the first hour: help that names the program, fits
# the terminal and shows examples; "did you mean" for a misspelt option; a
# hint for a job given without '--'; export formats taken from the output's
# name, and a .gz output that is gzip; "unknown" for a world size a trace
# does not record; no operator table of "(unattributed)" alone.
# Usage: first_hour_test.sh SCALESCOPE SOURCE_DIR
set -uo pipefail
ss="${1:?usage: first_hour_test.sh SCALESCOPE SOURCE_DIR}"
src="${2:?usage: first_hour_test.sh SCALESCOPE SOURCE_DIR}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
try() { "$ss" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?; }
usage() {  # NAME EXPECTED-TEXT ARGS...: exit 2, one error line holding the text
  local name="$1" text="$2"; shift 2
  try "$@"
  check "$name: exit 2 (got $rc), one line with '$text'" \
    '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$text" "$tmp/err" || { cat "$tmp/err"; false; }'
}
longest() { awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }' "$1"; }
sample="$src/examples/sample/kineto-sample.json.gz"

# Help: the program's name in the usage line, positionals in capitals,
# wrapped to 80 columns when not a terminal (or to $COLUMNS), examples.
for cmd in analyze report export; do
  (unset COLUMNS; "$ss" "$cmd" --help >"$tmp/help-$cmd" 2>&1)
  check "$cmd --help: usage line names the program" "grep -q '^Usage: scalescope $cmd \[OPTIONS\] [A-Z]' '$tmp/help-$cmd'"
  check "$cmd --help: lines of at most 80 columns (longest $(longest "$tmp/help-$cmd"))" "[ $(longest "$tmp/help-$cmd") -le 80 ]"
  check "$cmd --help: an Examples section" "grep -q '^Examples:' '$tmp/help-$cmd' && grep -q '^  scalescope $cmd ' '$tmp/help-$cmd'"
  check "$cmd --help: the trace may be an Nsight Systems export" "grep -qi 'Nsight' '$tmp/help-$cmd'"
done
COLUMNS=120 "$ss" analyze --help >"$tmp/help-120" 2>&1
check "analyze --help at COLUMNS=120: lines of at most 120, some longer than 80" \
  "[ $(longest "$tmp/help-120") -le 120 ] && [ $(longest "$tmp/help-120") -gt 80 ]"
(unset COLUMNS; "$ss" --help >"$tmp/help-top" 2>&1)
check "scalescope --help: lines of at most 80 columns" "[ $(longest "$tmp/help-top") -le 80 ]"

# Misspelt options and a job without '--'.
usage "analyze --windw" "did you mean '--window'?" analyze "$sample" --windw 10%:90%
usage "analyze --iteration-rnage=X" "did you mean '--iteration-range'?" analyze "$sample" --iteration-rnage=X
usage "export --fromat" "did you mean '--format'?" export "$sample" --fromat chrome -o "$tmp/x.json"
usage "profile without '--'" "put the job after '--'" profile -o "$tmp/p" python3 train.py --epochs 3
usage "sweep without '--'" "put the command template after '--'" sweep --gpus 1 -o "$tmp/s.db" python3 train.py --lr 1

# Export: the format from the output's name; .gz compressed.
try export "$sample" -o "$tmp/t.json.gz"
check "export -o t.json.gz: exit 0, gzip that holds Chrome JSON" \
  '[ $rc -eq 0 ] && gzip -dc "$tmp/t.json.gz" >"$tmp/t.unzipped" && grep -q "displayTimeUnit" "$tmp/t.unzipped"'
try export "$sample" -o "$tmp/t.json"
check "export -o t.json: plain JSON, at least 5 times the .gz" \
  '[ $rc -eq 0 ] && head -c 1 "$tmp/t.json" | grep -q "{" && [ $(stat -c %s "$tmp/t.json") -ge $((5 * $(stat -c %s "$tmp/t.json.gz"))) ]'
try export "$sample" -o "$tmp/t.pftrace"
check "export -o t.pftrace: Perfetto's format, smaller than the JSON" \
  '[ $rc -eq 0 ] && grep -q " events, perfetto)" "$tmp/out" && [ $(stat -c %s "$tmp/t.pftrace") -lt $(stat -c %s "$tmp/t.json") ]'
try export "$sample" -o "$tmp/t.sqlite"
check "export -o t.sqlite: SQLite" '[ $rc -eq 0 ] && head -c 15 "$tmp/t.sqlite" | grep -q "SQLite format 3"'
try export "$sample" -o "$tmp/csv/"
check "export -o a name ending in '/': CSV" '[ $rc -eq 0 ] && [ -f "$tmp/csv/kernels.csv" ]'
usage "export -o a name without a format" "does not say it" export "$sample" -o "$tmp/t.out"
usage "export --format sqlite -o x.sqlite.gz" "not written compressed" export "$sample" --format sqlite -o "$tmp/x.sqlite.gz"

# A trace that does not record its rank or world size (no torch.distributed):
# "unknown", and no operator table of one "(unattributed)" row.
cat >"$tmp/plain.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "cat": "kernel", "name": "saxpy", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "saxpy", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}}
]}
JSON
try import "$tmp/plain.json" -o "$tmp/plain.sstrace"
check "import: world size unknown, not -1" '[ $rc -eq 0 ] && grep -q "world size unknown" "$tmp/out" && ! grep -q "world size -1" "$tmp/out"'
cat >"$tmp/annotated.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "train_step", "pid": 0, "tid": 1, "ts": 0, "dur": 40},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 1, "ts": 2, "dur": 3, "args": {"correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "saxpy", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}
]}
JSON
try analyze "$tmp/annotated.json"
check "analyze with ranges but no operators: the operator table says skipped, no lone (unattributed) row" \
  '[ $rc -eq 0 ] && grep -q "skipped, no operator ranges in the trace" "$tmp/out" && [ $(grep -c "(unattributed)" "$tmp/out") -eq 1 ]'

[ "$failures" -eq 0 ] && echo "all passed" || { echo "$failures failed"; exit 1; }
