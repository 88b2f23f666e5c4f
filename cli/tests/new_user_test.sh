#!/usr/bin/env bash
# A new user's mistakes and first look: every wrong
# usage fails with exit 2 and one line naming what is wrong; CLI11's own exit
# codes never show; data cannot drive the terminal; the sweep says what it is
# doing and what to run next.
# Usage: new_user_test.sh SCALESCOPE SOURCE_DIR
set -uo pipefail
ss="${1:?usage: new_user_test.sh SCALESCOPE SOURCE_DIR}"
src="${2:?usage: new_user_test.sh SCALESCOPE SOURCE_DIR}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
# Runs the command; $rc, $tmp/out (stdout) and $tmp/err (stderr) hold what it did.
try() { "$ss" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?; }
one_line() { [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^scalescope: error: " "$tmp/err"; }
usage() {  # NAME EXPECTED-TEXT ARGS...: exit 2, one error line holding the text
  local name="$1" text="$2"; shift 2
  try "$@"
  check "$name: exit 2 (got $rc), one line with '$text'" \
    '[ $rc -eq 2 ] && one_line && grep -qF -- "$text" "$tmp/err" || { cat "$tmp/err"; false; }'
}

sample="$src/examples/sample/kineto-sample.json.gz"
"$ss" sweep --gpus 1,2 --repeat 1 --vary fixed=0.01,0.02 -o "$tmp/s.db" -- \
  "$src/tests/fake_jobs/law.sh" {gpus} 0.02 0 {fixed} >"$tmp/sweep.out" 2>"$tmp/sweep.err"
check "sweep: ok" '[ $? -eq 0 ]'
check "sweep: names the run in progress and the time since the start" \
  'grep -q "run 1/4 gpus=[12] fixed=0.0[12] rep=0: running (elapsed 0s)" "$tmp/sweep.err"'
check "sweep: each finished run says the elapsed time" 'grep -q "(elapsed [0-9]*s, ETA" "$tmp/sweep.err"'
check "sweep: ends with the next command" '[ "$(tail -1 "$tmp/sweep.err")" = "next: scalescope scaling $tmp/s.db" ]'

# Wrong options that used to succeed (3).
usage "scaling --ref 3 (never measured)" "no run of the sweep used 3 GPU(s); measured: 1,2" scaling "$tmp/s.db" --ref 3
usage "scaling --compare with a value not in the sweep" "'0.5' is not a value of the sweep" \
  scaling "$tmp/s.db" --compare fixed=0.01,0.5
usage "scaling --compare with a key not varied" "did not vary 'seed'" scaling "$tmp/s.db" --compare seed=1,2
usage "scaling --threshold 5" "--threshold: 5 is not a finite number in (0, 1]" scaling "$tmp/s.db" --threshold 5
usage "analyze --json --format csv" "excludes" analyze "$sample" --json --format csv
usage "topo --sys-root /nonexistent" "/nonexistent: no such directory" topo --sys-root /nonexistent
mkdir -p "$tmp/dir"
usage "report -o DIR/" "-o names a folder" report "$tmp/s.db" -o "$tmp/dir/"
check "report -o DIR/ wrote nothing" '[ -z "$(ls "$tmp/dir")" ]'

# Numbers no run can mean: NaN, infinities, negative prices, durations that
# overflow a clock. Every floating-point and duration option goes through one check.
usage "report --threshold nan" "--threshold: nan is not a finite number in (0, 1]" \
  report "$tmp/s.db" --threshold nan -o "$tmp/nan.html"
check "report --threshold nan wrote nothing" '[ ! -e "$tmp/nan.html" ]'
for price in nan inf -5; do
  usage "scaling --price-per-gpu-hour $price" "--price-per-gpu-hour: $price is not a finite number in [0, 1000000]" \
    scaling "$tmp/s.db" --price-per-gpu-hour "$price"
done
usage "scaling --samples-per-gpu-step inf" "--samples-per-gpu-step: inf is not a finite number" \
  scaling "$tmp/s.db" --samples-per-gpu-step inf
usage "mlperf analyze --level nan" "--level: nan is not a finite number in (0, 1)" mlperf analyze --level nan
usage "mlperf analyze --threshold nan" "--threshold: nan is not a finite number" mlperf analyze --threshold nan
usage "profile --delay nan" "--delay: nan is not a finite number" profile -o "$tmp/p" --delay nan -- true
usage "profile --nvml-hz inf" "--nvml-hz: inf is not a finite number in [0, 1000]" profile -o "$tmp/p" --nvml-hz inf -- true
usage "profile --python-stacks bogus" "--python-stacks: bogus not in {inside,outside,off}" profile -o "$tmp/p" --python-stacks bogus -- true
check "profile with a bad option created no run directory" '[ ! -e "$tmp/p.ssrun" ]'
usage "sweep --kill-grace 99999999999999999999h" "--kill-grace: '99999999999999999999h' is longer than 366 days" \
  sweep --kill-grace 99999999999999999999h -o "$tmp/k.db" -- true
usage "sweep --timeout nan" "--timeout: 'nan' is not a duration" sweep --timeout nan -o "$tmp/k.db" -- true
check "sweep with a bad duration created no database" '[ ! -e "$tmp/k.db" ]'

# An output that cannot be written says why (not "Success"); an error is one
# line even when progress would have been drawn before it on a terminal.
mkdir -p "$tmp/outdir"
try export "$sample" --format chrome -o "$tmp/outdir"
check "export -o DIR: one line with the reason" \
  '[ $rc -eq 1 ] && one_line && grep -q "cannot write output: Is a directory" "$tmp/err" || { cat "$tmp/err"; false; }'
printf 'not a trace\n' >"$tmp/notes.json"
try report "$sample" "$tmp/notes.json" -o "$tmp/two.html"
check "report failing on its second input: one line, no progress lines" \
  '[ $rc -eq 1 ] && one_line || { cat "$tmp/err"; false; }'

# Commands (4): unknown ones, help.
usage "unknown command analyse" "unknown command 'analyse'; did you mean 'analyze'?" analyse "$sample"
usage "unknown command anlyze" "did you mean 'analyze'?" anlyze
usage "unknown subcommand of mlperf" "unknown command 'mlperf anlyze'; did you mean 'mlperf analyze'?" mlperf anlyze
usage "no command" "no command given" 
try help
check "help: exit 0 with the command list" '[ $rc -eq 0 ] && grep -q "analyze" "$tmp/out"'
try help stats
check "help stats: the stats options" '[ $rc -eq 0 ] && grep -q -- "--report" "$tmp/out"'
check "help stats: defaults shown" 'grep -q -- "--format.*=table" "$tmp/out" || { cat "$tmp/out"; false; }'
try help scaling
check "help scaling: defaults and ranges shown" 'grep -qF -- "--threshold FLOAT:(0, 1]=0.8" "$tmp/out" || { cat "$tmp/out"; false; }'
check "help scaling: no out-of-range default shown for an unset option" '! grep -qF -- "=-1" "$tmp/out" || { cat "$tmp/out"; false; }'

# Inputs of the wrong kind are named by what they are, with what the command accepts (4).
printf '\x89PNG\r\n\x1a\n0000000000000000' >"$tmp/plot.json"
for cmd in analyze stats import; do
  try $cmd "$tmp/plot.json"
  check "$cmd of a PNG: says it is a PNG image and what is accepted" \
    '[ $rc -eq 1 ] && one_line && grep -q "plot.json: a PNG image; expected a scalescope trace" "$tmp/err" || { cat "$tmp/err"; false; }'
done
try analyze "$tmp/s.db"
check "analyze of a sweep database: use scalescope scaling" \
  '[ $rc -eq 1 ] && one_line && grep -q "s.db: a scalescope sweep database; use scalescope scaling" "$tmp/err" || { cat "$tmp/err"; false; }'
nsys_db="$src/../shared/data/nsys/saxpy-mpi-cuda-a100.sqlite"
if [ -f "$nsys_db" ]; then
  try import "$nsys_db" -o "$tmp/saxpy.sstrace"
  check "import of an Nsight Systems export: read as one, not as 'invalid JSON'" \
    '[ $rc -eq 0 ] && grep -qi "nsight systems" "$tmp/out" && ! grep -qi "invalid JSON" "$tmp/err" || { cat "$tmp/err"; false; }'
else
  echo "skip import of an Nsight Systems export: $nsys_db is not here"
fi
"$ss" profile -o "$tmp/nocuda" -- true >/dev/null 2>"$tmp/nocuda.err"
if grep -q "cannot find libscalescope-collector.so" "$tmp/nocuda.err"; then
  echo "skip profile of a job without CUDA: this build has no collector library (collect_host_test checks it too)"
else check "profile of a job without CUDA: no 'next: analyze' that would fail" \
  '! grep -q "^next: scalescope analyze" "$tmp/nocuda.err" && grep -q "nothing to analyze" "$tmp/nocuda.err"'
fi

# One error style and exit code (5): the same mistake exits 2 everywhere, no CLI11 code.
for cmd in stats scaling analyze import topo "export --format chrome -o $tmp/x.json"; do
  usage "$cmd --no-such-option" "--no-such-option" $cmd --no-such-option x
done
# A wrong --format is the same usage error for every command that prints tables.
for cmd in stats analyze diff import scaling topo demo "mlperf ingest" "mlperf scores" "mlperf analyze" "mlperf validate"; do
  usage "$cmd --format xml" "--format: xml not in {table,csv,json}" $cmd --format xml
done
usage "stats without its input" "trace is required" stats

# Data that would drive the terminal (17 item 9).
esc=$'\e'
bel=$'\a'
printf '{"traceEvents":[{"ph":"X","cat":"kernel","name":"evil\\u001b]0;pwned\\u0007\\u001b[2Jkernel","pid":1,"tid":7,"ts":1,"dur":5,"args":{"device":0,"stream":7}}]}' >"$tmp/evil.json"
try stats "$tmp/evil.json" --report kernels
check "stats table: no raw ESC or BEL, the name shown escaped" \
  '[ $rc -eq 0 ] && ! grep -q "[$esc$bel]" "$tmp/out" && grep -qF "evil\x1b]0;pwned\x07\x1b[2Jkernel" "$tmp/out"'
try stats "$tmp/evil.json" --report kernels --format csv
check "stats CSV keeps the name exact" 'grep -q "evil$esc]0;pwned"$'"'"'\a'"'"'"$esc\[2Jkernel" "$tmp/out"'
try stats "$tmp/evil.json" --report kernels --format json
check "stats JSON keeps the name exact (escaped as JSON)" 'grep -qF "evil\u001b]0;pwned\u0007\u001b[2Jkernel" "$tmp/out"'
try stats "$tmp/no-such-$esc[2J.json"
check "an error naming a file with escapes prints them escaped" '[ $rc -eq 1 ] && ! grep -q "$esc" "$tmp/err" && grep -qF "\x1b[2J" "$tmp/err"'
"$ss" sweep --gpus 1 --repeat 1 --vary "v=a${esc}[2Jb" -o "$tmp/e.db" -- sh -c 'exit 0' job {v} >/dev/null 2>"$tmp/sweep-esc.err"
check "sweep progress escapes --vary values" '! grep -q "$esc" "$tmp/sweep-esc.err" && grep -qF "v=a\x1b[2Jb" "$tmp/sweep-esc.err"'

# JSON for scripts (7): one envelope (schema version, command) in every command's shape.
try stats "$sample" --report kernels --format json
check "stats JSON: the envelope and typed summaries" \
  'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"schema_version\"]==3 and d[\"command\"]==\"stats\"; assert sorted(d[\"scopes\"][0][\"stats\"])==[\"kernels\",\"traces\"], d" "$tmp/out"'
try mlperf scores "$src/examples/mlperf/v4.1-runs.csv" --format json
cp "$tmp/out" "$tmp/scores.json"
try mlperf analyze --benchmark gpt3 --format json
check "mlperf scores and analyze: one envelope; typed scores and the typed study" \
  'python3 -c "import json,sys; a,b=[json.load(open(p)) for p in sys.argv[1:]]; assert sorted(a)==[\"command\",\"schema_version\",\"scores\"] and a[\"command\"]==\"mlperf scores\" and any(s[\"minutes\"] for s in a[\"scores\"]) and sorted(b)==[\"command\",\"scaling\",\"schema_version\"] and a[\"schema_version\"]==b[\"schema_version\"]==3 and b[\"command\"]==\"mlperf analyze\" and b[\"scaling\"][\"groups\"]" "$tmp/scores.json" "$tmp/out"'
try analyze "$sample" --json
check "analyze --json: schema_version" 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"schema_version\"]==3 and d[\"command\"]==\"analyze\"" "$tmp/out"'
try analyze "$sample" --format json
check "analyze JSON: booleans are booleans" \
  'python3 -c "
import json,sys
t={x[\"id\"]:x for x in json.load(open(sys.argv[1]))[\"tables\"]}
assert all(isinstance(r[\"launch_bound\"], bool) for r in t[\"launch_overhead\"][\"rows\"]), t[\"launch_overhead\"]
" "$tmp/out"'
try analyze "$sample" --format csv
check "analyze CSV: blocks headed by '# id: title', readable one by one" \
  'python3 -c "
import csv,io,sys
blocks=open(sys.argv[1]).read().strip().split(\"\n\n\")
assert len(blocks)>5
for b in blocks:
    head,body=b.split(\"\n\",1)
    assert head.startswith(\"# \") and \":\" in head, head
    rows=list(csv.reader(io.StringIO(body)))
    assert all(len(r)==len(rows[0]) for r in rows), head
" "$tmp/out"'

# Tables a person can read (6): the findings fit a 100-column terminal.
COLUMNS=100 "$ss" analyze "$sample" >"$tmp/narrow.out" 2>/dev/null
check "analyze at COLUMNS=100: no line longer than 100" \
  '[ "$(awk "length > 100" "$tmp/narrow.out" | wc -l)" -eq 0 ] || { awk "length > 100" "$tmp/narrow.out" | head -3; false; }'
check "analyze: durations in readable units" 'grep -Eq "[0-9] (ms|us|s)( |$)" "$tmp/narrow.out"'
"$ss" analyze "$sample" >"$tmp/wide.out" 2>/dev/null
check "analyze piped: no width limit, full kernel names" '[ "$(awk "length > 100" "$tmp/wide.out" | wc -l)" -gt 0 ]'

# The torchrun agent is not a rank (2): a run of rank 0 plus a CUDA process without rank or GPU work.
mkdir -p "$tmp/job.ssrun"
"$ss" import "$sample" -o "$tmp/job.ssrun/node-812.sstrace" >/dev/null
printf '{"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"cudaGetDeviceCount","pid":811,"tid":811,"ts":1,"dur":2}]}' >"$tmp/agent.json"
"$ss" import "$tmp/agent.json" -o "$tmp/job.ssrun/node-811.sstrace" >/dev/null
try stats "$tmp/job.ssrun" --report kernels
check "stats: the agent is left out, with a note"   '[ $rc -eq 0 ] && ! grep -q "trace 1\|all ranks" "$tmp/out" && grep -q "left out, a process without a rank" "$tmp/out"'
try export "$tmp/job.ssrun" --format chrome -o "$tmp/job.json"
check "export: one process, the agent left out"   '[ $rc -eq 0 ] && grep -q "(1 trace(s)" "$tmp/out" && [ "$(grep -o "process_name" "$tmp/job.json" | wc -l)" -eq 1 ]'

# Chrome export of the real sample by Perfetto's JSON rules (1): 32-bit ids,
# no pid 0, named GPU tracks, slices nested on each track.
try export "$sample" --format chrome -o "$tmp/sample.json"
check "export chrome: Perfetto's rules on the sample" 'python3 - "$tmp/sample.json" <<PY
import json, sys, collections
d = json.load(open(sys.argv[1]))
tracks = collections.defaultdict(list); named = set(); kernels = set()
for e in d["traceEvents"]:
    assert 0 < e["pid"] < 2**31 and 0 <= e["tid"] < 2**31, e
    if e["ph"] == "M" and e["name"] == "thread_name": named.add((e["pid"], e["tid"]))
    if e["ph"] == "X":
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        if e.get("cat") == "kernel": kernels.add((e["pid"], e["tid"]))
assert kernels and kernels <= named, (kernels, named)
bad = 0
for spans in tracks.values():
    spans.sort(key=lambda s: (s[0], -s[1])); stack = []
    for b, f in spans:
        while stack and stack[-1] <= b + 1e-9: stack.pop()
        if stack and f > stack[-1] + 1e-9: bad += 1
        stack.append(f)
assert bad == 0, f"{bad} slices overlap without nesting"
PY'

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
