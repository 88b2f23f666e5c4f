// The typed JSON of runs, scores, an ingest, predictions and a validation:
// `mlperf ingest|scores|analyze --predict|validate --format json`, the C
// library's and Python's.

#include <string>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/json_fields.hpp"
#include "mlperf/mlperf.hpp"
#include "mlperf/run_fields.hpp"

namespace scalescope::mlperf {
void to_json(nlohmann::json& j, const Run& r) {
  j = nlohmann::json::object();
  for (const RunField& f : run_fields())
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string_view>) j[f.name] = std::string(v);
          else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) j[f.name] = v;
          else j[f.name] = or_null(v);
        },
        f.value(r));
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

void to_json(nlohmann::json& j, const CurveSize& s) {
  j = json_with(SCALESCOPE_JSON_FIELDS(s, accelerators, minutes, system, submitter),
                {{"global_batch_size", or_null(s.global_batch_size)}, {"progress", or_null(s.progress)}});
}

void to_json(nlohmann::json& j, const ScalingCurve& c) {
  j = json_with(SCALESCOPE_JSON_FIELDS(c, benchmark, accelerator, division, sizes), {{"name", c.name()}});
}

void to_json(nlohmann::json& j, const CurveForecast& f) {
  nlohmann::json measured = nlohmann::json::array();
  for (const auto& m : f.measured) measured.push_back(or_null(m));
  j = {{"curve", f.curve}, {"fitted", f.fitted}, {"fit", f.fit}, {"measured", std::move(measured)}};
}

void to_json(nlohmann::json& j, const RoundValidation& v) {
  j = SCALESCOPE_JSON_FIELDS(v, validation, calibration, fit_rounds, test_rounds);
}

}  // namespace scalescope::mlperf
