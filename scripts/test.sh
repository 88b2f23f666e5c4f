#!/usr/bin/env bash
# Runs every test: unit and golden tests (release, warnings as errors), the same
# under AddressSanitizer and UndefinedBehaviorSanitizer (clang), each libFuzzer
# target of that build for a bounded time, and the browser tests of the HTML report.
# Usage: scripts/test.sh            (everything, as CI runs it)
#        FUZZ_SECONDS=10 scripts/test.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
export SCALESCOPE_WERROR=1 NO_COLOR=1
fuzz_seconds="${FUZZ_SECONDS:-15}"  # each fuzzer 15 s, as many at a time as there are cores
jobs="$(nproc)"
passed=0
failed=0

run_ctest() {  # $1 build dir, rest: extra ctest args
  local dir="$1"; shift
  local log; log="$(mktemp)"
  local rc=0
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900 "$@") 2>&1 | tee "$log" || rc=$?
  local total fails
  total="$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)"
  fails="$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)"
  total="${total:-0}"; fails="${fails:-0}"
  passed=$((passed + total - fails)); failed=$((failed + fails))
  if [ "$rc" -ne 0 ] && [ "$fails" -eq 0 ]; then failed=$((failed + 1)); fi
  rm -f "$log"
}

# Each stage's start, in seconds since this script began: where CI's hour goes.
stage() { echo "== $1 (at ${SECONDS} s)"; }

scripts/install-deps.sh

stage "release build and tests"
scripts/build.sh release
run_ctest build

stage "Python package (pytest on the release build)"
# Debian's python3 has python3-numpy/pandas/pytest from install-deps.sh; a
# python3 earlier on the PATH (pyenv) may not.
py=python3
/usr/bin/python3 -c 'import numpy, pandas, pytest' 2>/dev/null && py=/usr/bin/python3
pylog="$(mktemp)"
rc=0
SCALESCOPE_LIBRARY="$here/build/capi/libscalescope.so" SCALESCOPE_CLI="$here/build/cli/scalescope" MPLBACKEND=Agg \
  "$py" -m pytest -q -p no:cacheprovider "$here/python/tests" 2>&1 | tee "$pylog" || rc=$?
py_passed="$(grep -Eo '[0-9]+ passed' "$pylog" | tail -1 | grep -Eo '[0-9]+' || true)"
# grep finds nothing when all passed: under pipefail that must not end the script.
py_failed="$(tail -3 "$pylog" | { grep -Eo '[0-9]+ (failed|errors?)' || true; } | awk '{s += $1} END {print s + 0}')"
passed=$((passed + ${py_passed:-0})); failed=$((failed + ${py_failed:-0}))
# Exit 5 is "no tests collected": a failure too (the tests went missing), as is
# any other non-zero exit without a counted failure (pytest itself broke).
if [ "$rc" -ne 0 ] && [ "${py_failed:-0}" -eq 0 ]; then
  echo "pytest: exit status $rc with no failed test counted"; failed=$((failed + 1))
fi
rm -f "$pylog"

stage "ASan/UBSan build (clang, fuzzers included) and tests"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest build-asan -LE "slow|slurm"  # the Slurm tests drive real daemons: their code runs under ASan in sweep_test

fuzz_one() {  # $1 fuzzer, $2 results folder: runs it on a copy of its seed corpus, leaves NAME.log and NAME.rc there
  local name corpus rc=0
  name="$(basename "$1")"
  corpus="$(mktemp -d)"
  [ -d "$here/tests/fuzz/${name%_fuzz}" ] && cp -r "$here/tests/fuzz/${name%_fuzz}"/. "$corpus"/
  # A failing input goes into the results folder (not the source tree), and is
  # printed below so that a CI log is enough to reproduce it.
  "$1" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0 \
    -artifact_prefix="$2/$name-" "$corpus" >"$2/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$2/$name.rc"
  rm -rf "$corpus"
}

stage "fuzzers (${fuzz_seconds}s each, ${jobs} at a time)"
# The fuzzers were built above, in the sanitizer build.
fuzz_results="$(mktemp -d)"
mapfile -t fuzzers < <(find build-asan -type f -name '*_fuzz' -perm -u+x | sort)
running=0
for fuzzer in "${fuzzers[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$fuzzer" "$fuzz_results" &
  running=$((running + 1))
done
wait
if [ "${#fuzzers[@]}" -eq 0 ]; then echo "fuzz: no fuzzer in build-asan"; failed=$((failed + 1)); fi
for fuzzer in "${fuzzers[@]}"; do
  name="$(basename "$fuzzer")"
  if [ "$(cat "$fuzz_results/$name.rc" 2>/dev/null)" = 0 ]; then
    echo "fuzz $name: clean"; passed=$((passed + 1))
  else
    echo "fuzz $name: FAILED"; tail -40 "$fuzz_results/$name.log" 2>/dev/null || true; failed=$((failed + 1))
    for input in "$fuzz_results/$name"-*; do
      [ -f "$input" ] || continue
      keep="build-asan/fuzz-failures/$(basename "$input")"
      mkdir -p build-asan/fuzz-failures && cp "$input" "$keep"
      echo "failing input kept in $keep ($(stat -c %s "$input") bytes); as base64:"
      head -c 8192 "$input" | base64 -w 0; echo
    done
  fi
done
rm -rf "$fuzz_results"

if [ -x scripts/browser-tests.sh ]; then
  stage "browser tests"
  if scripts/browser-tests.sh build/cli/scalescope; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

echo
echo "all: ${passed} passed, ${failed} failed (${SECONDS} s)"
[ "$failed" -eq 0 ]
