#!/usr/bin/env bash
# `scalescope trigger`: refuses a folder with no running job in one line,
# writes a request that lines up with the processes' progress, numbers
# requests 1, 2, ..., `trigger --dump` asks for hang dumps, and
# `profile --windows-every` and `--hang-after` check their durations.
# (The collector's side, over the fake CUPTI: collect_windows_test.)
# Usage: trigger_test.sh SCALESCOPE
set -uo pipefail
ss="${1:?usage: trigger_test.sh SCALESCOPE}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }

"$ss" trigger "$tmp/none" >"$tmp/a.out" 2>&1; rc=$?
check "no such run directory: usage error, one line" '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/a.out")" -eq 1 ] && grep -q "none: no such directory" "$tmp/a.out"'

mkdir -p "$tmp/run"
"$ss" trigger "$tmp/run" >"$tmp/b.out" 2>&1; rc=$?
check "no progress: an error naming the folder" '[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/b.out")" -eq 1 ] && grep -q "no process of a running job reports progress in $tmp/run/control/progress" "$tmp/b.out"'

# Two processes' progress, written now: rank 1 is ahead at iteration 500, 50 ms a step.
mkdir -p "$tmp/run/control/progress"
now=$(date +%s%N)
printf '{"host":"h","pid":1,"rank":0,"iteration":480,"step_ns":50000000,"unix_ns":%s}\n' "$now" >"$tmp/run/control/progress/h-1.json"
printf '{"host":"h","pid":2,"rank":1,"iteration":500,"step_ns":50000000,"unix_ns":%s}\n' "$now" >"$tmp/run/control/progress/h-2.json"
"$ss" trigger "$tmp/run" --iterations 5 --note "after the checkpoint" >"$tmp/c.out" 2>&1; rc=$?
after=$(date +%s%N)
check "trigger exits 0" '[ $rc -eq 0 ]'
check "says what it asked for" 'grep -q "^window 1: 5 iterations from iteration [0-9]* on 2 processes" "$tmp/c.out"'
req="$tmp/run/control/window-1.json"
check "request file written" '[ -f "$req" ]'
# 2 s at 50 ms is 40 iterations past 500, plus the steps since the reports
# (at most the time the trigger took, at 50 ms a step).
start=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start_iteration"])' "$req")
most=$((540 + (after - now) / 50000000 + 1))
check "start 2 s of iterations past the furthest process ($start, at most $most)" '[ "$start" -ge 540 ] && [ "$start" -le "$most" ]'
check "note and who kept" '/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r[\"note\"]==\"after the checkpoint\" and \"@\" in r[\"requested_by\"] and r[\"reason\"]==\"trigger\"))" "$req"'

"$ss" trigger "$tmp/run" --ranks 1 --start 900 >"$tmp/d.out" 2>&1; rc=$?
check "a second request is number 2, for rank 1 only, at the iteration given" '[ $rc -eq 0 ] && grep -q "^window 2: 20 iterations from iteration 900 on 1 process " "$tmp/d.out"'
check "no temporary file left" '[ "$(ls "$tmp/run/control" | grep -c tmp)" -eq 0 ]'

"$ss" profile --windows-every 10x -o "$tmp/p" -- true >"$tmp/e.out" 2>&1; rc=$?
check "--windows-every with a bad duration: usage error" '[ $rc -eq 2 ] && grep -q "windows-every" "$tmp/e.out"'
"$ss" profile --windows-every 0.5 -o "$tmp/p" -- true >"$tmp/f.out" 2>&1; rc=$?
check "--windows-every under 1 s refused" '[ $rc -ne 0 ] && grep -q "at least 1 s" "$tmp/f.out"'

# trigger --dump: a dump request every process answers with its hang dump.
"$ss" trigger "$tmp/run" --dump >"$tmp/g.out" 2>&1; rc=$?
check "--dump writes control/dump-1.json" '[ $rc -eq 0 ] && [ -f "$tmp/run/control/dump-1.json" ] && grep -q "^dump 1: every process writes its hang dump to $tmp/run/control/hang" "$tmp/g.out"'
"$ss" trigger "$tmp/run" --dump >"$tmp/h.out" 2>&1; rc=$?
check "a second --dump is number 2" '[ $rc -eq 0 ] && [ -f "$tmp/run/control/dump-2.json" ]'
"$ss" profile --hang-after 10x -o "$tmp/p" -- true >"$tmp/i.out" 2>&1; rc=$?
check "--hang-after with a bad duration: usage error" '[ $rc -eq 2 ] && grep -q "hang-after" "$tmp/i.out"'
"$ss" profile --hang-after 0.5 -o "$tmp/p" -- true >"$tmp/j.out" 2>&1; rc=$?
check "--hang-after under 1 s refused" '[ $rc -ne 0 ] && grep -q "at least 1 s" "$tmp/j.out"'

[ "$failures" -eq 0 ] && echo "all trigger checks passed" || { echo "$failures trigger check(s) failed"; exit 1; }
