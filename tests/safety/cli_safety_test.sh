#!/usr/bin/env bash
# Command-line data safety: no command writes over an input, run
# directories never mix or lose ranks silently, imports refuse what is not a
# Kineto trace, non-regular inputs do not block.
# Usage: cli_safety_test.sh SCALESCOPE SOURCE_DIR WORK_DIR
set -u
ss=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect_refusal NAME FILE-THAT-MUST-NOT-CHANGE -- command...
expect_refusal() {
  local name=$1 keep=$2; shift 3
  local before after
  before=$(sha256sum "$keep" 2>/dev/null | cut -c1-64)
  if timeout 60 "$@" >out.txt 2>err.txt; then fail "$name: exit 0 (stderr: $(cat err.txt))"; return; fi
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$name: not a one-line error: $(cat err.txt)"
  after=$(sha256sum "$keep" 2>/dev/null | cut -c1-64)
  [ "$before" = "$after" ] || fail "$name: $keep changed"
}
expect_stderr() { grep -q -- "$1" err.txt || fail "$2: stderr lacks '$1': $(cat err.txt)"; }

cp "$src/tests/fuzz/kineto_importer/one_kernel.json" k.json
gzip -k k.json
"$ss" import k.json -o x.sstrace --format csv >/dev/null 2>&1 || fail "import k.json"
[ -s x.sstrace ] || fail "no x.sstrace"

# 1. -o naming an input, for every writing command.
expect_refusal report-self x.sstrace -- "$ss" report x.sstrace -o x.sstrace -q
expect_stderr "the output is the input" report-self
expect_refusal export-sqlite-self x.sstrace -- "$ss" export x.sstrace --format sqlite -o x.sstrace
expect_refusal export-chrome-self x.sstrace -- "$ss" export x.sstrace --format chrome -o ./x.sstrace
expect_refusal import-self k.json.gz -- "$ss" import k.json.gz -o k.json.gz
ln x.sstrace hard.sstrace
expect_refusal export-hardlink x.sstrace -- "$ss" export x.sstrace --format chrome -o hard.sstrace
ln -s x.sstrace soft.sstrace
expect_refusal report-symlink x.sstrace -- "$ss" report x.sstrace -o soft.sstrace -q
# An existing csv directory is replaced only with --force; one holding the input never.
mkdir csvout && echo keep >csvout/keep.txt
expect_refusal export-csv-existing csvout/keep.txt -- "$ss" export x.sstrace --format csv -o csvout
mkdir -p holder && cp x.sstrace holder/in.sstrace
expect_refusal export-csv-holds-input holder/in.sstrace -- "$ss" export holder/in.sstrace --format csv -o holder --force
expect_stderr "holds the input" export-csv-holds-input
ls -a | grep -q '\.tmp-' && fail "temporary files left: $(ls -a | grep '\.tmp-')"

# 2. import of something that is already a trace.
expect_refusal import-sstrace x.sstrace -- "$ss" import x.sstrace -o y.sstrace
expect_stderr "already a scalescope trace" import-sstrace

# 3. run directories: duplicate ranks, existing output, manifests.
mkdir dup && cp k.json dup/a.json && cp k.json dup/b.json
expect_refusal import-duplicate-rank k.json -- "$ss" import dup -o dup.ssrun
expect_stderr "both hold rank 0" import-duplicate-rank
expect_stderr "a.json" import-duplicate-rank
[ -e dup.ssrun ] && fail "import-duplicate-rank left dup.ssrun"
mkdir ranks && cp k.json ranks/r0.json && sed 's/"rank": 0/"rank": 1/' k.json >ranks/r1.json
"$ss" import ranks -o run.ssrun --format csv >/dev/null 2>err.txt || fail "import ranks: $(cat err.txt)"
[ -f run.ssrun/manifest-import.json ] || fail "import wrote no manifest"
[ "$(ls run.ssrun/*.sstrace | wc -l)" -eq 2 ] || fail "run.ssrun does not hold 2 traces"
"$ss" stats run.ssrun --format csv >/dev/null 2>err.txt || fail "stats run.ssrun"
[ -s err.txt ] && fail "stats of a complete run warned: $(cat err.txt)"
mkdir one && cp k.json one/only.json
expect_refusal import-into-existing run.ssrun/rank1.sstrace -- "$ss" import one -o run.ssrun
expect_stderr "Pass --force" import-into-existing
"$ss" import one -o run.ssrun --force --format csv >/dev/null 2>err.txt || fail "import --force: $(cat err.txt)"
[ "$(ls run.ssrun/*.sstrace | wc -l)" -eq 1 ] || fail "import --force mixed the old run's ranks in: $(ls run.ssrun)"
"$ss" import ranks -o run2.ssrun --format csv >/dev/null 2>&1
rm run2.ssrun/rank1.sstrace
"$ss" stats run2.ssrun --format csv >stats.csv 2>err.txt || fail "stats of an incomplete run failed"
expect_stderr "incomplete run directory" stats-incomplete
expect_stderr "rank1.sstrace" stats-incomplete

# 4. non-regular inputs do not block.
mkfifo pipe.json
start=$(date +%s)
timeout 20 "$ss" stats pipe.json >/dev/null 2>err.txt
rc=$?
[ "$rc" -eq 124 ] && fail "stats on a FIFO blocked"
[ "$rc" -eq 0 ] && fail "stats on a FIFO succeeded"
ln -s loop1 loop2 && ln -s loop2 loop1
timeout 20 "$ss" stats loop1 >/dev/null 2>err.txt && fail "stats on a symlink loop succeeded"
grep -qi "no such file" err.txt && fail "a symlink loop reported as 'no such file': $(cat err.txt)"

[ "$fails" -eq 0 ] && echo "cli safety: all checks passed"
exit $((fails > 0))
