#!/usr/bin/env bash
# The nsys cases of the data-safety pass, through the CLI under the mutation
# tests' limits (1 GiB of address space, 20 s per run): each run must exit 0
# or give one line naming the file with exit 1, never a signal or a hang, and
# nothing may appear beside an input.
#   an export of 10,000 processes with one kernel each (memory in proportion to rows)
#   rows a table should not hold (text times, NULL rows, wrong types, missing string ids, no `start` column)
#   an export left in WAL mode; one with a hot rollback journal; one whose -wal holds changes (refused)
# (A file cut while it is read: cli_nsys_truncated_while_read.)
# Usage: nsys_cases.sh SCALESCOPE SQLITE3 SOURCE_DIR WORK_DIR
set -u
scalescope=$1 sqlite3=$2 src=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
export NO_COLOR=1
failures=0

# run EXPECT_RC NAME args...: the CLI under the limits; stdout to $work/NAME.out.
run() {
  local want=$1 name=$2
  shift 2
  prlimit --as=1073741824 timeout 20 "$scalescope" "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$? err
  err=$(cat "$work/$name.err")
  if [ "$rc" -ne "$want" ]; then
    echo "$name: exit $rc, want $want; stderr: $err"
    failures=$((failures + 1))
  elif [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then
    echo "$name: want one line on stderr, got: $err"
    failures=$((failures + 1))
  fi
}
expect_in() {  # NAME TEXT: the run's stdout holds TEXT
  grep -qF -- "$2" "$work/$1.out" || { echo "$1: output lacks '$2'"; failures=$((failures + 1)); }
}
files_in() { ls -A "$1" | wc -l; }

# 10,000 processes, one kernel each (reserving every table's rows in every process took 7 GB).
mkdir -p "$work/many"
"$sqlite3" "$work/many/many.sqlite" >/dev/null <<'SQL'
PRAGMA journal_mode=OFF;
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
  INSERT INTO StringIds SELECT i, 'kernel_' || i FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000 * i, 1000 * i + 500, 0, 7, 1, (1 << 48) | (i << 24), i FROM n;
SQL
run 0 many_processes stats "$work/many/many.sqlite" --report kernels --format csv
expect_in many_processes "kernel_10000"

# Hostile rows: imported, and the loss counted.
"$sqlite3" "$work/hostile_rows.sqlite" ".read $src/trace/testdata/nsys/hostile_rows.sql"
run 0 hostile_rows stats "$work/hostile_rows.sqlite" --report problems --format csv
expect_in hostile_rows "incomplete_record,data loss,7"
expect_in hostile_rows "malformed_event,error,3"

# WAL mode: reads, nothing appears beside it.
mkdir -p "$work/wal"
cp "$src/tests/fuzz/nsys_importer/wal_mode.sqlite" "$work/wal/"
run 0 wal_mode stats "$work/wal/wal_mode.sqlite" --report kernels --format csv
[ "$(files_in "$work/wal")" -eq 1 ] || { echo "wal_mode: files appeared beside the input: $(ls "$work/wal")"; failures=$((failures + 1)); }

# A hot rollback journal (file and journal copied while a writer had spilled pages into the file).
mkdir -p "$work/hot"
"$sqlite3" "$work/writer.sqlite" ".read $src/trace/testdata/nsys/v2022_ids.sql"
"$sqlite3" "$work/writer.sqlite" >/dev/null <<SQL
PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN;
CREATE TABLE filler (x);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO filler SELECT zeroblob(3000) FROM n;
UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = deviceId + 1;
.shell cp "$work/writer.sqlite" "$work/hot/hot.sqlite"
.shell cp "$work/writer.sqlite-journal" "$work/hot/hot.sqlite-journal"
ROLLBACK;
SQL
if [ -s "$work/hot/hot.sqlite-journal" ]; then
  run 0 hot_journal stats "$work/hot/hot.sqlite" --report kernels --format csv
  [ "$(files_in "$work/hot")" -eq 2 ] || { echo "hot_journal: files changed beside the input: $(ls "$work/hot")"; failures=$((failures + 1)); }
else
  echo "hot_journal: sqlite3 left no journal to copy"
  failures=$((failures + 1))
fi

# A -wal beside a WAL-mode export holding changes not in the file: refused with one line.
mkdir -p "$work/live"
"$sqlite3" "$work/live.sqlite" ".read $src/trace/testdata/nsys/v2022_ids.sql"
"$sqlite3" "$work/live.sqlite" >/dev/null <<SQL
PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;
.shell cp "$work/live.sqlite" "$work/live/export.sqlite"
.shell cp "$work/live.sqlite-wal" "$work/live/export.sqlite-wal"
SQL
run 1 pending_wal stats "$work/live/export.sqlite"
grep -qF "export.sqlite: its write-ahead log" "$work/pending_wal.err" || { echo "pending_wal: $(cat "$work/pending_wal.err")"; failures=$((failures + 1)); }

[ "$failures" -eq 0 ] && echo "nsys cases: all safe"
exit $((failures != 0))
