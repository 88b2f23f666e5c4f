#!/usr/bin/env bash
# profiling_cost.sh on the committed study data: both configurations are
# compared with the control's 3 runs against image-tuned's 3, the committed
# files are left untouched, and a missing file is an error.
#   bench/study/tests/profiling_cost_test.sh SCALESCOPE
set -uo pipefail
ss="${1:?usage: profiling_cost_test.sh SCALESCOPE}"
study="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
examples="$study/../../examples/h200"
command -v sqlite3 > /dev/null || { echo "skipped: no sqlite3 command"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
before="$(sha256sum "$examples/image-tuned.db" "$examples/control.db")"
"$study/profiling_cost.sh" "$ss" "$examples" > "$tmp/out" 2> "$tmp/err" || bad "exit $? ($(cat "$tmp/err"))"
for variant in ref fp64; do
  grep -Eq "^profiled +no +yes +arm=tuned variant=$variant +1 +3 +3 " "$tmp/out" || bad "no 3-vs-3 row for $variant: $(cat "$tmp/out")"
done
[ "$before" = "$(sha256sum "$examples/image-tuned.db" "$examples/control.db")" ] || bad "the committed results files changed"
mkdir "$tmp/empty"
if "$study/profiling_cost.sh" "$ss" "$tmp/empty" > /dev/null 2> "$tmp/err"; then bad "a folder without results files passed"; fi
grep -q "no such results file" "$tmp/err" || bad "missing file message: $(cat "$tmp/err")"
echo "profiling_cost: $failed failed"
[ "$failed" -eq 0 ]
