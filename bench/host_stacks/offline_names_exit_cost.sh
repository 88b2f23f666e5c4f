#!/usr/bin/env bash
# Frames named offline (format 1.4): the exit cost of native stacks
# on a PyTorch process after the change, in the same setting as
# stacks_exit_cost.sh (the study's DataLoader configuration, 1 GPU, 30 steps):
# `scalescope profile` wall time with stacks (new collector, names offline),
# without (SCALESCOPE_HOST_STACKS=0) and with the format 1.3 collector (names
# at exit), alternated; what the collector spent on modules
# (host_stack_modules_cpu_ns); what `analyze` spends naming offline; and the
# exit path alone on a python3+torch child (collect_perf_stacks_exit_cost,
# new against the 1.3 code). A deadline guard skips runs that would pass
# $BUDGET_S (default 370 s; the GPU call used 290) of the call.
#
#   carry: .devcarry/{scalescope (or scalescope.xz),libscalescope-collector.so,old-collector.so,
#          exit_cost_new,exit_cost_old,lib/,fashion-mnist/}
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
c="$(cd "${CARRY:-.devcarry}" && pwd)"; out="${OUT:?}"
budget=${BUDGET_S:-370}; begin=$(date +%s)
export LD_LIBRARY_PATH="$c/lib"
# The CLI travels xz-compressed (the carry's 64 MiB limit).
[ -f "$c/scalescope" ] || { xz -dc "$c/scalescope.xz" > /tmp/scalescope-cli && chmod +x /tmp/scalescope-cli; }
cli="$c/scalescope"; [ -f "$cli" ] || cli=/tmp/scalescope-cli
ss() { /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$cli" "$@"; }
work=/tmp/symwork; rm -rf "$work"; mkdir -p "$work"
left() { echo $(( budget - ($(date +%s) - begin) )); }
log() { echo "$*" >> "$out/summary.txt"; }
profile() {  # mode round
  local mode=$1 r=$2 collector="$c/libscalescope-collector.so" env_extra=""
  [ "$mode" = off ] && env_extra="SCALESCOPE_HOST_STACKS=0"
  [ "$mode" = old ] && collector="$c/old-collector.so"
  local t0 t1 rc
  t0=$(date +%s.%N)
  env $env_extra SCALESCOPE_COLLECTOR="$collector" timeout 150 /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" \
    "$cli" profile -o "$work/$mode-$r" --nvml-hz 10 -- \
    python3 -m torch.distributed.run --standalone --nproc_per_node=1 workloads/image_ddp.py \
    --data-dir "$c/fashion-mnist" --image-size 224 --batch-size 128 --steps 30 --warmup-steps 10 --log-every 0 \
    --precision fp16 --pin-memory on --channels-last on --workers 4 --loader cpu > "$out/profiles.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  log "$mode round $r rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))") $(grep -ho 'epoch_time_s=[0-9.]*' "$out/profiles.log" | tail -1)"
}
# new, off, new, off; the 1.3 collector if time is left (each takes 40-65 s).
for step in new:1 off:1 new:2 off:2 old:1; do
  mode=${step%:*}; r=${step#*:}
  if [ "$(left)" -lt 100 ]; then log "skipped $mode round $r (budget)"; continue; fi
  profile "$mode" "$r"
done
# The traced rank's trace of the first new run comes back (metadata:
# host_stack_modules_cpu_ns; its frames named here again, without libtorch).
big=$(ls -S "$work"/new-1.ssrun/*.sstrace 2>/dev/null | head -1)
[ -n "$big" ] && [ "$(stat -c %s "$big")" -lt 16000000 ] && cp "$big" "$out/new-1-rank.sstrace"
# Offline naming where the libraries are: analyze of the new run, timed.
if [ -d "$work/new-1.ssrun" ]; then
  t0=$(date +%s.%N); ss analyze "$work/new-1.ssrun" > "$out/new-1.analyze.txt" 2>&1; rc=$?; t1=$(date +%s.%N)
  log "analyze new-1 (names offline) rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))")"
  t0=$(date +%s.%N); SCALESCOPE_SYMFS=/nonexistent ss analyze "$work/off-1.ssrun" > /dev/null 2>&1; t1=$(date +%s.%N)
  log "analyze off-1 (no stacks) wall_s=$(python3 -c "print(round($t1-$t0,2))")"
  grep -h "frame names" "$out/new-1.analyze.txt" >> "$out/summary.txt"
fi
# The exit path alone on a python3+torch child: 1.3 code (names at exit) against 1.4 (modules only), alternated.
torch_cmd='import torch, time
a = torch.rand(512, 512)
t = time.time()
while time.time() - t < 600:
    b = a @ a; c = torch.nn.functional.relu(b).sum(); s = sorted(str(i) for i in range(2000))'
for r in 1 2 3; do
  for v in old new; do
    if [ "$(left)" -lt 25 ]; then log "skipped exit_cost $v round $r (budget)"; continue; fi
    log "exit_cost $v round $r $(timeout 40 "$c/exit_cost_$v" --seconds 3 -- python3 -c "$torch_cmd" 2>&1 | tail -1)"
  done
done
log "total_s=$(( $(date +%s) - begin ))"
cat "$out/summary.txt"
grep -B2 -A14 "Host thread stacks" "$out/new-1.analyze.txt" | head -40
