// The findings table and the diff tables (declared in run_tables.hpp).
#include "report/run_tables.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/model/kernel_short_name.hpp"

namespace scalescope::report {
namespace {

Cell pct(double fraction) { return fraction * 100; }

// "caused by #1 straggler", "causes #3 exposed-communication", or "".
std::string cause_text(const advise::Finding& f, const std::map<std::string, int>& order) {
  auto named = [&](const std::string& id) {
    auto it = order.find(id);
    return it == order.end() ? id : fmt::format("#{} {}", it->second, id);
  };
  std::vector<std::string> parts;
  if (!f.explained_by.empty()) parts.push_back("caused by " + named(f.explained_by));
  if (!f.explains.empty()) {
    std::vector<std::string> ids;
    for (const auto& id : f.explains) ids.push_back(named(id));
    parts.push_back(fmt::format("causes {}", fmt::join(ids, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

Table delta_table(std::string title, const std::vector<analyze::Delta>& rows, const char* unit) {
  Table t(std::move(title),
          {Column("what", 0), Column(fmt::format("a_{}", unit), 0), Column(fmt::format("b_{}", unit), 0),
           Column(fmt::format("delta_{}", unit), 0), Column("ratio_b_over_a", 3)});
  for (const auto& d : rows)
    t.add_row({d.what.size() > 100 ? d.what.substr(0, 97) + "..." : d.what, d.a, d.b, d.delta,
               d.a != 0 ? Cell{d.ratio} : Cell{}});
  return t;
}

// The same for kernels: the short name shown, the full name for scripts.
Table kernel_delta_table(std::string title, const std::vector<analyze::Delta>& rows, const char* unit) {
  Table t(std::move(title),
          {Column("short_name", 0), Column("name", 0).scripts_only(), Column(fmt::format("a_{}", unit), 0),
           Column(fmt::format("b_{}", unit), 0), Column(fmt::format("delta_{}", unit), 0),
           Column("ratio_b_over_a", 3)});
  std::vector<std::string_view> names;
  for (const auto& d : rows) names.push_back(d.what);
  const std::vector<std::string> short_names = trace::distinct_short_names(names);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& d = rows[i];
    t.add_row({short_names[i], d.what, d.a, d.b, d.delta, d.a != 0 ? Cell{d.ratio} : Cell{}});
  }
  return t;
}

}  // namespace

Table job_table(const analyze::RunAnalysis& run) {
  Table t("Job (the fixes fit its framework)",
          {Column("rank", 0), Column("framework", 0), Column("nccl", 0), Column("mpi", 0), Column("launcher", 0),
           Column("mpi_calls", 0), Column("mpi_time_ns", 0), Column::prose("evidence")});
  t.set_id("job");
  for (const auto& r : run.ranks) {
    const auto& j = r.job;
    t.add_row({int64_t{r.rank}, std::string(analyze::to_string(j.framework)), j.nccl, j.mpi,
               j.launcher.empty() ? std::string("-") : j.launcher, j.mpi_calls, j.mpi_ns, j.evidence});
  }
  return t;
}

Table hang_table(const analyze::RunAnalysis& run) {
  const auto& h = run.hang;
  Table t("Hang (scalescope ring: the processes' last collectives, from RUN/control/hang/)",
          {Column("rank", 0), Column("host", 0), Column("pid", 0), Column("state", 0), Column::prose("last"),
           Column::prose("python")});
  t.set_id("hang");
  for (const auto& p : h.processes)
    t.add_row({int64_t{p.rank}, p.host, int64_t{p.pid}, p.state, p.last, p.python.empty() ? p.python_note : p.python});
  if (h.dumps > 0) t.add_note(h.text);
  return t;
}

Table flight_recorder_table(const analyze::RunAnalysis& run) {
  const auto& h = run.hang.flight_recorder;
  Table t("Hang (PyTorch's NCCL flight recorder dumps: each rank's last collectives)",
          {Column("rank", 0), Column("state", 0), Column("furthest_seq", 0), Column::prose("pending"),
           Column::prose("file")});
  t.set_id("flight_recorder");
  for (const auto& r : h.ranks) {
    const std::string pending = r.pending ? fmt::format("{} #{} of process group {} ({})", r.pending->profiling_name,
                                                        r.pending->collective_seq_id, r.pending->pg_name,
                                                        r.pending->state)
                                          : std::string();
    t.add_row({int64_t{r.rank}, r.state, r.furthest, pending, r.file});
  }
  if (h.dumps > 0) t.add_note("flight recorder: " + h.text);
  if (h.dumps > 0)
    t.add_note("pending: the rank's latest collective started and not completed, else its oldest not completed");
  return t;
}

Table gpu_clocks_table(const analyze::RunAnalysis& run) {
  Table t("GPU clocks (NVML samples of each rank's GPU, steady iterations; the GPU not idle)",
          {Column("rank", 0), Column("device", 0), Column("samples", 0), Column("sm_median_mhz", 0),
           Column("sm_min_mhz", 0), Column("sm_max_mhz", 0), Column("clock_pct", 1), Column("held_down_pct", 1),
           Column("power_cap_pct", 1), Column("thermal_pct", 1), Column("hw_slowdown_pct", 1),
           Column("sync_boost_pct", 1), Column("app_clocks_pct", 1), Column("temp_median_c", 0),
           Column("temp_max_c", 0), Column("temp_slowdown_c", 0), Column("power_median_w", 0),
           Column("power_max_w", 0), Column("power_limit_w", 0)});
  t.set_id("gpu_clocks");
  auto known = [](double v) { return v > 0 ? Cell{v} : Cell{}; };
  for (const auto& r : run.ranks) {
    const auto& g = r.steady ? r.steady->gpu_clocks : r.gpu_clocks;
    if (!g.availability.available) {
      t.add_note(fmt::format("rank {}: {}", r.rank, g.availability.reason));
      continue;
    }
    const bool reasons = g.reason_samples > 0;
    auto share = [&](double v) { return reasons ? Cell{pct(v)} : Cell{}; };
    t.add_row({int64_t{r.rank}, int64_t{g.device}, g.clock_samples, g.sm_clock_median_mhz, g.sm_clock_min_mhz,
               known(g.sm_clock_max_mhz), g.clock_ratio > 0 ? Cell{pct(g.clock_ratio)} : Cell{},
               share(g.throttled_share), share(g.power_cap_share), share(g.thermal_share), share(g.hw_slowdown_share),
               share(g.sync_boost_share), share(g.app_clocks_share), known(g.temperature_median_c),
               known(g.temperature_max_c), known(g.temperature_slowdown_c), known(g.power_median_w),
               known(g.power_max_w), known(g.power_limit_w)});
    if (!g.sampled_by.empty()) t.add_note(fmt::format("rank {}: its GPU was sampled in {}'s trace", r.rank, g.sampled_by));
  }
  t.add_note("clock_pct: median SM clock / the GPU's maximum; held_down_pct: samples with a clocks-event reason that "
             "lowers a working GPU's clock (empty: the trace does not record reasons).");
  return t;
}

Table findings_table(const std::vector<advise::Finding>& findings) {
  Table t("Findings (root causes ranked by the saving of fixing them; each followed by what it explains)",
          {Column("rank_order", 0), Column("id", 0), Column("severity", 0), Column("saving_pct", 1),
           Column("saving_kind", 0), Column("with_above_pct", 1), Column::prose("cause"), Column::prose("title"),
           Column::prose("evidence"), Column::prose("fix"), Column::prose("saving_estimate")});
  t.set_id("findings");
  std::map<std::string, int> order;
  for (size_t i = 0; i < findings.size(); ++i) order[findings[i].id] = static_cast<int>(i + 1);
  int i = 1;
  for (const auto& f : findings)
    t.add_row({int64_t{i++}, f.id, std::string(advise::to_string(f.severity)), pct(f.saving_fraction),
               std::string(advise::to_string(f.saving_kind)),
               f.explained_by.empty() ? pct(f.combined_fraction) : Cell{}, cause_text(f, order), f.title, f.evidence,
               f.fix, f.saving_method});
  if (findings.empty()) {
    t.add_note("no finding: no rule's evidence is above its threshold (docs/advisor.md)");
    return t;
  }
  // "fixing the first three: about N %" for the first root causes.
  std::vector<const advise::Finding*> roots;
  for (const auto& f : findings)
    if (f.explained_by.empty()) roots.push_back(&f);
  static constexpr const char* kCount[] = {"", "first", "first two", "first three"};
  for (size_t k = 2; k <= roots.size() && k <= 3; ++k) {
    double summed = 0;
    std::vector<std::string> ids;
    for (size_t j = 0; j < k; ++j) {
      summed += roots[j]->chain_saving_fraction;
      ids.push_back(fmt::format("#{} {}", order[roots[j]->id], roots[j]->id));
    }
    t.add_note(fmt::format("fixing the {} root causes ({}): about {:.1f} % of step time combined over the timeline "
                           "(their own savings sum to {:.1f} %)",
                           kCount[k], fmt::join(ids, ", "), 100 * roots[k - 1]->combined_fraction, 100 * summed));
  }
  t.add_note(fmt::format("with_above_pct: {}", advise::combined_method()));
  t.add_note(
      "saving_kind: an upper bound is time the trace shows the problem costs; an estimate also assumes how much "
      "faster the fixed code runs (saving_estimate says how)");
  for (const auto& f : findings)
    if (!f.caveat.empty()) {
      t.add_note("caution: " + f.caveat + "; severities are held at info");
      break;
    }
  return t;
}

std::vector<Table> diff_tables(const analyze::RunDiff& d, int top) {
  std::vector<Table> tables;
  Table verdict("Verdict", {Column::prose("verdict")});
  verdict.set_id("verdict");
  verdict.add_row({d.verdict});
  tables.push_back(std::move(verdict));
  Table it("Iteration time (steady-state median, mean over ranks)",
           {Column("a_ns", 0), Column("b_ns", 0), Column("delta_ns", 0), Column("ratio_b_over_a", 3)});
  if (d.note.empty()) it.add_row({d.iteration.a, d.iteration.b, d.iteration.delta, d.iteration.ratio});
  else it.add_note(d.note);
  tables.push_back(std::move(it));
  const std::string basis = d.basis == "per steady iteration" ? "per steady iteration, mean over ranks" : "mean per rank";
  tables.push_back(delta_table(fmt::format("Time breakdown ({})", basis), d.breakdown, "ns"));
  tables.push_back(delta_table(fmt::format("Kernel classes and precision (kernel time, {})", basis), d.classes, "ns"));
  tables.push_back(delta_table(fmt::format("Named changes, largest first ({})", basis), d.changes, "ns"));
  tables.push_back(
      kernel_delta_table(fmt::format("Kernels with the largest change (top {}, {})", top, basis), d.top_kernels, "ns"));
  Table only("Kernels found in one run only (among each run's listed kernels, by time)",
             {Column("run", 0), Column::prose("kernel"), Column("name", 0).scripts_only()});
  std::vector<std::string_view> only_names(d.added_kernels.begin(), d.added_kernels.end());
  only_names.insert(only_names.end(), d.removed_kernels.begin(), d.removed_kernels.end());
  const std::vector<std::string> only_short = trace::distinct_short_names(only_names);
  for (size_t i = 0; i < only_names.size(); ++i)
    only.add_row({std::string(i < d.added_kernels.size() ? "B only" : "A only"), only_short[i],
                  std::string(only_names[i])});
  if (d.added_kernels.empty() && d.removed_kernels.empty()) only.add_note("none: both runs list the same kernels");
  tables.push_back(std::move(only));
  tables.push_back(delta_table(fmt::format("Copies by kind and memory (time_ns and bytes rows, {})", basis), d.copies, "value"));
  return tables;
}

std::vector<Table> diff_tables(const analyze::RunDiff& d, int top, const std::string& a_input,
                               const analyze::RunAnalysis& a, const std::string& b_input,
                               const analyze::RunAnalysis& b) {
  std::vector<Table> tables = diff_tables(d, top);
  Table& it = tables.at(1);  // iteration time: where the inputs are named
  it.add_note(fmt::format("A: {} ({} ranks); B: {} ({} ranks)", a_input, a.ranks.size(), b_input, b.ranks.size()));
  for (const auto* run : {&a, &b})
    for (const auto& r : run->ranks)
      if (!r.data_loss.empty())
        it.add_note(fmt::format("{}: {} lost data ({}); its figures cover only what could be read",
                                run == &a ? "A" : "B", r.label, fmt::join(r.data_loss, ", ")));
  return tables;
}

}  // namespace scalescope::report
