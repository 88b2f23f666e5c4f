#!/usr/bin/env bash
# Tests of the study scripts without a GPU or torch: image_variant.sh's option
# mapping, run_study.sh's sweep command lines, budget guard, resume and output
# files, and smoke.sh's pass/fail checks, against stand-ins for scalescope,
# nvidia-smi, torchrun and python (written into a temporary folder).
# Usage: bench/study/tests/study_scripts_test.sh   (exit 0 when all pass)
set -uo pipefail
study="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
expect() { if eval "$2"; then ok; else bad "$1 [$2]"; fi; }

# ---------------------------------------------------------------- stand-ins
mkdir -p "$tmp/bin" "$tmp/build/cli" "$tmp/data"
cat >"$tmp/bin/fake-python" <<'EOF'
#!/usr/bin/env bash
# Prints its arguments one per line after ARGS, like a workload that succeeded.
echo ARGS; printf '%s\n' "$@"
case " $* " in *" --fail "*) echo "boom" >&2; exit 1 ;; esac
echo ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}'
echo ':::MLLOG {"namespace": "", "time_ms": 2, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}'
echo "scalescope_result workload=fake epoch_time_s=1.25 status=${FAKE_STATUS:-success}"
EOF
cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = -L ] && { echo "GPU 0: NVIDIA H200 (UUID: a)"; echo "GPU 1: NVIDIA H200 (UUID: b)"; }
exit 0
EOF
cat >"$tmp/bin/torchrun" <<'EOF'
#!/usr/bin/env bash
# Skips the launcher options and runs the command once, as rank 0 of 1.
while [ $# -gt 0 ] && [[ "$1" == --* ]]; do shift; done
if [[ "$1" == *.py ]]; then exec "$PYTHON" "$@"; fi
exec "$@"
EOF
cat >"$tmp/build/cli/scalescope" <<'EOF'
#!/usr/bin/env bash
# Records each call; 'sweep' makes the DB and two run folders, 'profile' runs the command.
printf '%s\n' "$*" >>"$CALLS"
case "$1" in
  --version) echo "scalescope fake" ;;
  sweep)
    if [ "${2:-}" = --help ]; then echo "--gpus --repeat --vary --launcher --profile --metric --timeout --resume"; exit 0; fi
    db="" profile=0
    while [ $# -gt 0 ]; do
      [ "$1" = -o ] && db="$2"; [ "$1" = --profile ] && profile=1; [ "$1" = -- ] && { shift; break; }; shift
    done
    echo sqlite >"$db"
    mkdir -p "$db.runs/0000-g1-r0" "$db.runs/0001-g2-r0"
    cmd=()  # the template with the first value of each placeholder
    for a in "$@"; do
      a="${a//\{arm\}/base}"; a="${a//\{variant\}/ref}"; a="${a//\{method\}/lora}"; a="${a//\{rep\}/0}"; cmd+=("$a")
    done
    if [[ "${cmd[0]}" == *.py ]]; then "$PYTHON" "${cmd[@]}"; else "${cmd[@]}"; fi >"$db.runs/0000-g1-r0/log.txt" 2>&1
    echo "killed before the end" >"$db.runs/0001-g2-r0/log.txt"
    [ "$profile" = 1 ] && head -c 2000 /dev/zero >"$db.runs/0000-g1-r0/trace.ssrun"
    [ -n "${SWEEP_SLEEP:-}" ] && exec sleep "$SWEEP_SLEEP"
    exit 0 ;;
  profile) shift; while [ "$1" != -- ]; do shift; done; shift; exec "$@" ;;
  analyze) echo "iterations: nvtx:ProfilerStep# (20)" ;;
  scaling) echo "scaling of $*" ;;
esac
EOF
chmod +x "$tmp/bin/"* "$tmp/build/cli/scalescope"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  echo x | gzip >"$tmp/data/$f"
done
export PATH="$tmp/bin:$PATH" PYTHON="$tmp/bin/fake-python" CALLS="$tmp/calls.txt" STUDY_DATA="$tmp/data"
export STUDY_SEED="$tmp/no-seed"  # the repository's committed study must not leak into these tests

