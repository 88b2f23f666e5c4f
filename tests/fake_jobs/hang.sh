#!/bin/sh
# Fake job that hangs, with a child process in its group. With "ignore-term"
# it ignores SIGTERM, so only SIGKILL ends it. The child writes its pid to
# ${1:-/dev/null} so a test can check that the whole group was killed.
# Only a path is a pid file: in a sweep template the first argument is {gpus},
# and writing the pid to a file named "1" would litter the working directory.
case "${1:-}" in
  */*) pidfile=$1 ;;
  *) pidfile=/dev/null ;;
esac
[ "${2:-}" = "ignore-term" ] && trap '' TERM
sleep 1000 &
echo $! >"$pidfile"
echo "hanging"
while :; do sleep 1; done
