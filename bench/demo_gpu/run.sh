#!/usr/bin/env bash
# `scalescope demo --gpu` on a GPU machine: a short real sweep of
# workloads/image_ddp.py --synthetic over 1..N GPUs (powers of two and N),
# 2 repetitions, each run profiled, then scaling, the advisor and the HTML
# report. Checks the exit status, the printed findings (speedup, E', advisor
# findings, the report's path), the sweep database (every run ok with its
# metric and a trace), the report (size, its data: the sweep's section, one
# run section per traced run, advisor findings) and that a second call reuses
# the finished sweep instead of running it again.
#
# Usage: bench/demo_gpu/run.sh BUILD_DIR OUT_DIR [MAX_GPUS]
#   BUILD_DIR: a release build with cli/scalescope and collect/libscalescope-collector.so
#   Run from anywhere; the demo finds workloads/image_ddp.py above the binary
#   (BUILD_DIR inside the checkout, e.g. .devcarry/build) or via --workload.
# Expected: about 2-3 minutes on 2x H200 (4 profiled runs of ~20-40 s each).
# OUT_DIR gets checks.txt (PASS/FAIL lines), demo-stdout.txt, demo-stderr.txt,
# demo/ (report.html, gpu-sweep.db, torch-check.log), logs.tar.gz (run logs),
# rerun-stdout.txt. Exit 0 when every check passed.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ $# -ge 2 ] || { echo "usage: bench/demo_gpu/run.sh BUILD_DIR OUT_DIR [MAX_GPUS]" >&2; exit 2; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)" || exit 2
mkdir -p "$2" || exit 2
out="$(cd "$2" && pwd)"
max_gpus="${3:-0}"
ss="$build/cli/scalescope"
[ -x "$ss" ] || { echo "$ss: not built" >&2; exit 2; }
checks="$out/checks.txt"
: >"$checks"
pass=0 fail=0
check() {  # check NAME STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1 $3" | tee -a "$checks"; pass=$((pass + 1))
  else echo "FAIL $1 $3" | tee -a "$checks"; fail=$((fail + 1)); fi
}
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
[ "${ngpu:-0}" -ge 1 ] || { echo "FAIL no_gpu nvidia-smi lists no GPU" | tee -a "$checks"; exit 1; }
n="$ngpu"; [ "$max_gpus" -gt 0 ] && [ "$max_gpus" -lt "$n" ] && n="$max_gpus"
runs_expected=0
for g in 1 2 4 8 16 32 64; do [ "$g" -le "$n" ] && runs_expected=$((runs_expected + 2)); done
case "$n" in 1|2|4|8|16|32|64) ;; *) runs_expected=$((runs_expected + 2)) ;; esac
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv; "$ss" --version; } >"$out/env.txt" 2>&1

demo="$out/demo"
rm -rf "$demo"
start=$SECONDS
# From the repository root, as a user would run it.
(cd "$repo" && "$ss" demo --gpu --max-gpus "$max_gpus" -o "$demo") >"$out/demo-stdout.txt" 2>"$out/demo-stderr.txt"
rc=$?
took=$((SECONDS - start))
check demo_exit "$rc" "exit status $rc after ${took}s (last stderr line: $(tail -1 "$out/demo-stderr.txt"))"
check demo_time "$([ "$took" -le 360 ] && echo 0 || echo 1)" "${took}s for $runs_expected runs (expected about 120-180 s on 2x H200)"
so="$out/demo-stdout.txt"
check printed_speedup "$( [ "$n" -lt 2 ] || grep -q "speedup [0-9]" "$so"; echo $?)" "$(grep -m1 'speedup' "$so" | sed 's/^ *//')"
check printed_efficiency "$( [ "$n" -lt 2 ] || grep -q "E' [0-9]" "$so"; echo $?)" "E' printed per GPU count"
check printed_findings "$(grep -q '% of step time' "$so"; echo $?)" \
  "$(grep -c '% of step time' "$so") advisor finding line(s), first: $(grep -m1 '% of step time' "$so" | sed 's/^ *//')"
