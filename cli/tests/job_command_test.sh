#!/usr/bin/env bash
# The job's own options after '--' reach the job untouched, even when they
# share a name with an option of profile or sweep (--force, --seed, -o).
# Usage: job_command_test.sh SCALESCOPE
set -uo pipefail
ss="${1:?usage: job_command_test.sh SCALESCOPE}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }

"$ss" sweep --gpus 1 --repeat 1 --launcher local --metric 'regex:seed=([0-9]+)' -o "$tmp/s.db" -- \
  sh -c 'echo "args: $*"; echo "seed=$2"' job --seed {rep} --force -o x >"$tmp/sweep.out" 2>&1
check "sweep exits 0 with --seed/--force/-o after --" '[ $? -eq 0 ]'
check "sweep job saw its own options" 'grep -q -- "args: --seed 0 --force -o x" "$tmp"/s.db.runs/*/log.txt'

"$ss" profile --force -o "$tmp/p" -- sh -c 'echo "args: $*"' job --force --seed 1 -o y >"$tmp/profile.out" 2>&1
rc=$?
check "profile exits with the job's status (0)" "[ $rc -eq 0 ]"
check "profile job saw its own options" 'grep -q -- "args: --force --seed 1 -o y" "$tmp/profile.out"'

"$ss" profile -o "$tmp/q" -- sh -c 'exit 7' >/dev/null 2>&1
rc=$?
check "profile returns the job's exit status (7)" "[ $rc -eq 7 ]"

"$ss" profile -o "$tmp/r" >"$tmp/nojob.out" 2>&1
rc=$?
check "profile without a job fails with one line" '[ $rc -ne 0 ] && [ "$(wc -l <"$tmp/nojob.out")" -eq 1 ] && grep -q "no job to run" "$tmp/nojob.out"'

"$ss" stats "$tmp/none.sstrace" -- echo hi >"$tmp/stats.out" 2>&1
rc=$?
check "a command that runs no job rejects '--'" '[ $rc -ne 0 ] && grep -q "takes no command after" "$tmp/stats.out"'

[ "$failures" -eq 0 ] && echo "all passed" || { echo "$failures failed"; exit 1; }
