#!/usr/bin/env bash
# Copies Fashion-MNIST (Debian's dataset-fashion-mnist package) into
# .devcarry/fashion-mnist/ of this checkout: that folder is git-ignored and is
# carried to the GPU machine, where workloads/image_ddp.py finds it by default.
# Usage: bench/study/stage_data.sh [SOURCE_DIR]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="${1:-/usr/share/datasets/fashion-mnist}"
dst="$repo/.devcarry/fashion-mnist"
files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
for f in "${files[@]}"; do
  if [ ! -s "$src/$f" ]; then
    echo "stage_data.sh: $src/$f is missing (apt-get install dataset-fashion-mnist, or pass the folder)" >&2
    exit 1
  fi
  if ! gzip -t "$src/$f" 2>/dev/null; then
    echo "stage_data.sh: $src/$f is not a valid gzip file" >&2
    exit 1
  fi
done
mkdir -p "$dst"
for f in "${files[@]}"; do cp -f "$src/$f" "$dst/$f"; done
echo "staged Fashion-MNIST into $dst:"
(cd "$dst" && ls -l "${files[@]}" | awk '{print "  " $5 " bytes  " $9}')
