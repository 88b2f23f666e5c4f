#!/usr/bin/env bash
# On the GPU machine, from the checkout root: profiles a short 1-GPU DDP job
# (workloads/image_ddp.py, synthetic data) with `scalescope profile`, then
# opens and analyses the run from that machine's python3 with the library
# built here (CARRY: bin/scalescope, lib/*.so, python/scalescope, gpu_check.py), and tries
# HTA for comparison. Logs go to OUT.
# Usage: bench/python/gpu_run.sh CARRY OUT
set -uo pipefail
carry="$(cd "$1" && pwd)"; out="$2"
repo="$(pwd)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
export SCALESCOPE_COLLECTOR="$carry/lib/libscalescope-collector.so"
export SCALESCOPE_LIBRARY="$carry/lib/libscalescope.so" PYTHONPATH="$carry/python"
work="$(mktemp -d)"
{
  nvidia-smi -L
  python3 -c 'import sys, numpy, pandas, torch; print(sys.version.split()[0], numpy.__version__, pandas.__version__, torch.__version__)'
  "$carry/bin/scalescope" --version
} >"$out/env.txt" 2>&1
(cd "$work" && "$carry/bin/scalescope" profile -o ddp -- torchrun --standalone --nproc_per_node=1 \
   "$repo/workloads/image_ddp.py" --synthetic --image-size 112 --precision bf16 --channels-last --loader gpu \
   --batch-size 128 --steps 30 --warmup-steps 5) >"$out/profile.log" 2>&1
echo "profile exit $?" >>"$out/profile.log"
"$carry/bin/scalescope" analyze "$work/ddp.ssrun" --json >"$work/cli.json" 2>>"$out/profile.log"
"$carry/bin/scalescope" analyze "$work/ddp.ssrun" >"$out/cli_analyze.txt" 2>&1
python3 "$carry/gpu_check.py" "$work/ddp.ssrun" "$work/cli.json" >"$out/python.txt" 2>&1
echo "gpu_check exit $?" >>"$out/python.txt"
python3 -c 'import hta; print("hta", hta.__file__)' >"$out/hta.txt" 2>&1 || echo "HTA is not importable here" >>"$out/hta.txt"
tar -czf "$out/ddp.ssrun.tar.gz" -C "$work" ddp.ssrun
cat "$out/env.txt" "$out/python.txt" "$out/hta.txt"; tail -5 "$out/profile.log"
