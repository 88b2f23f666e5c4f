#!/usr/bin/env bash
# Real sweep of the DDP image workload (workloads/image_ddp.py, synthetic data)
# on an H200 machine: 1 and 2 GPUs, 3 repetitions, torchrun launcher, metric =
# throughput from the workload's result line. The sweep is stopped with SIGTERM
# part way and continued with --resume, so the real interrupt/resume path is
# exercised too. Then `scalescope scaling` (table and JSON), and, when the
# profile command is built, a small profiled sweep (--profile --metric trace).
#
# Usage: bench/sweep_gpu/run.sh BUILD_DIR OUT_DIR      (about 3-5 minutes)
# OUT_DIR gets: checks.txt (PASS/FAIL lines), sweep.db, scaling.txt,
# scaling.json, sweep-stderr.txt, logs.tar.gz (every run's log), and for the
# profiled part profile.db, profile-scaling.txt, profile-scaling-weak.json
# (weak-scaling detection and per-image E'). Exit status 0 when every
# check passed.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ $# -eq 2 ] || { echo "usage: bench/sweep_gpu/run.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)" || exit 2
mkdir -p "$2" || exit 2
out="$(cd "$2" && pwd)"
ss="$build/cli/scalescope"
[ -x "$ss" ] || { echo "$ss: not built" >&2; exit 2; }
start=$SECONDS
checks="$out/checks.txt"
: >"$checks"
pass=0 fail=0
q() {  # q DB SQL: prints rows tab-separated (python's sqlite3: no sqlite3 CLI needed)
  python3 -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print("\t".join("" if v is None else str(v) for v in row))' "$1" "$2"
}
check() {  # check NAME CONDITION-STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1 $3" | tee -a "$checks"; pass=$((pass + 1))
  else echo "FAIL $1 $3" | tee -a "$checks"; fail=$((fail + 1)); fi
}
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
[ "${ngpu:-0}" -ge 2 ] || { echo "need 2 GPUs, nvidia-smi lists ${ngpu:-0}" | tee -a "$checks"; exit 1; }
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv; "$ss" --version; } >"$out/env.txt" 2>&1

db="$out/sweep.db"
rm -rf "$db" "$db.runs"
args=(sweep --gpus 1,2 --repeat 3 --launcher torchrun --timeout 120s --kill-grace 15s
      --metric 'regex:throughput_images_per_s=([0-9.eE+-]+)' --metric-better higher -o "$db")
job=(workloads/image_ddp.py --synthetic --image-size 224 --batch-size 128 --steps 40 --warmup-steps 10
     --log-every 0 --seed "{rep}")
cd "$repo"
# 1) Interrupted after ~35 s (SIGTERM to scalescope), 2) resumed to the end.
timeout --signal=TERM --kill-after=60 35 "$ss" "${args[@]}" -- "${job[@]}" 2>"$out/sweep-stderr.txt"
rc1=$?
"$ss" "${args[@]}" --resume -- "${job[@]}" 2>>"$out/sweep-stderr.txt"
rc2=$?
check sweep_interrupted "$([ "$rc1" -ne 0 ] && echo 0 || echo 1)" "first invocation exit status $rc1 (expected non-zero: stopped by SIGTERM)"
check sweep_resumed "$rc2" "resume exit status $rc2"
ok_runs="$(q "$db" "SELECT count(*) FROM runs WHERE status='ok' AND metric IS NOT NULL" 2>/dev/null || echo 0)"
all_runs="$(q "$db" "SELECT count(*) FROM runs" 2>/dev/null || echo 0)"
check all_runs_ok "$([ "$ok_runs" = 6 ] && [ "$all_runs" = 6 ] && echo 0 || echo 1)" "$ok_runs of $all_runs runs ok with a metric (6 planned)"
q "$db" "SELECT plan_index, gpus, rep, status, exit_code, round(wall_s,2) AS wall_s, metric, note FROM runs ORDER BY plan_index" >"$out/runs.txt" 2>&1
"$ss" scaling "$db" --predict 4,8 >"$out/scaling.txt" 2>&1
check scaling_table $? "scalescope scaling exit status"
"$ss" scaling "$db" --predict 4,8 --format json >"$out/scaling.json" 2>&1
eff="$(python3 - "$out/scaling.json" <<'PY'
import json, sys
study = json.load(open(sys.argv[1]))["scaling"]  # the typed study of `scaling --format json`
rows = study["configs"][0]["scaling"]["rows"]
print([r for r in rows if r["gpus"] == 2][0]["efficiency"])
PY
)"
check efficiency_plausible "$(python3 -c "import sys; e=float('${eff:-nan}'); sys.exit(0 if 0.3 < e < 1.3 else 1)" && echo 0 || echo 1)" "E'(2) = ${eff:-missing}"
left="$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | wc -l)"
check no_leftover_processes "$([ "$left" -eq 0 ] && echo 0 || echo 1)" "$left GPU processes left after the sweep"

# Optional: profiled sweep (needs the profile command and the collector).
if "$ss" profile --help >/dev/null 2>&1 && [ $((SECONDS - start)) -lt 200 ]; then
  pdb="$out/profile.db"
  rm -rf "$pdb" "$pdb.runs"
  "$ss" sweep --gpus 1,2 --repeat 2 --launcher torchrun --profile --metric trace --timeout 120s -o "$pdb" -- \
    workloads/image_ddp.py --synthetic --image-size 224 --batch-size 128 --steps 30 --warmup-steps 10 \
    --log-every 0 --seed "{rep}" 2>"$out/profile-stderr.txt"
  check profiled_sweep $? "profiled sweep exit status"
  "$ss" scaling "$pdb" --predict 4,8 >"$out/profile-scaling.txt" 2>&1
  check profiled_scaling $? "scaling of the iteration time from traces"
  # The job keeps 128 images per GPU per step (weak scaling): the traces' compute
  # per iteration should say so, and per-image E'(2) should be near the throughput E'.
  grep -q "WARNING: weak scaling" "$out/profile-scaling.txt"
  check weak_scaling_detected $? "$(grep -o "compute per iteration in the traces: [^)]*)" "$out/profile-scaling.txt" | head -1)"
  "$ss" scaling "$pdb" --samples-per-gpu-step 128 --format json >"$out/profile-scaling-weak.json" 2>&1
  weff="$(python3 - "$out/profile-scaling-weak.json" <<'PY'
import json, sys
study = json.load(open(sys.argv[1]))["scaling"]  # the typed study of `scaling --format json`
rows = study["configs"][0]["scaling"]["rows"]
print([r for r in rows if r["gpus"] == 2][0]["efficiency"])
PY
)"
  check weak_efficiency_near_throughput "$(python3 -c "import sys; w=float('${weff:-nan}'); e=float('${eff:-nan}'); sys.exit(0 if abs(w-e) < 0.2 else 1)" && echo 0 || echo 1)" "E'(2) per image from iteration time ${weff:-missing} vs from throughput ${eff:-missing}"
  q "$pdb" "SELECT plan_index, gpus, status, metric, metrics_json, note FROM runs" >"$out/profile-runs.txt" 2>&1
else
  echo "SKIP profiled_sweep (profile command not built, or no time left)" | tee -a "$checks"
fi
(cd "$out" && find . -path './*.db.runs/*' -name log.txt -print0 | tar -czf logs.tar.gz --null -T -)
echo "done in $((SECONDS - start)) s: $pass passed, $fail failed" | tee -a "$checks"
[ "$fail" -eq 0 ]
