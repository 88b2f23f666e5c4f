#!/usr/bin/env bash
# The profiler's cost in the image study (docs/study.md, "Control"): the
# unprofiled control runs (control.db: tuned ref and fp64, 1 GPU) against the
# same configurations' profiled runs (image-tuned.db), compared by
# `scalescope scaling --compare profiled=no,yes`. Both files stay as they
# are: the runs are copied into a temporary results file, each tagged with a
# `profiled` key (yes for image-tuned's runs, no for the control's).
#
#   bench/study/profiling_cost.sh SCALESCOPE EXAMPLES_DIR   (e.g. build/cli/scalescope examples/h200)
set -euo pipefail
ss="${1:?usage: profiling_cost.sh SCALESCOPE EXAMPLES_DIR}"
dir="${2:?usage: profiling_cost.sh SCALESCOPE EXAMPLES_DIR}"
for f in "$dir/image-tuned.db" "$dir/control.db"; do
  [ -f "$f" ] || { echo "profiling_cost.sh: $f: no such results file" >&2; exit 1; }
done
command -v sqlite3 > /dev/null || { echo "profiling_cost.sh: needs the sqlite3 command" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/scalescope-profiling-cost.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp "$dir/image-tuned.db" "$work/both.db"
sqlite3 "$work/both.db" <<SQL
UPDATE runs SET config_json = json_set(config_json, '\$.profiled', 'yes');
ATTACH '$dir/control.db' AS control;
INSERT INTO runs (sweep_id, plan_index, config_json, gpus, nodes, rep, status, exit_code, signal, start_unix,
                  end_unix, wall_s, metric, metrics_json, command_json, run_dir, log_path, trace_path, note)
SELECT (SELECT id FROM main.sweeps ORDER BY id LIMIT 1), 100000 + plan_index,
       json_set(config_json, '\$.profiled', 'no'), gpus, nodes, rep, status, exit_code, signal, start_unix,
       end_unix, wall_s, metric, metrics_json, command_json, run_dir, log_path, NULL, 'unprofiled control'
FROM control.runs;
SQL
"$ss" scaling "$work/both.db" --compare profiled=no,yes | sed -n '/^Configurations compared/,$p'
