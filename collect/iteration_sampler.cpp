#include "collect/iteration_sampler.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <random>

#include <boost/math/distributions/binomial.hpp>
#include <fmt/format.h>

#include "base/enum_names.hpp"
#include "base/quantile.hpp"

namespace scalescope::collect {

bool SampleSchedule::traced(uint64_t index) const {
  if (index < skip || active == 0) return false;
  const uint64_t since = index - skip;
  return every == 0 ? since < active : since % every < active;
}

bool match_iteration_marker(std::string_view marker, std::string_view text, std::optional<uint64_t>* number) {
  if (number) number->reset();
  if (marker.empty() || !text.starts_with(marker)) return false;
  std::string_view rest = text.substr(marker.size());
  if (rest.empty()) return true;
  if (rest.front() != '#' || rest.size() < 2) return false;
  rest.remove_prefix(1);
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc() || p != rest.data() + rest.size()) return false;
  if (number) *number = n;
  return true;
}

std::string_view to_string(IterationClass c) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"warmup", "inside", "outside", "transition", "lingering"});
  return name_by_value<IterationClass::kLingering>(kNames, c, "?");
}

std::string_view to_string(PerturbationMethod m) {
  return m == PerturbationMethod::kPairedWindows ? "paired_windows" : "pooled";
}

namespace {

double median(std::vector<int64_t>& v) { return trace::median_in_place(v); }  // base/quantile.hpp

// Largest k (0-based) such that the order statistics (s[k], s[n-1-k]) cover
// the median with probability 1 - 2 P(B <= k) >= level, B ~ Binomial(n, 1/2);
// nullopt when even (min, max) falls short (n < 6 at 95 %).
std::optional<size_t> sign_test_rank(size_t n, double level) {
  boost::math::binomial_distribution<double> b(static_cast<double>(n), 0.5);
  std::optional<size_t> best;
  for (size_t k = 0; 2 * k + 1 < n; ++k) {
    if (1.0 - 2.0 * boost::math::cdf(b, static_cast<double>(k)) + 1e-12 < level) break;
    best = k;
  }
  return best;
}

}  // namespace

Perturbation estimate_perturbation(std::span<const int64_t> inside_ns, std::span<const int64_t> outside_ns) {
  Perturbation p;
  p.inside = inside_ns.size();
  p.outside = outside_ns.size();
  if (p.inside < kMinIterations || p.outside < kMinIterations) {
    p.why_not =
        fmt::format("too few iterations to compare ({} inside, {} outside traced windows; {} needed on each side)",
                    p.inside, p.outside, kMinIterations);
    return p;
  }
  std::vector<int64_t> a(inside_ns.begin(), inside_ns.end()), b(outside_ns.begin(), outside_ns.end());
  p.inside_median_ns = median(a);
  p.outside_median_ns = median(b);
  if (p.outside_median_ns <= 0) {
    p.why_not = "iterations outside traced windows took no time";
    return p;
  }
  p.percent = 100.0 * (p.inside_median_ns / p.outside_median_ns - 1.0);
  std::mt19937_64 rng(0x5ca1e5c0);
  std::vector<double> ratios;
  ratios.reserve(kBootstrapRounds);
  std::vector<int64_t> ra(a.size()), rb(b.size());
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  for (int round = 0; round < kBootstrapRounds; ++round) {
    for (auto& x : ra) x = a[pick_a(rng)];
    for (auto& x : rb) x = b[pick_b(rng)];
    const double mb = median(rb);
    if (mb > 0) ratios.push_back(100.0 * (median(ra) / mb - 1.0));
  }
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) { return ratios[static_cast<size_t>(q * static_cast<double>(ratios.size() - 1) + 0.5)]; };
  p.ci_low = at(0.025);
  p.ci_high = at(0.975);
  p.measured = true;
  return p;
}

