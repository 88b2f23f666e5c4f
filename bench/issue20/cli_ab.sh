#!/usr/bin/env bash
# Issue 20: `scalescope analyze` of one synthetic rank per size, two binaries
# alternating (A B A B ...), each run its own process under /usr/bin/time, with
# the same arguments (e.g. --no-attribution, which lets a build that streams
# .sstrace ranks do so). The two sides' outputs of each size must be equal
# (checked with cmp after every pair). The rank is written chunk by chunk by
# analyze_stream_bench write N and deleted after its size.
# Usage: bench/issue20/cli_ab.sh A_BINARY B_BINARY STREAM_BENCH DIR SIZE:ROUNDS... -- ANALYZE_ARGS...
#   e.g. bench/issue20/cli_ab.sh /tmp/main-scalescope build/cli/scalescope build/analyze/analyze_stream_bench \
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
python3 - "$out" <<'PY'
import collections, math, statistics, sys
runs = collections.defaultdict(list)
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) == 6: runs[(int(p[0]), p[1])].append([float(x) for x in p[2:]])
med = {}
for (size, side), v in sorted(runs.items()):
    w = [x[0] for x in v]; c = [x[1] + x[2] for x in v]; m = [x[3] / 1024 for x in v]
    med[(size, side)] = (statistics.median(w), statistics.median(c))
    print(f"{size:>11} {side}: n={len(v)} wall {statistics.median(w):.2f} s ({min(w):.2f}-{max(w):.2f}), "
          f"cpu {statistics.median(c):.2f} s ({min(c):.2f}-{max(c):.2f}), peak RSS {statistics.median(m):.0f} MiB ({min(m):.0f}-{max(m):.0f})")
def fit(xs, ys):
    lx = [math.log(x) for x in xs]; ly = [math.log(y) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
for side in "AB":
    sizes = sorted(s for (s, sd) in med if sd == side)
    if len(sizes) >= 2:
        print(f"{side}: exponent wall {fit(sizes, [med[(s, side)][0] for s in sizes]):.2f}, "
              f"cpu {fit(sizes, [med[(s, side)][1] for s in sizes]):.2f} ({sizes[0]}..{sizes[-1]} events)")
PY
