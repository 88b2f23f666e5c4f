#include "report/scaling_tables.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/mlperf_tables.hpp"
#include "scaling/scaling.hpp"
#include "sweep/scaling_study.hpp"
#include "sweep/sweep.hpp"

namespace scalescope::report {
namespace {

Cell num(double v) { return std::isfinite(v) ? Cell(v) : Cell(); }
Cell opt_int(const std::optional<int>& v) { return v ? Cell(int64_t{*v}) : Cell(); }

using RowCell = Cell (*)(const scaling::ScalingRow&, const sweep::ScalingStudy&);

// A scaling row's columns, once, for `scaling`'s table of every
// configuration and the page's table of one: the column as `scaling` prints
// it, the page's header for it (nullptr: the page, which sets it beside its
// charts, leaves it out) and digits, and the cell; page_cell where the page
// shows the value otherwise.
struct RowColumn {
  Column column;
  const char* page_name;
  int page_digits;
  RowCell cell;
  RowCell page_cell = nullptr;
};

// Time columns keep 4 significant figures on the terminal (a 0.6 ms step
// would show as 0.0006 with fixed decimals); CSV and JSON keep every digit.
const std::vector<RowColumn>& row_columns() {
  using Row = scaling::ScalingRow;
  using Study = sweep::ScalingStudy;
  static const std::vector<RowColumn> columns = {
      {Column("gpus"), "GPUs", 3, [](const Row& r, const Study&) { return Cell(int64_t{r.gpus}); }},
      {Column("n"), "runs", 3, [](const Row& r, const Study&) { return Cell(static_cast<int64_t>(r.time.n)); }},
      {Column::significant("median", 4), "median s", 4, [](const Row& r, const Study&) { return Cell(r.time.median); }},
      {Column::significant("ci_low", 4), "CI low", 4, [](const Row& r, const Study&) { return num(r.time.ci_low); }},
      {Column::significant("ci_high", 4), "CI high", 4, [](const Row& r, const Study&) { return num(r.time.ci_high); }},
      {Column("speedup"), "speedup", 3, [](const Row& r, const Study&) { return Cell(r.speedup); }},
      {Column("speedup_low"), nullptr, 0, [](const Row& r, const Study&) { return num(r.speedup_low); }},
      {Column("speedup_high"), nullptr, 0, [](const Row& r, const Study&) { return num(r.speedup_high); }},
      {Column("efficiency"), "E'", 3, [](const Row& r, const Study&) { return Cell(r.efficiency); }},
      {Column("efficiency_low"), "E' low", 3, [](const Row& r, const Study&) { return num(r.efficiency_low); }},
      {Column("efficiency_high"), "E' high", 3, [](const Row& r, const Study&) { return num(r.efficiency_high); }},
      {Column::significant("gpu_hours", 4), "GPU-hours", 5,
       [](const Row& r, const Study& s) { return s.seconds ? Cell(r.gpu_hours) : Cell(); }},
      {Column::significant("energy_j", 4), nullptr, 0,
       [](const Row& r, const Study&) { return r.energy_j ? Cell(r.energy_j->median) : Cell(); }},
      {Column::significant("cost", 4), nullptr, 0,
       [](const Row& r, const Study& s) { return r.cost && s.seconds ? Cell(*r.cost) : Cell(); }},
      {Column("pareto"), "Pareto", 3, [](const Row& r, const Study&) { return Cell(r.pareto); },
       [](const Row& r, const Study&) { return Cell(std::string(r.pareto ? "yes" : "")); }},  // the page: yes or blank
  };
  return columns;
}

}  // namespace

static Table scaling_runs_table(const sweep::ScalingStudy& s) {
  Table runs(fmt::format("Runs of sweep {} ({} planned, {} recorded)", s.sweep_id, s.planned_runs, s.recorded_runs),
             {"config", "gpus", "ok", "failed", "timeout", "crashed", "error", "unfinished", "with_metric"});
  for (const auto& g : s.runs) {
    auto count = [&](const char* status) {
      const auto it = g.statuses.find(status);
      return int64_t{it == g.statuses.end() ? 0 : it->second};
    };
    runs.add_row({g.config, int64_t{g.gpus}, count("ok"), count("failed"), count("timeout"), count("crashed"),
                  count("error"), count("running"), static_cast<int64_t>(g.with_metric)});
  }
  return runs;
}

static Table scaling_main_table(const sweep::ScalingStudy& s) {
  const std::string kind =
      s.higher_is_better ? "higher is better, time = 1/value"
      : !s.weak          ? "time"
      : s.samples_per_gpu_step
          ? fmt::format("weak scaling: time per sample = value / (N x {:g})", *s.samples_per_gpu_step)
          : std::string("weak scaling: time per unit of work = value / N, a unit being one GPU's step");
  std::vector<Column> columns{Column("config")};
  for (const auto& col : row_columns()) columns.push_back(col.column);
  Table main(fmt::format("Scaling of {} ({}; {})", s.metric, kind, s.seconds ? "seconds" : "units of the metric"),
             std::move(columns));
  for (const auto& c : s.configs) {
    if (!c.table) {
      main.add_note(fmt::format("{}: {}; left out", c.label, c.left_out));
      continue;
    }
    for (const auto& r : c.table->rows) {
      std::vector<Cell> cells{c.label};
      for (const auto& col : row_columns()) cells.push_back(col.cell(r, s));
      main.add_row(std::move(cells));
    }
  }
  for (const auto& n : s.work_notes) main.add_note(n);
  if (s.weak_asked && s.higher_is_better)
    main.add_note(
        fmt::format("weak scaling: '{}' is a throughput, which already counts work; used as it is", s.metric));
  main.add_note("CI: " + s.ci_method);
  main.add_note("speedup S = T(ref)/T(N); efficiency E' = (N_ref*T_ref)/(N*T_N); GPU-hours = N*T/3600");
  if (s.weak)
    main.add_note(fmt::format("weak scaling: T is {} (so E' = T_step(ref)/T_step(N)); GPU-hours are per {}",
                              s.samples_per_gpu_step ? "step time / (N x samples per GPU step)" : "step time / N",
                              s.samples_per_gpu_step ? "sample" : "GPU-step of work"));
  if (s.higher_is_better)
    main.add_note(fmt::format("'{}' is higher-is-better: statistics are of time per unit = 1/{}", s.metric, s.metric));
  if (!s.seconds) main.add_note("the metric is not in seconds, so GPU-hours and cost are not shown");
  return main;
}

Table scaling_config_table(const sweep::ConfigScaling& config, const sweep::ScalingStudy& study) {
  const scaling::ScalingTable& table = *config.table;
  std::vector<Column> columns;
  for (const auto& col : row_columns())
    if (col.page_name) columns.emplace_back(col.page_name, col.page_digits);
  Table t(fmt::format("Scaling: {}", config.label), std::move(columns));
  for (const auto& r : table.rows) {
    std::vector<Cell> cells;
    for (const auto& col : row_columns())
      if (col.page_name) cells.push_back((col.page_cell ? col.page_cell : col.cell)(r, study));
    t.add_row(std::move(cells));
  }
  t.add_note("CIs: " + table.ci_method);
  if (!study.seconds) t.add_note("The metric is not in seconds, so GPU-hours are not shown.");
  if (study.weak) t.add_note("Weak scaling: the times are per unit of work, so E' = T(ref)/T(N) per step.");
  return t;
}

static Table scaling_break_even_table(const sweep::ScalingStudy& s) {
  Table breakeven("Break-even point", {"config", "rule", "gpus", "detail"});
  for (const auto& c : s.configs) {
    if (!c.table) continue;
    const auto& t = *c.table;
    breakeven.add_row({c.label, fmt::format("(a) largest N with E' >= {}", s.threshold),
                       opt_int(t.break_even.by_threshold), fmt::format("reference N = {}", t.ref_gpus)});
    std::vector<int> front;
    for (const auto& r : t.rows)
      if (r.pareto) front.push_back(r.gpus);
    breakeven.add_row(
        {c.label, "(b) knee of time vs GPU-hours Pareto front", opt_int(t.break_even.by_knee),
         fmt::format("front: N = {}{}", fmt::join(front, ", "), t.break_even.by_knee ? "" : "; no knee (see notes)")});
    for (const auto& n : t.break_even.notes) breakeven.add_note(c.label + ": " + n);
  }
  if (!s.knee_method.empty()) breakeven.add_note("rule (b): " + s.knee_method);
  return breakeven;
}

Table scaling_comparison_table(const sweep::ScalingStudy& s) {
  std::vector<Column> columns;
  for (const char* name : {"key", "a", "b", "others", "gpus", "n_a", "n_b", "median_a", "median_b", "ratio_b_a",
                           "ratio_low", "ratio_high", "welch_p", "mann_whitney_p", "differs"})
    columns.push_back(std::string_view(name).starts_with("median_") ? Column::significant(name, 4) : Column(name));
  Table cmp("Configurations compared", columns);
  for (const auto& x : s.comparisons) {
    const auto& c = x.result;
    cmp.add_row({x.key, x.a, x.b, x.others, int64_t{x.gpus}, static_cast<int64_t>(c.n_a), static_cast<int64_t>(c.n_b),
                 c.median_a, c.median_b, c.ratio, num(c.ratio_low), num(c.ratio_high), num(c.welch_p), c.mann_whitney_p,
                 std::isfinite(c.welch_p) ? Cell(c.differs) : Cell()});  // empty: fewer than 2 runs a side
  }
  cmp.add_note(
      fmt::format("test: Welch's t-test on log times (decides 'differs' at alpha {}; empty with fewer than 2 "
                  "runs a side); ratio_b_a = median time b / a with the CI of the ratio of geometric means; "
                  "Mann-Whitney U p-value (exact without ties) as a distribution-free check",
                  s.alpha));
  return cmp;
}

static Table scaling_prediction_table(const sweep::ScalingStudy& s) {
  Table predictions(
      "Prediction",
      std::vector<Column>{Column("config"), Column("model"), Column("gpus"), Column::significant("time", 4),
                          Column::significant("low", 4), Column::significant("high", 4), Column("efficiency"),
                          Column::significant("global_batch", 4), Column("batch_basis"),
                          Column::significant("steps", 4), Column::significant("step_time", 4),
                          Column("validated_range"), Column("loo_mean_rel_err"), Column("loo_max_rel_err"),
                          Column("fit")});
  for (const auto& c : s.configs) {
    if (!c.not_predicted.empty()) {
      predictions.add_row({c.label, std::string("-"), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(),
                           Cell(), Cell(), Cell(), Cell(), "not fitted: " + c.not_predicted});
      continue;
    }
    for (const auto& m : c.predictions) {
      const auto& f = m.fit;
      if (!f.ok && f.predictions.empty()) {
        predictions.add_row({c.label, std::string(scaling::model_name(m.kind)), Cell(), Cell(), Cell(), Cell(), Cell(),
                             Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), "not fitted: " + f.note});
        continue;
      }
      for (size_t i = 0; i < f.predictions.size(); ++i) {
        const auto& p = f.predictions[i];
        predictions.add_row({c.label, std::string(f.ok ? scaling::model_name(m.kind) : "bounds only"), int64_t{p.gpus},
                             num(p.time), num(p.low), num(p.high), num(m.efficiency[i]), num(p.global_batch),
                             std::string(scaling::batch_basis_name(p.batch_basis)), num(p.steps), num(p.step_time),
                             validated_range_cell(p.outside_validated), num(f.loo_mean_abs_rel_error),
                             num(f.loo_max_abs_rel_error), f.ok ? f.formula : f.note});
      }
      if (f.ok && !f.note.empty())
        predictions.add_note(fmt::format("{} {}: {}", c.label, scaling::model_name(m.kind), f.note));
    }
  }
  for (const auto& a : s.assumptions) predictions.add_note("assumption: " + a);
  const auto& cal = scaling::default_spread_calibration();
  predictions.add_note(fmt::format(
      "low/high: 80% prediction interval, exp(+-z sd) with sd = sqrt(residual_sd^2 + (tau d)^2): the fit's log "
      "residuals and each model's extrapolation spread per unit of distance d ({}), calibrated on MLPerf "
      "time-to-train curves ({}; docs/scaling.md, \"Prediction\"); one measured size gives bounds only",
      scaling::spread_distance_name(cal.distance), cal.source));
  predictions.add_note(
      "global_batch: the batch assumed (step x converge with --global-batch-grows: N x --samples-per-gpu-step, "
      "or N per-GPU batches; batch_basis measured, planned with --planned-batch, or extrapolated); steps and "
      "step_time: each run's metric is a fixed number of steps, so steps is 1 per metric unit and step_time the "
      "predicted metric; a planned batch other than N per-GPU batches changes both");
  predictions.add_note(
      "validated_range: yes where the MLPerf backtests cover the extrapolation (a bucket with enough cases, no "
      "farther than theirs); a sweep is not an MLPerf curve, so read its interval as an estimate");
  return predictions;
}

