#!/bin/sh
# Stands in for torchrun, srun and mpirun (linked under those names, put first
# on PATH by tests): records its name and argv in $SCALESCOPE_SWEEP_RUN_DIR/launcher.txt,
# drops the launcher's own options and runs the job.
name=$(basename "$0")
printf '%s' "$name" >"$SCALESCOPE_SWEEP_RUN_DIR/launcher.txt"
for a in "$@"; do printf ' %s' "$a" >>"$SCALESCOPE_SWEEP_RUN_DIR/launcher.txt"; done
echo >>"$SCALESCOPE_SWEEP_RUN_DIR/launcher.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    -np | --map-by) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
exec "$@"
