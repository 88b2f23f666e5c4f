#include "collect/iteration_sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace scalescope::collect {
namespace {

TEST(SampleSchedule, SkipsWarmupAndTracesOneWindow) {
  SampleSchedule s{.skip = 10, .active = 20, .every = 0};
  for (uint64_t i = 0; i < 10; ++i) EXPECT_FALSE(s.traced(i)) << i;
  for (uint64_t i = 10; i < 30; ++i) EXPECT_TRUE(s.traced(i)) << i;
  for (uint64_t i = 30; i < 1000; ++i) EXPECT_FALSE(s.traced(i)) << i;
}

TEST(SampleSchedule, RepeatsEveryMIterations) {
  SampleSchedule s{.skip = 2, .active = 3, .every = 10};
  std::vector<uint64_t> traced;
  for (uint64_t i = 0; i < 35; ++i)
    if (s.traced(i)) traced.push_back(i);
  EXPECT_EQ(traced, (std::vector<uint64_t>{2, 3, 4, 12, 13, 14, 22, 23, 24, 32, 33, 34}));
}

TEST(SampleSchedule, NoSkip) {
  SampleSchedule s{.skip = 0, .active = 1, .every = 0};
  EXPECT_TRUE(s.traced(0));
  EXPECT_FALSE(s.traced(1));
}

TEST(IterationMarker, MatchesNameAndNumberedName) {
  std::optional<uint64_t> n;
  EXPECT_TRUE(match_iteration_marker("ProfilerStep", "ProfilerStep#12", &n));
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 12u);
  EXPECT_TRUE(match_iteration_marker("train_step", "train_step", &n));
  EXPECT_FALSE(n.has_value());
  EXPECT_FALSE(match_iteration_marker("ProfilerStep", "ProfilerStepX", &n));
  EXPECT_FALSE(match_iteration_marker("ProfilerStep", "ProfilerStep#", &n));
  EXPECT_FALSE(match_iteration_marker("ProfilerStep", "ProfilerStep#3a", &n));
  EXPECT_FALSE(match_iteration_marker("ProfilerStep", "aten::mm", &n));
  EXPECT_FALSE(match_iteration_marker("", "x", &n));
}

std::vector<int64_t> noisy(size_t n, double mean_ns, double sd_ns, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean_ns, sd_ns);
  std::vector<int64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<int64_t>(d(rng)));
  return v;
}

TEST(Perturbation, FindsATenPercentSlowdownWithAnIntervalAroundIt) {
  auto inside = noisy(20, 22e6, 0.4e6, 1);    // 22 ms
  auto outside = noisy(400, 20e6, 0.4e6, 2);  // 20 ms: +10 %
  auto p = estimate_perturbation(inside, outside);
  ASSERT_TRUE(p.measured) << p.why_not;
  EXPECT_NEAR(p.percent, 10.0, 1.5);
  EXPECT_LT(p.ci_low, p.percent);
  EXPECT_GT(p.ci_high, p.percent);
  EXPECT_GT(p.ci_low, 6.0);
  EXPECT_LT(p.ci_high, 14.0);
  EXPECT_EQ(p.inside, 20u);
  EXPECT_EQ(p.outside, 400u);
}

TEST(Perturbation, NoSlowdownGivesAnIntervalThroughZero) {
  auto inside = noisy(20, 20e6, 1e6, 3);
  auto outside = noisy(300, 20e6, 1e6, 4);
  auto p = estimate_perturbation(inside, outside);
  ASSERT_TRUE(p.measured);
  EXPECT_LT(p.ci_low, 0.0);
  EXPECT_GT(p.ci_high, 0.0);
  EXPECT_LT(std::abs(p.percent), 3.0);
}

TEST(Perturbation, RobustToAFewSlowOutliers) {
  std::vector<int64_t> inside(20, 21'000'000), outside(200, 20'000'000);
  outside[5] = outside[50] = outside[100] = 900'000'000;  // checkpoints, GC pauses
  auto p = estimate_perturbation(inside, outside);
  ASSERT_TRUE(p.measured);
  EXPECT_NEAR(p.percent, 5.0, 1e-9);
}

TEST(Perturbation, TooFewIterationsIsSaidNotGuessed) {
  std::vector<int64_t> inside(20, 10), outside(4, 10);
  auto p = estimate_perturbation(inside, outside);
  EXPECT_FALSE(p.measured);
  EXPECT_NE(p.why_not.find("4 outside"), std::string::npos) << p.why_not;
  EXPECT_NE(describe_perturbation(p).find("not measured"), std::string::npos);
}

