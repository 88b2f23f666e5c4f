// diff: two runs side by side, per steady iteration when both have
// iterations (so a run twice as long does not read as twice the idle time),
// with a one-line verdict naming the largest changes.
#include "analyze/diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/analyze.hpp"
#include "base/format_units.hpp"

namespace scalescope::analyze {
namespace {

Delta make(std::string what, double a, double b) { return {std::move(what), a, b, b - a, a != 0 ? b / a : 0}; }

// What a rank's figures are read from and what they are divided by: its
// steady iterations (or its window's iterations) per iteration, or the whole
// window once.
struct Basis {
  const RankAnalysis* r = nullptr;
  double divisor = 1;
};

bool has_iterations(const RunAnalysis& run) {
  return !run.ranks.empty() &&
         std::all_of(run.ranks.begin(), run.ranks.end(), [](const RankAnalysis& r) { return r.iterations.count > 0; });
}

std::vector<Basis> bases(const RunAnalysis& run, bool per_iteration) {
  std::vector<Basis> out;
  for (const RankAnalysis& r : run.ranks) {
    const RankAnalysis& s = per_iteration && r.steady && r.steady->iterations.count > 0 ? *r.steady : r;
    out.push_back({&s, per_iteration ? static_cast<double>(std::max<int64_t>(1, s.iterations.count)) : 1.0});
  }
  return out;
}

template <typename F>
double mean_over(const std::vector<Basis>& run, F&& f) {
  if (run.empty()) return 0;
  double sum = 0;
  for (const Basis& b : run) sum += static_cast<double>(f(*b.r)) / b.divisor;
  return sum / static_cast<double>(run.size());
}

// Per-rank mean of a keyed figure (kernels by name, copies by kind), each
// rank's value divided by its basis.
template <typename F>
std::map<std::string, double> keyed_means(const std::vector<Basis>& run, F&& each) {
  std::map<std::string, double> out;
  for (const Basis& b : run) {
    std::map<std::string, double> one;
    each(*b.r, one);
    for (const auto& [k, v] : one) out[k] += v / b.divisor;
  }
  for (auto& [k, v] : out) v /= static_cast<double>(std::max<size_t>(1, run.size()));
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

// Largest absolute change first; ties by name, so the order (and golden
// output) never depends on the sort's implementation.
void by_size(std::vector<Delta>& v) {
  std::sort(v.begin(), v.end(), [](const Delta& x, const Delta& y) {
    const double ax = std::fabs(x.delta), ay = std::fabs(y.delta);
    return ax != ay ? ax > ay : x.what < y.what;
  });
}

std::map<std::string, double> kernel_times(const std::vector<Basis>& run) {
  return keyed_means(run, [](const RankAnalysis& r, std::map<std::string, double>& m) {
    for (const KernelSummary& k : r.top_kernels) m[k.name] += static_cast<double>(k.total_ns);
  });
}

// Kernels listed on one side only, by time there. A name can be missing from
// the other side's list only because that list stops at its top N: it counts
// as new only when it took more time than the other list's smallest entry.
std::vector<std::string> only_in(const std::map<std::string, double>& here, const std::map<std::string, double>& there,
                                 size_t top) {
  double smallest = 0;
  bool first = true;
  for (const auto& [k, v] : there) {
    smallest = first ? v : std::min(smallest, v);
    first = false;
  }
  std::vector<std::pair<double, std::string>> v;
  for (const auto& [k, ns] : here)
    if (!there.contains(k) && ns > smallest) v.push_back({ns, k});
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size() && i < top; ++i) out.push_back(v[i].second);
  return out;
}

int64_t copy_time(const RankAnalysis& r, trace::MemoryKind kind) {
  int64_t ns = 0;
  for (const CopyGroup& g : r.copies.groups)
    if (g.src_kind == kind || g.dst_kind == kind) ns += g.time_ns;
  return ns;
}

// The named changes a verdict can cite: precision groups, layout, copies by
// host memory kind, and the time breakdown's exposed communication and idle.
std::vector<Delta> named_changes(const std::vector<Basis>& a, const std::vector<Basis>& b) {
  std::vector<Delta> out;
  auto add = [&](std::string what, auto&& f) { out.push_back(make(std::move(what), mean_over(a, f), mean_over(b, f))); };
  auto precision = [](Precision p) {
    return [p](const RankAnalysis& r) { return r.precision.ns[static_cast<int>(p)]; };
  };
  add("FP32 GEMM/convolution kernels (CUDA cores)", precision(Precision::kFp32NoTensor));
  add("TF32 GEMM/convolution kernels", precision(Precision::kTf32));
  add("FP16/BF16 tensor-core kernels", precision(Precision::kTensorCore));
  add("FP64 kernels", precision(Precision::kFp64));
  // The rest of compute: normalizations, depthwise convolutions, elementwise
  // kernels (an FP32 NCHW batch norm turning into an FP16 NHWC one shows here).
  add("compute kernels other than GEMM/convolution", [](const RankAnalysis& r) {
    int64_t placed = 0;
    for (Precision p : {Precision::kFp64, Precision::kFp32NoTensor, Precision::kTensorCore, Precision::kTf32})
      placed += r.precision.ns[static_cast<int>(p)];
    return std::max<int64_t>(0, r.classes[static_cast<int>(KernelClass::kCompute)].total_ns - placed);
  });
  add("NCHW-only half-precision kernels", [](const RankAnalysis& r) { return r.layout.nchw_half_ns; });
  add("layout conversion kernels", [](const RankAnalysis& r) { return r.layout.conversion_ns; });
  add("pageable copies", [](const RankAnalysis& r) { return copy_time(r, trace::MemoryKind::kPageable); });
  add("pinned copies", [](const RankAnalysis& r) { return copy_time(r, trace::MemoryKind::kPinned); });
  add("exposed communication", [](const RankAnalysis& r) { return r.breakdown.exposed_communication_ns; });
  add("GPU idle", [](const RankAnalysis& r) { return r.breakdown.idle_ns; });
  by_size(out);
  return out;
}

std::string signed_duration(double ns) {
  return (ns < 0 ? "-" : "+") + trace::format_duration_ns(std::fabs(ns));
}

// "B is 19.6 % faster per step (88.0 ms -> 70.7 ms): FP32 GEMM/convolution
// kernels (CUDA cores) -20.1 ms, ..." naming the changes of at least a tenth
// of the step's change (at most three).
std::string verdict(const RunDiff& d) {
  if (d.basis != "per steady iteration" || d.iteration.a <= 0 || d.iteration.b <= 0)
    return "no per-step verdict: " + (d.note.empty() ? std::string("no iteration time on one side") : d.note);
  const double change = d.iteration.b / d.iteration.a - 1;
  std::string line =
      std::fabs(change) < 0.005
          ? fmt::format("B takes the same time per step as A ({} -> {})", trace::format_duration_ns(d.iteration.a),
                        trace::format_duration_ns(d.iteration.b))
          : fmt::format("B is {:.1f} % {} per step ({} -> {})", 100 * std::fabs(change), change < 0 ? "faster" : "slower",
                        trace::format_duration_ns(d.iteration.a), trace::format_duration_ns(d.iteration.b));
  const double floor = std::max(0.1 * std::fabs(d.iteration.delta), 0.01 * d.iteration.a);
  std::vector<std::string> named;
  for (const Delta& c : d.changes)
    if (named.size() < 3 && std::fabs(c.delta) >= floor)
      named.push_back(fmt::format("{} {}", c.what, signed_duration(c.delta)));
  if (!named.empty()) line += fmt::format(": {} per step", fmt::join(named, ", "));
  return line;
}

}  // namespace

RunDiff diff(const RunAnalysis& a_run, const RunAnalysis& b_run, int top) {
  RunDiff d;
  const bool ia = has_iterations(a_run), ib = has_iterations(b_run);
  const bool per_iteration = ia && ib;
  d.basis = per_iteration ? "per steady iteration" : "per rank, whole window";
  const std::vector<Basis> a = bases(a_run, per_iteration), b = bases(b_run, per_iteration);
  auto both = [&](std::string what, auto&& f) { d.breakdown.push_back(make(std::move(what), mean_over(a, f), mean_over(b, f))); };
  both("wall", [](const RankAnalysis& r) { return r.breakdown.wall_ns; });
  both("compute", [](const RankAnalysis& r) { return r.breakdown.compute_ns; });
  both("exposed communication", [](const RankAnalysis& r) { return r.breakdown.exposed_communication_ns; });
  both("copies and sets", [](const RankAnalysis& r) { return r.breakdown.copy_ns; });
  both("idle", [](const RankAnalysis& r) { return r.breakdown.idle_ns; });
  both("overlap (communication under compute)", [](const RankAnalysis& r) { return r.breakdown.overlap_ns; });
  for (int c = 0; c < kKernelClassCount; ++c) {
    auto f = [c](const RankAnalysis& r) { return r.classes[c].total_ns; };
    d.classes.push_back(make(std::string(to_string(static_cast<KernelClass>(c))), mean_over(a, f), mean_over(b, f)));
  }
  for (int p = 0; p < kPrecisionCount; ++p) {
    auto f = [p](const RankAnalysis& r) { return r.precision.ns[p]; };
    d.classes.push_back(
        make("precision: " + std::string(to_string(static_cast<Precision>(p))), mean_over(a, f), mean_over(b, f)));
  }
  const auto ka = kernel_times(a), kb = kernel_times(b);
  d.top_kernels = keyed_deltas(ka, kb);
  by_size(d.top_kernels);
  if (d.top_kernels.size() > static_cast<size_t>(top)) d.top_kernels.resize(static_cast<size_t>(top));
  d.added_kernels = only_in(kb, ka, static_cast<size_t>(top));
  d.removed_kernels = only_in(ka, kb, static_cast<size_t>(top));
  auto copies = [](const std::vector<Basis>& run) {
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
  d.changes = named_changes(a, b);
  if (per_iteration) {
    auto iter = [](const RankAnalysis& r) { return r.iterations.steady_median_ns; };
    d.iteration = make("steady median iteration", mean_over(bases(a_run, false), iter), mean_over(bases(b_run, false), iter));
  } else {
    d.iteration = make("steady median iteration", 0, 0);
    d.note = fmt::format("iteration time not compared: {} has no iterations; figures are per rank over the whole window",
                         !ia && !ib ? "neither run" : ia ? "B" : "A");
  }
  d.verdict = verdict(d);
  return d;
}

}  // namespace scalescope::analyze
