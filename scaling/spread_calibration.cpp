// The prediction interval's spread as data: one tau per model, batch setting
// and extrapolation bucket, with the cases, groups and largest extrapolation
// it was estimated from and the command that fitted it. The embedded default
// is scaling/prediction_calibration.json; `scalescope mlperf validate
// --write-calibration` writes another (docs/scaling.md, "Prediction").

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scaling/scaling.hpp"
#include "scaling/spread_calibration_text.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/json_number.hpp"

namespace scalescope::scaling {

const char* spread_distance_name(SpreadDistance d) {
  return d == SpreadDistance::kLeverage ? "leverage" : "doublings";
}

double spread_distance(SpreadDistance kind, int gpus, const std::vector<int>& fitted) {
  if (fitted.empty()) return 1.0;
  const auto [lo, hi] = std::minmax_element(fitted.begin(), fitted.end());
  if (kind == SpreadDistance::kDoublings) {
    double factor = 1.0;
    if (gpus > *hi) factor = static_cast<double>(gpus) / *hi;
    if (gpus < *lo) factor = static_cast<double>(*lo) / gpus;
    return 1.0 + std::log2(factor);
  }
  std::vector<double> x;
  for (int n : fitted) x.push_back(std::log2(n));
  const double k = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / k;
  double sxx = 0;
  for (double v : x) sxx += (v - mean) * (v - mean);
  const double dx = std::log2(gpus) - mean;
  return std::sqrt(1.0 + 1.0 / k + (sxx > 0 ? dx * dx / sxx : dx * dx));
}

const SpreadRow* SpreadCalibration::find(ModelKind kind, bool batch_planned, double factor) const {
  // Only the default model has a planned setting; the others ignore it.
  const bool planned = kind == ModelKind::kStepConverge && batch_planned;
  const std::string_view bucket = extrapolation_bucket(std::max(factor, 1.0));
  for (const auto& r : rows)
    if (r.kind == kind && r.batch_planned == planned && r.bucket == bucket) return &r;
  return nullptr;
}

bool SpreadCalibration::knows_group(const std::string& group) const {
  for (const auto& r : rows)
    if (std::find(r.groups.begin(), r.groups.end(), group) != r.groups.end()) return true;
  return false;
}

namespace {

ModelKind model_of(const std::string& name, std::string_view source) {
  for (ModelKind k : {ModelKind::kStepConverge, ModelKind::kPowerLaw, ModelKind::kAmdahl, ModelKind::kComputeCommFixed})
    if (name == model_name(k)) return k;
  fail("{}: unknown model '{}'", source, name);
}

BatchRule batch_rule_of(const std::string& name, std::string_view source) {
  for (BatchRule r : kBatchRules)
    if (name == batch_rule_name(r)) return r;
  fail("{}: unknown batch rule '{}'", source, name);
}

}  // namespace

SpreadCalibration read_spread_calibration(std::string_view json_text, std::string_view source) {
  SpreadCalibration c;
  try {
    const auto j = nlohmann::json::parse(json_text);
    c.level = j.at("level").get<double>();
    c.source = j.at("source").get<std::string>();
    const auto distance = j.at("distance").get<std::string>();
    if (distance == "leverage") c.distance = SpreadDistance::kLeverage;
    else if (distance == "doublings") c.distance = SpreadDistance::kDoublings;
    else fail("{}: unknown distance '{}'", source, distance);
    c.pooled = j.at("pooled").get<bool>();
    // A calibration written before the rule was chosen assumed the per-accelerator batch.
    if (j.contains("batch_rule")) c.batch_rule = batch_rule_of(j.at("batch_rule").get<std::string>(), source);
    if (j.contains("batch_rule_backtests"))
      for (const auto& b : j.at("batch_rule_backtests"))
        c.batch_rule_backtests.push_back({batch_rule_of(b.at("rule").get<std::string>(), source),
                                          json_integer_field<size_t>(b, "cases", source), b.at("score").get<double>()});
    for (const auto& r : j.at("rows")) {
      SpreadRow row;
      row.kind = model_of(r.at("model").get<std::string>(), source);
      row.batch_planned = r.at("batch_planned").get<bool>();
      row.bucket = r.at("bucket").get<std::string>();
      row.tau = r.at("tau").get<double>();
      row.cases = json_integer_field<size_t>(r, "cases", source);
      row.max_factor = r.at("max_factor").get<double>();
      row.groups = r.at("groups").get<std::vector<std::string>>();
      if (!(row.tau >= 0) || !std::isfinite(row.tau)) fail("{}: tau {} is not a number >= 0", source, row.tau);
      if (row.bucket != "2x" && row.bucket != "4x" && row.bucket != "8x" && row.bucket != "16x+")
        fail("{}: unknown extrapolation bucket '{}'", source, row.bucket);
      c.rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a prediction calibration: {}", source, e.what());
  }
  if (!(c.level > 0 && c.level < 1)) fail("{}: level {} is not between 0 and 1", source, c.level);
  return c;
}

void to_json(nlohmann::json& j, const SpreadCalibration& c) {
  std::vector<const SpreadRow*> rows;
  for (const auto& r : c.rows) rows.push_back(&r);
  auto bucket_rank = [](const std::string& b) { return b == "2x" ? 0 : b == "4x" ? 1 : b == "8x" ? 2 : 3; };
  std::stable_sort(rows.begin(), rows.end(), [&](const SpreadRow* a, const SpreadRow* b) {
    return std::tuple(static_cast<int>(a->kind), a->batch_planned, bucket_rank(a->bucket)) <
           std::tuple(static_cast<int>(b->kind), b->batch_planned, bucket_rank(b->bucket));
  });
  j = json_with(SCALESCOPE_JSON_FIELDS(c, source, level, pooled),
                {{"distance", spread_distance_name(c.distance)}, {"batch_rule", batch_rule_name(c.batch_rule)}});
  auto& backtests = j["batch_rule_backtests"] = nlohmann::json::array();
  for (const auto& b : c.batch_rule_backtests)
    backtests.push_back({{"rule", batch_rule_name(b.rule)},
                         {"cases", b.cases},
                         {"score", std::round(b.score * 1e4) / 1e4}});
  auto& out = j["rows"] = nlohmann::json::array();
  for (const auto* r : rows)
    out.push_back(json_with(SCALESCOPE_JSON_FIELDS(*r, batch_planned, bucket, cases, groups),
                            {{"model", model_name(r->kind)},
                             {"tau", std::round(r->tau * 1e4) / 1e4},
                             {"max_factor", std::round(r->max_factor * 1e3) / 1e3}}));
}

std::string write_spread_calibration(const SpreadCalibration& c) {
  nlohmann::json j = c;
  return j.dump(1) + "\n";
}

const SpreadCalibration& default_spread_calibration() {
  static const SpreadCalibration c =
      read_spread_calibration(detail::default_spread_calibration_text(), "scaling/prediction_calibration.json");
  return c;
}

}  // namespace scalescope::scaling
