// The typed JSON of runs, scores and an ingest: `mlperf ingest|scores
// --format json`, the C library's and Python's.

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "mlperf/mlperf.hpp"

namespace scalescope::mlperf {
void to_json(nlohmann::json& j, const Run& r) {
  // In the order of runs_csv_columns().
  const std::vector<nlohmann::json> values = {r.submitter,
                                              r.system,
                                              r.system_name,
                                              r.benchmark,
                                              r.benchmark_folder,
                                              r.division,
                                              r.accelerator,
                                              r.nodes,
                                              r.accelerators_per_node,
                                              r.accelerators,
                                              r.framework,
                                              or_null(r.global_batch_size),
                                              or_null(r.run_start_ms),
                                              or_null(r.run_stop_ms),
                                              r.status,
                                              or_null(r.minutes),
                                              r.converged,
                                              or_null(r.scaling_factor),
                                              r.malformed_lines,
                                              r.log_path,
                                              r.problem,
                                              or_null(r.progress_at_stop)};
  const std::vector<std::string>& columns = runs_csv_columns();
  if (columns.size() != values.size())
    fail("mlperf: a run has {} fields for {} columns of the runs table", values.size(), columns.size());
  j = nlohmann::json::object();
  for (size_t i = 0; i < columns.size(); ++i) j[columns[i]] = values[i];
}

void to_json(nlohmann::json& j, const Score& s) {
  j = json_with(SCALESCOPE_JSON_FIELDS(s, submitter, system, benchmark, division, accelerator, accelerators, runs,
                                       converged, required, reason),
                {{"folder", s.benchmark_folder},
                 {"scaling_factor", or_null(s.scaling_factor)},
                 {"minutes", or_null(s.minutes)},
                 {"unscaled_minutes", or_null(s.unscaled_minutes)}});
}

void to_json(nlohmann::json& j, const IngestResult& result) {
  j = json_with(SCALESCOPE_JSON_FIELDS(result, runs, logs, bytes, mllog_lines, malformed_lines, overlong_lines,
                                       ignored_files, notes),
                {{"scores", score_folders(result.runs, result.folders)}, {"folders", result.folders.size()}});
}

}  // namespace scalescope::mlperf
