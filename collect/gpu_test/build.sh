#!/usr/bin/env bash
# Builds the CUDA programs of the collector's GPU checks (needs nvcc, no GPU):
#   collect/gpu_test/build.sh BUILD_DIR     -> BUILD_DIR/collect/gpu_test/ground_truth
#                                              BUILD_DIR/collect/gpu_test/launch_rate (bench/collector_overhead)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: build.sh BUILD_DIR}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
out="$build/collect/gpu_test"
mkdir -p "$out"
"$cuda/bin/nvcc" -std=c++17 -O2 -arch=sm_90 -I"$cuda/include" -I"$here" \
  "$here/ground_truth.cu" -o "$out/ground_truth" \
  -L"$cuda/lib64" -lnccl -Xlinker -rpath -Xlinker "$cuda/lib64"
"$cuda/bin/nvcc" -std=c++17 -O2 -arch=sm_90 -I"$cuda/include" \
  "$here/../../bench/collector_overhead/launch_rate.cu" -o "$out/launch_rate" \
  -Xlinker -rpath -Xlinker "$cuda/lib64"
echo "built $out/ground_truth $out/launch_rate"
