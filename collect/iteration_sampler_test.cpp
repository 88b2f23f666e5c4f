#include "collect/iteration_sampler.hpp"

#include <gtest/gtest.h>

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

TEST(IterationTimes, KeepsABoundedSampleAndCountsAll) {
  IterationTimes t;
  for (size_t i = 0; i < IterationTimes::kMaxKept + 10; ++i) t.add(IterationClass::kOutside, 5);
  t.add(IterationClass::kInside, 7);
  EXPECT_EQ(t.count(IterationClass::kOutside), IterationTimes::kMaxKept + 10);
  EXPECT_EQ(t.durations(IterationClass::kOutside).size(), IterationTimes::kMaxKept);
  EXPECT_EQ(t.durations(IterationClass::kInside), std::vector<int64_t>{7});
  EXPECT_EQ(t.total(), IterationTimes::kMaxKept + 11);
}

}  // namespace
}  // namespace scalescope::collect
