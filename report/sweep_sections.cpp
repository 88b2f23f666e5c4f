// A sweep database: per configuration, time and E' against GPU count (with
// confidence intervals, the ideal line, the threshold and break-even points),
// time against GPU-hours with the Pareto front, and the fitted prediction
// beyond the measured counts drawn dashed. All figures come from scaling/.

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/report_document.hpp"
#include "report/scaling_tables.hpp"
#include "report/table.hpp"
#include "scaling/scaling.hpp"
#include "sweep/scaling_study.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"

namespace scalescope::report::detail {

namespace {

Json num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// The effect of each change of a varied setting (the study's comparisons,
// the same objects `scalescope scaling` prints; default pairs: each key's
// first value against each of its others, at every GPU count): a forest plot
// of time ratios with their CIs and the table. Nothing when the sweep varies nothing.
void add_effects(Document& doc, const sweep::ScalingStudy& study, const std::string& name, Json& blocks) {
  if (study.comparisons.empty()) return;
  Json categories = Json::array(), points = Json::array();
  struct Effect {
    double ratio, low, high;
    std::string text;
  };
  std::vector<Effect> significant;
  for (const auto& x : study.comparisons) {
    const auto& c = x.result;
    if (!std::isfinite(c.ratio) || c.ratio <= 0) continue;
    const std::string label = fmt::format("{}={} vs {}{}{}, {} GPU{}", x.key, x.b, x.a, x.others.empty() ? "" : ", ",
                                          x.others, x.gpus, x.gpus == 1 ? "" : "s");
    categories.push_back(label);
    const bool tested = std::isfinite(c.welch_p);  // fewer than 2 runs a side: no test
    const bool yes = tested && c.differs;
    const bool interval = std::isfinite(c.ratio_low) && std::isfinite(c.ratio_high);
    points.push_back({{"value", c.ratio},
                      {"low", num(c.ratio_low)},
                      {"high", num(c.ratio_high)},
                      {"state", !tested       ? "untested"
                                : !yes        ? "same"
                                : c.ratio > 1 ? "slower"
                                              : "faster"}});
    if (yes)
      significant.push_back(
          {c.ratio, c.ratio_low, c.ratio_high,
           fmt::format("{}: {}: time x{:.2f}{}", name, label, c.ratio,
                       interval ? fmt::format(" (95% CI {:.2f}-{:.2f})", c.ratio_low, c.ratio_high) : std::string())});
  }
  if (!points.empty()) {
    blocks.push_back({{"type", "chart"},
                      {"kind", "forest"},
                      {"title", "Effect of each change (time ratio, 95% CI)"},
                      {"categories", std::move(categories)},
                      {"points", std::move(points)},
                      {"x", {{"name", "median time of the change / median time of the reference (log scale)"}}},
                      {"tall", study.comparisons.size() > 8},
                      {"notes", Json::array({"Left of 1: the change makes a run faster; right: slower. Orange (slower) "
                                             "or green (faster) when Welch's t-test on log times finds a difference at "
                                             "alpha 0.05, grey when it does not, purple when a side has fewer than 2 "
                                             "runs (no test, no interval)."})}});
  }
  std::sort(significant.begin(), significant.end(),
            [](const Effect& x, const Effect& y) { return std::abs(std::log(x.ratio)) > std::abs(std::log(y.ratio)); });
  for (size_t i = 0; i < significant.size() && i < 3; ++i) doc.highlights.push_back(significant[i].text);
  blocks.push_back(table_block(scaling_comparison_table(study), {3}));
}

// The three charts of a sweep (time, E' and cost against GPUs), filled one
// configuration at a time.
struct StudyCharts {
  Json time_series = Json::array(), eff_series = Json::array(), cost_series = Json::array();
  Json eff_marks = Json::array(), cost_marks = Json::array();
};

// Break-even GPU count -> the configurations that reach it, by each rule.
struct BreakEvens {
  std::map<int, std::vector<std::string>> by_threshold, by_knee;
};

// How many runs measured the metric, and what the times are.
Json study_summary(const sweep::StoredSweep& stored, const sweep::ScalingStudy& study) {
  size_t ok = 0;
  for (const auto& g : study.runs) ok += g.with_metric;
  const std::string& metric = study.metric;
  return paragraph(fmt::format("{} runs planned, {} with a {} result, {} failed or without it. Metric: {}{}{}.",
                               stored.planned_runs, ok, metric, study.recorded_runs - ok, metric,
                               study.higher_is_better ? " (higher is better; drawn as time per unit = 1/x)" : "",
                               !study.weak ? ""
                               : study.samples_per_gpu_step
                                   ? fmt::format("; weak scaling: times are seconds per sample (step time / (N x {:g}))",
                                                 *study.samples_per_gpu_step)
                                   : std::string("; weak scaling: times are per unit of work (step time / N)")));
}

// One configuration's scaling table (report/scaling_tables.hpp) and its
// measured series in the charts.
Table config_table(const sweep::ConfigScaling& config, const sweep::ScalingStudy& study, const std::string& prefix,
                   const std::string& colour, StudyCharts& charts) {
  const scaling::ScalingTable& table = *config.table;
  const auto& ref =
      *std::find_if(table.rows.begin(), table.rows.end(), [&](const auto& r) { return r.gpus == table.ref_gpus; });
  Json tp = Json::array(), te = Json::array(), ep = Json::array(), ee = Json::array(), ideal = Json::array();
  Json cp = Json::array(), front = Json::array();
  for (const auto& r : table.rows) {
    tp.push_back({r.gpus, r.time.median});
    if (r.time.n >= 2) te.push_back({r.gpus, num(r.time.ci_low), num(r.time.ci_high)});
    ep.push_back({r.gpus, num(r.efficiency)});
    if (std::isfinite(r.efficiency_low) && std::isfinite(r.efficiency_high))
      ee.push_back({r.gpus, r.efficiency_low, r.efficiency_high});
    ideal.push_back({r.gpus, ref.time.median * ref.gpus / r.gpus});
    cp.push_back({r.gpu_hours, r.time.median});
    if (r.pareto) front.push_back({r.gpu_hours, r.time.median});
  }
  charts.time_series.push_back(
      {{"name", prefix + "measured"}, {"style", "line"}, {"colour", colour}, {"points", tp}, {"errors", te}});
  charts.time_series.push_back(
      {{"name", prefix + "ideal"}, {"style", "dashed"}, {"colour", "#9e9e9e"}, {"points", ideal}});
  charts.eff_series.push_back(
      {{"name", prefix + "measured"}, {"style", "line"}, {"colour", colour}, {"points", ep}, {"errors", ee}});
  charts.cost_series.push_back({{"name", prefix + "runs"}, {"style", "points"}, {"colour", colour}, {"points", cp}});
  charts.cost_series.push_back(
      {{"name", prefix + "Pareto front"}, {"style", "line"}, {"colour", colour}, {"points", front}});
  return scaling_config_table(config, study);
}

// The break-even points of one configuration: marked on the charts, noted
// under its table and counted for the highlights.
void add_break_even(const sweep::ConfigScaling& config, Table& t, StudyCharts& charts, BreakEvens& break_evens) {
  const scaling::ScalingTable& table = *config.table;
  const auto& be = table.break_even;
  auto row_of = [&](int g) {
    return std::find_if(table.rows.begin(), table.rows.end(), [&](const auto& r) { return r.gpus == g; });
  };
  if (be.by_threshold) {
    const auto r = row_of(*be.by_threshold);
    charts.eff_marks.push_back(
        {{"x", r->gpus}, {"y", num(r->efficiency)}, {"label", fmt::format("E' rule: {}", r->gpus)}});
    t.add_note(
        fmt::format("Break-even by the E' rule (largest N with E' >= {}): {} GPUs.", be.threshold, *be.by_threshold));
    break_evens.by_threshold[*be.by_threshold].push_back(config.label);
  }
  if (be.by_knee) {
    const auto r = row_of(*be.by_knee);
    charts.cost_marks.push_back(
        {{"x", r->gpu_hours}, {"y", r->time.median}, {"label", fmt::format("knee: {} GPUs", r->gpus)}});
    t.add_note(fmt::format("Break-even by the Pareto knee ({}): {} GPUs.", be.knee_method, *be.by_knee));
    break_evens.by_knee[*be.by_knee].push_back(config.label);
  }
  for (const auto& n : be.notes) t.add_note(n);
}

// Prediction beyond the measured counts: drawn dashed, from the measured
// point on, and only where it may be trusted: one doubling past the largest
// measured count, and only when leave-one-out says how far the fit misses
// (within kTrustedError) on the points it was made from. Otherwise a note
// says why it is not drawn.
void add_prediction(const sweep::ConfigScaling& config, int largest, const std::string& prefix,
                    const std::string& colour, Table& t, StudyCharts& charts) {
  constexpr double kTrustedError = 0.25;
  const scaling::ScalingTable& table = *config.table;
  const sweep::ModelPrediction* model = config.predictions.empty() ? nullptr : &config.predictions.front();
  const scaling::CurveFit* fit = model ? &model->fit : nullptr;
  const bool checked = fit && fit->ok && std::isfinite(fit->loo_mean_abs_rel_error);
  if (!config.not_predicted.empty()) {
    t.add_note("No prediction: " + config.not_predicted + ".");
  } else if (fit && fit->ok && !checked) {
    t.add_note(
        fmt::format("Prediction not drawn: {} measured GPU count(s) are too few to check the fit by "
                    "leave-one-out ({}).",
                    fit->points, fit->formula));
  } else if (checked && fit->loo_mean_abs_rel_error > kTrustedError) {
    t.add_note(
        fmt::format("Prediction not drawn: the fit ({}) misses left-out points by {:.1f}% on average, more "
                    "than the {:.0f}% it is trusted at.",
                    fit->formula, 100 * fit->loo_mean_abs_rel_error, 100 * kTrustedError));
  } else if (checked && !fit->predictions.empty()) {
    Json pt = Json::array({{table.rows.back().gpus, table.rows.back().time.median}});
    Json pe = Json::array({{table.rows.back().gpus, num(table.rows.back().efficiency)}});
    for (size_t i = 0; i < fit->predictions.size(); ++i) {
      pt.push_back({fit->predictions[i].gpus, fit->predictions[i].time});
      pe.push_back({fit->predictions[i].gpus, num(model->efficiency[i])});
    }
    charts.time_series.push_back(
        {{"name", prefix + "predicted"}, {"style", "dashed"}, {"colour", colour}, {"points", pt}});
    charts.eff_series.push_back(
        {{"name", prefix + "predicted"}, {"style", "dashed"}, {"colour", colour}, {"points", pe}});
    t.add_note(
        fmt::format("Prediction ({}): {}; leave-one-out mean error {:.1f}%; drawn up to {} GPUs, one doubling "
                    "past the largest measured count.",
                    scaling::model_name(model->kind), fit->formula, 100 * fit->loo_mean_abs_rel_error, largest * 2));
  } else if (fit && !fit->note.empty()) {
    t.add_note("No prediction: " + fit->note);
  }
}

// The three charts, when some configuration was scaled.
void add_study_charts(Json& blocks, const sweep::ScalingStudy& study, StudyCharts charts, double threshold) {
  if (charts.time_series.empty()) return;
  const std::string y_name = study.weak
                                 ? (study.samples_per_gpu_step ? "time per sample (s)" : "time per unit of work (s)")
                             : study.higher_is_better ? "time per unit = 1/" + study.metric
                                                      : std::string("time (s)");
  const Json log2 = {{"name", "GPUs"}, {"log", true}};
  blocks.push_back(
      {{"type", "chart"},
       {"kind", "xy"},
       {"title", "Time against GPU count"},
       {"x", log2},
       {"y", {{"name", y_name}, {"log", true}}},
       {"series", std::move(charts.time_series)},
       {"notes", Json::array({"Bars: 95% confidence interval of the median. Dashed grey: ideal scaling from "
                              "the reference count; dashed colour: model prediction beyond the measured counts."})}});
  blocks.push_back(
      {{"type", "chart"},
       {"kind", "xy"},
       {"title", "E' against GPU count"},
       {"x", log2},
       {"y", {{"name", "E'"}, {"min", 0}}},
       {"series", std::move(charts.eff_series)},
       {"marks",
        {{"y", Json::array({{{"value", threshold}, {"label", fmt::format("threshold {}", threshold)}}})},
         {"points", std::move(charts.eff_marks)}}},
       {"notes",
        Json::array({"E' = (N_ref x T_ref) / (N x T_N); the red diamond marks the break-even point by the E' rule."})}});
  blocks.push_back(
      {{"type", "chart"},
       {"kind", "xy"},
       {"title", "Time against GPU-hours"},
       {"x",
        {{"name", study.seconds ? "GPU-hours per unit of work"
                                : "N x value / 3600 (not GPU-hours: the metric is not in seconds)"}}},
       {"y", {{"name", y_name}}},
       {"series", std::move(charts.cost_series)},
       {"marks", {{"points", std::move(charts.cost_marks)}}},
       {"notes", Json::array({"The line joins the Pareto front (no other count is both faster and cheaper); "
                              "the red diamond marks its knee."})}});
}

// One line per rule and sweep on the terminal, however many configurations.
void add_break_even_highlights(Document& doc, const std::string& name, const BreakEvens& break_evens,
                               size_t configs_scaled) {
  auto grouped = [&](const std::map<int, std::vector<std::string>>& groups) {
    std::string text;
    for (const auto& [gpus, labels] : groups) {
      const bool all = labels.size() == configs_scaled && configs_scaled > 1;
      text += fmt::format(
          "{}{} GPU{} ({})", text.empty() ? "" : "; ", gpus, gpus == 1 ? "" : "s",
          all ? fmt::format("all {} configurations", labels.size()) : fmt::format("{}", fmt::join(labels, ", ")));
    }
    return text;
  };
  if (!break_evens.by_threshold.empty())
    doc.highlights.push_back(fmt::format("sweep {}: break-even by the E' >= {} rule: {}", name,
                                         doc.options.threshold, grouped(break_evens.by_threshold)));
  if (!break_evens.by_knee.empty())
    doc.highlights.push_back(fmt::format("sweep {}: Pareto knee at {}", name, grouped(break_evens.by_knee)));
}

}  // namespace

void add_sweep_sections(Document& doc, const std::filesystem::path& path) {
  const sweep::StoredSweep stored = sweep::read_sweep(path);
  // The same study `scalescope scaling` prints, with the report's options;
  // the prediction drawn is one doubling past the largest measured count.
  sweep::ScalingStudyOptions options;
  options.threshold = doc.options.threshold;
  options.weak = doc.options.weak;
  options.samples_per_gpu_step = doc.options.samples_per_gpu_step;
  int largest = 0;
  for (const auto& r : stored.runs) largest = std::max(largest, r.gpus);
  if (largest > 0) options.predict = {largest * 2};
  const std::string title = "Sweep: " + path.filename().string();
  Json blocks = Json::array();
  // A Slurm sweep's jobs, shown with or without a study (when no run measured
  // anything, the jobs are what a user looks at).
  const Table jobs = slurm_jobs_table(stored);
  const auto add_jobs = [&] {
    if (!jobs.rows().empty()) blocks.push_back(table_block(jobs, {1}));
  };
  sweep::ScalingStudy study;
  try {
    study = sweep::study_scaling(stored, options);
  } catch (const Error& e) {
    blocks.push_back(paragraph(fmt::format("No scaling analysis: {}", e.what()), "skipped"));
    add_jobs();
    doc.sections.push_back(section(title, fmt::format("created {}", stored.created), std::move(blocks)));
    return;
  }
  blocks.push_back(study_summary(stored, study));
  for (const auto& n : study.work_notes) blocks.push_back(paragraph(n, "note"));
  StudyCharts charts;
  BreakEvens break_evens;
  std::vector<Table> tables;
  static const char* kPalette[] = {"#2f6fde", "#e08a00", "#2e9d58", "#c62828", "#7b4fc9", "#00838f"};
  size_t configs_scaled = 0;
  for (const auto& config : study.configs) {
    if (!config.table) {
      blocks.push_back(paragraph(fmt::format("{}: no scaling table ({})", config.label, config.left_out), "skipped"));
      continue;
    }
    const std::string colour = kPalette[configs_scaled++ % 6];
    const std::string prefix = study.configs.size() > 1 ? config.label + ": " : "";
    Table t = config_table(config, study, prefix, colour, charts);
    add_break_even(config, t, charts, break_evens);
    add_prediction(config, largest, prefix, colour, t, charts);
    tables.push_back(std::move(t));
  }
  add_study_charts(blocks, study, std::move(charts), doc.options.threshold);
  add_break_even_highlights(doc, path.filename().string(), break_evens, configs_scaled);
  for (const auto& t : tables) blocks.push_back(table_block(t));
  add_jobs();
  add_effects(doc, study, path.filename().string(), blocks);
  doc.sections.push_back(section(
      title, fmt::format("{} configuration(s), created {}", study.configs.size(), stored.created), std::move(blocks)));
}

}  // namespace scalescope::report::detail
