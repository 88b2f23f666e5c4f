// Renders mlperf/'s typed results as tables. Every number comes from
// mlperf::analyze, mlperf::score_folders or the runs themselves.

#include "report/mlperf_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mlperf/mlperf.hpp"

namespace scalescope::report {

namespace {

template <typename T>
Cell opt_cell(const std::optional<T>& v) {
  if (!v) return std::monostate{};
  if constexpr (std::is_floating_point_v<T>) return static_cast<double>(*v);
  else return static_cast<int64_t>(*v);
}

Table group_table(const mlperf::SystemGroup& g) {
  Table t(fmt::format("MLPerf {} on {}: scaling across systems", g.title, g.accelerator),
          std::vector<Column>{Column("system"), Column("submitter"), Column("accelerators"), Column("nodes"),
                              Column("minutes", 3), Column("gpu_hours", 2), Column("speedup", 3),
                              Column("efficiency", 3), Column("pareto"), Column("role")});
  for (const auto& p : g.systems)
    t.add_row({p.system, p.submitter, int64_t{p.accelerators}, int64_t{p.nodes}, p.minutes(), p.gpu_hours, p.speedup,
               p.efficiency, std::string(p.pareto ? "yes" : ""), std::string(mlperf::to_string(p.role))});
  const auto& r = g.systems.at(g.reference);
  t.add_note(fmt::format("reference: {} ({} accelerators, {:.3f} min){}", r.system, r.accelerators, r.minutes(),
                         g.ref_chosen ? ", chosen with --ref" : ", the fewest accelerators"));
  t.add_note(
      "minutes: official score (olympic mean of run times x RCP scaling factor); speedup = T_ref/T, "
      "efficiency E' = (N_ref*T_ref)/(N*T), gpu_hours = N*T (accelerator-hours)");
  const auto& be = g.curve.break_even;
  auto at = [&](int n) { return fmt::format("N={} ({})", n, g.curve_system(n).system); };
  t.add_note(fmt::format("break-even (a), largest N with E' >= {:.2f} on the curve of the fastest system at each N: {}",
                         be.threshold, be.by_threshold ? at(*be.by_threshold) : std::string("none")));
  t.add_note(fmt::format("break-even (b), {}: {}", be.knee_method, be.by_knee ? at(*be.by_knee) : std::string("none")));
  for (const auto& n : be.notes) t.add_note("break-even: " + n);
  if (g.systems.size() == 1) t.add_note("only one scored system: no scaling to show");
  return t;
}

}  // namespace

Table mlperf_runs_table(const std::vector<mlperf::Run>& runs) {
  Table t("MLPerf runs", mlperf::runs_csv_columns());
  for (const auto& r : runs) {
    t.add_row({r.submitter,
               r.system,
               r.system_name,
               r.benchmark,
               r.benchmark_folder,
               r.division,
               r.accelerator,
               int64_t{r.nodes},
               int64_t{r.accelerators_per_node},
               int64_t{r.accelerators},
               r.framework,
               opt_cell(r.global_batch_size),
               opt_cell(r.run_start_ms),
               opt_cell(r.run_stop_ms),
               r.status,
               opt_cell(r.minutes),
               std::string(r.converged ? "yes" : "no"),
               opt_cell(r.scaling_factor),
               static_cast<int64_t>(r.malformed_lines),
               r.log_path,
               r.problem,
               opt_cell(r.progress_at_stop)});
  }
  return t;
}

Table mlperf_scores_table(const std::vector<mlperf::Score>& scores) {
  Table t("MLPerf scores per result folder",
          std::vector<Column>{Column("submitter"), Column("system"), Column("benchmark"), Column("folder"),
                              Column("accelerator"), Column("accelerators"), Column("runs"), Column("converged"),
                              Column("required"), Column("scaling_factor", 4), Column("minutes", 3), Column("reason")});
  size_t scored = 0;
  for (const auto& s : scores) {
    if (s.minutes) ++scored;
    t.add_row({s.submitter, s.system, s.benchmark, s.benchmark_folder, mlperf::accelerator_display(s.accelerator),
               int64_t{s.accelerators}, int64_t{s.runs}, int64_t{s.converged}, int64_t{s.required},
               opt_cell(s.scaling_factor), opt_cell(s.minutes), s.reason});
  }
  t.add_note(fmt::format("{} folders: {} scored, {} not scored (reason given)", scores.size(), scored,
                         scores.size() - scored));
  return t;
}

std::vector<Table> mlperf_scaling_tables(const mlperf::MlperfScaling& scaling) {
  std::vector<Table> tables;
  for (const auto& g : scaling.groups) tables.push_back(group_table(g));
  if (!scaling.left_out.empty() && !tables.empty())
    tables.front().add_note(fmt::format("left out (accelerator count unknown): {}", fmt::join(scaling.left_out, ", ")));
  return tables;
}

}  // namespace scalescope::report
