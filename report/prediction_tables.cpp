// Predictions and their validation as tables (terminal, CSV, JSON alike).

#include "report/mlperf_tables.hpp"

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
  const auto& cal = scaling::default_spread_calibration();
  return fmt::format(
      "low/high: {:.0f}% prediction interval, exp(-z sd) below the fastest and exp(z sd) above the slowest time "
      "over the batches a size may run at (batch_low to batch_high; {}: beyond the fitted sizes without a "
      "planned batch, every batch from the middle of the largest fitted size's and its per-accelerator one to "
      "the latter; else the assumed "
      "batch), sd = sqrt(residual_sd^2 + (tau d)^2): residual_sd from the fit's log residuals (when sizes "
      "outnumber parameters), tau the {} model's spread per unit of distance in the extrapolation's bucket "
      "(2x/4x/8x/16x+: {:.3g}/{:.3g}/{:.3g}/{:.3g}; calibration: {}), d the extrapolation distance ({}); one "
      "measured size gives bounds only (ideal scaling to no speedup)",
      level * 100, scaling::model_name(scaling::ModelKind::kStepConverge), scaling::model_name(kind),
      scaling::extrapolation_spread(kind, 2), scaling::extrapolation_spread(kind, 4),
      scaling::extrapolation_spread(kind, 8), scaling::extrapolation_spread(kind, 16), cal.source,
      scaling::spread_distance_name(cal.distance));
}

// The model of a validation row, with the setting of the batch at the predicted size.
std::string model_label(scaling::ModelKind kind, bool batch_planned) {
  return batch_planned ? fmt::format("{} (batch as planned)", scaling::model_name(kind))
                       : std::string(scaling::model_name(kind));
}

}  // namespace

Cell validated_range_cell(const std::string& outside_validated) {
  return outside_validated.empty() ? Cell(std::string("yes")) : Cell(outside_validated);
}

Table mlperf_predictions_table(const std::vector<mlperf::CurveForecast>& forecasts) {
  Table t("MLPerf: predicted time to train",
          {Column("benchmark"), Column("accelerator"), Column("division"), Column("accelerators"),
           Column("predicted_minutes", 3), Column("low", 3), Column("high", 3), Column("measured_minutes", 3),
           Column("measured_system"), Column("extrapolation", 2), Column("global_batch_size", 0),
           Column("batch_basis"), Column("batch_low", 0), Column("batch_high", 0), Column("steps_to_converge", 0),
           Column("step_seconds", 3), Column("validated_range"), Column("model"), Column("fitted_sizes")});
  for (const auto& f : forecasts) {
    const std::string fitted = fmt::format("{}", fmt::join(f.fitted, ","));
    for (size_t i = 0; i < f.fit.predictions.size(); ++i) {
      const auto& p = f.fit.predictions[i];
      const auto& m = f.measured[i];
      t.add_row({f.curve.benchmark, f.curve.accelerator, f.curve.division, int64_t{p.gpus},
                 f.fit.ok ? num(p.time) : Cell(), num(p.low), num(p.high), m ? Cell(m->minutes) : Cell(),
                 m ? Cell(m->system) : Cell(), num(p.extrapolation), num(p.global_batch),
                 std::string(scaling::batch_basis_name(p.batch_basis)), num(p.batch_low), num(p.batch_high),
                 num(p.steps), num(p.step_time * 60.0), validated_range_cell(p.outside_validated),
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
        "global_batch_size: the batch assumed at that size; batch_basis: measured (logged there), planned "
        "(--planned-batch) or extrapolated (not given: the interval spans batch_low to batch_high); "
        "steps_to_converge = P(B)/B at the assumed batch, step_seconds = predicted time / steps (a batch "
        "change moves the steps through P(B)/B and the step through k B/N + c)");
    t.add_note(
        "validated_range: yes where the backtests cover the prediction (its extrapolation bucket has at least " +
        std::to_string(scaling::kMinValidatedCases) +
        " cases, the extrapolation is no larger than theirs, the benchmark was among them); else 'outside the "
        "validated range' and why: the interval there is an extrapolation of the calibration, not a measured one");
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

std::vector<Table> round_validation_tables(const mlperf::RoundValidation& rv, bool cases) {
  const auto& v = rv.validation;
  std::vector<Table> out = validation_tables(v, cases);
  const std::string tested = fmt::format("{}", fmt::join(rv.test_rounds, ", "));
  if (!rv.fit_rounds.empty() || rv.test_rounds.size() > 1 || (rv.test_rounds.size() == 1 && !tested.empty())) {
    const std::string split = rv.fit_rounds.empty()
                                  ? fmt::format("tested on {}, the given calibration", tested)
                                  : fmt::format("spread fitted on {}, tested on {}",
                                                fmt::format("{}", fmt::join(rv.fit_rounds, ", ")), tested);
    for (auto& t : out) t.add_note("rounds: " + split);
  }
  Table per_group("Prediction error and coverage per benchmark",
                  {Column("benchmark"), Column("model"), Column("curves"), Column("cases"),
                   Column("median_error_pct", 1), Column("worst_error_pct", 1), Column("coverage_pct", 0)});
  for (const auto& g : v.per_group)
    if (g.kind == scaling::kDefaultCurveModel)
      per_group.add_row({g.group, model_label(g.kind, g.batch_planned), static_cast<int64_t>(g.curves),
                         static_cast<int64_t>(g.cases), pct(g.median_abs_rel_error), pct(g.worst_abs_rel_error),
                         pct(g.coverage)});
  per_group.add_note(fmt::format("the default model ({}); coverage with the calibration below",
                                 scaling::model_name(scaling::kDefaultCurveModel)));
  out.insert(out.begin() + 2, std::move(per_group));
  const auto& cal = rv.calibration;
  Table spread("The interval's spread used",
               {Column("model"), Column("extrapolation"), Column("tau", 4), Column("cases"), Column("max_factor", 2),
                Column("benchmarks")});
  for (const auto& r : cal.rows)
    spread.add_row({model_label(r.kind, r.batch_planned), r.bucket, r.tau, static_cast<int64_t>(r.cases),
                    r.max_factor, fmt::format("{}", fmt::join(r.groups, " "))});
  spread.add_note(fmt::format("source: {}; level {:.0f}%; distance {}; batch beyond the fitted sizes: {}",
                              cal.source, cal.level * 100, scaling::spread_distance_name(cal.distance),
                              scaling::batch_rule_name(cal.batch_rule)));
  out.push_back(std::move(spread));
  Table rules("The batch assumed beyond the fitted sizes",
              {Column("batch_rule"), Column("chosen"), Column("cases"), Column("score_pct", 1)});
  for (const auto& b : cal.batch_rule_backtests)
    rules.add_row({std::string(scaling::batch_rule_name(b.rule)), std::string(b.rule == cal.batch_rule ? "yes" : "no"),
                   static_cast<int64_t>(b.cases), pct(b.score)});
  rules.add_note(
      "the default model's batch beyond the largest fitted size when none is planned (step x converge with "
      "reference convergence points): per-accelerator (that size's batch per accelerator x N), geometric middle "
      "(of that and the size's batch), kept (the size's batch) or fitted law; each capped at the largest "
      "reference batch. --batch-rule chosen: the rule of the smallest score in backtests on the --fit rounds "
      "alone (batch extrapolated; score = mean over extrapolation buckets with at least 8 cases of the "
      "median error)");
  // Only when the rule was chosen: a given one is in the spread's source line.
  if (!cal.batch_rule_backtests.empty()) out.push_back(std::move(rules));
  return out;
}

}  // namespace scalescope::report
