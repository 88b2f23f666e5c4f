#!/usr/bin/env bash
# Configures and builds one configuration. Usage: scripts/build.sh [release|asan|fuzz] [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="${1:-release}"
case "$config" in
  release) dir="${2:-$here/build}"; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo); targets=(all) ;;
  # asan and fuzz are one clang configuration: the tests run under ASan/UBSan
  # and the fuzzers link against the same instrumented libraries. -O0 with line
  # tables (full stack traces): a quarter less compile time than gcc's -O0 -g,
  # where -O1 costs a fifth more (bench/RESULTS.md, "Test suite").
  asan|fuzz) dir="${2:-$here/build-asan}"
        flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
               "-DCMAKE_C_FLAGS_DEBUG=-O0 -gline-tables-only" "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only"
               -DSCALESCOPE_FUZZ=ON -DSCALESCOPE_BENCH=OFF)
        targets=(all)
        [ "$config" = fuzz ] && targets=(fuzzers) ;;  # only the fuzzers and the libraries they link
  *) echo "scripts/build.sh: unknown configuration '$config' (release, asan, fuzz)" >&2; exit 2 ;;
esac
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
[ "${SCALESCOPE_WERROR:-}" = "1" ] && werror=ON
cmake -S "$here" -B "$dir" -G Ninja -DSCALESCOPE_WERROR=$werror "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
