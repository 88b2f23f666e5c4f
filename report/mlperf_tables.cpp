// Renders mlperf/'s typed results as tables. Every number comes from
// mlperf::analyze, mlperf::score_folders or the runs themselves.

#include "report/mlperf_tables.hpp"

#include <algorithm>
#include <type_traits>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mlperf/mlperf.hpp"
#include "mlperf/run_fields.hpp"

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
    std::vector<Cell> cells;
    for (const mlperf::RunField& f : mlperf::run_fields())
      cells.push_back(std::visit(
          [](const auto& v) -> Cell {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::string_view>) return std::string(v);
            else if constexpr (std::is_same_v<V, bool>) return std::string(v ? "yes" : "no");
            else return opt_cell(v);
          },
          f.value(r)));
    t.add_row(std::move(cells));
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

Table mlperf_ingest_table(const mlperf::IngestResult& result, bool runs) {
  Table table =
      runs ? mlperf_runs_table(result.runs) : mlperf_scores_table(mlperf::score_folders(result.runs, result.folders));
  table.add_note(
      fmt::format("{} run logs ({:.1f} MB), {} result folders, {} MLLOG events, {} malformed MLLOG lines "
                  "skipped, {} overlong lines, {} files without MLLOG lines ignored",
                  result.logs, static_cast<double>(result.bytes) / 1e6, result.folders.size(), result.mllog_lines,
                  result.malformed_lines, result.overlong_lines, result.ignored_files));
  for (const auto& n : result.notes) table.add_note(n);
  return table;
}

Table mlperf_break_even_table(const mlperf::MlperfScaling& scaling) {
  Table t("Break-even per benchmark and accelerator",
          {Column("benchmark"), Column("accelerator"), Column("systems"), Column("counts"), Column("reference"),
           Column("largest"), Column("E' at largest", 3), Column("break-even (E' rule)"), Column("break-even (knee)")});
  // Rows by group title (benchmark and division) in order of first appearance,
  // as the page draws one pair of charts per title.
  std::vector<std::string> titles;
  for (const auto& g : scaling.groups)
    if (std::find(titles.begin(), titles.end(), g.title) == titles.end()) titles.push_back(g.title);
  for (const auto& title : titles)
    for (const auto& g : scaling.groups) {
      const auto& curve = g.curve;
      if (g.title != title || curve.rows.size() < 2) continue;  // one count: nothing to scale against
      const auto& last = curve.rows.back();
      const auto& be = curve.break_even;
      t.add_row({title, g.accelerator, static_cast<int64_t>(g.systems.size()), static_cast<int64_t>(curve.rows.size()),
                 fmt::format("{} ({})", curve.ref_gpus, g.curve_system(curve.ref_gpus).system),
                 fmt::format("{} ({})", last.gpus, g.curve_system(last.gpus).system), last.efficiency,
                 be.by_threshold ? Cell(int64_t{*be.by_threshold}) : Cell(std::string("-")),
                 be.by_knee ? Cell(int64_t{*be.by_knee}) : Cell(std::string("-"))});
    }
  return t;
}

std::vector<Table> mlperf_scaling_tables(const mlperf::MlperfScaling& scaling) {
  std::vector<Table> tables;
  for (const auto& g : scaling.groups) tables.push_back(group_table(g));
  if (!scaling.left_out.empty() && !tables.empty())
    tables.front().add_note(fmt::format("left out (accelerator count unknown): {}", fmt::join(scaling.left_out, ", ")));
  if (Table be = mlperf_break_even_table(scaling); !be.rows().empty()) tables.push_back(std::move(be));
  return tables;
}

}  // namespace scalescope::report
