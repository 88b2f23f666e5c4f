#!/usr/bin/env bash
# Native stacks on a PyTorch process, what their exit costs: the DataLoader configuration of the study, 1 GPU, profiled with
# stacks (default) and without (SCALESCOPE_HOST_STACKS=0), alternated, 2 rounds;
# wall time of each profile, the symbolization CPU the collector reports, and
# whether analyze names the top functions.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
c="$(cd "${CARRY:-.devcarry}" && pwd)"; out="$OUT"
export LD_LIBRARY_PATH="$c/lib"
export SCALESCOPE_COLLECTOR="$c/libscalescope-collector.so"
ss() { /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$c/scalescope" "$@"; }
work=/tmp/stacks-exit-cost; rm -rf "$work"; mkdir -p "$work"
for r in 1 2; do
  for mode in stacks procfs; do
    env_extra=""; [ $mode = procfs ] && env_extra="SCALESCOPE_HOST_STACKS=0"
    t0=$(date +%s.%N)
    env $env_extra timeout 200 /lib64/ld-linux-x86-64.so.2 --library-path "$c/lib" "$c/scalescope" profile -o "$work/$mode-$r" --nvml-hz 10 -- \
      python3 -m torch.distributed.run --standalone --nproc_per_node=1 workloads/image_ddp.py \
      --data-dir "$c/fashion-mnist" --image-size 224 --batch-size 128 --steps 30 --warmup-steps 10 --log-every 0 \
      --precision fp16 --pin-memory on --channels-last on --workers 4 --loader cpu > "$out/$mode-$r.log" 2>&1
    rc=$?; t1=$(date +%s.%N)
    echo "$mode round $r rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,2))")" >> "$out/summary.txt"
  done
done
for d in "$work"/stacks-1.ssrun "$work"/procfs-1.ssrun; do
  ss stats "$d" > "$out/$(basename $d).stats.txt" 2>&1
  ss analyze "$d" --json > "$out/$(basename $d).analyze.json" 2>&1
  ss analyze "$d" > "$out/$(basename $d).analyze.txt" 2>&1
done
grep -ho '"host_stack[a-z_]*": *"[^"]*"' -r "$work" | sort | uniq -c | head -20 >> "$out/summary.txt"
python3 - "$work" >> "$out/summary.txt" 2>&1 <<'PY'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.ssrun/*.json")):
    try: j = json.load(open(p))
    except Exception: continue
    def find(o, k):
        if isinstance(o, dict):
            for a, b in o.items():
                if a == k: yield b
                yield from find(b, k)
        elif isinstance(o, list):
            for b in o: yield from find(b, k)
    for k in ("host_stack_symbolize_cpu_ns", "host_stack_sampling"):
        for v in find(j, k): print(p.parent.name, p.name, k, v)
PY
for f in "$work"/stacks-*.ssrun/*.sstrace; do
  ss export --format sqlite -o "$work/x.sqlite" "$f" > /dev/null 2>&1 || continue
  python3 - "$work/x.sqlite" "$f" >> "$out/summary.txt" 2>&1 <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (t,) in db.execute("select name from sqlite_master where type='table'"):
    cols = [r[1] for r in db.execute(f"pragma table_info({t})")]
    for row in db.execute(f"select * from {t}"):
        text = " ".join(map(str, row))
        if "symbolize" in text or "host_stack_sampling" in text:
            print(sys.argv[2].split("/")[-1], t, text[:200])
PY
  rm -f "$work/x.sqlite"
done
cat "$out/summary.txt"
grep -A12 -i "host_stacks\|top functions" "$out/stacks-1.ssrun.analyze.txt" | head -40
