#!/usr/bin/env bash
# Streamed attribution: one synthetic rank per size (NVTX step,
# forward, backward and optimizer ranges; one launch call per kernel), written
# chunk by chunk, analysed by analyze_rank_streaming with attribution (A:
# `stream`) and without (B: `stream-noattr`, --no-attribution), alternated A B
# per round, each in its own process under /usr/bin/time.
# Usage: bench/analysis_speed/attribution.sh STREAM_BENCH DIR SIZE:ROUNDS...
#   e.g. bench/analysis_speed/attribution.sh build/analyze/analyze_stream_bench /tmp/attr 10000000:5 1000000:5 30000000:3
# Prints one line per run (size side wall_s user_s sys_s maxrss_kib), then per
# size and side the medians with ranges. Deletes each file after its size.
set -euo pipefail
bench="$1" dir="$2"; shift 2
mkdir -p "$dir"
out="$dir/runs.txt"
: > "$out"
for spec in "$@"; do
  IFS=: read -r size rounds <<< "$spec"
  f="$dir/rank-$size.sstrace"
  "$bench" write "$size" "$f" > /dev/null
  for ((i = 0; i < rounds; ++i)); do
    for side in stream stream-noattr; do
      t=$(mktemp)
      /usr/bin/time -f "%e %U %S %M" -o "$t" "$bench" "$side" "$f" > "$dir/last-$side.txt"
      echo "$size $side $(cat "$t")" | tee -a "$out"
      rm -f "$t"
    done
  done
  grep -h wall_ns "$dir/last-stream.txt" "$dir/last-stream-noattr.txt" | sed 's/ analysis_s=.*//' >&2
  rm -f "$f"
done
python3 "$(dirname "$0")/summarize_runs.py" "$out"
