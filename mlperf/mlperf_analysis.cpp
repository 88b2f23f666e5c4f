// Scaling across published systems: every number that the scaling part
// defines (speedup, E', GPU-hours, Pareto front, break-even by both rules)
// comes from scalescope::scaling, so `mlperf analyze` and `scaling` agree.
// The one sample per system is its official score.

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mlperf/mlperf.hpp"
#include "scaling/scaling.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/text_input.hpp"

namespace scalescope::mlperf {

namespace {

const scaling::ScalingRow& row_for(const scaling::ScalingTable& t, int gpus) {
  for (const auto& r : t.rows)
    if (r.gpus == gpus) return r;
  throw std::logic_error("scaling table lacks a GPU count it was given");
}

// Fills speedup, E', GPU-hours, the Pareto front, the roles and the curve of
// a group whose systems are sorted and whose reference is set.
void scale_group(SystemGroup& g, double threshold) {
  auto& pts = g.systems;
  const SystemScaling& r = pts[g.reference];
  const int n_ref = r.accelerators;
  const double ref_seconds = r.seconds;
  scaling::ScalingOptions so;
  so.ref_gpus = n_ref;
  so.threshold = threshold;

  // Per system against the reference. The library keys points by GPU count, so
  // each system is a two-point table with the reference; a system with the
  // reference's count is its own one-point table (GPU-hours) and its ratio to
  // the reference at equal N is both its speedup and its E'.
  for (auto& p : pts) {
    const int n = p.accelerators;
    const double seconds = p.seconds;
    if (n != n_ref) {
      const auto t = scaling::scaling_table({{n_ref, {ref_seconds}, {}}, {n, {seconds}, {}}}, so);
      const auto& row = row_for(t, n);
      p.speedup = row.speedup;
      p.efficiency = row.efficiency;
      p.gpu_hours = row.gpu_hours;
    } else {
      const auto t = scaling::scaling_table({{n, {seconds}, {}}}, scaling::ScalingOptions{});
      p.gpu_hours = row_for(t, n).gpu_hours;
      p.speedup = p.efficiency = ref_seconds / seconds;
    }
  }
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : pts) xy.emplace_back(p.seconds, p.gpu_hours);
  for (size_t i : scaling::pareto_front(xy)) pts[i].pareto = true;

  // The scaling curve: the reference at its count, the fastest system at every other count.
  std::map<int, size_t> best;
  for (size_t i = 0; i < pts.size(); ++i) {
    const int n = pts[i].accelerators;
    if (n == n_ref) continue;
    auto it = best.find(n);
    if (it == best.end() || pts[i].seconds < pts[it->second].seconds) best[n] = i;
  }
  best[n_ref] = g.reference;
  std::vector<scaling::ScalingPoint> curve;
  for (const auto& [n, i] : best) {
    curve.push_back({n, {pts[i].seconds}, {}});
    pts[i].role = i == g.reference ? SystemScaling::Role::kReference : SystemScaling::Role::kFastestAtN;
    g.curve_systems.push_back(i);
  }
  g.curve = scaling::scaling_table(curve, so);
  // Every curve point has a sample, so the rows follow the points (ascending N).
  if (g.curve.rows.size() != g.curve_systems.size()) throw std::logic_error("scaling curve lost a point");
}

}  // namespace

const SystemScaling& SystemGroup::curve_system(int accelerators) const {
  for (size_t i = 0; i < curve.rows.size() && i < curve_systems.size(); ++i)
    if (curve.rows[i].gpus == accelerators) return systems.at(curve_systems[i]);
  throw std::out_of_range(fmt::format("no system on the curve at {} accelerators", accelerators));
}

