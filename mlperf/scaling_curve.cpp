// The scaling curves of published results (the fastest scored system at each
// accelerator count, per benchmark, accelerator model and division) and
// predictions along them through scaling::fit_curve. Results are typed; the
// tables are built in report/prediction_tables.cpp.

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"
#include "base/error.hpp"
#include "base/text_input.hpp"

namespace scalescope::mlperf {

namespace {

using FolderKey = std::tuple<std::string, std::string, std::string>;  // submitter, system, folder

struct FolderFacts {
  std::optional<double> global_batch_size;
  std::optional<double> progress;  // mean over converged runs, before the RCP factor
};

std::map<FolderKey, FolderFacts> folder_facts(const std::vector<Run>& runs) {
  std::map<FolderKey, std::map<int64_t, int>> batches;
  std::map<FolderKey, std::pair<double, int>> progress;  // sum, count
  std::map<FolderKey, bool> progress_missing;
  for (const Run& r : runs) {
    const FolderKey key{r.submitter, r.system, r.benchmark_folder};
    if (r.global_batch_size && *r.global_batch_size > 0) ++batches[key][*r.global_batch_size];
    if (!r.converged) continue;
    if (r.progress_at_stop && *r.progress_at_stop > 0) {
      progress[key].first += *r.progress_at_stop;
      ++progress[key].second;
    } else {
      progress_missing[key] = true;
    }
  }
  std::map<FolderKey, FolderFacts> out;
  for (const auto& [key, counts] : batches) {
    const auto most = std::max_element(counts.begin(), counts.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    out[key].global_batch_size = static_cast<double>(most->first);
  }
  // A folder where some converged run lacks its progress has no progress:
  // a mean over the others would not be the work of the scored runs.
  for (const auto& [key, sum] : progress)
    if (!progress_missing.count(key)) out[key].progress = sum.first / sum.second;
  return out;
}

}  // namespace

std::string ScalingCurve::name() const {
  return division.empty() || division == "closed"
             ? fmt::format("{} on {}", benchmark, accelerator)
             : fmt::format("{} on {} ({} division)", benchmark, accelerator, division);
}

std::vector<scaling::CurvePoint> ScalingCurve::points(std::optional<int> up_to) const {
  std::vector<scaling::CurvePoint> out;
  for (const auto& s : sizes)
    if (!up_to || s.accelerators <= *up_to) out.push_back({s.accelerators, s.minutes, s.global_batch_size, s.progress});
  return out;
}

std::vector<ScalingCurve> scaling_curves(const std::vector<Run>& runs, const AnalyzeOptions& options) {
  const std::vector<Score> scores = score_folders(runs);
  const auto facts = folder_facts(runs);
  const std::string want_bench = options.benchmark.empty() ? "" : canonical_benchmark(options.benchmark);
  const std::string want_acc = accelerator_key(options.accelerator);
  using Group = std::tuple<std::string, std::string, std::string>;  // benchmark, accelerator key, division
  std::map<Group, std::map<int, CurveSize>> groups;
  std::map<std::string, std::map<std::string, int>> spellings;
  for (const Score& s : scores) {
    if (!want_bench.empty() && s.benchmark != want_bench) continue;
    const std::string key = accelerator_key(s.accelerator);
    if (!want_acc.empty() && key.find(want_acc) == std::string::npos) continue;
    if (!s.minutes || s.accelerators <= 0 || key.empty()) continue;
    ++spellings[key][accelerator_display(s.accelerator)];
    auto& slot = groups[{s.benchmark, key, s.division}];
    auto it = slot.find(s.accelerators);
    if (it != slot.end() && it->second.minutes <= *s.minutes) continue;
    CurveSize c;
    c.accelerators = s.accelerators;
    c.minutes = *s.minutes;
    c.system = s.system;
    c.submitter = s.submitter;
    if (auto f = facts.find({s.submitter, s.system, s.benchmark_folder}); f != facts.end()) {
      c.global_batch_size = f->second.global_batch_size;
      if (f->second.progress) c.progress = *f->second.progress * s.scaling_factor.value_or(1.0);
    }
    slot[s.accelerators] = c;
  }
  if (groups.empty())
    fail("no scored MLPerf result matches{}{}", want_bench.empty() ? "" : " benchmark '" + options.benchmark + "'",
         want_acc.empty() ? "" : " accelerator '" + options.accelerator + "'");
  std::vector<ScalingCurve> out;
  for (const auto& [group, sizes] : groups) {
    ScalingCurve c;
    c.benchmark = std::get<0>(group);
    const auto& sp = spellings[std::get<1>(group)];
    c.accelerator = std::max_element(sp.begin(), sp.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    c.division = std::get<2>(group);
    for (const auto& [n, size] : sizes) c.sizes.push_back(size);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CurveForecast> predict(const std::vector<Run>& runs, const AnalyzeOptions& filter,
                                   const PredictOptions& options) {
  if (options.predict.empty()) fail("--predict needs at least one accelerator count");
  if (!(options.level > 0 && options.level < 1)) fail("--level {} is not between 0 and 1", options.level);
  for (int n : options.predict)
    if (n < 1) fail("--predict {}: an accelerator count must be a positive number", n);
  if (options.fit_up_to && *options.fit_up_to < 1)
    fail("--fit-up-to {}: an accelerator count must be a positive number", *options.fit_up_to);
  std::vector<CurveForecast> out;
  for (auto& curve : scaling_curves(runs, filter)) {
    CurveForecast f;
    const auto points = curve.points(options.fit_up_to);
    if (points.empty()) continue;
    for (const auto& p : points) f.fitted.push_back(p.gpus);
    scaling::CurveFitOptions fo;
    fo.level = options.level;
    fo.reference = reference_convergence(curve.benchmark);
    fo.planned_batch = options.planned_batch;
    fo.calibration = options.calibration;
    fo.group = curve.benchmark;
    f.fit = scaling::fit_curve(options.model, points, options.predict, fo);
    for (int n : options.predict) {
      auto it =
          std::find_if(curve.sizes.begin(), curve.sizes.end(), [n](const CurveSize& s) { return s.accelerators == n; });
      f.measured.push_back(it == curve.sizes.end() ? std::nullopt : std::optional<CurveSize>(*it));
    }
    f.curve = std::move(curve);
    out.push_back(std::move(f));
  }
  if (out.empty()) fail("--fit-up-to {}: no curve has a measured size at or below it", options.fit_up_to.value_or(0));
  return out;
}

std::map<int, double> parse_planned_batch(const std::string& text) {
  std::map<int, double> out;
  if (text.empty()) return out;
  for (const std::string_view part : trace::split(text, ',')) {
    const std::string item(part);
    const size_t colon = item.find(':');
    int n = 0;
    double b = 0;
    size_t used_n = 0, used_b = 0;
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      n = std::stoi(item.substr(0, colon), &used_n);
      b = std::stod(item.substr(colon + 1), &used_b);
    } catch (const std::exception&) {
      fail("--planned-batch: '{}' is not ACCELERATORS:GLOBAL_BATCH", item);
    }
    if (used_n != colon || used_b != item.size() - colon - 1)
      fail("--planned-batch: '{}' is not ACCELERATORS:GLOBAL_BATCH", item);
    if (n < 1) fail("--planned-batch: '{}': an accelerator count must be a positive number", item);
    if (!(b > 0) || !std::isfinite(b)) fail("--planned-batch: '{}': the batch must be a positive number", item);
    if (!out.emplace(n, b).second) fail("--planned-batch: {} accelerators given twice", n);
  }
  return out;
}

std::vector<scaling::NamedCurve> named_curves(const std::vector<ScalingCurve>& curves, const std::string& round) {
  std::vector<scaling::NamedCurve> out;
  for (const auto& c : curves)
    out.push_back({round.empty() ? c.name() : fmt::format("{}: {}", round, c.name()), c.benchmark, c.points(),
                   reference_convergence(c.benchmark), round});
  return out;
}

RoundValidation validate(const std::vector<RoundRuns>& rounds, const AnalyzeOptions& filter,
                         const ValidateOptions& options) {
  if (!(options.level > 0 && options.level < 1)) fail("--level {} is not between 0 and 1", options.level);
  std::vector<std::string> names;
  for (const auto& r : rounds) {
    if (std::find(names.begin(), names.end(), r.round) != names.end()) fail("round '{}' given twice", r.round);
    names.push_back(r.round);
  }
  for (const auto* list : {&options.fit_rounds, &options.test_rounds})
    for (const auto& r : *list)
      if (std::find(names.begin(), names.end(), r) == names.end()) fail("round '{}' has no runs table", r);
  for (const auto& r : options.fit_rounds)
    if (std::find(options.test_rounds.begin(), options.test_rounds.end(), r) != options.test_rounds.end())
      fail("round '{}' is both fitted and tested: a calibration is judged on a round it did not see", r);
  std::vector<scaling::NamedCurve> curves;
  for (const auto& r : rounds) {
    // A round without a curve of the filter adds no case (another round may have one).
    std::vector<ScalingCurve> found;
    try {
      found = scaling_curves(r.runs, filter);
    } catch (const Error&) {
      if (rounds.size() == 1) throw;
    }
    for (auto& c : named_curves(found, rounds.size() == 1 ? "" : r.round)) {
      c.round = r.round;
      curves.push_back(std::move(c));
    }
  }
  RoundValidation out;
  out.fit_rounds = options.fit_rounds;
  out.test_rounds = options.test_rounds.empty() ? names : options.test_rounds;
  // The batch rule: given, chosen by the fitted rounds' backtests, or the calibration's.
  if (options.choose_batch_rule && options.fit_rounds.empty()) fail("choosing the batch rule needs rounds to fit");
  if (options.choose_batch_rule && options.batch_rule) fail("a batch rule is either given or chosen, not both");
  scaling::SpreadCalibration used =
      options.calibration ? *options.calibration : scaling::default_spread_calibration();
  auto fitted_round = [&](const scaling::ValidationCase& c) {
    return std::find(options.fit_rounds.begin(), options.fit_rounds.end(), c.round) != options.fit_rounds.end();
  };
  std::vector<scaling::SpreadCalibration::RuleBacktest> backtests;
  if (options.batch_rule) {
    used.batch_rule = *options.batch_rule;
  } else if (options.choose_batch_rule) {
    for (scaling::BatchRule rule : scaling::kBatchRules) {
      used.batch_rule = rule;
      const scaling::Validation trial =
          scaling::validate_curves(curves, {scaling::kDefaultCurveModel}, 4, options.level, false, &used);
      std::vector<const scaling::ValidationCase*> fitted;
      for (const auto& c : trial.cases)
        if (fitted_round(c)) fitted.push_back(&c);
      backtests.push_back({rule, fitted.size(), scaling::batch_rule_score(fitted)});
    }
    // The smallest score wins; a tie keeps the earlier rule of kBatchRules.
    used.batch_rule = std::min_element(backtests.begin(), backtests.end(), [](const auto& a, const auto& b) {
                        return a.score < b.score;
                      })->rule;
  }
  const scaling::Validation all = scaling::validate_curves(
      curves,
      {scaling::kDefaultCurveModel, scaling::ModelKind::kPowerLaw, scaling::ModelKind::kAmdahl,
       scaling::ModelKind::kComputeCommFixed},
      4, options.level, /*plan_batches=*/true, &used);
  if (options.fit_rounds.empty()) {
    out.calibration = used;
  } else {
    std::vector<scaling::ValidationCase> fit_cases;
    for (const auto& c : all.cases)
      if (fitted_round(c)) fit_cases.push_back(c);
    out.calibration = scaling::calibrate_spread(fit_cases, options.level, options.distance, options.pooled,
                                                  options.source);
    out.calibration.batch_rule = used.batch_rule;
    out.calibration.batch_rule_backtests = backtests;
  }
  out.validation = options.fit_rounds.empty() && options.test_rounds.empty()
                       ? all
                       : scaling::select_rounds(all, out.test_rounds, out.calibration);
  return out;
}

scaling::Validation validate(const std::vector<Run>& runs, const AnalyzeOptions& filter, double level) {
  ValidateOptions o;
  o.level = level;
  return validate({{"", runs}}, filter, o).validation;
}

}  // namespace scalescope::mlperf
