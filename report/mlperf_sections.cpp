// MLPerf Training: per benchmark (and division), each accelerator model's
// systems against the number of accelerators. Drawn from the groups that
// mlperf::analyze computes for `scalescope mlperf analyze` (official scores,
// speedup, E' and break-even through scaling/); nothing is recomputed here.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"
#include "report/mlperf_tables.hpp"
#include "report/report_document.hpp"
#include "report/table.hpp"
#include "scaling/scaling.hpp"
#include "base/error.hpp"

namespace scalescope::report::detail {

namespace {

Json finite_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Per curve, the default model fitted on every measured size and asked for 2x
// and 4x the largest; then how far such predictions held on the curves themselves.
void add_prediction_blocks(Json& blocks, const std::vector<mlperf::Run>& runs) {
  std::vector<mlperf::ScalingCurve> curves;
  try {
    curves = mlperf::scaling_curves(runs, {});
  } catch (const Error&) {
    return;  // nothing scored: the sections above say so
  }
  std::vector<mlperf::CurveForecast> forecasts;
  for (const auto& c : curves) {
    if (c.sizes.size() < 2) continue;
    const int largest = c.sizes.back().accelerators;
    mlperf::PredictOptions p;
    p.predict = {largest * 2, largest * 4};
    mlperf::AnalyzeOptions only;
    only.benchmark = c.benchmark;
    only.accelerator = c.accelerator;
    for (auto& f : mlperf::predict(runs, only, p))
      if (f.curve.name() == c.name()) forecasts.push_back(std::move(f));
  }
  if (forecasts.empty()) return;
  blocks.push_back(paragraph(
      "Predictions: each curve (two or more sizes) fitted on every measured size and asked for twice and four "
      "times its largest size, with an 80% prediction interval. The tables after it show how far such "
      "predictions held when the curves' own larger sizes were hidden (`scalescope mlperf validate`)."));
  blocks.push_back(table_block(mlperf_predictions_table(forecasts)));
  const auto v = mlperf::validate(runs, {});
  if (v.curves > 0)
    for (const auto& t : validation_tables(v, false)) blocks.push_back(table_block(t));
}

// The charts of one group title (benchmark and division), a series per
// accelerator model.
void add_title_charts(Document& doc, const mlperf::MlperfScaling& scaling, const std::string& title, Json& blocks) {
  Json speedup_series = Json::array(), eff_series = Json::array(), ideal = Json::array();
  Json break_even_marks = Json::array();
  int max_n = 1, min_n = 1 << 30;
  for (const auto& g : scaling.groups) {
    if (g.title != title) continue;
    const auto& table = g.curve;
    if (table.rows.size() < 2) continue;  // one count: nothing to scale against
    Json sp = Json::array(), ep = Json::array();
    for (const auto& r : table.rows) {
      sp.push_back({r.gpus, finite_or_null(r.speedup)});
      ep.push_back({r.gpus, finite_or_null(r.efficiency)});
      max_n = std::max(max_n, r.gpus);
      min_n = std::min(min_n, r.gpus);
    }
    speedup_series.push_back({{"name", g.accelerator}, {"style", "line"}, {"points", std::move(sp)}});
    eff_series.push_back({{"name", g.accelerator}, {"style", "line"}, {"points", std::move(ep)}});
    const auto& be = table.break_even;
    if (be.by_threshold) {
      for (const auto& r : table.rows)
        if (r.gpus == *be.by_threshold)
          break_even_marks.push_back({{"x", r.gpus},
                                      {"y", finite_or_null(r.efficiency)},
                                      {"label", fmt::format("{} {}", g.accelerator, r.gpus)}});
    }
    const auto& last = table.rows.back();
    if (doc.mlperf_highlights < 8 && be.by_threshold && table.rows.size() >= 3) {
      doc.highlights.push_back(fmt::format("MLPerf {} on {}: E' >= {} up to {} accelerators (of {} measured)", title,
                                           g.accelerator, doc.options.threshold, *be.by_threshold, last.gpus));
      ++doc.mlperf_highlights;
    }
  }
  if (speedup_series.empty()) return;
  for (int n = min_n; n <= max_n; n *= 2) ideal.push_back({n, static_cast<double>(n) / min_n});
  if (ideal.back()[0] != max_n) ideal.push_back({max_n, static_cast<double>(max_n) / min_n});
  speedup_series.push_back(
      {{"name", "ideal (per smallest count)"}, {"style", "dashed"}, {"colour", "#888888"}, {"points", ideal}});
  blocks.push_back(
      {{"type", "chart"},
       {"kind", "xy"},
       {"title", fmt::format("{}: speedup against accelerators", title)},
       {"x", {{"name", "accelerators"}, {"log", true}}},
       {"y", {{"name", "speedup"}, {"log", true}}},
       {"series", std::move(speedup_series)},
       {"notes", Json::array({"Speedup relative to each accelerator model's smallest submitted count; the "
                              "ideal line is drawn from the smallest count over all models."})}});
  blocks.push_back({{"type", "chart"},
                    {"kind", "xy"},
                    {"title", fmt::format("{}: E' against accelerators", title)},
                    {"x", {{"name", "accelerators"}, {"log", true}}},
                    {"y", {{"name", "E'"}, {"min", 0}}},
                    {"series", std::move(eff_series)},
                    {"marks",
                     {{"y", Json::array({{{"value", doc.options.threshold},
                                          {"label", fmt::format("threshold {}", doc.options.threshold)}}})},
                      {"points", std::move(break_even_marks)}}},
                    {"notes", Json::array({"Pins: the break-even point by the E' rule (largest count with E' at or "
                                           "above the threshold)."})}});
}

}  // namespace

void add_mlperf_sections(Document& doc, const std::string& label, const std::vector<mlperf::Run>& runs) {
  if (runs.empty()) fail("{}: no MLPerf runs in this table", label);
  const size_t folders = mlperf::score_folders(runs).size();
  mlperf::AnalyzeOptions options;
  options.threshold = doc.options.threshold;
  if (!(options.threshold > 0 && options.threshold <= 1))
    fail("{}: the E' threshold {} is not in (0, 1]", label, options.threshold);
  mlperf::MlperfScaling scaling;
  try {
    scaling = mlperf::analyze(runs, options);
  } catch (const Error&) {
    // Its only refusal left (no --ref here, threshold checked above): nothing
    // scored with a known accelerator count. The paragraph says 0 scored.
  }
  size_t scored = 0;
  for (const auto& g : scaling.groups) scored += g.systems.size();
  Json blocks = Json::array();
  blocks.push_back(paragraph(fmt::format(
      "{} runs, {} result folders, {} scored{}. Per benchmark, division and accelerator model (as `scalescope mlperf "
      "analyze` groups them), each accelerator count is represented by its fastest scored system; speedup and E' "
      "are against the smallest count.",
      runs.size(), folders, scored,
      scaling.left_out.empty()
          ? ""
          : fmt::format(" ({} more without a known accelerator count)", scaling.left_out.size()))));
  // One pair of charts per group title (benchmark and division).
  std::vector<std::string> titles;
  for (const auto& g : scaling.groups)
    if (std::find(titles.begin(), titles.end(), g.title) == titles.end()) titles.push_back(g.title);
  for (const auto& title : titles) add_title_charts(doc, scaling, title, blocks);
  blocks.push_back(table_block(mlperf_break_even_table(scaling)));
  add_prediction_blocks(blocks, runs);
  doc.sections.push_back(section("MLPerf Training: " + label, "Scaling across submitted systems", std::move(blocks)));
}

void add_mlperf_csv_sections(Document& doc, const std::string& label, const std::filesystem::path& csv) {
  add_mlperf_sections(doc, label, mlperf::read_runs_csv(csv));
}

}  // namespace scalescope::report::detail
