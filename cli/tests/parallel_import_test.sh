#!/usr/bin/env bash
# A folder of Kineto rank traces is imported one rank per thread:
# the run directory, the report and the error must not depend on which thread
# finishes first. Usage: parallel_import_test.sh SCALESCOPE SOURCE_DIR
set -uo pipefail
ss="${1:?usage: parallel_import_test.sh SCALESCOPE SOURCE_DIR}" src="${2:?}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
one="$src/tests/fuzz/kineto_importer/one_kernel.json"

# 16 ranks, named so that name order is not rank order (r10 sorts before r2).
mkdir ranks
for r in $(seq 0 15); do sed "s/\"rank\": 0/\"rank\": $r/" "$one" >"ranks/r$r.json"; done
"$ss" import ranks -o a.ssrun --format csv >a.csv 2>err.txt
check "import of 16 ranks exits 0" '[ $? -eq 0 ] && [ ! -s err.txt ]'
"$ss" import ranks -o b.ssrun --format csv >b.csv 2>err.txt
check "the report is the same on a second import" 'cmp -s a.csv b.csv'
check "every rank has its file" '[ "$(ls a.ssrun/*.sstrace | wc -l)" -eq 16 ] && [ -f a.ssrun/rank15.sstrace ]'
check "no part files are left" '[ -z "$(ls -A a.ssrun | grep -v -e "^rank[0-9]*[.]sstrace$" -e "^manifest-import[.]json$")" ]'
for r in $(seq 0 15); do
  cmp -s "a.ssrun/rank$r.sstrace" "b.ssrun/rank$r.sstrace" || { echo "rank$r.sstrace differs"; failures=$((failures + 1)); }
done
# The report's tables come in the files' (name) order: r0, r1, r10, r11 ...
order=$(grep -o 'ranks/r[0-9]*[.]json' a.csv | uniq | tr '\n' ' ')
expected=$(ls ranks | sed 's|^|ranks/|' | tr '\n' ' ')
check "the report follows the files' order" '[ "$order" = "$expected" ]'
"$ss" stats ranks --format csv >s1.csv 2>/dev/null && "$ss" stats ranks --format csv >s2.csv 2>/dev/null
check "stats over the folder is the same twice" 'cmp -s s1.csv s2.csv && [ -s s1.csv ]'
"$ss" stats a.ssrun --format csv >s3.csv 2>/dev/null
check "stats over the folder equals stats over its import" 'cmp -s s1.csv s3.csv'

# Two bad files: the first in name order (a large file that fails only at its
# end) must be the one reported, although the second (cut after its first
# bytes: fails at once) fails first in time when two threads run.
mkdir bad
for r in 1 2 3; do sed "s/\"rank\": 0/\"rank\": $r/" "$one" >"bad/r$r.json"; done
python3 - "$one" bad/r0.json <<'PY'
import sys
text = open(sys.argv[1]).read()
head, events = text.split('"traceEvents": [', 1)
event = events.rsplit(']', 1)[0].split('}, {"ph": "s"')[0] + '}'
with open(sys.argv[2], 'w') as f:
    f.write(head + '"traceEvents": [' + ', '.join([event] * 60000) + ', {"ph": ')  # cut off: not valid JSON
PY
echo '{"schemaVersion": 1, "traceEvents": [' >bad/r1.json
for i in 1 2 3 4 5; do
  "$ss" import bad -o bad.ssrun >/dev/null 2>err.txt
  rc=$?
  check "bad import $i: exit 1, one line naming r0.json" '[ $rc -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "bad/r0.json" err.txt'
  "$ss" stats bad >/dev/null 2>err.txt
  check "bad stats $i: names r0.json" 'grep -q "bad/r0.json" err.txt'
done
check "no output run directory after the failed imports" '[ ! -e bad.ssrun ] && [ -z "$(ls -A | grep tmp)" ]'
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
