#!/usr/bin/env bash
# A/B of two scalescope binaries, alternating A B A B ...
# Usage: bench/analysis_speed/ab.sh A_BINARY B_BINARY ROUNDS -- ARGS...
#   e.g. bench/analysis_speed/ab.sh /tmp/main-scalescope build/cli/scalescope 5 -- analyze t.sstrace --format csv
# Optional: AB_ENV_A / AB_ENV_B are extra "VAR=value" words for env(1) per side.
# Prints one line per run (side, wall s, user s, sys s, max RSS KiB), then the
# medians and ranges per side, and the B/A ratio of the median wall and CPU.
set -euo pipefail
a="$1" b="$2" rounds="$3"; shift 3
[ "$1" = "--" ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {  # side binary env
  local side="$1" bin="$2" envs="$3" t
  shift 3
  t=$(mktemp)
  env $envs /usr/bin/time -f "%e %U %S %M" -o "$t" "$bin" "$@" >/dev/null 2>&1 || true
  echo "$side $(cat "$t")" | tee -a "$out"
  rm -f "$t"
}
for ((r = 0; r < rounds; ++r)); do
  run A "$a" "${AB_ENV_A:-}" "${@}"
  run B "$b" "${AB_ENV_B:-}" "${@}"
done
python3 - "$out" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for side in "AB":
    w = [float(r[1]) for r in rows if r[0] == side]
    c = [float(r[2]) + float(r[3]) for r in rows if r[0] == side]
    m = [int(r[4]) for r in rows if r[0] == side]
    med[side] = (statistics.median(w), statistics.median(c))
    print(f"{side}: wall median {med[side][0]:.3f} s ({min(w):.3f}-{max(w):.3f}), "
          f"user+sys median {med[side][1]:.3f} s ({min(c):.3f}-{max(c):.3f}), max RSS median {statistics.median(m)/1024:.0f} MiB")
print(f"B/A: wall {med['B'][0]/med['A'][0]:.2f}, user+sys {med['B'][1]/med['A'][1]:.2f}")
PY