MlperfScaling analyze(const std::vector<Run>& runs, const AnalyzeOptions& options) {
  if (!(options.threshold > 0 && options.threshold <= 1)) fail("--threshold {} is not in (0, 1]", options.threshold);
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
  using Key = std::tuple<std::string, std::string, std::string>;  // benchmark, accelerator key, division
  std::map<Key, std::vector<SystemScaling>> groups;
  std::map<std::string, std::map<std::string, int>> spellings;  // key -> display -> count
  MlperfScaling result;
  for (const Score& s : scores) {
    if (!want_bench.empty() && s.benchmark != want_bench) continue;
    const std::string key = accelerator_key(s.accelerator);
    if (!want_acc.empty() && key.find(want_acc) == std::string::npos) continue;
    if (!s.minutes) continue;
    if (s.accelerators <= 0 || key.empty()) {
      result.left_out.push_back(fmt::format("{}/{}/{}", s.submitter, s.system, s.benchmark_folder));
      continue;
    }
    SystemScaling p;
    p.system = s.system;
    p.submitter = s.submitter;
    p.accelerators = s.accelerators;
    p.nodes = nodes_of[{s.submitter, s.system, s.benchmark_folder}];
    p.seconds = *s.minutes * 60.0;
    groups[{s.benchmark, key, s.division}].push_back(std::move(p));
    ++spellings[key][accelerator_display(s.accelerator)];
  }
  if (groups.empty())
    fail("no scored MLPerf result matches{}{}", want_bench.empty() ? "" : " benchmark '" + options.benchmark + "'",
         want_acc.empty() ? "" : " accelerator '" + options.accelerator + "'");

  bool ref_found = options.ref_system.empty();
  for (auto& [key, pts] : groups) {
    std::sort(pts.begin(), pts.end(), [](const SystemScaling& a, const SystemScaling& b) {
      return std::tie(a.accelerators, a.seconds, a.system) < std::tie(b.accelerators, b.seconds, b.system);
    });
    size_t ref = 0;  // fewest accelerators, fastest among them (sorted so)
    if (!options.ref_system.empty()) {
      const std::string want = trace::lowercase(options.ref_system);
      auto it = std::find_if(pts.begin(), pts.end(), [&](const SystemScaling& p) {
        auto name = name_of.find({p.submitter, p.system});
        return trace::lowercase(p.system) == want || (name != name_of.end() && trace::lowercase(name->second) == want);
      });
      if (it == pts.end()) continue;  // --ref names a system of another group
      ref = static_cast<size_t>(it - pts.begin());
      ref_found = true;
    }
    const auto& [benchmark, acc_key, division] = key;
    const auto& sp = spellings[acc_key];
    const auto display = std::max_element(sp.begin(), sp.end(), [](auto& a, auto& b) { return a.second < b.second; });
    SystemGroup g;
    g.benchmark = benchmark;
    g.division = division;
    g.title =
        division.empty() || division == "closed" ? benchmark : fmt::format("{} ({} division)", benchmark, division);
    g.accelerator = display->first;
    g.systems = std::move(pts);
    g.reference = ref;
    g.ref_chosen = !options.ref_system.empty();
    scale_group(g, options.threshold);
    result.groups.push_back(std::move(g));
  }
  if (!ref_found) fail("--ref '{}' names no scored system among the results selected", options.ref_system);
  return result;
}

std::string_view to_string(SystemScaling::Role role) {
  static constexpr auto kNames = std::to_array<std::string_view>({"", "reference", "fastest at N"});
  return name_by_value<SystemScaling::Role::kFastestAtN>(kNames, role, "");
}

void to_json(nlohmann::json& j, const SystemScaling& s) {
  j = json_with(
      SCALESCOPE_JSON_FIELDS(s, system, submitter, accelerators, nodes, gpu_hours, speedup, efficiency, pareto),
      {{"minutes", s.minutes()}, {"role", to_string(s.role)}});
}

void to_json(nlohmann::json& j, const SystemGroup& g) {
  j = SCALESCOPE_JSON_FIELDS(g, benchmark, division, title, accelerator, systems, reference, ref_chosen, curve,
                             curve_systems);
}

void to_json(nlohmann::json& j, const MlperfScaling& m) { j = SCALESCOPE_JSON_FIELDS(m, groups, left_out); }

}  // namespace scalescope::mlperf