check printed_report_path "$(grep -q "^Report: $demo/report.html" "$so"; echo $?)" "$(grep -m1 '^Report:' "$so")"

report="$demo/report.html"
size="$(stat -c %s "$report" 2>/dev/null || echo 0)"
check report_size "$([ "$size" -gt 1000000 ] && [ "$size" -lt 20000000 ] && echo 0 || echo 1)" "$size bytes (1-20 MB expected)"
python3 - "$report" "$demo/gpu-sweep.db" "$runs_expected" >"$out/content.txt" 2>&1 <<'PY'
import json, re, sqlite3, sys, os
report, db, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
html = open(report, encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="scalescope-data">(.*?)</script>', html, re.S)
doc = json.loads(m.group(1)) if m else {"sections": []}
titles = [s["title"] for s in doc["sections"]]
findings = [b for s in doc["sections"] for b in s["blocks"] if b.get("type") == "findings"]
n_findings = sum(len(b["items"]) for b in findings)
charts = [b for s in doc["sections"] for b in s["blocks"] if b.get("type") == "chart"]
empty = [c.get("title") for c in charts if not (c.get("series") or c.get("items") or c.get("boxes") or c.get("points"))]
rows = sqlite3.connect(db).execute("SELECT status, metric, trace_path FROM runs").fetchall()
ok = [r for r in rows if r[0] == "ok" and r[1] is not None]
traced = [r for r in ok if r[2] and os.path.isdir(r[2])]
def line(name, good, detail): print(f"{'PASS' if good else 'FAIL'} {name} {detail}")
line("report_sweep_section", "Sweep: gpu-sweep.db" in titles, f"sections: {titles}")
runs = [t for t in titles if t.startswith("Run:")]
line("report_run_sections", len(runs) >= 1, f"{len(runs)} run section(s): {runs}")
line("report_findings", n_findings >= 1, f"{n_findings} advisor finding(s)")
line("report_charts", len(charts) >= 5 and not empty, f"{len(charts)} charts, without data: {empty}")
line("sweep_runs_ok", len(rows) == expected and len(ok) == expected, f"{len(ok)} of {len(rows)} runs ok with a metric ({expected} planned)")
line("sweep_traced", len(traced) == len(ok) and len(ok) > 0, f"{len(traced)} runs with a trace directory")
PY
while read -r verdict name detail; do
  check "$name" "$([ "$verdict" = PASS ] && echo 0 || echo 1)" "$detail"
done < <(grep -E '^(PASS|FAIL) ' "$out/content.txt")
grep -qE '^(PASS|FAIL) ' "$out/content.txt" || check report_content 1 "$(tail -3 "$out/content.txt")"

# Again: the finished sweep is reused (nothing runs), the report is rewritten.
start=$SECONDS
(cd "$repo" && "$ss" demo --gpu --max-gpus "$max_gpus" -o "$demo") >"$out/rerun-stdout.txt" 2>"$out/rerun-stderr.txt"
rc=$?
took=$((SECONDS - start))
check rerun_reuses_sweep "$([ "$rc" -eq 0 ] && [ "$took" -lt 90 ] && echo 0 || echo 1)" "exit status $rc after ${took}s"
left="$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | wc -l)"
check no_leftover_processes "$([ "$left" -eq 0 ] && echo 0 || echo 1)" "$left GPU processes left"
(cd "$demo" && find . -name log.txt -print0 | tar -czf "$out/logs.tar.gz" --null -T -) 2>/dev/null
rm -rf "$demo"/gpu-sweep.db.runs/*/trace.ssrun  # traces are large; the report holds what was seen
echo "done: $pass passed, $fail failed" | tee -a "$checks"
[ "$fail" -eq 0 ]
