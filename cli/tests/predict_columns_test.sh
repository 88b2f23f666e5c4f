#!/usr/bin/env bash
# `mlperf analyze --predict` and `scaling --predict` say, in every format, the
# batch each prediction assumes and where it came from, the interval, and
# whether the prediction is inside the validated range (a row beyond it says
# why). Table and CSV carry them as columns of the same rows, JSON as the typed fields.
# Usage: predict_columns_test.sh SCALESCOPE SOURCE_DIR
set -uo pipefail
ss="${1:?usage: predict_columns_test.sh SCALESCOPE SOURCE_DIR}"
src="${2:?usage: predict_columns_test.sh SCALESCOPE SOURCE_DIR}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
export NO_COLOR=1

# Typed JSON of `mlperf analyze --predict`: the prediction at GPUS has BATCH, BASIS, LOW < TIME < HIGH,
# VALIDATED ("yes": validated; else the start of the warning) and, beside it, the measured size or null.
typed_mlperf_prediction() {  # FILE GPUS BATCH BASIS VALIDATED
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
path, gpus, batch, basis, validated = sys.argv[1:]
doc = json.load(open(path))
assert doc["command"] == "mlperf analyze" and "tables" not in doc, sorted(doc)
found = [(p, m) for f in doc["predictions"] for p, m in zip(f["fit"]["predictions"], f["measured"])
         if p["gpus"] == int(gpus)]
assert found, f"no prediction at {gpus}"
p, m = found[0]
assert abs(p["global_batch"] - float(batch)) < 1e-6 * float(batch), p
assert p["batch_basis"] == basis, p
assert p["low"] < p["time"] < p["high"], p
assert m is None or (m["accelerators"] == int(gpus) and m["minutes"] > 0), m
if validated == "yes":
    assert p["validated"] and not p["outside_validated"], p
else:
    assert not p["validated"] and p["outside_validated"].startswith(validated), p
EOF
}
# Typed JSON of `scaling`: the prediction at GPUS has BATCH, BASIS, LOW < TIME < HIGH, and
# VALIDATED ("yes": validated; else the start of the warning).
typed_prediction() {  # FILE GPUS BATCH BASIS VALIDATED
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
path, gpus, batch, basis, validated = sys.argv[1:]
study = json.load(open(path))["scaling"]
preds = [p for c in study["configs"] for fit in c["predictions"] for p in fit["predictions"] if p["gpus"] == int(gpus)]
assert preds, f"no prediction at {gpus}"
p = preds[0]
assert abs(p["global_batch"] - float(batch)) < 1e-6 * float(batch), p
assert p["batch_basis"] == basis, p
assert p["low"] < p["time"] < p["high"], p
if validated == "yes":
    assert p["validated"] and not p["outside_validated"], p
else:
    assert not p["validated"] and p["outside_validated"].startswith(validated), p
EOF
}
# CSV: the row at GPUS of the section holding COLUMN has the same facts, by column name.
csv_row() {  # FILE COUNT_COL GPUS BATCH_COL BATCH BASIS VALIDATED
  /usr/bin/python3 - "$@" <<'EOF'
import csv, io, sys
path, count, gpus, batch_col, batch, basis, validated = sys.argv[1:]
sections = open(path).read().split("\n\n")
section = next(s for s in sections if batch_col in s.split("\n")[1 if s.startswith("#") else 0])
lines = [l for l in section.split("\n") if l and not l.startswith("#")]
rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines))) if r[count] == gpus and r["batch_basis"]]
assert rows, f"no row at {gpus} with a batch"
r = rows[0]
assert abs(float(r[batch_col]) - float(batch)) < 1e-6 * float(batch), r
assert r["batch_basis"] == basis, r
assert float(r["low"]) < float(r["high"]), r
assert r["validated_range"].startswith(validated), r
EOF
}
# Table: the header names the columns and the row at GPUS shows the batch basis and the warning.
table_has() {  # FILE GPUS BASIS VALIDATED COLUMNS...
  local file="$1" gpus="$2" basis="$3" validated="$4"; shift 4
  for c in "$@"; do grep -qw -- "$c" "$file" || { echo "no column $c"; return 1; }; done
  grep -E "^\S.* $gpus +" "$file" | grep -F -- "$basis" | grep -qF -- "$validated"
}

mlperf=(mlperf analyze --benchmark bert --accelerator H100-SXM5 --predict 64,8192 --fit-up-to 16 --planned-batch 64:2048)
for f in table csv json; do "$ss" "${mlperf[@]}" --format "$f" >"$tmp/mlperf.$f" 2>"$tmp/err"; done
outside="outside the validated range: "
check "mlperf analyze --predict, json: planned batch, interval, validated" \
  'typed_mlperf_prediction "$tmp/mlperf.json" 64 2048 planned yes'
check "mlperf analyze --predict, json: extrapolated batch, interval, the warning" \
  'typed_mlperf_prediction "$tmp/mlperf.json" 8192 16384 extrapolated "$outside"'
check "mlperf analyze --predict, csv: planned batch, interval, validated" \
  'csv_row "$tmp/mlperf.csv" accelerators 64 global_batch_size 2048 planned yes'
check "mlperf analyze --predict, csv: extrapolated batch, interval, the warning" \
  'csv_row "$tmp/mlperf.csv" accelerators 8192 global_batch_size 16384 extrapolated "$outside"'
check "mlperf analyze --predict, table: the columns, the basis and the warning" \
  'table_has "$tmp/mlperf.table" 8192 extrapolated "$outside" global_batch_size batch_basis low high validated_range'

db="$src/examples/h200/image-base.db"
scaling=(scaling "$db" --predict 16,4096 --global-batch-grows --planned-batch 16:8)
for f in table csv json; do "$ss" "${scaling[@]}" --format "$f" >"$tmp/scaling.$f" 2>"$tmp/err"; done
check "scaling --predict, json: planned batch, interval, validated" \
  'typed_prediction "$tmp/scaling.json" 16 8 planned yes'
check "scaling --predict, json: extrapolated batch, interval, the warning" \
  'typed_prediction "$tmp/scaling.json" 4096 4096 extrapolated "$outside"'
check "scaling --predict, csv: planned batch, interval, validated" \
  'csv_row "$tmp/scaling.csv" gpus 16 global_batch 8 planned yes'
check "scaling --predict, csv: extrapolated batch, interval, the warning" \
  'csv_row "$tmp/scaling.csv" gpus 4096 global_batch 4096 extrapolated "$outside"'
check "scaling --predict, table: the columns, the basis and the warning" \
  'table_has "$tmp/scaling.table" 4096 extrapolated "$outside" global_batch batch_basis low high validated_range'

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
