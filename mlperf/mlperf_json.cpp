// The typed JSON of runs, scores and an ingest: `mlperf ingest|scores
// --format json`, the C library's and Python's.

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "mlperf/mlperf.hpp"

namespace scalescope::mlperf {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

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
  j = {{"submitter", s.submitter},
       {"system", s.system},
       {"benchmark", s.benchmark},
       {"folder", s.benchmark_folder},
       {"division", s.division},
       {"accelerator", s.accelerator},
       {"accelerators", s.accelerators},
       {"runs", s.runs},
       {"converged", s.converged},
       {"required", s.required},
       {"scaling_factor", or_null(s.scaling_factor)},
       {"minutes", or_null(s.minutes)},
       {"unscaled_minutes", or_null(s.unscaled_minutes)},
       {"reason", s.reason}};
}

void to_json(nlohmann::json& j, const IngestResult& result) {
  j = {{"runs", result.runs},
       {"scores", score_folders(result.runs, result.folders)},
       {"logs", result.logs},
       {"bytes", result.bytes},
       {"folders", result.folders.size()},
       {"mllog_lines", result.mllog_lines},
       {"malformed_lines", result.malformed_lines},
       {"overlong_lines", result.overlong_lines},
       {"ignored_files", result.ignored_files},
       {"notes", result.notes}};
}

}  // namespace scalescope::mlperf
