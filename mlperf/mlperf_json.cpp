// The typed JSON of runs, scores, an ingest, predictions and a validation:
// `mlperf ingest|scores|analyze --predict|validate --format json`, the C
// library's and Python's.

#include <string>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "mlperf/mlperf.hpp"
#include "mlperf/run_fields.hpp"

namespace scalescope::mlperf {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

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

void to_json(nlohmann::json& j, const CurveSize& s) {
  j = {{"accelerators", s.accelerators},
       {"minutes", s.minutes},
       {"system", s.system},
       {"submitter", s.submitter},
       {"global_batch_size", or_null(s.global_batch_size)},
       {"progress", or_null(s.progress)}};
}

void to_json(nlohmann::json& j, const ScalingCurve& c) {
  j = {{"name", c.name()},
       {"benchmark", c.benchmark},
       {"accelerator", c.accelerator},
       {"division", c.division},
       {"sizes", c.sizes}};
}

void to_json(nlohmann::json& j, const CurveForecast& f) {
  nlohmann::json measured = nlohmann::json::array();
  for (const auto& m : f.measured) measured.push_back(or_null(m));
  j = {{"curve", f.curve}, {"fitted", f.fitted}, {"fit", f.fit}, {"measured", std::move(measured)}};
}

void to_json(nlohmann::json& j, const RoundValidation& v) {
  j = {{"validation", v.validation},
       {"calibration", v.calibration},
       {"fit_rounds", v.fit_rounds},
       {"test_rounds", v.test_rounds}};
}

}  // namespace scalescope::mlperf