# ---------------------------------------------------------------- image_variant.sh
# last_value OPTION: the value argparse would keep (the last occurrence) in $args.
last_value() { awk -v o="$1" 'prev == o {v = $0} {prev = $0} END {print v}' <<<"$args"; }
check_variant() {  # ARM VARIANT precision pin layout loader
  args="$("$study/image_variant.sh" "$1" "$2" --steps 3)"
  local got
  got="$(last_value --precision) $(last_value --pin-memory) $(last_value --channels-last) $(last_value --loader)"
  expect "image_variant $1 $2" "[ \"$got\" = \"$3 $4 $5 $6\" ]"
  expect "image_variant $1 $2 passes options on" "grep -qx -- --steps <<<\"\$args\""
}
check_variant base ref fp32 off off cpu
check_variant base fp64 fp64 off off cpu
check_variant base precision fp16 off off cpu
check_variant base pin fp32 on off cpu
check_variant base layout fp32 off on cpu
check_variant base loader fp32 off off gpu
check_variant tuned ref fp16 on on gpu
check_variant tuned fp64 fp64 on on gpu
check_variant tuned precision fp32 on on gpu
check_variant tuned pin fp16 off on gpu
check_variant tuned layout fp16 on off gpu
check_variant tuned loader fp16 on on cpu
"$study/image_variant.sh" tuned nope >/dev/null 2>"$tmp/err"; rc=$?
expect "image_variant rejects an unknown variant" "[ $rc -eq 2 ] && grep -q \"unknown variant 'nope'\" \"$tmp/err\""

# ---------------------------------------------------------------- run_study.sh
out="$tmp/out1"
STUDY_WORK="$tmp/work" "$study/run_study.sh" "$tmp/build" "$out" all accuracy >"$tmp/study.log" 2>&1; rc=$?
# The control part alone (one call cannot bring back more than 8 files).
STUDY_WORK="$tmp/work" "$study/run_study.sh" "$tmp/build" "$tmp/out1b" control >"$tmp/study1b.log" 2>&1; rc1b=$?
expect "run_study control exits 0" "[ $rc1b -eq 0 ] && [ -s \"$tmp/out1b/control.tar.gz\" ]"
expect "run_study exits 0" "[ $rc -eq 0 ]"
expect "run_study leaves at most 8 files" "[ \$(ls \"$out\" | wc -l) -le 8 ]"
for part in image-base image-tuned llm accuracy; do
  expect "run_study packs $part" "[ -s \"$out/$part.tar.gz\" ]"
done
expect "env.txt written" "grep -q 'scalescope fake' \"$out/env.txt\""
expect "no traces for the unprofiled accuracy part" "[ ! -e \"$out/accuracy-traces.tar.gz\" ]"
sweeps="$(grep '^sweep --gpus' "$CALLS")"
expect "five sweeps" "[ \$(wc -l <<<\"\$sweeps\") -eq 5 ]"
line() { grep -- "-o $tmp/work/$1.db" <<<"$sweeps"; }
expect "image-base sweep" "line image-base | grep -q -- '--gpus 1,2 --repeat 3 --launcher torchrun --metric regex:epoch_time_s='"
expect "image-base is profiled" "line image-base | grep -q -- '--profile'"
expect "image-base varies the base arm" "line image-base | grep -q -- '--vary arm=base --vary variant=ref,fp64,precision,pin,layout,loader -- bench/study/seeded.sh {rep} bench/study/image_variant.sh {arm} {variant}'"
expect "image-tuned varies the tuned arm" "line image-tuned | grep -q -- '--vary arm=tuned'"
expect "llm varies the four methods" "line llm | grep -q -- '--vary method=lora,dpo,qlora,qat -- bench/study/seeded.sh {rep} ' && line llm | grep -q -- 'workloads/llm_finetune.py --method {method} --size 1b'"
expect "accuracy: 2 GPUs, once, mlperf metric, unprofiled" "line accuracy | grep -q -- '--gpus 2 --repeat 1 --launcher torchrun --metric mlperf' && ! line accuracy | grep -q -- --profile"
expect "control: tuned ref and fp64 on 1 GPU, unprofiled" "line control | grep -q -- '--gpus 1 --repeat 3 ' && line control | grep -q -- '--vary arm=tuned --vary variant=ref,fp64 --' && ! line control | grep -q -- --profile"
expect "control compared" "grep -q -- 'control.db --compare variant=ref,fp64' \"$CALLS\""
expect "per-run timeout" "line llm | grep -q -- '--timeout 120s'"
expect "longer timeout for the accuracy run" "line accuracy | grep -q -- '--timeout 480s'"
tar -xzf "$out/image-base.tar.gz" -C "$tmp"
expect "summary row from the result line" "grep -q \$'run=0000-g1-r0\tworkload=fake\tepoch_time_s=1.25' \"$tmp/image-base-pack/summary.tsv\""
expect "summary notes a run without result" "grep -q \$'run=0001-g2-r0\tstatus=no_result_line' \"$tmp/image-base-pack/summary.tsv\""
expect "analyze output of repetition 0" "grep -q ProfilerStep \"$tmp/image-base-pack/analyze/0000-g1-r0.txt\""
expect "the workload got the staged data" "grep -qx -- \"$tmp/data\" \"$tmp/image-base-pack/logs/0000-g1-r0.log\""
expect "image effects compared" "grep -q -- '--compare variant=ref,loader' \"$CALLS\" && [ -s \"$tmp/image-base-pack/compare/ref-vs-loader.txt\" ]"
expect "llm effects compared" "grep -q -- '--compare method=lora,qat' \"$CALLS\""
expect "traces archived" "tar -tzf \"$out/image-base-traces.tar.gz\" | grep -q 'image-base.db.runs/0000-g1-r0/trace.ssrun'"

