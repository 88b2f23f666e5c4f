#!/bin/sh
# One task of a Slurm sweep test job: slurm_job.sh KIND SECONDS
#   ok      prints its rank and the job's, sleeps SECONDS, exits 0
#   fail3   exits 3
#   cancel  task 0 cancels its own job with scancel (the job ends CANCELLED)
#   overrun sleeps 600 s, for Slurm to end at the job's time limit (TIMEOUT)
# The sleeps are exec'd: Slurm's signals then reach the process itself, not a
# shell that would die and leave its sleep behind for Slurm to wait on.
echo "task=${SLURM_PROCID:-?} of ${SLURM_NTASKS:-?} job=${SLURM_JOB_ID:-?} node=${SLURMD_NODENAME:-?}"
case "$1" in
  ok) exec sleep "$2" ;;
  fail3) exit 3 ;;
  cancel)
    [ "${SLURM_PROCID:-0}" = 0 ] && scancel "$SLURM_JOB_ID"
    exec sleep 30
    ;;
  overrun) exec sleep 600 ;;
  *) echo "slurm_job.sh: unknown kind '$1'" >&2; exit 2 ;;
esac
