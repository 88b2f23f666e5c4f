#!/usr/bin/env bash
# Frames of a profiled PyTorch job named offline by `analyze` on the GPU machine
# (where libtorch is), one profile with stacks on, one off, analyze timed.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
c="$(cd "${CARRY:-.devcarry}" && pwd)"; out="${OUT:?}"
xz -dc "$c/scalescope.xz" > /tmp/ss && chmod +x /tmp/ss
ss() { /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" /tmp/ss "$@"; }
work=/tmp/w11; rm -rf "$work"; mkdir -p "$work"
log() { echo "$*" | tee -a "$out/summary.txt"; }
for step in ${MODES:-on:1 off:1}; do mode=${step%:*}; r=${step#*:}
  extra=""; [ $mode = off ] && extra="SCALESCOPE_HOST_STACKS=0"
  t0=$(date +%s.%N)
  env $extra SCALESCOPE_COLLECTOR="$c/libscalescope-collector.so" timeout 150 /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" \
    /tmp/ss profile -o "$work/$mode$r" --nvml-hz 10 -- \
    python3 -m torch.distributed.run --standalone --nproc_per_node=1 workloads/image_ddp.py \
    --data-dir "$c/fashion-mnist" --image-size 224 --batch-size 128 --steps 30 --warmup-steps 10 --log-every 0 \
    --precision fp16 --pin-memory on --channels-last on --workers 4 --loader cpu > "$out/profile-$mode$r.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  log "profile $mode round $r rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))")"
done
for r in 1 2; do
  t0=$(date +%s.%N); ss analyze "$work/on1.ssrun" > "$out/on.analyze.txt" 2>&1; rc=$?; t1=$(date +%s.%N)
  log "analyze on (names offline) round $r rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))")"
  t0=$(date +%s.%N); ss analyze "$work/off1.ssrun" > "$out/off.analyze.txt" 2>&1; rc=$?; t1=$(date +%s.%N)
  log "analyze off (no stacks) round $r rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))")"
done
ss analyze --format json "$work/on1.ssrun" > "$out/on.analyze.json" 2>&1
ls -la "$work"/on1.ssrun >> "$out/summary.txt"
grep -n "frame names\|named" "$out/on.analyze.txt" | head -20 | tee -a "$out/summary.txt"
cat "$out/summary.txt"
tar czf "$out/s11.tgz" -C "$out" summary.txt on.analyze.txt on.analyze.json off.analyze.txt $(cd "$out" && ls profile-*.log)
rm -f "$out"/on.analyze.json "$out"/off.analyze.txt "$out"/profile-*.log
