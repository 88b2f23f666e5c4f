// MLPerf Training: per benchmark, each accelerator model's systems against the
// number of accelerators (official scores via mlperf/, speedup, E' and
// break-even through scaling/, the same code as sweeps).

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"
#include "report/prediction_tables.hpp"
#include "report/report_document.hpp"
#include "report/table.hpp"
#include "scaling/scaling.hpp"
#include "trace/error.hpp"

namespace scalescope::report::detail {

namespace {

struct Group {
  std::string accelerator;  // display name
  std::map<int, const mlperf::Score*> fastest;  // accelerators -> fastest scored system with that many
  size_t systems = 0;
};

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

}  // namespace

void add_mlperf_sections(Document& doc, const std::string& label, const std::vector<mlperf::Run>& runs) {
  if (runs.empty()) fail("{}: no MLPerf runs in this table", label);
  const std::vector<mlperf::Score> scores = mlperf::score_folders(runs);
  std::map<std::string, std::map<std::string, Group>> groups;  // benchmark -> accelerator key -> group
  size_t scored = 0;
  for (const auto& s : scores) {
    if (!s.minutes || s.accelerators <= 0) continue;
    ++scored;
    auto& g = groups[s.benchmark][mlperf::accelerator_key(s.accelerator)];
    if (g.accelerator.empty()) g.accelerator = mlperf::accelerator_display(s.accelerator);
    ++g.systems;
    auto& slot = g.fastest[s.accelerators];
    if (slot == nullptr || *s.minutes < *slot->minutes) slot = &s;
  }
  Json blocks = Json::array();
  blocks.push_back(paragraph(fmt::format(
      "{} runs, {} result folders, {} scored. Per benchmark and accelerator model, each accelerator count is "
      "represented by its fastest scored system; speedup and E' are against the smallest count.",
      runs.size(), scores.size(), scored)));
  Table summary("Break-even per benchmark and accelerator",
                {Column("benchmark"), Column("accelerator"), Column("systems"), Column("counts"), Column("reference"),
                 Column("largest"), Column("E' at largest", 3), Column("break-even (E' rule)"), Column("break-even (knee)")});
  for (const auto& [benchmark, by_acc] : groups) {
    Json speedup_series = Json::array(), eff_series = Json::array(), ideal = Json::array();
    Json break_even_marks = Json::array();
    int max_n = 1, min_n = 1 << 30;
    for (const auto& [key, g] : by_acc) {
      if (g.fastest.size() < 2) continue;  // one count: nothing to scale against
      std::vector<scaling::ScalingPoint> points;
      for (const auto& [n, s] : g.fastest) points.push_back({n, {*s->minutes}, {}});
      scaling::ScalingOptions opts;
      opts.threshold = doc.options.threshold;
      const auto table = scaling::scaling_table(points, opts);
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
            break_even_marks.push_back({{"x", r.gpus}, {"y", finite_or_null(r.efficiency)},
                                        {"label", fmt::format("{} {}", g.accelerator, r.gpus)}});
      }
      const auto& last = table.rows.back();
      summary.add_row({benchmark, g.accelerator, static_cast<int64_t>(g.systems), static_cast<int64_t>(table.rows.size()),
                       fmt::format("{} ({})", table.ref_gpus, g.fastest.at(table.ref_gpus)->system),
                       fmt::format("{} ({})", last.gpus, g.fastest.at(last.gpus)->system), last.efficiency,
                       be.by_threshold ? Cell(int64_t{*be.by_threshold}) : Cell(std::string("-")),
                       be.by_knee ? Cell(int64_t{*be.by_knee}) : Cell(std::string("-"))});
      if (doc.mlperf_highlights < 8 && be.by_threshold && table.rows.size() >= 3) {
        doc.highlights.push_back(fmt::format("MLPerf {} on {}: E' >= {} up to {} accelerators (of {} measured)", benchmark,
                                             g.accelerator, doc.options.threshold, *be.by_threshold, last.gpus));
        ++doc.mlperf_highlights;
      }
    }
    if (speedup_series.empty()) continue;
    for (int n = min_n; n <= max_n; n *= 2) ideal.push_back({n, static_cast<double>(n) / min_n});
    if (ideal.back()[0] != max_n) ideal.push_back({max_n, static_cast<double>(max_n) / min_n});
    speedup_series.push_back({{"name", "ideal (per smallest count)"}, {"style", "dashed"}, {"colour", "#888888"}, {"points", ideal}});
    blocks.push_back({{"type", "chart"}, {"kind", "xy"}, {"title", fmt::format("{}: speedup against accelerators", benchmark)},
                      {"x", {{"name", "accelerators"}, {"log", true}}}, {"y", {{"name", "speedup"}, {"log", true}}},
                      {"series", std::move(speedup_series)},
                      {"notes", Json::array({"Speedup relative to each accelerator model's smallest submitted count; the "
                                             "ideal line is drawn from the smallest count over all models."})}});
    blocks.push_back({{"type", "chart"}, {"kind", "xy"}, {"title", fmt::format("{}: E' against accelerators", benchmark)},
                      {"x", {{"name", "accelerators"}, {"log", true}}}, {"y", {{"name", "E'"}, {"min", 0}}},
                      {"series", std::move(eff_series)},
                      {"marks", {{"y", Json::array({{{"value", doc.options.threshold},
                                                      {"label", fmt::format("threshold {}", doc.options.threshold)}}})},
                                 {"points", std::move(break_even_marks)}}},
                      {"notes", Json::array({"Pins: the break-even point by the E' rule (largest count with E' at or "
                                             "above the threshold)."})}});
  }
  blocks.push_back(table_block(summary));
  add_prediction_blocks(blocks, runs);
  doc.sections.push_back(section("MLPerf Training: " + label, "Scaling across submitted systems", std::move(blocks)));
}

void add_mlperf_csv_sections(Document& doc, const std::string& label, const std::filesystem::path& csv) {
  add_mlperf_sections(doc, label, mlperf::read_runs_csv(csv));
}

}  // namespace scalescope::report::detail
