#!/usr/bin/env bash
# Analysis speed: one synthetic rank per size, written chunk by chunk, analysed by
# three commands in alternation, each in its own process under /usr/bin/time:
#   A  main's `scalescope analyze --format json FILE` (today's whole-trace path)
#   B  analyze_stream_bench stream FILE (this branch: analyze_rank_streaming)
#   C  analyze_stream_bench whole FILE (this branch: read_trace + analyze_rank)
#   D  $OLD_STREAM_BENCH stream FILE (an earlier build's streaming analysis, e.g.
#      main's build/analyze/analyze_stream_bench; only when sides name D)
# Usage: bench/analysis_speed/stream.sh MAIN_SCALESCOPE STREAM_BENCH DIR ROUNDS SIZE[:ROUNDS][:SIDES]...
#   e.g. bench/analysis_speed/stream.sh /work/main/build/cli/scalescope build/analyze/analyze_stream_bench \
#          /tmp/big 5 1000000 10000000 30000000:3 100000000:3:B
# Prints one line per run (size side wall_s user_s sys_s maxrss_kib), then
# per size and side the medians with ranges. Deletes each file after its size.
set -euo pipefail
main="$1" bench="$2" dir="$3" rounds="$4"; shift 4
mkdir -p "$dir"
out="$dir/runs.txt"
: > "$out"
for spec in "$@"; do
  IFS=: read -r size r sides <<< "$spec"
  r="${r:-$rounds}" sides="${sides:-ABC}"
  f="$dir/rank-$size.sstrace"
  /usr/bin/time -f "write $size %e s %M KiB" "$bench" write "$size" "$f" >&2
  for ((i = 0; i < r; ++i)); do
    for side in $(echo "$sides" | grep -o .); do
      case "$side" in
        A) cmd=("$main" analyze --format json "$f") ;;
        B) cmd=("$bench" stream "$f") ;;
        C) cmd=("$bench" whole "$f") ;;
        D) cmd=("${OLD_STREAM_BENCH:?set OLD_STREAM_BENCH for side D}" stream "$f") ;;
      esac
      t=$(mktemp)
      if /usr/bin/time -f "%e %U %S %M" -o "$t" "${cmd[@]}" > "$dir/last-$side.txt" 2>&1; then
        echo "$size $side $(cat "$t")" | tee -a "$out"
      else
        echo "$size $side FAILED $(tail -1 "$dir/last-$side.txt")" | tee -a "$out"
      fi
      rm -f "$t"
    done
  done
  [ -f "$dir/last-B.txt" ] && [ -f "$dir/last-C.txt" ] && grep -h wall_ns "$dir/last-B.txt" "$dir/last-C.txt" | sed 's/ analysis_s=.*//' | uniq -c >&2
  rm -f "$f"
done
python3 "$(dirname "$0")/summarize_runs.py" "$out"
