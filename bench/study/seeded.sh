#!/usr/bin/env bash
# seeded.sh REP CMD...: runs CMD... --seed REP. The sweep's own --seed used to
# be taken from the job's arguments by older scalescope builds (CLI11 matched
# it after '--'), so the study passes the repetition as a plain word.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: seeded.sh REP CMD..." >&2; exit 2; }
rep="$1"; shift
exec "$@" --seed "$rep"
