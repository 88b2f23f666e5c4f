#!/bin/sh
# Fake training job with a known time law: sleeps T(N) = A/N + B*(N-1) + C
# seconds, prints noisy output and "throughput: X samples/s" with X = 100/T.
# Usage: law.sh GPUS [A] [B] [C] [RECORD_FILE]
# RECORD_FILE (optional) gets "start ..." and "end ..." lines, so tests can see
# which runs were started and finished.
gpus=$1
a=${2:-0.2}
b=${3:-0}
c=${4:-0.02}
record=${5:-}
t=$(awk -v n="$gpus" -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%.4f", a / n + b * (n - 1) + c }')
id="gpus=$gpus rep=${SCALESCOPE_SWEEP_REP:-?} dir=$(basename "${SCALESCOPE_SWEEP_RUN_DIR:-?}")"
[ -n "$record" ] && echo "start $id" >>"$record"
i=0
while [ $i -lt 30 ]; do
  echo "step $i loss=0.$((i * 7 % 10))$((i % 9)) warning: noisy line with {braces} and :::MLLOG-lookalike"
  i=$((i + 1))
done
echo "progress to stderr" >&2
sleep "$t"
awk -v t="$t" 'BEGIN { printf "throughput: %.3f samples/s\n", 100 / t }'
[ -n "$record" ] && echo "end $id" >>"$record"
exit 0
