#include "sweep/scaling_study.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "scaling/scaling.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/quantile.hpp"

namespace scalescope::sweep {
namespace {

using Config = std::vector<std::pair<std::string, std::string>>;

std::string label_of(const Config& c) {
  if (c.empty()) return "(default)";
  std::vector<std::string> parts;
  for (const auto& [k, v] : c) parts.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(parts, " "));
}

// Ordering of configurations by the position of their values in --vary.
struct ConfigOrder {
  std::vector<std::pair<std::string, std::vector<std::string>>> vary;
  std::vector<size_t> key(const Config& c) const {
    std::vector<size_t> out;
    for (const auto& [k, v] : c) {
      size_t pos = 1000000;
      for (const auto& [vk, values] : vary)
        if (vk == k) pos = static_cast<size_t>(std::find(values.begin(), values.end(), v) - values.begin());
      out.push_back(pos);
    }
    return out;
  }
};

using trace::median;  // the one median (base/quantile.hpp)

// The order of --vary in the sweep's spec, for ordering configurations.
ConfigOrder config_order_of(const std::string& spec_json) {
  ConfigOrder order;
  auto spec = nlohmann::json::parse(spec_json, nullptr, false);
  if (spec.is_object() && spec.contains("vary") && spec["vary"].is_array())
    for (const auto& v : spec["vary"])
      if (v.is_object() && v.contains("key") && v.contains("values") && v["values"].is_array())
        order.vary.emplace_back(v["key"].get<std::string>(), v["values"].get<std::vector<std::string>>());
  return order;
}

// The runs of one configuration at one GPU count.
struct Group {
  std::map<std::string, int> statuses;
  std::vector<double> values, energy;
  std::vector<double> bytes_per_iter, busbw;
  std::vector<double> compute_per_iter;  // one GPU's compute seconds per iteration (traced runs)
};

// The sweep's runs grouped by configuration, then GPU count.
struct GroupedRuns {
  std::vector<Config> configs;                     // in --vary order
  std::map<std::pair<size_t, int>, Group> groups;  // (config index, gpus)
  int with_metric = 0;
  std::map<std::string, int> all_statuses;
};

GroupedRuns group_runs(const StoredSweep& sweep, const ConfigOrder& order, const std::string& metric, bool higher) {
  GroupedRuns out;
  auto& configs = out.configs;
  for (const auto& r : sweep.runs)
    if (std::find(configs.begin(), configs.end(), r.config) == configs.end()) configs.push_back(r.config);
  std::stable_sort(configs.begin(), configs.end(),
                   [&](const Config& a, const Config& b) { return order.key(a) < order.key(b); });
  for (const auto& r : sweep.runs) {
    const size_t ci = static_cast<size_t>(std::find(configs.begin(), configs.end(), r.config) - configs.begin());
    auto& g = out.groups[{ci, r.gpus}];
    ++g.statuses[status_name(r.status)];
    ++out.all_statuses[status_name(r.status)];
    if (r.status != RunStatus::kOk) continue;
    auto it = r.metrics.find(metric);
    if (it == r.metrics.end()) continue;
    if (higher && !(it->second > 0)) continue;  // a zero throughput has no time per unit; counted below
    g.values.push_back(it->second);
    ++out.with_metric;
    if (auto e = r.metrics.find("energy_j"); e != r.metrics.end()) g.energy.push_back(e->second);
    if (auto b = r.metrics.find("allreduce_bytes_per_iter"); b != r.metrics.end())
      g.bytes_per_iter.push_back(b->second);
    if (auto b = r.metrics.find("allreduce_busbw"); b != r.metrics.end()) g.busbw.push_back(b->second);
    if (auto c = r.metrics.find("compute_s_per_iter"); c != r.metrics.end()) g.compute_per_iter.push_back(c->second);
  }
  return out;
}

// No run has the metric: says how the runs ended and the first one with a note.
[[noreturn]] void fail_without_metric(const StoredSweep& sweep, const std::string& metric,
                                      const std::map<std::string, int>& all_statuses) {
  std::vector<std::string> parts;
  for (const auto& [s, n] : all_statuses) parts.push_back(fmt::format("{} {}", n, s));
  std::string first;
  for (const auto& r : sweep.runs) {
    if (r.status == RunStatus::kOk && r.note.empty()) continue;
    first =
        fmt::format("; first: run {} (gpus={}{}{}) {}: {}, log {}", r.plan_index, r.gpus, r.config.empty() ? "" : " ",
                    label_of(r.config), status_name(r.status), r.note.empty() ? "no note" : r.note, r.log_path);
    break;
  }
  fail("no run of the sweep has the metric '{}' ({} runs: {}); nothing to compute{}", metric, sweep.runs.size(),
       fmt::to_string(fmt::join(parts, ", ")), first);
}

// What one study needs at every step, settled from the options and the sweep.
struct StudySettings {
  const ScalingStudyOptions& options;
  std::string metric;
  bool higher = false;
  scaling::Better better = scaling::Better::kLower;
  bool weak = false;
  double units_per_gpu_step = 1;
  // The default model first when the batch grows (without a batch law it is Amdahl's law).
  std::vector<scaling::ModelKind> kinds;
};

StudySettings settle_study(const StoredSweep& sweep, const ScalingStudyOptions& options, ScalingStudy& study) {
  StudySettings s{options};
  study.sweep_id = sweep.id;
  study.planned_runs = sweep.planned_runs;
  study.recorded_runs = sweep.runs.size();
  study.threshold = options.threshold;
  study.alpha = options.alpha;
  study.predicted = !options.predict.empty();
  study.global_batch_grows = options.global_batch_grows;
  s.metric = options.metric.empty() ? sweep.metric : options.metric;
  s.higher = options.higher_is_better.value_or(s.metric == sweep.metric ? sweep.higher_is_better : false);
  s.better = s.higher ? scaling::Better::kHigher : scaling::Better::kLower;
  if (options.samples_per_gpu_step &&
      !(*options.samples_per_gpu_step > 0 && std::isfinite(*options.samples_per_gpu_step)))
    fail("--samples-per-gpu-step {} is not a positive number", *options.samples_per_gpu_step);
  if (options.samples_per_gpu_step && options.weak == false)
    fail("--samples-per-gpu-step describes weak scaling; it cannot be combined with --strong");
  // Weak scaling turns a time per step into a time per unit of work; a
  // throughput already counts work, so it is left as it is.
  const bool weak_asked = options.weak.value_or(false) || options.samples_per_gpu_step.has_value();
  s.weak = weak_asked && !s.higher;
  s.units_per_gpu_step = options.samples_per_gpu_step.value_or(1);
  study.metric = s.metric;
  study.higher_is_better = s.higher;
  study.weak = s.weak;
  study.weak_asked = weak_asked;
  study.samples_per_gpu_step = options.samples_per_gpu_step;
  study.seconds = s.metric == "wall_s" || s.metric == "mlperf_s" || s.metric == "iteration_s";
  s.kinds = {scaling::ModelKind::kAmdahl, scaling::ModelKind::kComputeCommFixed, scaling::ModelKind::kPowerLaw};
  if (options.global_batch_grows) s.kinds.insert(s.kinds.begin(), scaling::ModelKind::kStepConverge);
  return s;
}

// One configuration's points: time samples (per unit of work under weak scaling) by GPU count.
std::vector<scaling::ScalingPoint> scaling_points(const StudySettings& s, const GroupedRuns& runs, size_t ci) {
  std::vector<scaling::ScalingPoint> pts;
  for (const auto& [key, g] : runs.groups) {
    if (key.first != ci) continue;
    scaling::ScalingPoint p;
    p.gpus = key.second;
    p.times = scaling::to_time_samples(g.values, s.better);
    if (s.weak) p.times = scaling::weak_scaling_unit_times(p.times, p.gpus, s.units_per_gpu_step);
    p.energy_j = g.energy;
    pts.push_back(std::move(p));
  }
  return pts;
}

// Weak or strong scaling, from one GPU's compute per iteration in the traces:
// notes where the study's assumption and the traces disagree or are unknown.
void note_work_per_step(const StudySettings& s, const GroupedRuns& runs, size_t ci, const std::string& label,
                        bool& generic_warning_given, ScalingStudy& study) {
  const auto& options = s.options;
  std::vector<std::pair<int, double>> work;
  for (const auto& entry : runs.groups)
    if (entry.first.first == ci && !entry.second.compute_per_iter.empty())
      work.emplace_back(entry.first.second, median(entry.second.compute_per_iter));
  const auto evidence = scaling::classify_work_per_step(work);
  const std::string seen = fmt::format("{}one GPU's compute per iteration in the traces: {}",
                                       runs.configs.size() > 1 ? label + ": " : "", evidence.detail);
  if (!s.higher && !options.weak && !options.samples_per_gpu_step && s.metric == "iteration_s") {
    if (evidence.kind == scaling::WorkPerStep::kFixedPerGpu)
      study.work_notes.push_back(fmt::format(
          "WARNING: weak scaling ({}): each GPU does the same work per step, so a step at N GPUs does N/N_ref times "
          "the reference step's work, and S and E' below, taken on time per step, understate scaling by N/N_ref. Use "
          "--weak (time per unit of work, E' = T_ref/T_N) or --samples-per-gpu-step B (seconds per sample)",
          seen));
    else if (evidence.kind == scaling::WorkPerStep::kFixedTotal)
      study.work_notes.push_back(fmt::format("strong scaling ({}): time per step is compared as it is", seen));
    else if (!generic_warning_given && (generic_warning_given = true))
      study.work_notes.push_back(
          "WARNING: 'iteration_s' is a time per step: S and E' below assume the same global work per step at every "
          "N (strong scaling). With a fixed per-GPU batch (weak scaling, the usual DDP set-up) a step at N GPUs "
          "does N/N_ref times the work and E' on step time is low by that factor: pass --weak (or "
          "--samples-per-gpu-step B), or --strong to confirm strong scaling" +
          (work.empty() ? std::string() : " (" + seen + ")"));
  }
  if (s.weak && evidence.kind == scaling::WorkPerStep::kFixedTotal)
    study.work_notes.push_back(
        fmt::format("WARNING: weak scaling was asked for, but {} looks like strong scaling", seen));
  if (options.weak == false && evidence.kind == scaling::WorkPerStep::kFixedPerGpu)
    study.work_notes.push_back(fmt::format("WARNING: --strong was given, but {} looks like weak scaling", seen));
}

// Each model fitted to the configuration's medians, predicted at --predict's GPU counts.
void predict_config(const StudySettings& s, const GroupedRuns& runs, size_t ci, ConfigScaling& config,
                    ScalingStudy& study) {
  const auto& options = s.options;
  const auto& t = *config.table;
  // Medians of the metric as measured (a time per unit of work under --weak
  // would hide the per-step costs that the models describe).
  std::vector<scaling::CurvePoint> fp;
  for (const auto& [key, g] : runs.groups)
    if (key.first == ci && !g.values.empty())
      fp.push_back({key.second,
                    median(scaling::to_time_samples(g.values, s.better)),
                    options.global_batch_grows
                        ? std::optional<double>(key.second * options.samples_per_gpu_step.value_or(1.0))
                        : std::nullopt,
                    {}});
  const auto ref_it = std::find_if(fp.begin(), fp.end(), [&](const auto& p) { return p.gpus == t.ref_gpus; });
  const double ref_time = ref_it != fp.end() ? ref_it->time : fp.front().time;
  const int ref_gpus = ref_it != fp.end() ? ref_it->gpus : fp.front().gpus;
  scaling::CurveFitOptions fo;
  fo.batch_grows = options.global_batch_grows;
  fo.planned_batch = options.planned_batch;
  if (s.metric == "iteration_s") {
    // Measured communication at the largest GPU count that traced all-reduces.
    for (auto it = runs.groups.rbegin(); it != runs.groups.rend(); ++it) {
      if (it->first.first != ci || it->second.busbw.empty() || it->second.bytes_per_iter.empty() ||
          it->first.second < 2)
        continue;
      fo.comm = scaling::CommModel{median(it->second.bytes_per_iter), median(it->second.busbw), 0.0};
      break;
    }
  }
  for (auto kind : s.kinds) {
    ModelPrediction m;
    m.kind = kind;
    m.fit = scaling::fit_curve(kind, fp, options.predict, fo);
    for (const auto& p : m.fit.predictions)
      m.efficiency.push_back(options.global_batch_grows ? ref_time / p.time : ref_gpus * ref_time / (p.gpus * p.time));
    const bool bounds_only = !m.fit.ok && !m.fit.predictions.empty();
    config.predictions.push_back(std::move(m));
    if (bounds_only) break;  // bounds only: the same for every model
  }
  for (auto kind : s.kinds)
    for (const auto& a : scaling::model_assumptions(kind, fo.comm.has_value()))
      if (std::find(study.assumptions.begin(), study.assumptions.end(), a) == study.assumptions.end())
        study.assumptions.push_back(a);
}

// One configuration's scaling table and predictions, or why it has none.
ConfigScaling study_config(const StudySettings& s, const GroupedRuns& runs, size_t ci, bool& generic_warning_given,
                           ScalingStudy& study) {
  const auto& options = s.options;
  const std::vector<scaling::ScalingPoint> pts = scaling_points(s, runs, ci);
  ConfigScaling config;
  config.label = label_of(runs.configs[ci]);
  note_work_per_step(s, runs, ci, config.label, generic_warning_given, study);
  scaling::ScalingOptions so;
  so.ref_gpus = options.ref_gpus;
  so.threshold = options.threshold;
  so.price_per_gpu_hour = options.price_per_gpu_hour;
  bool has_any = std::any_of(pts.begin(), pts.end(), [](const auto& p) { return !p.times.empty(); });
  if (!has_any) {
    config.left_out = "no successful run with the metric";
    return config;
  }
  if (options.ref_gpus && std::none_of(pts.begin(), pts.end(), [&](const auto& p) {
        return p.gpus == *options.ref_gpus && !p.times.empty();
      })) {
    config.left_out = fmt::format("--ref {} has no successful run", *options.ref_gpus);
    return config;
  }
  config.table = scaling::scaling_table(pts, so);
  study.ci_method = config.table->ci_method;
  study.knee_method = config.table->break_even.knee_method;
  if (!options.predict.empty() && s.weak && !options.global_batch_grows) {
    config.not_predicted =
        "the models assume strong scaling (same work per step); --global-batch-grows fits the "
        "step x converge model";
  } else if (!options.predict.empty()) {
    predict_config(s, runs, ci, config, study);
  }
  return config;
}

// The pairs of values to compare: --compare's, else each varied key's first value against the others.
std::vector<std::pair<std::string, std::pair<std::string, std::vector<std::string>>>> value_pairs_to_compare(
    const ScalingStudyOptions& options, const ConfigOrder& order) {
  std::vector<std::pair<std::string, std::pair<std::string, std::vector<std::string>>>> pairs;  // key, (a, bs)
  if (options.compare) {
    if (options.compare->values.size() != 2)
      fail("--compare {}: give exactly two values, KEY=A,B", options.compare->key);
    pairs.push_back({options.compare->key, {options.compare->values[0], {options.compare->values[1]}}});
  } else {
    for (const auto& [k, values] : order.vary)
      if (values.size() >= 2)
        pairs.push_back({k, {values[0], std::vector<std::string>(values.begin() + 1, values.end())}});
  }
  return pairs;
}

// Comparisons of key=a against key=b at each GPU count and each setting of the other keys.
void compare_values(const StudySettings& s, const GroupedRuns& runs, const std::string& key, const std::string& a_value,
                    const std::string& b_value, ScalingStudy& study) {
  const auto& configs = runs.configs;
  for (size_t ca = 0; ca < configs.size(); ++ca) {
    auto va = std::find_if(configs[ca].begin(), configs[ca].end(), [&](const auto& kv) { return kv.first == key; });
    if (va == configs[ca].end() || va->second != a_value) continue;
    Config want = configs[ca];
    for (auto& kv : want)
      if (kv.first == key) kv.second = b_value;
    auto cb_it = std::find(configs.begin(), configs.end(), want);
    if (cb_it == configs.end()) continue;
    const size_t cb = static_cast<size_t>(cb_it - configs.begin());
    Config others;
    for (const auto& kv : configs[ca])
      if (kv.first != key) others.push_back(kv);
    for (const auto& [k1, g1] : runs.groups) {
      if (k1.first != ca) continue;
      auto g2 = runs.groups.find({cb, k1.second});
      if (g2 == runs.groups.end() || g1.values.empty() || g2->second.values.empty()) continue;
      const auto ta = scaling::to_time_samples(g1.values, s.better);
      const auto tb = scaling::to_time_samples(g2->second.values, s.better);
      study.comparisons.push_back({key, a_value, b_value, others.empty() ? std::string() : label_of(others), k1.second,
                                   scaling::compare(ta, tb, s.options.alpha)});
    }
  }
}

}  // namespace