# A fresh work folder resumes from the committed database of the part.
mkdir -p "$tmp/seed" && echo sqlite >"$tmp/seed/llm.db"
: >"$CALLS"
STUDY_SEED="$tmp/seed" STUDY_WORK="$tmp/work7" "$study/run_study.sh" "$tmp/build" "$tmp/out7" llm >"$tmp/study7.log" 2>&1; rc=$?
expect "a fresh work folder resumes from the committed DB" "[ $rc -eq 0 ] && grep -q -- '--resume' \"$CALLS\" && grep -q 'resuming from the committed' \"$tmp/study7.log\" && [ -s \"$tmp/work7/llm.db\" ]"
: >"$CALLS"
STUDY_SEED=none STUDY_WORK="$tmp/work8" "$study/run_study.sh" "$tmp/build" "$tmp/out8" llm >"$tmp/study8.log" 2>&1
expect "STUDY_SEED=none starts afresh" "! grep -q -- '--resume' \"$CALLS\""

# A second call with the same work folder resumes.
: >"$CALLS"
STUDY_WORK="$tmp/work" "$study/run_study.sh" "$tmp/build" "$tmp/out2" llm >"$tmp/study2.log" 2>&1; rc=$?
expect "second call resumes" "[ $rc -eq 0 ] && grep -q -- '--resume' \"$CALLS\""

# The budget guard: nothing starts without time, and a long sweep is stopped.
: >"$CALLS"
STUDY_BUDGET_S=60 STUDY_WORK="$tmp/work3" "$study/run_study.sh" "$tmp/build" "$tmp/out3" llm >"$tmp/study3.log" 2>&1
expect "no sweep without budget" "! grep -q '^sweep --gpus' \"$CALLS\" && grep -q 'not started' \"$tmp/study3.log\""
SWEEP_SLEEP=30 STUDY_BUDGET_S=3 STUDY_MARGIN_S=0 STUDY_MIN_START_S=1 STUDY_WORK="$tmp/work4" "$study/run_study.sh" "$tmp/build" "$tmp/out4" llm \
  >"$tmp/study4.log" 2>&1; rc=$?
expect "a sweep past the budget is stopped and still packed" "[ $rc -eq 0 ] && grep -q 'sweep exit status 124' \"$tmp/study4.log\" && [ -s \"$tmp/out4/llm.tar.gz\" ]"

"$study/run_study.sh" "$tmp/build" "$tmp/out5" imagex >/dev/null 2>"$tmp/err"; rc=$?
expect "unknown part is an error" "[ $rc -ne 0 ] && grep -q \"unknown part 'imagex'\" \"$tmp/err\""
STUDY_DATA="$tmp/none" STUDY_WORK="$tmp/work6" "$study/run_study.sh" "$tmp/build" "$tmp/out6" image-base >/dev/null 2>"$tmp/err"; rc=$?
expect "missing data is an error" "[ $rc -ne 0 ] && grep -q 'not staged' \"$tmp/err\""

# ---------------------------------------------------------------- smoke.sh
"$study/smoke.sh" "$tmp/smoke" "$tmp/build" >"$tmp/smoke.log" 2>&1; rc=$?
expect "smoke passes with succeeding workloads" "[ $rc -eq 0 ] && grep -q '^smoke: 15 passed, 0 failed' \"$tmp/smoke.log\""
expect "smoke keeps its table and logs" "[ -s \"$tmp/smoke/smoke.txt\" ] && [ -s \"$tmp/smoke/smoke-logs.tar.gz\" ]"
FAKE_STATUS=aborted "$study/smoke.sh" "$tmp/smoke2" >"$tmp/smoke2.log" 2>&1; rc=$?
expect "smoke fails when a run does not succeed" "[ $rc -ne 0 ] && grep -q 'status is not success' \"$tmp/smoke2.log\""

echo "study scripts: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
