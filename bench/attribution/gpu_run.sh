#!/usr/bin/env bash
# The one GPU call of the attribution check (bench/RESULTS.md, "Attribution"):
# run from the repository root with .devcarry carried, holding this
# folder's gpu_check.py and, when present, the collector library built here.
# Everything comes back in $OUT (at most 8 files): log.txt, key_averages.json,
# trace.json.gz and the collector's run directory nvtx.ssrun/; both traces are
# analysed on this side with the same build.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
c=$PWD/${CARRY:-.devcarry}
log="$OUT/log.txt"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'; } >> "$log" 2>&1
timeout 150 python3 "$c/gpu_check.py" "$OUT" >> "$log" 2>&1; echo "torch.profiler run rc=$?" >> "$log"
[ -f "$OUT/key_averages.txt" ] && { cat "$OUT/key_averages.txt" >> "$log"; rm "$OUT/key_averages.txt"; }
if [ -f "$c/libscalescope-collector.so" ]; then
  # What `scalescope profile` sets, without its Debian-built binary.
  for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia.cuda_cupti, os; print(os.path.join(list(nvidia.cuda_cupti.__path__)[0], "lib"))' 2>/dev/null); do
    [ -e "$d/libcupti.so.13" ] || [ -e "$d/libcupti.so.12" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >> "$log"
  mkdir -p "$OUT/nvtx.ssrun"
  SCALESCOPE_RUN_DIR="$OUT/nvtx.ssrun" CUDA_INJECTION64_PATH="$c/libscalescope-collector.so" \
    NVTX_INJECTION64_PATH="$c/libscalescope-collector.so" timeout 100 python3 "$c/gpu_check.py" --emit-nvtx >> "$log" 2>&1
  echo "emit_nvtx collector run rc=$?" >> "$log"
fi
ls -la "$OUT" "$OUT/nvtx.ssrun" >> "$log" 2>&1
