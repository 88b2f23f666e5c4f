// Predictions and their validation as tables (terminal, CSV, JSON alike).

#include "report/prediction_tables.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mlperf/mlperf.hpp"
#include "scaling/scaling.hpp"

namespace scalescope::report {

namespace {

Cell num(double v) { return std::isfinite(v) ? Cell(v) : Cell(); }
Cell pct(double v) { return std::isfinite(v) ? Cell(100.0 * v) : Cell(); }

std::string interval_note(double level, scaling::ModelKind kind) {
  return fmt::format(
      "low/high: {:.0f}% prediction interval, exp(-z sd) below the fastest and exp(z sd) above the slowest time "
      "over the batches a size may run at ({}: beyond the fitted sizes without a planned batch, every batch "
      "from the largest fitted size's to its per-accelerator one; else the prediction), sd = sqrt(residual_sd^2 "
      "+ (tau d)^2): residual_sd from the fit's log residuals (when sizes outnumber parameters), tau the {} "
      "model's spread per doubling of extrapolation on the MLPerf v4.1 curves in the extrapolation's bucket "
      "(2x/4x/8x/16x+: {:.3g}/{:.3g}/{:.3g}/{:.3g}), d = 1 + log2(extrapolation factor); one measured size gives "
      "bounds only (ideal scaling to no speedup)",
      level * 100, scaling::model_name(scaling::ModelKind::kStepConverge), scaling::model_name(kind),
      scaling::extrapolation_spread(kind, 2), scaling::extrapolation_spread(kind, 4),
      scaling::extrapolation_spread(kind, 8), scaling::extrapolation_spread(kind, 16));
}

// The model of a validation row, with the setting of the batch at the predicted size.
std::string model_label(scaling::ModelKind kind, bool batch_planned) {
  return batch_planned ? fmt::format("{} (batch as planned)", scaling::model_name(kind))
                       : std::string(scaling::model_name(kind));
}

}  // namespace

Table mlperf_predictions_table(const std::vector<mlperf::CurveForecast>& forecasts) {
  Table t("MLPerf: predicted time to train",
          {Column("benchmark"), Column("accelerator"), Column("division"), Column("accelerators"),
           Column("predicted_minutes", 3), Column("low", 3), Column("high", 3), Column("measured_minutes", 3),
           Column("measured_system"), Column("extrapolation", 2), Column("global_batch_size", 0), Column("model"),
           Column("fitted_sizes")});
  for (const auto& f : forecasts) {
    const std::string fitted = fmt::format("{}", fmt::join(f.fitted, ","));
    for (size_t i = 0; i < f.fit.predictions.size(); ++i) {
      const auto& p = f.fit.predictions[i];
      const auto& m = f.measured[i];
      t.add_row({f.curve.benchmark, f.curve.accelerator, f.curve.division, int64_t{p.gpus},
                 f.fit.ok ? num(p.time) : Cell(), num(p.low), num(p.high), m ? Cell(m->minutes) : Cell(),
                 m ? Cell(m->system) : Cell(), num(p.extrapolation), num(p.global_batch),
                 std::string(f.fit.ok ? scaling::model_name(f.fit.kind) : "bounds only"), fitted});
    }
    if (f.fit.predictions.empty()) t.add_note(fmt::format("{}: not predicted: {}", f.curve.name(), f.fit.note));
    else if (f.fit.ok)
      t.add_note(fmt::format("{}: {}{}", f.curve.name(), f.fit.formula, f.fit.note.empty() ? "" : "; " + f.fit.note));
    else t.add_note(fmt::format("{}: {}", f.curve.name(), f.fit.note));
  }
  if (!forecasts.empty()) {
    const auto kind = forecasts.front().fit.kind;
    t.add_note(interval_note(forecasts.front().fit.level, kind));
    t.add_note(
        "curve: the fastest scored system at each accelerator count; measured_minutes: that system's "
        "official score, empty when no system of that size was submitted");
    for (const auto& a : scaling::model_assumptions(kind, false)) t.add_note("assumption: " + a);
  }
  return t;
}

std::vector<Table> validation_tables(const scaling::Validation& v, bool cases) {
  std::vector<Table> out;
  Table by_factor(fmt::format("Prediction error by extrapolation factor ({} curves with at least 4 sizes)", v.curves),
                  {Column("model"), Column("extrapolation"), Column("cases"), Column("median_error_pct", 1),
                   Column("worst_error_pct", 1), Column("coverage_pct", 0), Column("coverage_held_out_pct", 0),
                   Column("worst_case")});
  for (const auto& b : v.buckets)
    by_factor.add_row({model_label(b.kind, b.batch_planned), b.bucket, static_cast<int64_t>(b.cases),
                       pct(b.median_abs_rel_error), pct(b.worst_abs_rel_error), pct(b.coverage),
                       pct(b.coverage_held_out), b.worst});
  by_factor.add_note(
      "each curve (the fastest system at each size) is fitted on its smallest k sizes, k = 2 .. "
      "sizes-1, and every larger size is predicted; error = |predicted - measured| / measured; "
      "extrapolation = predicted size / largest fitted size (2x: below 2.83, 4x: below 5.66, 8x: "
      "below 11.3, 16x+: the rest)");
  by_factor.add_note(fmt::format(
      "coverage: share of cases whose {:.0f}% prediction interval holds the measured time; held out: the "
      "interval's spread tau re-estimated (conformal quantile, per extrapolation bucket) without the case's "
      "benchmark",
      v.level * 100));
  by_factor.add_note(
      "batch as planned: the predicted size's measured global batch is given to the model (a "
      "choice made before the run, as a user would know it); otherwise the batch there is "
      "extrapolated from the fitted sizes");
  for (const auto& t : v.tau_estimates)
    by_factor.add_note(fmt::format("tau of {} at {} on these cases: {:.3f} (the one used: {:.3f})",
                                   model_label(t.kind, t.batch_planned), t.bucket, t.tau, t.used));
  out.push_back(std::move(by_factor));

  Table per_curve(fmt::format("Prediction error per curve ({}, the default model)",
                              scaling::model_name(scaling::kDefaultCurveModel)),
                  {Column("curve"), Column("batch"), Column("sizes"), Column("cases"), Column("median_error_pct", 1),
                   Column("worst_error_pct", 1), Column("worst_fitted_up_to"), Column("worst_at")});
  for (const auto& c : v.per_curve) {
    if (c.kind != scaling::kDefaultCurveModel) continue;
    per_curve.add_row({c.curve, std::string(c.batch_planned ? "as planned" : "extrapolated"),
                       static_cast<int64_t>(c.sizes), static_cast<int64_t>(c.cases), pct(c.median_abs_rel_error),
                       pct(c.worst_abs_rel_error), int64_t{c.worst_fit_max_gpus}, int64_t{c.worst_gpus}});
  }
  out.push_back(std::move(per_curve));

  if (cases) {
    Table all("Validation cases",
              {Column("curve"), Column("model"), Column("fit_sizes"), Column("fitted_up_to"), Column("accelerators"),
               Column("extrapolation", 2), Column("predicted", 3), Column("low", 3), Column("high", 3),
               Column("measured", 3), Column("error_pct", 1), Column("covered"), Column("covered_held_out")});
    for (const auto& c : v.cases)
      all.add_row({c.curve, model_label(c.kind, c.batch_planned), static_cast<int64_t>(c.fit_points),
                   int64_t{c.fit_max_gpus}, int64_t{c.gpus}, c.factor, c.predicted, num(c.low), num(c.high), c.measured,
                   pct(c.rel_error), std::string(c.covered ? "yes" : "no"),
                   std::string(c.covered_held_out ? "yes" : "no")});
    out.push_back(std::move(all));
  }
  return out;
}

}  // namespace scalescope::report
