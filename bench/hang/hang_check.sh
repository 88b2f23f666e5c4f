#!/bin/bash
# The hang report on one GPU (docs/collector.md, "When a job hangs"): the job
# blocked by a spinning kernel, plain (A) and under profile (B, C: no hang;
# D: --hang-after and a timeout's SIGTERM), with each process's threads and
# Python stacks (SIGUSR1) captured while it runs. Usage, from the repository
# root on the GPU machine, with the build staged by bench/stage_device.sh:
#   OUT=dir bash bench/hang/hang_check.sh      (results: OUT/all.tgz)
# CHECKS="D E" runs only those steps (default: A B C D E; E: PyTorch's NCCL
# flight recorder dumps, collect/gpu_test/flight_recorder_dump.py).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
O=$OUT; OUT=$O/d; mkdir -p $OUT; trap "tar -C $O -czf $O/all.tgz d; rm -rf $O/d" EXIT
mkdir -p /tmp/r$$; R=$PWD; S=$R/.devcarry/scalescope; J=$R/collect/gpu_test/hang_job.py
log(){ echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
log "gdb: $(which gdb) py: $(which python3)"
snap() {  # $1 label
  local f=$OUT/snap_$1.txt p t
  ps --ppid 2 -p 2 --deselect -o pid,ppid,pgid,stat,wchan:30,etime,args --forest | grep -v " ps -eo" > $f
  for p in $(pgrep -f "hang_job.py|scalescope profile" | grep -v $$); do
    echo "== pid $p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-120)" >> $f
    for t in /proc/$p/task/*; do
      echo "-- $(cat $t/comm 2>/dev/null) $(awk '{print $3}' $t/stat 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
      cat $t/stack 2>/dev/null | head -6
    done >> $f
    case "$(cat /proc/$p/comm 2>/dev/null)" in python*) kill -USR1 $p;; esac
  done
}
watch_run() {  # $1 label, $2 seconds to wait at most, rest: command
  local label=$1 max=$2; shift 2
  log "$label start: $*"
  ( "$@" ) > $OUT/$label.out 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt $max ]; do
    sleep 1; t=$((t+1))
    case $t in 12|30|50|75) snap ${label}_$t;; esac
  done
  if kill -0 $pid 2>/dev/null; then
    log "$label still running after $max s: killing"; snap ${label}_end
    pkill -KILL -f hang_job.py; kill -KILL $pid; pkill -KILL -f "scalescope profile"; sleep 2
  fi
  wait $pid; log "$label rc=$? after $t s"
  local n=0  # a job whose GPU is blocked may outlive its parent: how long until it is gone
  while pgrep -f "python3 .*hang_job.py" >/dev/null && [ $n -lt 20 ]; do sleep 1; n=$((n+1)); done
  if pgrep -f "python3 .*hang_job.py" >/dev/null; then
    log "$label: job still alive $n s after its parent ended"; snap ${label}_left
    pkill -KILL -f "python3 .*hang_job.py"; sleep 5; pgrep -fa "python3 .*hang_job.py" >> $OUT/log.txt
  else log "$label: job gone $n s after its parent ended"; fi
}
want() { case " ${CHECKS:-A B C D E} " in *" $1 "*) return 0;; esac; return 1; }
# A: plain job that blocks at step 5; timeout ends it.
want A && MASTER_PORT=29601 HANG_AT=5 watch_run A 40 timeout -s TERM -k 5 20 python3 $J
# B: profiled, no hang, 60 steps.
want B && MASTER_PORT=29602 HANG_AT=-1 STEPS=60 watch_run B 60 $S profile -o /tmp/r$$/B -- python3 $J
# C: profiled with --hang-after (NVTX hooks), no hang, 60 steps.
want C && MASTER_PORT=29603 HANG_AT=-1 STEPS=60 watch_run C 60 $S profile --hang-after 10s -o /tmp/r$$/C -- python3 $J
# D: the check: blocks at step 5, hang dump after 10 s, timeout's TERM at 30 s.
want D && MASTER_PORT=29604 HANG_AT=5 watch_run D 90 $S profile --hang-after 10s -o /tmp/r$$/D -- timeout -s TERM -k 10 30 python3 $J
# E: PyTorch's flight recorder: real dumps (pickle and JSON) of a collective that has not run.
want E && MASTER_PORT=29605 watch_run E 90 $S profile -o /tmp/r$$/E -- python3 $R/collect/gpu_test/flight_recorder_dump.py
for r in B C D E; do
  [ -d /tmp/r$$/$r.ssrun ] || continue
  mkdir -p $OUT/run_$r; cp /tmp/r$$/$r.ssrun/run.json $OUT/run_$r/ 2>/dev/null
  cp -r /tmp/r$$/$r.ssrun/control $OUT/run_$r/ 2>/dev/null; ls -la /tmp/r$$/$r.ssrun > $OUT/run_$r/ls.txt 2>&1
done
if want D; then timeout 60 $S analyze /tmp/r$$/D.ssrun > $OUT/D_analyze.txt 2>&1; log "analyze D rc=$?"; fi
if want E; then
  timeout 60 $S analyze /tmp/r$$/E.ssrun > $OUT/E_analyze.txt 2>&1; log "analyze E (pickle) rc=$?"
  timeout 60 $S analyze /tmp/r$$/E.ssrun --flight-recorder /tmp/r$$/E.ssrun/control/flight_recorder/json \
    > $OUT/E_analyze_json.txt 2>&1; log "analyze E (JSON) rc=$?"
fi
