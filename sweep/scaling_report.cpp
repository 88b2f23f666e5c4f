#include "sweep/scaling_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "scaling/scaling.hpp"
#include "trace/error.hpp"

namespace scalescope::sweep {
namespace {

using report::Cell;
using Config = std::vector<std::pair<std::string, std::string>>;

std::string label_of(const Config& c) {
  if (c.empty()) return "(default)";
  std::vector<std::string> parts;
  for (const auto& [k, v] : c) parts.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(parts, " "));
}

Cell num(double v) { return std::isfinite(v) ? Cell(v) : Cell(); }
Cell opt_int(const std::optional<int>& v) { return v ? Cell(int64_t{*v}) : Cell(); }

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<report::Table> scaling_report(const StoredSweep& sweep, const ScalingReportOptions& options) {
  const std::string metric = options.metric.empty() ? sweep.metric : options.metric;
  const bool higher = options.higher_is_better.value_or(metric == sweep.metric ? sweep.higher_is_better : false);
  const auto better = higher ? scaling::Better::kHigher : scaling::Better::kLower;
  if (options.samples_per_gpu_step && !(*options.samples_per_gpu_step > 0 && std::isfinite(*options.samples_per_gpu_step)))
    fail("--samples-per-gpu-step {} is not a positive number", *options.samples_per_gpu_step);
  if (options.samples_per_gpu_step && options.weak == false)
    fail("--samples-per-gpu-step describes weak scaling; it cannot be combined with --strong");
  // Weak scaling turns a time per step into a time per unit of work; a
  // throughput already counts work, so it is left as it is.
  const bool weak_asked = options.weak.value_or(false) || options.samples_per_gpu_step.has_value();
  const bool weak = weak_asked && !higher;
  const double units_per_gpu_step = options.samples_per_gpu_step.value_or(1);

  ConfigOrder order;
  auto spec = nlohmann::json::parse(sweep.spec_json, nullptr, false);
  if (spec.is_object() && spec.contains("vary") && spec["vary"].is_array())
    for (const auto& v : spec["vary"])
      if (v.is_object() && v.contains("key") && v.contains("values") && v["values"].is_array())
        order.vary.emplace_back(v["key"].get<std::string>(), v["values"].get<std::vector<std::string>>());

  // Group runs by configuration, then GPU count.
  std::vector<Config> configs;
  for (const auto& r : sweep.runs)
    if (std::find(configs.begin(), configs.end(), r.config) == configs.end()) configs.push_back(r.config);
  std::stable_sort(configs.begin(), configs.end(),
                   [&](const Config& a, const Config& b) { return order.key(a) < order.key(b); });
  struct Group {
    std::map<std::string, int> statuses;
    std::vector<double> values, energy;
    std::vector<double> bytes_per_iter, busbw;
    std::vector<double> compute_per_iter;  // one GPU's compute seconds per iteration (traced runs)
  };
  std::map<std::pair<size_t, int>, Group> groups;  // (config index, gpus)
  int with_metric = 0;
  std::map<std::string, int> all_statuses;
  for (const auto& r : sweep.runs) {
    const size_t ci = static_cast<size_t>(std::find(configs.begin(), configs.end(), r.config) - configs.begin());
    auto& g = groups[{ci, r.gpus}];
    ++g.statuses[status_name(r.status)];
    ++all_statuses[status_name(r.status)];
    if (r.status != RunStatus::kOk) continue;
    auto it = r.metrics.find(metric);
    if (it == r.metrics.end()) continue;
    if (higher && !(it->second > 0)) continue;  // a zero throughput has no time per unit; counted below
    g.values.push_back(it->second);
    ++with_metric;
    if (auto e = r.metrics.find("energy_j"); e != r.metrics.end()) g.energy.push_back(e->second);
    if (auto b = r.metrics.find("allreduce_bytes_per_iter"); b != r.metrics.end()) g.bytes_per_iter.push_back(b->second);
    if (auto b = r.metrics.find("allreduce_busbw"); b != r.metrics.end()) g.busbw.push_back(b->second);
    if (auto c = r.metrics.find("compute_s_per_iter"); c != r.metrics.end()) g.compute_per_iter.push_back(c->second);
  }

  std::vector<report::Table> tables;
  report::Table runs(fmt::format("Runs of sweep {} ({} planned, {} recorded)", sweep.id, sweep.planned_runs,
                                 sweep.runs.size()),
                     {"config", "gpus", "ok", "failed", "timeout", "crashed", "error", "unfinished", "with_metric"});
  for (const auto& entry : groups) {
    // Named references, not a structured binding: clang 14 cannot capture those.
    const auto& key = entry.first;
    const auto& g = entry.second;
    auto count = [&](const char* s) {
      auto it = g.statuses.find(s);
      return int64_t{it == g.statuses.end() ? 0 : it->second};
    };
    runs.add_row({label_of(configs[key.first]), int64_t{key.second}, count("ok"), count("failed"), count("timeout"),
                  count("crashed"), count("error"), count("running"), static_cast<int64_t>(g.values.size())});
  }
  if (sweep.runs.empty()) fail("the sweep has no recorded run yet");
  if (with_metric == 0) {
    std::vector<std::string> parts;
    for (const auto& [s, n] : all_statuses) parts.push_back(fmt::format("{} {}", n, s));
    std::string first;
    for (const auto& r : sweep.runs) {
      if (r.status == RunStatus::kOk && r.note.empty()) continue;
      first = fmt::format("; first: run {} (gpus={}{}{}) {}: {}, log {}", r.plan_index, r.gpus,
                          r.config.empty() ? "" : " ", label_of(r.config), status_name(r.status),
                          r.note.empty() ? "no note" : r.note, r.log_path);
      break;
    }
    fail("no run of the sweep has the metric '{}' ({} runs: {}); nothing to compute{}", metric, sweep.runs.size(),
         fmt::join(parts, ", "), first);
  }
  tables.push_back(std::move(runs));

  const bool seconds = metric == "wall_s" || metric == "mlperf_s" || metric == "iteration_s";
  const std::string kind = higher ? "higher is better, time = 1/value"
                           : !weak ? "time"
                           : options.samples_per_gpu_step
                               ? fmt::format("weak scaling: time per sample = value / (N x {:g})", units_per_gpu_step)
                               : std::string("weak scaling: time per unit of work = value / N, a unit being one GPU's step");
  // Time columns keep 4 significant figures on the terminal (a 0.6 ms step
  // would show as 0.0006 with fixed decimals); CSV and JSON keep every digit.
  report::Table main(fmt::format("Scaling of {} ({}; {})", metric, kind, seconds ? "seconds" : "units of the metric"),
                     std::vector<report::Column>{
                         report::Column("config"), report::Column("gpus"), report::Column("n"),
                         report::Column::significant("median", 4), report::Column::significant("ci_low", 4),
                         report::Column::significant("ci_high", 4), report::Column("speedup"),
                         report::Column("speedup_low"), report::Column("speedup_high"), report::Column("efficiency"),
                         report::Column("efficiency_low"), report::Column("efficiency_high"),
                         report::Column::significant("gpu_hours", 4), report::Column::significant("energy_j", 4),
                         report::Column::significant("cost", 4), report::Column("pareto")});
  report::Table breakeven("Break-even point", {"config", "rule", "gpus", "detail"});
  report::Table predictions("Prediction", std::vector<report::Column>{
                                              report::Column("config"), report::Column("model"), report::Column("gpus"),
                                              report::Column::significant("time", 4),
                                              report::Column::significant("low", 4),
                                              report::Column::significant("high", 4), report::Column("efficiency"),
                                              report::Column("loo_mean_rel_err"), report::Column("loo_max_rel_err"),
                                              report::Column("fit")});
  std::vector<std::string> weak_notes;  // printed first under the scaling table
  bool generic_warning_given = false;
  std::string ci_method, knee_method;
  std::vector<std::string> assumptions;
  // The default model first when the batch grows (without a batch law it is Amdahl's law).
  std::vector<scaling::ModelKind> kinds = {scaling::ModelKind::kAmdahl, scaling::ModelKind::kComputeCommFixed,
                                           scaling::ModelKind::kPowerLaw};
  if (options.global_batch_grows) kinds.insert(kinds.begin(), scaling::ModelKind::kStepConverge);
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    std::vector<scaling::ScalingPoint> pts;
    for (const auto& [key, g] : groups) {
      if (key.first != ci) continue;
      scaling::ScalingPoint p;
      p.gpus = key.second;
      p.times = scaling::to_time_samples(g.values, better);
      if (weak) p.times = scaling::weak_scaling_unit_times(p.times, p.gpus, units_per_gpu_step);
      p.energy_j = g.energy;
      pts.push_back(std::move(p));
    }
    const std::string label = label_of(configs[ci]);
    // Weak or strong scaling, from one GPU's compute per iteration in the traces.
    std::vector<std::pair<int, double>> work;
    for (const auto& entry : groups)
      if (entry.first.first == ci && !entry.second.compute_per_iter.empty())
        work.emplace_back(entry.first.second, median(entry.second.compute_per_iter));
    const auto evidence = scaling::classify_work_per_step(work);
    const std::string seen = fmt::format("{}one GPU's compute per iteration in the traces: {}",
                                         configs.size() > 1 ? label + ": " : "", evidence.detail);
    if (!higher && !options.weak && !options.samples_per_gpu_step && metric == "iteration_s") {
      if (evidence.kind == scaling::WorkPerStep::kFixedPerGpu)
        weak_notes.push_back(fmt::format(
            "WARNING: weak scaling ({}): each GPU does the same work per step, so a step at N GPUs does N/N_ref times "
            "the reference step's work, and S and E' below, taken on time per step, understate scaling by N/N_ref. Use "
            "--weak (time per unit of work, E' = T_ref/T_N) or --samples-per-gpu-step B (seconds per sample)",
            seen));
      else if (evidence.kind == scaling::WorkPerStep::kFixedTotal)
        weak_notes.push_back(fmt::format("strong scaling ({}): time per step is compared as it is", seen));
      else if (!generic_warning_given && (generic_warning_given = true))
        weak_notes.push_back(
            "WARNING: 'iteration_s' is a time per step: S and E' below assume the same global work per step at every "
            "N (strong scaling). With a fixed per-GPU batch (weak scaling, the usual DDP set-up) a step at N GPUs "
            "does N/N_ref times the work and E' on step time is low by that factor: pass --weak (or "
            "--samples-per-gpu-step B), or --strong to confirm strong scaling" +
            (work.empty() ? std::string() : " (" + seen + ")"));
    }
    if (weak && evidence.kind == scaling::WorkPerStep::kFixedTotal)
      weak_notes.push_back(fmt::format("WARNING: weak scaling was asked for, but {} looks like strong scaling", seen));
    if (options.weak == false && evidence.kind == scaling::WorkPerStep::kFixedPerGpu)
      weak_notes.push_back(fmt::format("WARNING: --strong was given, but {} looks like weak scaling", seen));
    scaling::ScalingOptions so;
    so.ref_gpus = options.ref_gpus;
    so.threshold = options.threshold;
    so.price_per_gpu_hour = options.price_per_gpu_hour;
    bool has_any = std::any_of(pts.begin(), pts.end(), [](const auto& p) { return !p.times.empty(); });
    if (!has_any) {
      main.add_note(fmt::format("{}: no successful run with the metric; left out", label));
      continue;
    }
    if (options.ref_gpus && std::none_of(pts.begin(), pts.end(), [&](const auto& p) {
          return p.gpus == *options.ref_gpus && !p.times.empty();
        })) {
      main.add_note(fmt::format("{}: --ref {} has no successful run; left out", label, *options.ref_gpus));
      continue;
    }
    const auto t = scaling::scaling_table(pts, so);
    ci_method = t.ci_method;
    for (const auto& r : t.rows) {
      main.add_row({label, int64_t{r.gpus}, static_cast<int64_t>(r.time.n), r.time.median, num(r.time.ci_low),
                    num(r.time.ci_high), r.speedup, num(r.speedup_low), num(r.speedup_high), r.efficiency,
                    num(r.efficiency_low), num(r.efficiency_high), seconds ? Cell(r.gpu_hours) : Cell(),
                    r.energy_j ? Cell(r.energy_j->median) : Cell(), r.cost && seconds ? Cell(*r.cost) : Cell(),
                    r.pareto});
    }
    breakeven.add_row({label, fmt::format("(a) largest N with E' >= {}", options.threshold),
                       opt_int(t.break_even.by_threshold), fmt::format("reference N = {}", t.ref_gpus)});
    std::vector<int> front;
    for (const auto& r : t.rows)
      if (r.pareto) front.push_back(r.gpus);
    breakeven.add_row({label, "(b) knee of time vs GPU-hours Pareto front", opt_int(t.break_even.by_knee),
                       fmt::format("front: N = {}{}", fmt::join(front, ", "),
                                   t.break_even.by_knee ? "" : "; no knee (see notes)")});
    knee_method = t.break_even.knee_method;
    for (const auto& n : t.break_even.notes) breakeven.add_note(label + ": " + n);

    if (!options.predict.empty() && weak && !options.global_batch_grows) {
      predictions.add_row({label, std::string("-"), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(),
                           std::string("not fitted: the models assume strong scaling (same work per step); "
                                       "--global-batch-grows fits the step x converge model")});
    } else if (!options.predict.empty()) {
      // Medians of the metric as measured (a time per unit of work under --weak
      // would hide the per-step costs that the models describe).
      std::vector<scaling::CurvePoint> fp;
      for (const auto& [key, g] : groups)
        if (key.first == ci && !g.values.empty()) fp.push_back({key.second, median(scaling::to_time_samples(g.values, better)), {}, {}});
      const auto ref_it = std::find_if(fp.begin(), fp.end(), [&](const auto& p) { return p.gpus == t.ref_gpus; });
      const double ref_time = ref_it != fp.end() ? ref_it->time : fp.front().time;
      const int ref_gpus = ref_it != fp.end() ? ref_it->gpus : fp.front().gpus;
      scaling::CurveFitOptions fo;
      fo.batch_grows = options.global_batch_grows;
      if (metric == "iteration_s") {
        // Measured communication at the largest GPU count that traced all-reduces.
        for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
          if (it->first.first != ci || it->second.busbw.empty() || it->second.bytes_per_iter.empty() ||
              it->first.second < 2)
            continue;
          fo.comm = scaling::CommModel{median(it->second.bytes_per_iter), median(it->second.busbw), 0.0};
          break;
        }
      }
      for (auto kind : kinds) {
        const auto f = scaling::fit_curve(kind, fp, options.predict, fo);
        if (!f.ok && f.predictions.empty()) {
          predictions.add_row({label, std::string(scaling::model_name(kind)), Cell(), Cell(), Cell(), Cell(), Cell(),
                               Cell(), Cell(), "not fitted: " + f.note});
          continue;
        }
        for (const auto& p : f.predictions) {
          // E' of a predicted time: GPU-hours against the reference, or under a
          // growing batch (a step does N/N_ref times the work) T_ref / T.
          const double e = options.global_batch_grows ? ref_time / p.time : ref_gpus * ref_time / (p.gpus * p.time);
          predictions.add_row({label, std::string(f.ok ? scaling::model_name(kind) : "bounds only"),
                               int64_t{p.gpus}, num(p.time), num(p.low), num(p.high), num(e),
                               num(f.loo_mean_abs_rel_error), num(f.loo_max_abs_rel_error),
                               f.ok ? f.formula : f.note});
        }
        if (f.ok && !f.note.empty())
          predictions.add_note(fmt::format("{} {}: {}", label, scaling::model_name(kind), f.note));
        if (!f.ok) break;  // bounds only: the same for every model
      }
      for (auto kind : kinds)
        for (const auto& a : scaling::model_assumptions(kind, fo.comm.has_value()))
          if (std::find(assumptions.begin(), assumptions.end(), a) == assumptions.end()) assumptions.push_back(a);
    }
  }
  for (const auto& a : assumptions) predictions.add_note("assumption: " + a);
  if (!options.predict.empty())
    predictions.add_note("low/high: 80% prediction interval, exp(+-z sd) with sd = sqrt(residual_sd^2 + (tau d)^2): "
                         "the fit's log residuals and each model's extrapolation spread per doubling on the MLPerf "
                         "v4.1 curves (docs/scaling.md, \"Prediction\"); one measured size gives bounds only");
  if (!knee_method.empty()) breakeven.add_note("rule (b): " + knee_method);
  for (const auto& n : weak_notes) main.add_note(n);
  if (weak_asked && higher)
    main.add_note(fmt::format("weak scaling: '{}' is a throughput, which already counts work; used as it is", metric));
  main.add_note("CI: " + ci_method);
  main.add_note("speedup S = T(ref)/T(N); efficiency E' = (N_ref*T_ref)/(N*T_N); GPU-hours = N*T/3600");
  if (weak)
    main.add_note(fmt::format("weak scaling: T is {} (so E' = T_step(ref)/T_step(N)); GPU-hours are per {}",
                              options.samples_per_gpu_step ? "step time / (N x samples per GPU step)" : "step time / N",
                              options.samples_per_gpu_step ? "sample" : "GPU-step of work"));
  if (higher) main.add_note(fmt::format("'{}' is higher-is-better: statistics are of time per unit = 1/{}", metric, metric));
  if (!seconds) main.add_note("the metric is not in seconds, so GPU-hours and cost are not shown");
  tables.push_back(std::move(main));
  tables.push_back(std::move(breakeven));

  // Comparisons between configurations, at each GPU count and each setting of the other keys.
  std::vector<report::Column> cmp_columns;
  for (const char* name : {"key", "a", "b", "others", "gpus", "n_a", "n_b", "median_a", "median_b", "ratio_b_a",
                           "ratio_low", "ratio_high", "welch_p", "mann_whitney_p", "differs"})
    cmp_columns.push_back(std::string_view(name).starts_with("median_") ? report::Column::significant(name, 4)
                                                                          : report::Column(name));
  report::Table cmp("Configurations compared", cmp_columns);
  std::vector<std::pair<std::string, std::pair<std::string, std::vector<std::string>>>> pairs;  // key, (a, bs)
  if (options.compare) {
    if (options.compare->values.size() != 2) fail("--compare {}: give exactly two values, KEY=A,B", options.compare->key);
    pairs.push_back({options.compare->key, {options.compare->values[0], {options.compare->values[1]}}});
  } else {
    for (const auto& [k, values] : order.vary)
      if (values.size() >= 2) pairs.push_back({k, {values[0], std::vector<std::string>(values.begin() + 1, values.end())}});
  }
  for (const auto& pair : pairs) {
    const auto& key = pair.first;  // not a structured binding: captured below (clang 14)
    const auto& ab = pair.second;
    const auto& a_value = ab.first;
    bool key_known = false;
    for (const auto& c : configs)
      for (const auto& kv : c) key_known |= kv.first == key;
    if (!key_known) fail("--compare {}: the sweep does not vary '{}'", key, key);
    for (const auto& b_value : ab.second) {
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
        for (const auto& [k1, g1] : groups) {
          if (k1.first != ca) continue;
          auto g2 = groups.find({cb, k1.second});
          if (g2 == groups.end() || g1.values.empty() || g2->second.values.empty()) continue;
          const auto ta = scaling::to_time_samples(g1.values, better);
          const auto tb = scaling::to_time_samples(g2->second.values, better);
          const auto c = scaling::compare(ta, tb, options.alpha);
          cmp.add_row({key, a_value, b_value, others.empty() ? std::string("") : label_of(others),
                       int64_t{k1.second}, static_cast<int64_t>(c.n_a), static_cast<int64_t>(c.n_b), c.median_a,
                       c.median_b, c.ratio, num(c.ratio_low), num(c.ratio_high), num(c.welch_p), c.mann_whitney_p,
                       std::isfinite(c.welch_p) ? Cell(c.differs) : Cell()});  // empty: fewer than 2 runs a side
        }
      }
    }
  }
  if (cmp.rows().size() > 0) {
    cmp.add_note(fmt::format("test: Welch's t-test on log times (decides 'differs' at alpha {}; empty with fewer than 2 runs a side); ratio_b_a = median "
                             "time b / a with the CI of the ratio of geometric means; Mann-Whitney U p-value (exact "
                             "without ties) as a distribution-free check",
                             options.alpha));
    tables.push_back(std::move(cmp));
  }
  if (!options.predict.empty()) tables.push_back(std::move(predictions));
  return tables;
}

}  // namespace scalescope::sweep
