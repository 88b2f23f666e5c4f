#include "collect/iteration_sampler.hpp"

#include <algorithm>
#include <charconv>
#include <random>

#include <fmt/format.h>

#include "trace/quantile.hpp"

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
  switch (c) {
    case IterationClass::kWarmup: return "warmup";
    case IterationClass::kInside: return "inside";
    case IterationClass::kOutside: return "outside";
    case IterationClass::kTransition: return "transition";
    case IterationClass::kLingering: return "lingering";
  }
  return "?";
}

namespace {

double median(std::vector<int64_t>& v) { return trace::median_in_place(v); }  // trace/quantile.hpp

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

void IterationTimes::add(IterationClass c, int64_t duration_ns) {
  const auto i = static_cast<size_t>(c);
  ++counts_[i];
  if (kept_[i].size() < kMaxKept) kept_[i].push_back(duration_ns);
}

uint64_t IterationTimes::total() const {
  uint64_t n = 0;
  for (auto c : counts_) n += c;
  return n;
}

std::string describe_perturbation(const Perturbation& p) {
  if (!p.measured) return "perturbation not measured: " + p.why_not;
  return fmt::format(
      "iterations inside traced windows took {:.1f} % (95 % CI {:.1f} to {:.1f} %) longer than outside "
      "({} inside, {} outside)",
      p.percent, p.ci_low, p.ci_high, p.inside, p.outside);
}

}  // namespace scalescope::collect
