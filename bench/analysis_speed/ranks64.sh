#!/usr/bin/env bash
# `analyze` of 64 ranks x 1 M events (8 hosts x 8 ranks, synthetic),
# A/B of two scalescope binaries, alternating (bench/analysis_speed/ab.sh).
# Usage: bench/analysis_speed/ranks64.sh A_BINARY B_BINARY [ROUNDS] [BUILD_DIR]
# The run directory is written once by analyze_multinode_bench (which also
# times analyze_path in its own process) to $TMPDIR and reused.
set -euo pipefail
a="$1" b="$2" rounds="${3:-5}" build="${4:-build}"
here="$(cd "$(dirname "$0")" && pwd)"
dir="${TMPDIR:-/tmp}/scalescope-multinode-bench-8x8x1000000.ssrun"
if [ ! -e "$dir/node07-1063.sstrace" ]; then
  "$build/analyze/analyze_multinode_bench" --benchmark_filter='BM_AnalyzeMultinode/8/8/1000000'
fi
"$here/ab.sh" "$a" "$b" "$rounds" -- analyze "$dir" --format csv
