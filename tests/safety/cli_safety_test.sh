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
mkdir dup && cp k.json dup/a.json && sed 's/"dur": 10}/"dur": 11}/' k.json >dup/b.json
cmp -s dup/a.json dup/b.json && fail "dup/b.json is not a changed copy"
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

# 5. -o inside an input folder, at any depth, however it is spelt: refused for
# every writing command (report wrote its HTML over a rank's trace and exited 0).
mkdir gpt2 && cp k.json gpt2/gpt2_rank0.json && sed 's/"rank": 0/"rank": 1/' k.json >gpt2/gpt2_rank1.json
expect_refusal report-into-input-folder gpt2/gpt2_rank0.json -- "$ss" report gpt2 -o gpt2/gpt2_rank0.json -q
expect_stderr "is inside the input folder gpt2" report-into-input-folder
expect_refusal report-new-file-deep-in-folder gpt2/gpt2_rank0.json -- "$ss" report gpt2 -o gpt2/sub/r.html -q
[ -e gpt2/sub ] && fail "report-new-file-deep-in-folder made gpt2/sub"
ln -s gpt2 gpt2-link
expect_refusal report-folder-through-symlink gpt2/gpt2_rank1.json -- "$ss" report gpt2-link -o gpt2/r.html -q
expect_refusal report-output-through-symlink gpt2/gpt2_rank1.json -- "$ss" report gpt2 -o gpt2-link/r.html -q
expect_refusal report-relative-in-folder gpt2/gpt2_rank0.json -- sh -c "cd gpt2 && \"$ss\" report . -o r.html -q"
"$ss" import gpt2 -o gpt2.ssrun --format csv >/dev/null 2>err.txt || fail "import gpt2: $(cat err.txt)"
expect_refusal export-into-run-dir gpt2.ssrun/rank1.sstrace -- "$ss" export gpt2.ssrun --format chrome -o gpt2.ssrun/rank1.sstrace
expect_stderr "is inside the input folder" export-into-run-dir
expect_refusal export-csv-into-run-dir gpt2.ssrun/rank0.sstrace -- "$ss" export gpt2.ssrun --format csv -o gpt2.ssrun/csv
[ -e gpt2.ssrun/csv ] && fail "export-csv-into-run-dir made gpt2.ssrun/csv"
expect_refusal import-into-input-folder gpt2/gpt2_rank0.json -- "$ss" import gpt2 -o gpt2/run.ssrun
cp -r "$src/mlperf/testdata/Lambda" mllog
keep=$(find mllog -type f | head -1)
expect_refusal mlperf-ingest-into-log-tree "$keep" -- "$ss" mlperf ingest mllog -o "$keep"
expect_stderr "is inside the input folder" mlperf-ingest-into-log-tree
expect_refusal mlperf-ingest-new-file-in-tree "$keep" -- "$ss" mlperf ingest mllog -o mllog/runs.csv
[ -e mllog/runs.csv ] && fail "mlperf-ingest-new-file-in-tree wrote mllog/runs.csv"
expect_refusal demo-into-study-folder gpt2/gpt2_rank0.json -- "$ss" demo --study gpt2 -o gpt2/demo
[ -e gpt2/demo ] && fail "demo-into-study-folder made gpt2/demo"
"$ss" report gpt2 -o gpt2.html -q 2>err.txt || fail "report beside the folder refused: $(cat err.txt)"
ls -a gpt2 gpt2.ssrun mllog | grep -q '\.tmp-' && fail "temporary files left in an input folder"

# 6. A folder mixing .sstrace files with Kineto traces (import's default output
# lands beside its input) is refused naming both kinds, not read as one kind.
mkdir mixed && cp k.json mixed/rank0.json && sed 's/"rank": 0/"rank": 1/' k.json >mixed/rank1.json
"$ss" import mixed/rank0.json --format csv >/dev/null 2>err.txt || fail "import mixed/rank0.json: $(cat err.txt)"
[ -f mixed/rank0.sstrace ] || fail "import did not write mixed/rank0.sstrace"
for cmd in stats analyze; do
  expect_refusal "$cmd-mixed-folder" mixed/rank1.json -- "$ss" $cmd mixed
  expect_stderr "holds scalescope traces (rank0.sstrace) and PyTorch-profiler traces (rank0.json, rank1.json)" "$cmd-mixed-folder"
done

