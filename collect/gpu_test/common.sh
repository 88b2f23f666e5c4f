# Sourced by the collector's GPU scripts (run_*.sh here):
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
#   gpu_test_init run_x.sh collect_gpu_check "$@"
# sets here, build, out (absolute), scalescope, checker and fails=0; exports
# the NCCL settings every GPU job keeps; stops with a FAIL line and SUMMARY
# when a binary is missing. pass/fail print one line; fail counts it.
gpu_test_init() {
  local name="$1" checker_name="$2"
  shift 2
  here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
  build="$(cd "${1:?usage: $name BUILD_DIR OUT_DIR}" && pwd)" || exit 1
  out="${2:?usage: $name BUILD_DIR OUT_DIR}"
  mkdir -p "$out" && out="$(cd "$out" && pwd)" || exit 1
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  scalescope="$build/cli/scalescope"
  checker="$build/collect/$checker_name"
  fails=0
  local f
  for f in "$scalescope" "$checker" "$build/collect/libscalescope-collector.so"; do
    [ -e "$f" ] || { echo "FAIL missing $f"; echo "SUMMARY: 1 failed"; exit 1; }
  done
}
pass() { echo "PASS $*"; }
fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}