TEST(Perturbation, SameInputSameText) {
  auto inside = noisy(20, 22e6, 2e6, 5), outside = noisy(100, 20e6, 2e6, 6);
  EXPECT_EQ(describe_perturbation(estimate_perturbation(inside, outside)),
            describe_perturbation(estimate_perturbation(inside, outside)));
}

// Windows of `k` iterations every `every`, after `skip` warm-up ones, on a
// host whose speed drifts by +-15 % over a few hundred iterations (as
// measured on H200); a window's iterations cost `cost` (0.2 = +20 %), and
// the `gap` iterations after each window are transition (CUPTI detaches and
// attaches again) at a time of their own.
std::vector<TimedIteration> drifting_run(size_t n, size_t k, size_t every, double cost, size_t gap = 1,
                                         double drift_period = 60.0, int64_t gap_ns = 400'000'000) {
  std::vector<TimedIteration> seq;
  for (size_t i = 0; i < n; ++i) {
    const double base = 20e6 * (1 + 0.15 * std::sin(static_cast<double>(i) / drift_period));
    const size_t phase = i % every;
    if (phase < k)
      seq.push_back({IterationClass::kInside, static_cast<int64_t>(base * (1 + cost))});
    else if (phase < k + gap)
      seq.push_back({IterationClass::kTransition, gap_ns});
    else
      seq.push_back({IterationClass::kOutside, static_cast<int64_t>(base)});
  }
  return seq;
}

TEST(PairedPerturbation, EachWindowAgainstItsNeighboursCancelsTheDrift) {
  auto seq = drifting_run(420, 10, 30, 0.20);
  auto p = estimate_paired_perturbation(seq);
  ASSERT_TRUE(p.measured) << p.why_not;
  EXPECT_EQ(p.method, PerturbationMethod::kPairedWindows);
  EXPECT_EQ(p.windows, 14u);
  EXPECT_NEAR(p.percent, 20.0, 1.0);
  EXPECT_LE(p.ci_low, p.percent);
  EXPECT_GE(p.ci_high, p.percent);
  EXPECT_GT(p.ci_low, 15.0);
  EXPECT_LT(p.ci_high, 25.0);
  EXPECT_EQ(p.inside, 140u);
  // The pooled figure over the same iterations carries the drift: one window
  // against the rest of a run gives more than a point of error.
  std::vector<int64_t> in, out;
  for (const auto& t : drifting_run(420, 20, 1000, 0.20, 1, 60.0))
    (t.c == IterationClass::kInside ? in : out).push_back(t.ns);
  EXPECT_GT(std::abs(estimate_perturbation(in, out).percent - 20.0), 1.0);
}

TEST(PairedPerturbation, NoCostGivesAnIntervalThroughZero) {
  auto p = estimate_paired_perturbation(drifting_run(420, 10, 30, 0.0));
  ASSERT_TRUE(p.measured);
  EXPECT_EQ(p.method, PerturbationMethod::kPairedWindows);
  EXPECT_LT(std::abs(p.percent), 1.0);
  EXPECT_LT(p.ci_low, 0.5);
  EXPECT_GT(p.ci_high, -0.5);
  EXPECT_LT(p.ci_low, p.ci_high);
}

// The interval is the sign test's: the order statistics s[k], s[n-1-k] of the
// windows' ratios (n = 10: k = 1, coverage 97.9 %; as window_ab_summary.py).
TEST(PairedPerturbation, SignTestIntervalOfTheWindowsRatios) {
  std::vector<TimedIteration> seq;
  for (int w = 1; w <= 10; ++w) {
    for (int i = 0; i < 4; ++i) seq.push_back({IterationClass::kOutside, 100'000'000});
    for (int i = 0; i < 4; ++i) seq.push_back({IterationClass::kInside, 100'000'000 + w * 1'000'000});
  }
  for (int i = 0; i < 4; ++i) seq.push_back({IterationClass::kOutside, 100'000'000});
  auto p = estimate_paired_perturbation(seq);
  ASSERT_TRUE(p.measured);
  EXPECT_EQ(p.windows, 10u);
  EXPECT_NEAR(p.percent, 5.5, 1e-9);  // ratios 1..10 %
  EXPECT_NEAR(p.ci_low, 2.0, 1e-9);
  EXPECT_NEAR(p.ci_high, 9.0, 1e-9);
  const auto text = describe_perturbation(p);
  EXPECT_NE(text.find("5.5 % (95 % CI 2.0 to 9.0 %, sign test)"), std::string::npos) << text;
  EXPECT_NE(text.find("median of 10 windows"), std::string::npos) << text;
  // 4 before and 4 after each window; the 4 between two windows are counted once.
  EXPECT_NE(text.find("40 inside, 44 outside"), std::string::npos) << text;
}

