#!/usr/bin/env bash
# An nsys export cut short while scalescope reads it must give a one-line
# error naming the file and exit 1, or (cut after the last read) a result and
# exit 0; never a signal. (An importer that maps the file dies of SIGBUS on
# the first page past the new end.)
# Usage: truncated_while_read.sh SCALESCOPE SQLITE3 WORK_DIR
set -u
scalescope=$1 sqlite3=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
export NO_COLOR=1

# 300,000 kernels and launch calls (about 25 MB): an import long enough to cut
# the file while it runs.
big="$work/big.sqlite"
"$sqlite3" "$big" <<'SQL' || { echo "sqlite3 failed to build $big"; exit 1; }
PRAGMA journal_mode=OFF;
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
INSERT INTO StringIds VALUES (1, 'void gemm_kernel<float>(float*, int)'), (2, 'cudaLaunchKernel_v7000');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000 * i, 1000 * i + 500, 0, 7, i, 281546145660928, 1 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
  INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 1000 * i - 100, 1000 * i - 50, 0, 281546145665170, i, 2, 0 FROM n;
SQL
size=$(stat -c %s "$big")

failures=0 errors=0
# Cut at a quarter and at half of the file, right after scalescope opened it and a little later.
for trial in "0 4" "0 2" "0.05 4" "0.2 2"; do
  read -r delay part <<<"$trial"
  cut="$work/cut.sqlite"
  cp "$big" "$cut"
  "$scalescope" stats "$cut" --format csv >"$work/out" 2>"$work/err" &
  pid=$!
  # Wait until it has the file open (at most 10 s).
  for _ in $(seq 1000); do
    if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "$cut"; then break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  sleep "$delay"
  truncate -s $((size / part)) "$cut"
  wait "$pid"
  rc=$?
  err=$(cat "$work/err")
  if [ "$rc" -gt 128 ]; then
    echo "cut to 1/$part after ${delay}s: killed by signal $((rc - 128)); stderr: $err"
    failures=$((failures + 1))
  elif [ "$rc" -ne 0 ]; then
    errors=$((errors + 1))
    if [ "$rc" -ne 1 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ "$err" != *"cut.sqlite: "* ]]; then
      echo "cut to 1/$part after ${delay}s: exit $rc, want 1 with one line naming the file; stderr: $err"
      failures=$((failures + 1))
    fi
  fi
done
if [ "$errors" -eq 0 ] && [ "$failures" -eq 0 ]; then
  echo "every import finished before its file was cut: nothing was tested"
  failures=1
fi
[ "$failures" -eq 0 ] && echo "truncated while read: $errors of 4 cut imports refused with one line, no signal"
exit $((failures != 0))
