#!/usr/bin/env bash
# `--format json` of topo, import and diff: the typed result in the one
# envelope (schema_version, command), numbers as numbers, fields named, no
# list of titled tables; CSV stays tables. Usage: typed_json_test.sh SCALESCOPE SOURCE_DIR
set -uo pipefail
ss="${1:?usage: typed_json_test.sh SCALESCOPE SOURCE_DIR}" src="${2:?}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
py() { python3 -c "$1" "${@:2}"; }

# topo on a captured /sys: two nodes, one GPU on node 1.
mkdir -p sys/devices/system/node/node0 sys/devices/system/node/node1 sys/bus/pci/devices/0000:19:00.0
echo 0-1 >sys/devices/system/node/node0/cpulist
echo 2-3 >sys/devices/system/node/node1/cpulist
(cd sys/bus/pci/devices/0000:19:00.0 && echo 0x10de >vendor && echo 0x030200 >class && echo 0x2335 >device &&
  echo 1 >numa_node)
"$ss" topo --sys-root sys --format json >topo.json 2>err.txt
check "topo --format json exits 0" '[ $? -eq 0 ]'
check "topo --format json: the typed host" 'py "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"schema_version\"] == 3 and d[\"command\"] == \"topo\" and \"tables\" not in d, d
assert [n[\"cpus\"] for n in d[\"numa_nodes\"]] == [[0, 1], [2, 3]], d
assert d[\"gpus\"] == [{\"pci_bus_id\": \"0000:19:00.0\", \"pci_device_id\": 0x2335, \"numa_node\": 1,
                       \"numa_node_cpus\": [2, 3]}], d
assert d[\"numa_nodes\"][1][\"gpus\"] == 1 and all(isinstance(c, int) for c in d[\"cpus_allowed\"]), d
" topo.json'
"$ss" topo --sys-root sys --format csv >topo.csv
check "topo --format csv: still the tables" 'grep -q "^# nvidia_gpus: NVIDIA GPUs (PCI)" topo.csv && grep -q "^0000:19:00.0,0x2335,1,2-3$" topo.csv'

# import of one Kineto file, then of a folder of two ranks.
one="$src/tests/fuzz/kineto_importer/one_kernel.json"
"$ss" import "$one" -o one.sstrace --format json >import.json 2>err.txt
check "import --format json exits 0" '[ $? -eq 0 ] && [ -s one.sstrace ]'
check "import --format json: the import report and the trace" 'py "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"schema_version\"] == 3 and d[\"command\"] == \"import\" and \"tables\" not in d, d
assert d[\"output\"] == \"one.sstrace\" and d[\"run_directory\"] is False and d[\"traces_written\"] == 1, d
assert d[\"nsys\"] == [] and len(d[\"kineto\"]) == 1, d
k = d[\"kineto\"][0]
assert k[\"report\"][\"input\"].endswith(\"one_kernel.json\") and k[\"report\"][\"events\"] > 0, k
assert {\"cat\": \"kernel\", \"ph\": \"X\", \"events\": 1, \"mapped_to\": \"kernels (+nccl)\"} in k[\"report\"][\"categories\"], k
assert k[\"trace\"][\"rank\"] == 0 and k[\"trace\"][\"world_size\"] == 1 and k[\"trace\"][\"devices\"] == 1, k
assert k[\"trace\"][\"rows\"][\"kernels\"] == 1 and k[\"trace\"][\"rows\"][\"memcpy\"] == 1, k
" import.json'
mkdir ranks
for r in 0 1; do sed "s/\"rank\": 0/\"rank\": $r/" "$one" >"ranks/r$r.json"; done
"$ss" import ranks -o ranks.ssrun --format json >import_dir.json 2>err.txt
check "import of a folder --format json: a run directory of two traces" 'py "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"run_directory\"] is True and d[\"traces_written\"] == 2 and d[\"output\"] == \"ranks.ssrun\", d
assert [k[\"trace\"][\"rank\"] for k in d[\"kineto\"]] == [0, 1], d
" import_dir.json'
if command -v sqlite3 >/dev/null; then
  sqlite3 multi.sqlite ".read $src/trace/testdata/nsys/multi_process.sql"
  "$ss" import multi.sqlite -o multi.ssrun --format json >nsys.json 2>err.txt
  check "import of an nsys export --format json: its report and one trace per process" 'py "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"kineto\"] == [] and len(d[\"nsys\"]) == 1, d
n = d[\"nsys\"][0]
assert len(n[\"traces\"]) == len(n[\"report\"][\"processes\"]) == d[\"traces_written\"] >= 2, d
assert all(isinstance(t[\"rows\"][\"kernels\"], int) for t in n[\"traces\"]), n
assert any(t[\"kept\"] is None for t in n[\"report\"][\"tables\"]) and n[\"report\"][\"runtime_calls\"] >= 0, n
" nsys.json'
else
  echo "skip import of an nsys export: no sqlite3 shell"
fi

# diff: --format json is --json (the typed diff), CSV the tables.
a="$src/examples/h200/image-base/traces/0009-g1-arm_base-variant_ref-r0.ssrun"
b="$src/examples/h200/image-base/traces/0010-g2-arm_base-variant_ref-r0.ssrun"
if [ -d "$a" ] && [ -d "$b" ]; then
  "$ss" diff "$a" "$b" --top 5 --format json >diff_format.json 2>err.txt
  check "diff --format json exits 0" '[ $? -eq 0 ]'
  "$ss" diff "$a" "$b" --top 5 --json >diff_json.json 2>err.txt
  check "diff --format json is diff --json" 'cmp -s diff_format.json diff_json.json'
  check "diff --format json: the typed diff" 'py "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"schema_version\"] == 3 and d[\"command\"] == \"diff\" and \"tables\" not in d, d
assert isinstance(d[\"diff\"][\"breakdown\"][0][\"delta\"], (int, float)), d[\"diff\"][\"breakdown\"][0]
" diff_format.json'
else
  echo "skip diff: the study runs are not here"
fi

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