ScalingStudy study_scaling(const StoredSweep& sweep, const ScalingStudyOptions& options) {
  ScalingStudy study;
  const StudySettings settings = settle_study(sweep, options, study);
  const ConfigOrder order = config_order_of(sweep.spec_json);
  const GroupedRuns runs = group_runs(sweep, order, settings.metric, settings.higher);
  for (const auto& [key, g] : runs.groups)
    study.runs.push_back({label_of(runs.configs[key.first]), key.second, g.statuses, g.values.size()});
  if (sweep.runs.empty()) fail("the sweep has no recorded run yet");
  if (runs.with_metric == 0) fail_without_metric(sweep, settings.metric, runs.all_statuses);

  bool generic_warning_given = false;
  for (size_t ci = 0; ci < runs.configs.size(); ++ci)
    study.configs.push_back(study_config(settings, runs, ci, generic_warning_given, study));

  for (const auto& [key, ab] : value_pairs_to_compare(options, order)) {
    bool key_known = false;
    for (const auto& c : runs.configs)
      for (const auto& kv : c) key_known |= kv.first == key;
    if (!key_known) fail("--compare {}: the sweep does not vary '{}'", key, key);
    for (const auto& b_value : ab.second) compare_values(settings, runs, key, ab.first, b_value, study);
  }
  return study;
}

