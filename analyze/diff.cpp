// diff: per-rank means of two runs, side by side.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analyze/analyze.hpp"

namespace scalescope::analyze {
namespace {

Delta make(std::string what, double a, double b) { return {std::move(what), a, b, b - a, a != 0 ? b / a : 0}; }

template <typename F>
double mean_over(const RunAnalysis& run, F&& f) {
  if (run.ranks.empty()) return 0;
  double sum = 0;
  for (const RankAnalysis& r : run.ranks) sum += f(r);
  return sum / static_cast<double>(run.ranks.size());
}

// Per-rank mean of a keyed figure (kernels by name, copies by kind).
template <typename F>
std::map<std::string, double> keyed_means(const RunAnalysis& run, F&& each) {
  std::map<std::string, double> out;
  for (const RankAnalysis& r : run.ranks) each(r, out);
  for (auto& [k, v] : out) v /= static_cast<double>(std::max<size_t>(1, run.ranks.size()));
  return out;
}

std::vector<Delta> keyed_deltas(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  std::vector<Delta> out;
  for (const auto& [k, va] : a) {
    auto it = b.find(k);
    out.push_back(make(k, va, it == b.end() ? 0 : it->second));
  }
  for (const auto& [k, vb] : b)
    if (!a.contains(k)) out.push_back(make(k, 0, vb));
  return out;
}

}  // namespace

RunDiff diff(const RunAnalysis& a, const RunAnalysis& b, int top) {
  RunDiff d;
  auto both = [&](std::string what, auto&& f) {
    d.breakdown.push_back(make(std::move(what), mean_over(a, f), mean_over(b, f)));
  };
  both("wall", [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.wall_ns); });
  both("compute", [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.compute_ns); });
  both("exposed communication",
       [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.exposed_communication_ns); });
  both("copies and sets", [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.copy_ns); });
  both("idle", [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.idle_ns); });
  both("overlap (communication under compute)",
       [](const RankAnalysis& r) { return static_cast<double>(r.breakdown.overlap_ns); });
  for (int c = 0; c < kKernelClassCount; ++c) {
    auto f = [c](const RankAnalysis& r) { return static_cast<double>(r.classes[c].total_ns); };
    d.classes.push_back(make(std::string(to_string(static_cast<KernelClass>(c))), mean_over(a, f), mean_over(b, f)));
  }
  for (int p = 0; p < kPrecisionCount; ++p) {
    auto f = [p](const RankAnalysis& r) { return static_cast<double>(r.precision.ns[p]); };
    d.classes.push_back(
        make("precision: " + std::string(to_string(static_cast<Precision>(p))), mean_over(a, f), mean_over(b, f)));
  }
  auto kernels = [](const RunAnalysis& run) {
    return keyed_means(run, [](const RankAnalysis& r, std::map<std::string, double>& m) {
      for (const KernelSummary& k : r.top_kernels) m[k.name] += static_cast<double>(k.total_ns);
    });
  };
  d.top_kernels = keyed_deltas(kernels(a), kernels(b));
  // Ties broken by name, so the order (and golden output) never depends on the sort's implementation.
  std::sort(d.top_kernels.begin(), d.top_kernels.end(), [](const Delta& x, const Delta& y) {
    const double ax = std::fabs(x.delta), ay = std::fabs(y.delta);
    return ax != ay ? ax > ay : x.what < y.what;
  });
  if (d.top_kernels.size() > static_cast<size_t>(top)) d.top_kernels.resize(static_cast<size_t>(top));
  auto copies = [](const RunAnalysis& run) {
    return keyed_means(run, [](const RankAnalysis& r, std::map<std::string, double>& m) {
      for (const CopyGroup& g : r.copies.groups) {
        const std::string key = fmt::format("{} {}->{}", trace::to_string(g.kind), trace::to_string(g.src_kind),
                                            trace::to_string(g.dst_kind));
        m[key + " time_ns"] += static_cast<double>(g.time_ns);
        m[key + " bytes"] += static_cast<double>(g.bytes);
      }
    });
  };
  d.copies = keyed_deltas(copies(a), copies(b));
  auto iter = [](const RankAnalysis& r) { return r.iterations.steady_median_ns; };
  const bool ia =
      std::all_of(a.ranks.begin(), a.ranks.end(), [](const RankAnalysis& r) { return r.iterations.count > 0; });
  const bool ib =
      std::all_of(b.ranks.begin(), b.ranks.end(), [](const RankAnalysis& r) { return r.iterations.count > 0; });
  if (ia && ib && !a.ranks.empty() && !b.ranks.empty()) {
    d.iteration = make("steady median iteration", mean_over(a, iter), mean_over(b, iter));
  } else {
    d.iteration = make("steady median iteration", 0, 0);
    d.note = fmt::format("iteration time not compared: {} has no iterations", ia ? "B" : "A");
  }
  return d;
}

}  // namespace scalescope::analyze
