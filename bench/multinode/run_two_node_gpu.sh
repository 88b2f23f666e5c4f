#!/usr/bin/env bash
# A real two-"node" run on one machine with 2 GPUs: one GPU per
# "node", each node in its own UTS namespace with its own host name, launched
# as `srun -N2 scalescope profile -- torchrun ...` would be (one `profile` per
# node, both writing into one run directory); node 2's collector reads a Unix
# clock 5 ms ahead (SCALESCOPE_TEST_CLOCK_OFFSET_NS). NCCL sees two hosts and
# talks over sockets on the loopback device. Checked: one run directory with
# both nodes' traces, node facts and run-<host>.json; the 5 ms offset found
# (within 50 us); stragglers reported; both nodes in the per-node table.
#
#   bench/multinode/run_two_node_gpu.sh BUILD_DIR OUT_DIR     (run from the repository root, as root)
#
# BUILD_DIR holds cli/scalescope and collect/libscalescope-collector.so. Writes
# OUT_DIR/two_node_check.txt, OUT_DIR/analyze.txt, OUT_DIR/analyze.json and the
# per-node logs. Exit 0 when every check passes. About 1-2 min on 2xH200.
# Status: not yet run on a machine with 2 GPUs, so no figure from it exists.
set -uo pipefail
build=${1:?usage: run_two_node_gpu.sh BUILD_DIR OUT_DIR}
out=${2:?usage: run_two_node_gpu.sh BUILD_DIR OUT_DIR}
ss="$build/cli/scalescope"
python="${PYTHON:-python3}"
[ -x "$ss" ] || { echo "run_two_node_gpu.sh: $ss not found or not executable" >&2; exit 1; }
unshare --uts true || { echo "run_two_node_gpu.sh: unshare --uts refused (needs root)" >&2; exit 1; }
mkdir -p "$out"
rm -rf "$out/job.ssrun"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
job="workloads/image_ddp.py --synthetic --image-size 224 --batch-size 64 --steps 30 --warmup-steps 5 --log-every 0"
offset_ns=5000000

# node NODE_ID HOSTNAME GPU CLOCK_OFFSET_NS (killed after 15 min: a NCCL job
# whose peers never meet would otherwise wait forever)
node() {
  timeout --kill-after=30 900 unshare --uts bash -c "hostname $2 && exec env CUDA_VISIBLE_DEVICES=$3 SLURM_NODEID=$1 SLURM_NNODES=2 \
      SLURM_JOB_NODELIST='gpunode[01-02]' SCALESCOPE_TEST_CLOCK_OFFSET_NS=$4 \
      $ss profile -o $out/job.ssrun -- torchrun --nnodes=2 --node_rank=$1 --nproc_per_node=1 \
      --master_addr=127.0.0.1 --master_port=29517 $job" >"$out/node$1.log" 2>&1
}
node 0 gpunode01 0 0 &
a=$!
node 1 gpunode02 1 "$offset_ns" &
b=$!
wait "$a"; rc_a=$?
wait "$b"; rc_b=$?
ls -la "$out/job.ssrun" >"$out/files.txt" 2>&1
"$ss" analyze "$out/job.ssrun" >"$out/analyze.txt" 2>&1
"$ss" analyze "$out/job.ssrun" --json >"$out/analyze.json" 2>"$out/analyze.err"

"$python" - "$out" "$rc_a" "$rc_b" "$offset_ns" <<'EOF' | tee "$out/two_node_check.txt"
import json, os, sys
out, rc_a, rc_b, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
checks = []
def check(name, ok, detail=""):
    checks.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}")
check("both nodes' jobs exit 0", rc_a == 0 and rc_b == 0, f"({rc_a}, {rc_b})")
files = os.listdir(os.path.join(out, "job.ssrun")) if os.path.isdir(os.path.join(out, "job.ssrun")) else []
for host in ("gpunode01", "gpunode02"):
    check(f"{host}: traces", any(f.startswith(host + "-") and f.endswith(".sstrace") for f in files))
    check(f"{host}: node facts", f"node-{host}.json" in files)
    check(f"{host}: run-{host}.json", f"run-{host}.json" in files)
try:
    a = json.load(open(os.path.join(out, "analyze.json")))["analysis"]
except Exception as e:
    check("analyze --json", False, str(e)); a = None
if a:
    hosts = {h["hostname"]: h for h in a["clocks"]["hosts"]}
    h = hosts.get("gpunode02", {})
    check("gpunode01 is the reference", hosts.get("gpunode01", {}).get("status") == "reference")
    check("gpunode02 aligned", h.get("status") == "aligned", json.dumps(h))
    check("offset within 50 us of 5 ms", abs(h.get("offset_ns", 0) - offset) <= 50000, f"{h.get('offset_ns')} ns")
    st = a["stragglers"]
    check("stragglers available", st["availability"]["available"], st["availability"].get("reason", ""))
    check("two nodes", len(a["nodes"]["nodes"]) == 2 and not a["nodes"]["missing_nodes"], json.dumps(a["nodes"]["missing_nodes"]))
    check("an inter-node communicator", a["nodes"]["inter_node_collectives"] > 0)
print("ALL PASS" if all(checks) else f"{checks.count(False)} FAILED")
sys.exit(0 if all(checks) else 1)
EOF
