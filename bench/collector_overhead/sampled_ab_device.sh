#!/usr/bin/env bash
# The GPU call of the sampled-window measurement, run from a checkout whose
# .devcarry/ holds (copied there from a release build on the
# development machine): scalescope, libscalescope-collector.so, lib/ (the
# CLI's Debian libraries), sampled_ab.sh and sampled_ab_summary.py.
#   bash .devcarry/sampled_ab_device.sh WORKLOAD... (mobilenet, lora)
# The CLI runs through the dynamic loader with --library-path, so the
# carried libraries never reach the job's environment (LD_LIBRARY_PATH
# would hand Debian's libzstd and libsqlite3 to PyTorch as well).
set -u
c="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:?OUT must name the folder for results}"
# Without a carried CLI the jobs get the collector's variables directly
# (sampled_ab.sh "inject"), with CUPTI's folder when the collector cannot find
# libcupti.so.13 by its RUNPATH (as `profile` does).
cli=inject
if [ -x "$c/scalescope" ]; then
  cat > "$c/scalescope.sh" <<SH
#!/bin/sh
exec /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$c/scalescope" "\$@"
SH
  chmod +x "$c/scalescope.sh"
  cli="$c/scalescope.sh"
elif ! python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$c/libscalescope-collector.so" 2>/dev/null; then
  for d in "${CUDA_HOME:-/usr/local/cuda}"/extras/CUPTI/lib64 "${CUDA_HOME:-/usr/local/cuda}"/lib64 \
           $(python3 -c 'import glob, os, site; print(" ".join(sorted({os.path.dirname(p) for s in site.getsitepackages()
             for p in glob.glob(s + "/nvidia/**/libcupti.so.13", recursive=True)})))'); do
    if [ -e "$d/libcupti.so.13" ]; then export CUPTI_DIR="$d"; break; fi
  done
fi
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "cli: $cli; CUPTI_DIR: ${CUPTI_DIR:-(found by RUNPATH)}"
  [ "$cli" = inject ] || "$cli" --version
  nproc
} > "$out/env.txt" 2>&1
budget=540
[ $# -gt 1 ] && budget=$((540 / $#))
for w in "$@"; do
  mkdir -p "$out/$w"
  REPO="$PWD" bash "$c/sampled_ab.sh" "$cli" "$c/libscalescope-collector.so" "$out/$w" "$w" "$budget"
  python3 "$c/sampled_ab_summary.py" "$out/$w/results.jsonl" > "$out/$w/summary.txt" 2>&1
  cat "$out/$w/summary.txt"
done
