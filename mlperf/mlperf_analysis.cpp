// Scaling across published systems: every number that the scaling part
// defines (speedup, E', GPU-hours, Pareto front, break-even by both rules)
// comes from scalescope::scaling, so `mlperf analyze` and `scaling` agree.
// The one sample per system is its official score.

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"
#include "report/table.hpp"
#include "scaling/scaling.hpp"
#include "trace/error.hpp"

namespace scalescope::mlperf {

namespace {

struct SystemPoint {
  const Score* score = nullptr;
  int nodes = 0;
  double seconds = 0;
  // Filled from the scaling library.
  double speedup = 0, efficiency = 0, gpu_hours = 0;
  bool pareto = false, curve = false;
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const scaling::ScalingRow& row_for(const scaling::ScalingTable& t, int gpus) {
  for (const auto& r : t.rows)
    if (r.gpus == gpus) return r;
  throw std::logic_error("scaling table lacks a GPU count it was given");
}

report::Table group_table(const std::string& benchmark, const std::string& accelerator, std::vector<SystemPoint>& pts,
                          size_t ref, const AnalyzeOptions& options) {
  const SystemPoint& r = pts[ref];
  const int n_ref = r.score->accelerators;
  scaling::ScalingOptions so;
  so.ref_gpus = n_ref;
  so.threshold = options.threshold;

  // Per system against the reference. The library keys points by GPU count, so
  // each system is a two-point table with the reference; a system with the
  // reference's count is its own one-point table (GPU-hours) and its ratio to
  // the reference at equal N is both its speedup and its E'.
  for (auto& p : pts) {
    const int n = p.score->accelerators;
    if (n != n_ref) {
      const auto t = scaling::scaling_table({{n_ref, {r.seconds}, {}}, {n, {p.seconds}, {}}}, so);
      const auto& row = row_for(t, n);
      p.speedup = row.speedup;
      p.efficiency = row.efficiency;
      p.gpu_hours = row.gpu_hours;
    } else {
      const auto t = scaling::scaling_table({{n, {p.seconds}, {}}}, scaling::ScalingOptions{});
      p.gpu_hours = row_for(t, n).gpu_hours;
      p.speedup = p.efficiency = r.seconds / p.seconds;
    }
  }
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : pts) xy.emplace_back(p.seconds, p.gpu_hours);
  for (size_t i : scaling::pareto_front(xy)) pts[i].pareto = true;

  // The scaling curve: the reference at its count, the fastest system at every other count.
  std::map<int, size_t> best;
  for (size_t i = 0; i < pts.size(); ++i) {
    const int n = pts[i].score->accelerators;
    if (n == n_ref) continue;
    auto it = best.find(n);
    if (it == best.end() || pts[i].seconds < pts[it->second].seconds) best[n] = i;
  }
  best[n_ref] = ref;
  std::vector<scaling::ScalingPoint> curve;
  for (const auto& [n, i] : best) {
    curve.push_back({n, {pts[i].seconds}, {}});
    pts[i].curve = true;
  }
  const auto table = scaling::scaling_table(curve, so);

  report::Table t(fmt::format("MLPerf {} on {}: scaling across systems", benchmark, accelerator),
                  std::vector<report::Column>{report::Column("system"), report::Column("submitter"),
                                              report::Column("accelerators"), report::Column("nodes"),
                                              report::Column("minutes", 3), report::Column("gpu_hours", 2),
                                              report::Column("speedup", 3), report::Column("efficiency", 3),
                                              report::Column("pareto"), report::Column("role")});
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    std::string role = i == ref ? "reference" : (p.curve ? "fastest at N" : "");
    t.add_row({p.score->system, p.score->submitter, int64_t{p.score->accelerators}, int64_t{p.nodes},
               p.seconds / 60.0, p.gpu_hours, p.speedup, p.efficiency, std::string(p.pareto ? "yes" : ""), role});
  }
  auto system_at = [&](int n) { return pts[best.at(n)].score->system; };
  t.add_note(fmt::format("reference: {} ({} accelerators, {:.3f} min){}", r.score->system, n_ref, r.seconds / 60.0,
                         options.ref_system.empty() ? ", the fewest accelerators" : ", chosen with --ref"));
  t.add_note("minutes: official score (olympic mean of run times x RCP scaling factor); speedup = T_ref/T, "
             "efficiency E' = (N_ref*T_ref)/(N*T), gpu_hours = N*T (accelerator-hours)");
  const auto& be = table.break_even;
  t.add_note(fmt::format("break-even (a), largest N with E' >= {:.2f} on the curve of the fastest system at each N: {}",
                         be.threshold,
                         be.by_threshold ? fmt::format("N={} ({})", *be.by_threshold, system_at(*be.by_threshold))
                                         : std::string("none")));
  t.add_note(fmt::format("break-even (b), {}: {}", be.knee_method,
                         be.by_knee ? fmt::format("N={} ({})", *be.by_knee, system_at(*be.by_knee))
                                    : std::string("none")));
  for (const auto& n : be.notes) t.add_note("break-even: " + n);
  if (pts.size() == 1) t.add_note("only one scored system: no scaling to show");
  return t;
}

}  // namespace

