#pragma once
// Sampled tracing windows by iteration, and the perturbation they cause,
// measured by the run itself. Pure code: the collector feeds it the NVTX
// iteration ranges it sees and the state CUPTI was in; tested on synthetic
// timings (iteration_sampler_test.cpp).
//
//   SampleSchedule s{.skip = 10, .active = 20, .every = 0};
//   s.traced(12);                                   // true
//   auto p = estimate_perturbation(inside_ns, outside_ns);       // pooled
//   auto q = estimate_paired_perturbation(times.sequence());     // per window
//   if (p.measured) ... p.percent, p.ci_low, p.ci_high

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::collect {

// torch.profiler's schedule(wait + warmup = skip, active, repeat) shape:
// iterations [skip, skip + active) are traced, then, with every > 0, the
// same `active` iterations at the start of each `every` iterations after.
struct SampleSchedule {
  uint64_t skip = 10;
  uint64_t active = 20;
  uint64_t every = 0;  // 0: one window
  bool traced(uint64_t index) const;
};

// Whether an NVTX range name marks an iteration: `marker` itself, or
// `marker#N` (PyTorch's "ProfilerStep#12"), then N is returned in *number.
bool match_iteration_marker(std::string_view marker, std::string_view text, std::optional<uint64_t>* number);

// How one iteration ran. Inside: a traced window was open from its start to
// its end. Outside: CUPTI was detached (attached again with only the NVTX
// callbacks; with --no-detach: attached, no activity kind enabled) the whole
// time. Transition: a window opened or closed, or CUPTI detached or attached,
// during it. Lingering: between a window's end and the detach. Warm-up: the
// skipped iterations.
enum class IterationClass : uint8_t { kWarmup, kInside, kOutside, kTransition, kLingering };
std::string_view to_string(IterationClass c);

enum class PerturbationMethod : uint8_t { kPooled, kPairedWindows };
std::string_view to_string(PerturbationMethod m);  // "pooled", "paired_windows"

struct Perturbation {
  bool measured = false;
  std::string why_not;  // when !measured
  PerturbationMethod method = PerturbationMethod::kPooled;
  size_t windows = 0;  // traced windows in the figure (paired: those with detached neighbours)
  size_t inside = 0, outside = 0;
  double inside_median_ns = 0, outside_median_ns = 0;
  // Pooled: 100 * (inside median / outside median - 1). Paired: the median
  // over windows of the same ratio, each window against its neighbours.
  double percent = 0;
  // Pooled: 95 % percentile bootstrap. Paired: the sign-test interval of the
  // median over windows (order statistics, coverage >= 95 %).
  double ci_low = 0, ci_high = 0;
};

// Pooled: every traced iteration against every detached one. Needs at least
// kMinIterations on each side. The interval resamples both sides
// (kBootstrapRounds, fixed seed: the same timings give the same text). With
// one window this compares the window with the rest of the run, so the host's
// drift over the run is in the figure (on H200 uninjected processes gave
// -10.7 to +20.5 % for the same ratio: bench/RESULTS.md).
inline constexpr size_t kMinIterations = 5;
inline constexpr int kBootstrapRounds = 1000;
Perturbation estimate_perturbation(std::span<const int64_t> inside_ns, std::span<const int64_t> outside_ns);

// One iteration, in the order iterations ended (warm-up left out).
struct TimedIteration {
  IterationClass c = IterationClass::kOutside;
  int64_t ns = 0;
};

// Paired (windows repeated with --repeat-every): a window is a run of
// consecutive inside iterations; its neighbours are the detached (outside)
// iterations nearest to it, up to as many as the window holds on each side
// (before it, back to the previous window; after it, up to the next one;
// transition and lingering iterations are neither). Each window gives
// 100 * (its median / its neighbours' median - 1); the figure is the median
// over windows and the interval the sign test's, so a drift slower than a
// window and its neighbours cancels, as in ABBA pairs. Needs
// kMinPairedWindows windows with neighbours (the fewest for which a 95 %
// sign-test interval exists); with fewer, the pooled estimate over the same
// iterations, which says why.
inline constexpr size_t kMinPairedWindows = 6;
Perturbation estimate_paired_perturbation(std::span<const TimedIteration> sequence);

// Iterations counted by class, and the classes and durations of those after
// the warm-up in their order (kMaxSequence, 16 bytes each), for the paired
// estimate.
class IterationTimes {
 public:
  static constexpr size_t kMaxSequence = 100000;
  void add(IterationClass c, int64_t duration_ns);
  const std::vector<TimedIteration>& sequence() const { return sequence_; }
  uint64_t count(IterationClass c) const { return counts_[static_cast<size_t>(c)]; }

 private:
  std::vector<TimedIteration> sequence_;
  uint64_t counts_[5] = {};
};

// Above this lower bound of the interval, analyses that read CPU-side timing
// (launch-bound, GPU idle gaps, host synchronisation) are flagged as
// perturbed by the profiler.
inline constexpr double kPerturbationThresholdPercent = 5.0;

// "iterations inside traced windows took 6.1 % (95 % CI 4.0 to 8.3 %) longer
// than outside (20 inside, 412 outside; ...)", "... longer than the detached
// iterations beside them (median of 14 windows, sign test; ...)", or why it
// was not measured.
std::string describe_perturbation(const Perturbation& p);

}  // namespace scalescope::collect
