#!/usr/bin/env bash
# Configures and builds one configuration. Usage: scripts/build.sh [release|asan|fuzz] [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="${1:-release}"
case "$config" in
  release) dir="${2:-$here/build}"; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo); targets=(all) ;;
  asan) dir="${2:-$here/build-asan}"; flags=(-DCMAKE_BUILD_TYPE=Debug -DSCALESCOPE_SANITIZE=ON -DSCALESCOPE_BENCH=OFF); targets=(all) ;;
  fuzz) dir="${2:-$here/build-fuzz}"
        flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
               -DSCALESCOPE_FUZZ=ON -DSCALESCOPE_TESTS=OFF -DSCALESCOPE_BENCH=OFF)
        targets=(fuzzers) ;;  # only the fuzzers and their libraries: about half the fuzz build
  *) echo "scripts/build.sh: unknown configuration '$config' (release, asan, fuzz)" >&2; exit 2 ;;
esac
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
[ "${SCALESCOPE_WERROR:-}" = "1" ] && werror=ON
cmake -S "$here" -B "$dir" -G Ninja -DSCALESCOPE_WERROR=$werror "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