Perturbation estimate_paired_perturbation(std::span<const TimedIteration> sequence) {
  // Windows: runs of inside iterations, [begin, end) in the sequence.
  std::vector<std::pair<size_t, size_t>> windows;
  for (size_t i = 0; i < sequence.size(); ++i) {
    if (sequence[i].c != IterationClass::kInside) continue;
    if (!windows.empty() && windows.back().second == i) {
      ++windows.back().second;
    } else {
      windows.emplace_back(i, i + 1);
    }
  }
  std::vector<int64_t> all_inside, all_outside;
  for (const auto& t : sequence) {
    if (t.c == IterationClass::kInside) all_inside.push_back(t.ns);
    if (t.c == IterationClass::kOutside) all_outside.push_back(t.ns);
  }
  std::vector<double> ratios;
  size_t inside = 0, outside = 0;
  std::vector<int64_t> in, near;
  // A detached iteration between two windows can be a neighbour of both: counted once.
  std::vector<uint8_t> neighbour(sequence.size(), 0);
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto [begin, end] = windows[w];
    const size_t want = end - begin;
    const size_t lo = w == 0 ? 0 : windows[w - 1].second;
    const size_t hi = w + 1 < windows.size() ? windows[w + 1].first : sequence.size();
    near.clear();
    auto take = [&](size_t i) {
      near.push_back(sequence[i].ns);
      if (!neighbour[i]) ++outside;
      neighbour[i] = 1;
    };
    for (size_t i = begin; i-- > lo && near.size() < want;)
      if (sequence[i].c == IterationClass::kOutside) take(i);
    const size_t before = near.size();
    for (size_t i = end; i < hi && near.size() - before < want; ++i)
      if (sequence[i].c == IterationClass::kOutside) take(i);
    if (near.empty()) continue;
    const double base = median(near);
    if (base <= 0) continue;
    in.clear();
    for (size_t i = begin; i < end; ++i) in.push_back(sequence[i].ns);
    inside += in.size();
    ratios.push_back(100.0 * (median(in) / base - 1.0));
  }
  if (ratios.size() < kMinPairedWindows) {
    Perturbation p = estimate_perturbation(all_inside, all_outside);
    p.windows = windows.size();
    return p;
  }
  Perturbation p;
  p.method = PerturbationMethod::kPairedWindows;
  p.windows = ratios.size();
  p.inside = inside;
  p.outside = outside;
  p.inside_median_ns = median(all_inside);
  p.outside_median_ns = median(all_outside);
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  p.percent = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  const size_t k = sign_test_rank(n, 0.95).value_or(0);  // n >= kMinPairedWindows: a rank exists
  p.ci_low = ratios[k];
  p.ci_high = ratios[n - 1 - k];
  p.measured = true;
  return p;
}

void IterationTimes::add(IterationClass c, int64_t duration_ns) {
  ++counts_[static_cast<size_t>(c)];
  if (c != IterationClass::kWarmup && sequence_.size() < kMaxSequence) sequence_.push_back({c, duration_ns});
}

std::string describe_perturbation(const Perturbation& p) {
  if (!p.measured) return "perturbation not measured: " + p.why_not;
  if (p.method == PerturbationMethod::kPairedWindows)
    return fmt::format(
        "iterations inside traced windows took {:.1f} % (95 % CI {:.1f} to {:.1f} %, sign test) longer than the "
        "detached iterations beside them (median of {} windows, each against up to as many detached iterations "
        "before and after it; {} inside, {} outside)",
        p.percent, p.ci_low, p.ci_high, p.windows, p.inside, p.outside);
  std::string text = fmt::format(
      "iterations inside traced windows took {:.1f} % (95 % CI {:.1f} to {:.1f} %) longer than outside "
      "({} inside, {} outside",
      p.percent, p.ci_low, p.ci_high, p.inside, p.outside);
  if (p.windows > 0 && p.windows < kMinPairedWindows)
    text += fmt::format(
        "; {} window{} against every detached iteration, so the host's drift over the run is in the figure: "
        "--repeat-every with at least {} windows pairs each window with its neighbours",
        p.windows, p.windows == 1 ? "" : "s", kMinPairedWindows);
  return text + ")";
}

}  // namespace scalescope::collect