std::vector<Table> scaling_tables(const sweep::ScalingStudy& study) {
  std::vector<Table> tables;
  tables.push_back(scaling_runs_table(study));
  tables.push_back(scaling_main_table(study));
  tables.push_back(scaling_break_even_table(study));
  if (!study.comparisons.empty()) tables.push_back(scaling_comparison_table(study));
  if (study.predicted) tables.push_back(scaling_prediction_table(study));
  return tables;
}

Table slurm_jobs_table(const sweep::StoredSweep& stored) {
  Table t("Slurm jobs", {"run", "config", "gpus", "rep", "job_id", "state", "exit_code", "nodelist", "gpus_allocated",
                         "queued_s"});
  for (const auto& r : stored.runs) {
    if (!r.slurm) continue;
    std::string config;
    for (const auto& [k, v] : r.config) config += (config.empty() ? "" : " ") + k + "=" + v;
    t.add_row({int64_t{r.plan_index}, config, int64_t{r.gpus}, int64_t{r.rep}, r.slurm->job_id, r.slurm->state,
               opt_int(r.slurm->exit_code), r.slurm->nodelist, opt_int(r.slurm->gpus),
               r.slurm->queued_s ? Cell(*r.slurm->queued_s) : Cell()});
  }
  return t;
}

}  // namespace scalescope::report