// Neighbours are the nearest detached iterations, as many as the window on
// each side: a slow stretch far from every window does not move the figure,
// and transition iterations are never neighbours.
TEST(PairedPerturbation, OnlyTheNearestDetachedIterationsAreNeighbours) {
  std::vector<TimedIteration> seq;
  for (int w = 0; w < 8; ++w) {
    for (int i = 0; i < 3; ++i) seq.push_back({IterationClass::kInside, 12'000'000});
    seq.push_back({IterationClass::kTransition, 900'000'000});
    seq.push_back({IterationClass::kLingering, 900'000'000});
    for (int i = 0; i < 3; ++i) seq.push_back({IterationClass::kOutside, 10'000'000});
    for (int i = 0; i < 20; ++i) seq.push_back({IterationClass::kOutside, 30'000'000});  // far: never a neighbour
    for (int i = 0; i < 3; ++i) seq.push_back({IterationClass::kOutside, 10'000'000});
  }
  auto p = estimate_paired_perturbation(seq);
  ASSERT_TRUE(p.measured);
  EXPECT_EQ(p.method, PerturbationMethod::kPairedWindows);
  EXPECT_NEAR(p.percent, 20.0, 1e-9);
  EXPECT_NEAR(p.ci_low, 20.0, 1e-9);
  EXPECT_NEAR(p.ci_high, 20.0, 1e-9);
}

// Fewer than kMinPairedWindows windows (the default schedule's one): the
// pooled estimate, and the text says that the drift is in it.
TEST(PairedPerturbation, FewWindowsFallBackToPooledAndSaySo) {
  auto seq = drifting_run(100, 20, 1000, 0.10);
  auto p = estimate_paired_perturbation(seq);
  ASSERT_TRUE(p.measured) << p.why_not;
  EXPECT_EQ(p.method, PerturbationMethod::kPooled);
  EXPECT_EQ(p.windows, 1u);
  EXPECT_EQ(p.inside, 20u);
  EXPECT_EQ(p.outside, 79u);
  const auto text = describe_perturbation(p);
  EXPECT_NE(text.find("longer than outside (20 inside, 79 outside; 1 window against every detached iteration"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--repeat-every"), std::string::npos) << text;
  auto none = estimate_paired_perturbation(std::vector<TimedIteration>{});
  EXPECT_FALSE(none.measured);
  EXPECT_NE(describe_perturbation(none).find("too few iterations"), std::string::npos);
}

TEST(IterationTimes, KeepsTheOrderAfterTheWarmup) {
  IterationTimes t;
  t.add(IterationClass::kWarmup, 1);
  t.add(IterationClass::kInside, 2);
  t.add(IterationClass::kTransition, 3);
  t.add(IterationClass::kOutside, 4);
  ASSERT_EQ(t.sequence().size(), 3u);
  EXPECT_EQ(t.sequence()[0].c, IterationClass::kInside);
  EXPECT_EQ(t.sequence()[1].ns, 3);
  EXPECT_EQ(t.sequence()[2].c, IterationClass::kOutside);
  for (size_t i = 0; i < IterationTimes::kMaxSequence; ++i) t.add(IterationClass::kOutside, 5);
  EXPECT_EQ(t.sequence().size(), IterationTimes::kMaxSequence);
}

TEST(IterationTimes, CountsEveryIterationBeyondTheSequence) {
  IterationTimes t;
  for (size_t i = 0; i < IterationTimes::kMaxSequence + 10; ++i) t.add(IterationClass::kOutside, 5);
  t.add(IterationClass::kInside, 7);
  EXPECT_EQ(t.count(IterationClass::kOutside), IterationTimes::kMaxSequence + 10);
  EXPECT_EQ(t.count(IterationClass::kInside), 1u);
  EXPECT_EQ(t.sequence().size(), IterationTimes::kMaxSequence);
}

}  // namespace
}  // namespace scalescope::collect
