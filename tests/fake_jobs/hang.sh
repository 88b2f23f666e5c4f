#!/bin/sh
# Fake job that hangs, with a child process in its group. With "ignore-term"
# it ignores SIGTERM, so only SIGKILL ends it. The child writes its pid to
# ${1:-/dev/null} so a test can check that the whole group was killed.
pidfile=${1:-/dev/null}
[ "${2:-}" = "ignore-term" ] && trap '' TERM
sleep 1000 &
echo $! >"$pidfile"
echo "hanging"
while :; do sleep 1; done
