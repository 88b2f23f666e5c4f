#!/usr/bin/env bash
# One configuration of the image study: an arm (the plain baseline or the tuned
# configuration) with at most one factor changed, then the image workload.
# The sweep varies ARM and VARIANT; torchrun starts this once per rank.
#
#   arm base : --precision fp32 --pin-memory off --channels-last off --loader cpu
#   arm tuned: --precision fp16 --pin-memory on  --channels-last on  --loader gpu
#   variant ref      : the arm as it is
#   variant fp64     : --precision fp64
#   variant precision: the other arm's precision (base -> fp16, tuned -> fp32)
#   variant pin      : the other arm's pinned-memory setting
#   variant layout   : the other arm's memory format (NCHW <-> NHWC)
#   variant loader   : the other arm's loader (cpu <-> gpu)
#
# Usage: image_variant.sh ARM VARIANT [more image_ddp.py options]
set -euo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 2 ] || { echo "usage: image_variant.sh base|tuned ref|fp64|precision|pin|layout|loader [options]" >&2; exit 2; }
arm="$1" variant="$2"; shift 2
case "$arm" in
  base)  flags=(--precision fp32 --pin-memory off --channels-last off --loader cpu)
         other=(--precision fp16 --pin-memory on --channels-last on --loader gpu) ;;
  tuned) flags=(--precision fp16 --pin-memory on --channels-last on --loader gpu)
         other=(--precision fp32 --pin-memory off --channels-last off --loader cpu) ;;
  *) echo "image_variant.sh: unknown arm '$arm' (base, tuned)" >&2; exit 2 ;;
esac
# argparse keeps the last value of a repeated option, so a variant is appended.
case "$variant" in
  ref) ;;
  fp64) flags+=(--precision fp64) ;;
  precision) flags+=("${other[0]}" "${other[1]}") ;;
  pin) flags+=("${other[2]}" "${other[3]}") ;;
  layout) flags+=("${other[4]}" "${other[5]}") ;;
  loader) flags+=("${other[6]}" "${other[7]}") ;;
  *) echo "image_variant.sh: unknown variant '$variant' (ref, fp64, precision, pin, layout, loader)" >&2; exit 2 ;;
esac
exec "${PYTHON:-python3}" "$repo/workloads/image_ddp.py" "${flags[@]}" "$@"
