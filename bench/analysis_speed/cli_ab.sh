#!/usr/bin/env bash
# `scalescope analyze` of one synthetic rank per size, two binaries
# alternating (A B A B ...), each run its own process under /usr/bin/time, with
# the same arguments (e.g. --no-attribution, which lets a build that streams
# .sstrace ranks do so). The two sides' outputs of each size must be equal
# (checked with cmp after every pair). The rank is written chunk by chunk by
# analyze_stream_bench write N and deleted after its size.
# Usage: bench/analysis_speed/cli_ab.sh A_BINARY B_BINARY STREAM_BENCH DIR SIZE:ROUNDS... -- ANALYZE_ARGS...
#   e.g. bench/analysis_speed/cli_ab.sh /tmp/main-scalescope build/cli/scalescope build/analyze/analyze_stream_bench \
#          /tmp/ab 1000000:5 10000000:5 100000000:3 -- --no-attribution --format json
# Prints one line per run (size side wall_s user_s sys_s maxrss_kib), then per
# size and side the medians with ranges, and the fitted exponent of each side's
# median wall and CPU against events (least squares of the logs).
set -euo pipefail
a="$1" b="$2" bench="$3" dir="$4"; shift 4
sizes=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do sizes+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
mkdir -p "$dir"
out="$dir/runs.txt"
: > "$out"
for spec in "${sizes[@]}"; do
  IFS=: read -r size rounds <<< "$spec"
  f="$dir/rank-$size.sstrace"
  "$bench" write "$size" "$f" > /dev/null
  for ((i = 0; i < rounds; ++i)); do
    for side in A B; do
      bin="$a"; [ "$side" = B ] && bin="$b"
      t=$(mktemp)
      if /usr/bin/time -f "%e %U %S %M" -o "$t" "$bin" analyze "$f" "$@" > "$dir/out-$side.txt" 2> "$dir/err-$side.txt"; then
        echo "$size $side $(cat "$t")" | tee -a "$out"
      else
        echo "$size $side FAILED $(tail -1 "$dir/err-$side.txt")" | tee -a "$out"
      fi
      rm -f "$t"
    done
    cmp -s "$dir/out-A.txt" "$dir/out-B.txt" || { echo "size $size: the outputs differ" >&2; exit 1; }
  done
  rm -f "$f"
done
python3 "$(dirname "$0")/summarize_runs.py" "$out"
