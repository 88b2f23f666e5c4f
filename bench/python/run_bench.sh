#!/usr/bin/env bash
# The Python API against the CLI on the 712k-event shared trace, imported once
# to a temporary .sstrace: wall time of open + kernels DataFrame and of the
# analysis (timed inside Python), and peak RSS of the whole process against
# `scalescope analyze --json` of the same file (/usr/bin/time -v), alternating
# CLI, Python and Python that only imports (its interpreter's baseline) for
# ROUNDS rounds. Usage: bench/python/run_bench.sh [ROUNDS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-5}"
cli="${SCALESCOPE_CLI:-$here/build/cli/scalescope}"
py="${PYTHON:-/usr/bin/python3}"
export SCALESCOPE_LIBRARY="${SCALESCOPE_LIBRARY:-$here/build/capi/libscalescope.so}" PYTHONPATH="$here/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$cli" import "$here/../shared/data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz" -o "$work/t.sstrace" >/dev/null
rss() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }
wall() { sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }
for i in $(seq "$rounds"); do
  /usr/bin/time -v "$cli" analyze "$work/t.sstrace" --json >/dev/null 2>"$work/cli.time"
  /usr/bin/time -v "$py" "$here/bench/python/open_analyze.py" "$work/t.sstrace" >"$work/py.json" 2>"$work/py.time"
  /usr/bin/time -v "$py" "$here/bench/python/open_analyze.py" --baseline >/dev/null 2>"$work/base.time"
  echo "round $i cli_wall=$(wall "$work/cli.time") cli_rss_kb=$(rss "$work/cli.time")" \
       "py_wall=$(wall "$work/py.time") py_rss_kb=$(rss "$work/py.time") py_imports_only_rss_kb=$(rss "$work/base.time")" \
       "py=$(cat "$work/py.json")"
done