std::vector<report::Table> analyze(const std::vector<Run>& runs, const AnalyzeOptions& options) {
  if (!(options.threshold > 0 && options.threshold <= 1))
    fail("--threshold {} is not in (0, 1]", options.threshold);
  const std::vector<Score> scores = score_folders(runs);
  std::map<std::tuple<std::string, std::string, std::string>, int> nodes_of;
  std::map<std::pair<std::string, std::string>, std::string> name_of;
  for (const Run& r : runs) {
    nodes_of[{r.submitter, r.system, r.benchmark_folder}] = r.nodes;
    if (!r.system_name.empty()) name_of[{r.submitter, r.system}] = r.system_name;
  }

  const std::string want_bench = options.benchmark.empty() ? "" : canonical_benchmark(options.benchmark);
  const std::string want_acc = accelerator_key(options.accelerator);
  // Closed and open division results are not comparable: they never share a group.
  using Group = std::tuple<std::string, std::string, std::string>;  // benchmark, accelerator key, division
  std::map<Group, std::vector<SystemPoint>> groups;
  std::map<std::string, std::map<std::string, int>> spellings;  // key -> display -> count
  std::vector<std::string> left_out;
  for (const Score& s : scores) {
    if (!want_bench.empty() && s.benchmark != want_bench) continue;
    const std::string key = accelerator_key(s.accelerator);
    if (!want_acc.empty() && key.find(want_acc) == std::string::npos) continue;
    if (!s.minutes) continue;
    if (s.accelerators <= 0 || key.empty()) {
      left_out.push_back(fmt::format("{}/{}/{}", s.submitter, s.system, s.benchmark_folder));
      continue;
    }
    SystemPoint p;
    p.score = &s;
    p.nodes = nodes_of[{s.submitter, s.system, s.benchmark_folder}];
    p.seconds = *s.minutes * 60.0;
    groups[{s.benchmark, key, s.division}].push_back(p);
    ++spellings[key][accelerator_display(s.accelerator)];
  }
  if (groups.empty())
    fail("no scored MLPerf result matches{}{}", want_bench.empty() ? "" : " benchmark '" + options.benchmark + "'",
         want_acc.empty() ? "" : " accelerator '" + options.accelerator + "'");

  std::vector<report::Table> tables;
  bool ref_found = options.ref_system.empty();
  for (auto& [group, pts] : groups) {
    std::sort(pts.begin(), pts.end(), [](const SystemPoint& a, const SystemPoint& b) {
      return std::tie(a.score->accelerators, a.seconds, a.score->system) <
             std::tie(b.score->accelerators, b.seconds, b.score->system);
    });
    size_t ref = 0;  // fewest accelerators, fastest among them (sorted so)
    if (!options.ref_system.empty()) {
      const std::string want = lower(options.ref_system);
      auto it = std::find_if(pts.begin(), pts.end(), [&](const SystemPoint& p) {
        auto name = name_of.find({p.score->submitter, p.score->system});
        return lower(p.score->system) == want || (name != name_of.end() && lower(name->second) == want);
      });
      if (it == pts.end()) continue;  // --ref names a system of another group
      ref = static_cast<size_t>(it - pts.begin());
      ref_found = true;
    }
    const auto& [benchmark, key, division] = group;
    const auto& sp = spellings[key];
    const auto display = std::max_element(sp.begin(), sp.end(), [](auto& a, auto& b) { return a.second < b.second; });
    const std::string bench_title =
        division.empty() || division == "closed" ? benchmark : fmt::format("{} ({} division)", benchmark, division);
    tables.push_back(group_table(bench_title, display->first, pts, ref, options));
  }
  if (!ref_found) fail("--ref '{}' names no scored system among the results selected", options.ref_system);
  if (!left_out.empty() && !tables.empty())
    tables.front().add_note(fmt::format("left out (accelerator count unknown): {}", fmt::join(left_out, ", ")));
  return tables;
}

}  // namespace scalescope::mlperf