void to_json(nlohmann::json& j, const RunGroup& g) {
  j = SCALESCOPE_JSON_FIELDS(g, config, gpus, statuses, with_metric);
}

void to_json(nlohmann::json& j, const ConfigScaling& c) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelPrediction& m : c.predictions) {
    nlohmann::json fit = m.fit;
    // E' against the measured reference, beside each predicted time.
    for (size_t i = 0; i < m.efficiency.size() && i < fit["predictions"].size(); ++i)
      fit["predictions"][i]["efficiency"] =
          std::isfinite(m.efficiency[i]) ? nlohmann::json(m.efficiency[i]) : nlohmann::json(nullptr);
    models.push_back(std::move(fit));
  }
  j = json_with(SCALESCOPE_JSON_FIELDS(c, label, left_out, not_predicted),
                {{"scaling", or_null(c.table)}, {"predictions", models}});
}

void to_json(nlohmann::json& j, const ConfigComparison& c) {
  j = SCALESCOPE_JSON_FIELDS(c, key, a, b, others, gpus, result);
  // As the table: no decision with fewer than 2 runs a side.
  if (!std::isfinite(c.result.welch_p)) j["result"]["differs"] = nullptr;
}

void to_json(nlohmann::json& j, const ScalingStudy& s) {
  nlohmann::json configs = s.configs;
  if (!s.seconds)  // GPU-hours and cost mean nothing in another unit than seconds
    for (auto& c : configs)
      if (!c["scaling"].is_null())
        for (auto& r : c["scaling"]["rows"]) r["gpu_hours"] = r["cost"] = nullptr;
  j = json_with(SCALESCOPE_JSON_FIELDS(s, sweep_id, planned_runs, recorded_runs, metric, higher_is_better, weak,
                                       weak_asked, threshold, alpha, predicted, global_batch_grows, runs, work_notes,
                                       comparisons, ci_method, knee_method, assumptions),
                {{"metric_in_seconds", s.seconds},
                 {"samples_per_gpu_step", or_null(s.samples_per_gpu_step)},
                 {"configs", std::move(configs)}});
}

}  // namespace scalescope::sweep