# 7. A file named like a trace that is not one is left out and named; a corrupt
# rank stops the command naming its file. Neither is dropped without a word.
mkdir notes && cp k.json notes/rank0.json && echo '<html><body>report</body></html>' >notes/rank1.json.gz
echo '{"model": "gpt2"}' >notes/config.json
for cmd in stats analyze; do
  "$ss" $cmd notes --format csv >/dev/null 2>err.txt || fail "$cmd notes: $(cat err.txt)"
  expect_stderr "2 files left out, not a trace: config.json (a JSON file that is not a profiler trace" "$cmd-skipped"
  expect_stderr "rank1.json.gz (an HTML or XML document)" "$cmd-skipped"
done
mkdir cut && cp k.json cut/rank0.json && sed 's/"rank": 0/"rank": 1/' k.json | gzip >cut/whole.gz
head -c $(($(stat -c %s cut/whole.gz) / 2)) cut/whole.gz >cut/rank1.json.gz && rm cut/whole.gz
for cmd in stats analyze; do
  expect_refusal "$cmd-truncated-rank" cut/rank0.json -- "$ss" $cmd cut
  expect_stderr "rank1.json.gz" "$cmd-truncated-rank"
done

# 8. Two copies of one trace in a folder are not two ranks.
mkdir twice && cp k.json twice/a.json && cp k.json twice/b.json
for cmd in stats analyze "report -q -o twice.html"; do
  expect_refusal "copies-$cmd" twice/a.json -- "$ss" $cmd twice
  expect_stderr "a.json and b.json are copies of one trace" "copies-$cmd"
done
# A trace without a rank beside its own `gzip -k` copy (read as two ranks before).
mkdir gzipped
printf '%s' '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
  "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7}}]}' >gzipped/trace.json
"$ss" stats gzipped --format csv >/dev/null 2>err.txt || fail "stats of one rankless trace: $(cat err.txt)"
gzip -k gzipped/trace.json
for cmd in stats analyze; do
  expect_refusal "gzipped-copy-$cmd" gzipped/trace.json -- "$ss" $cmd gzipped
  expect_stderr "trace.json and trace.json.gz are copies of one trace" "gzipped-copy-$cmd"
done
expect_refusal analyze-two-traces-of-rank-0 dup/a.json -- "$ss" analyze dup
expect_stderr "a.json and b.json both hold rank 0" analyze-two-traces-of-rank-0
mkdir twice.ssrun && cp x.sstrace twice.ssrun/h-1.sstrace && cp x.sstrace twice.ssrun/h-2.sstrace
for cmd in stats analyze; do
  expect_refusal "run-copies-$cmd" twice.ssrun/h-1.sstrace -- "$ss" $cmd twice.ssrun
  expect_stderr "are copies of one trace" "run-copies-$cmd"
done

# 9. --classes naming a FIFO (or a device) is refused at once, not waited on.
mkfifo classes.fifo
for cmd in "analyze x.sstrace" "diff x.sstrace x.sstrace"; do
  expect_refusal "classes-fifo-${cmd%% *}" x.sstrace -- "$ss" $cmd --classes classes.fifo
  expect_stderr "not a regular file" "classes-fifo-${cmd%% *}"
done
expect_refusal classes-device x.sstrace -- "$ss" analyze x.sstrace --classes /dev/zero

# 10. Out of memory under a limit: one line and exit 1, never SIGABRT. 16 ranks
# of the bundled sample; before operator new threw, 70-100 MB limits ended
# `stats` in SIGABRT (exit 134), and 30-60 MB limits still did: memory ran out
# in static initialisers, before main() could catch anything. (Below about
# 30 MB the dynamic loader itself cannot map the libraries.)
mkdir heavy && gzip -dc "$src/examples/sample/kineto-sample.json.gz" >sample.json
for r in $(seq 0 15); do sed "s/\"rank\":0,/\"rank\":$r,/" sample.json >heavy/rank$r.json; done
"$ss" import heavy -o heavy.ssrun --format csv >/dev/null 2>err.txt || fail "import heavy: $(cat err.txt)"
out_of_memory=0
for limit in 30000000 40000000 50000000 60000000 70000000 80000000 90000000 100000000 1000000000; do
  prlimit --as=$limit "$ss" stats heavy.ssrun --format csv >/dev/null 2>err.txt
  rc=$?
  [ "$rc" -eq 0 ] && continue
  out_of_memory=$((out_of_memory + 1))
  [ "$rc" -eq 1 ] || fail "stats under a $limit-byte limit: exit $rc: $(head -c 300 err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "stats under a $limit-byte limit: not one line: $(head -c 300 err.txt)"
  grep -q "out of memory" err.txt || fail "stats under a $limit-byte limit: $(cat err.txt)"
done
[ "$out_of_memory" -gt 0 ] || fail "stats ran out of memory under none of the limits: nothing was tested"

[ "$fails" -eq 0 ] && echo "cli safety: all checks passed"
exit $((fails > 0))
