#include "scaling/scaling.hpp"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace scalescope::scaling {
namespace {

TEST(ScalingSummary, OrderStatisticCiHandComputed) {
  // n = 10: [X(2), X(9)] covers the median with 1 - 2*P(B<=1) = 1 - 22/1024;
  // [X(3), X(8)] would give 1 - 112/1024 < 0.95.
  std::vector<double> v = {7, 3, 9, 1, 10, 5, 2, 8, 6, 4};
  const auto s = summarize(v);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.stddev, std::sqrt(82.5 / 9), 1e-12);
  EXPECT_EQ(s.ci_method, CiMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(s.ci_low, 2);
  EXPECT_DOUBLE_EQ(s.ci_high, 9);
  EXPECT_NEAR(s.ci_coverage, 1 - 22.0 / 1024, 1e-12);
}

TEST(ScalingSummary, SixSamplesUseMinMaxAtNinetyFive) {
  const auto s = summarize(std::vector<double>{4, 1, 6, 2, 5, 3});
  EXPECT_EQ(s.ci_method, CiMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(s.ci_low, 1);
  EXPECT_DOUBLE_EQ(s.ci_high, 6);
  EXPECT_NEAR(s.ci_coverage, 1 - 2.0 / 64, 1e-12);
  // At 97.5% six samples are not enough for order statistics.
  EXPECT_EQ(summarize(std::vector<double>{4, 1, 6, 2, 5, 3}, 0.975).ci_method, CiMethod::kStudentT);
}

TEST(ScalingSummary, SmallSampleFallsBackToStudentT) {
  const auto s = summarize(std::vector<double>{1, 2, 3});
  EXPECT_EQ(s.ci_method, CiMethod::kStudentT);
  const double half = 4.302652729749464 / std::sqrt(3.0);  // t(0.975, 2) * s / sqrt(n), s = 1
  EXPECT_NEAR(s.ci_low, 2 - half, 1e-9);
  EXPECT_NEAR(s.ci_high, 2 + half, 1e-9);
}

TEST(ScalingSummary, SingleSampleHasNoInterval) {
  const auto s = summarize(std::vector<double>{42});
  EXPECT_EQ(s.ci_method, CiMethod::kNone);
  EXPECT_TRUE(std::isnan(s.ci_low));
  EXPECT_DOUBLE_EQ(s.median, 42);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
}

TEST(ScalingSummary, BadInputThrows) {
  EXPECT_THROW(summarize(std::vector<double>{}), Error);
  EXPECT_THROW(summarize(std::vector<double>{1, NAN}), Error);
  EXPECT_THROW(summarize(std::vector<double>{1, 2}, 1.5), Error);
  EXPECT_THROW(to_time_samples(std::vector<double>{10, 0}, Better::kHigher), Error);
}

TEST(ScalingSummary, ThroughputBecomesTimePerUnit) {
  const auto t = to_time_samples(std::vector<double>{100, 200, 400}, Better::kHigher);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0], 0.01);
  EXPECT_DOUBLE_EQ(t[2], 0.0025);
  EXPECT_EQ(to_time_samples(std::vector<double>{3}, Better::kLower)[0], 3);
}

// T: 1 GPU 100 s, 2 -> 50 (E' 1), 4 -> 30 (E' 0.833), 8 -> 20 (E' 0.625).
std::vector<ScalingPoint> law_points() {
  return {{1, {99, 100, 101}, {}},
          {2, {49.5, 50, 50.5}, {}},
          {4, {29.7, 30, 30.3}, {1000, 1100, 1200}},
          {8, {19.8, 20, 20.2}, {}}};
}

TEST(ScalingTable, SpeedupEfficiencyAndBreakEvenHandComputed) {
  ScalingOptions opt;
  opt.price_per_gpu_hour = 2.0;
  const auto t = scaling_table(law_points(), opt);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.ref_gpus, 1);
  EXPECT_DOUBLE_EQ(t.rows[0].speedup, 1);
  EXPECT_DOUBLE_EQ(t.rows[1].speedup, 2);
  EXPECT_DOUBLE_EQ(t.rows[1].efficiency, 1);
  EXPECT_NEAR(t.rows[2].efficiency, 100.0 / 120, 1e-12);
  EXPECT_NEAR(t.rows[3].efficiency, 0.625, 1e-12);
  EXPECT_NEAR(t.rows[3].gpu_hours, 160.0 / 3600, 1e-12);
  EXPECT_NEAR(*t.rows[3].cost, 2 * 160.0 / 3600, 1e-12);
  ASSERT_TRUE(t.rows[2].energy_j.has_value());
  EXPECT_DOUBLE_EQ(t.rows[2].energy_j->median, 1100);
  EXPECT_FALSE(t.rows[0].energy_j.has_value());
  // CI of S contains S and is built from 97.5% intervals (t with n = 3).
  EXPECT_LT(t.rows[1].speedup_low, 2);
  EXPECT_GT(t.rows[1].speedup_high, 2);
  // Rule (a): largest N with E' >= 0.8 is 4.
  EXPECT_EQ(t.break_even.by_threshold, 4);
  // Rule (b): front (time, GPU-h) = N=8 (20,160), N=4 (30,120), N=2 (50,100);
  // N=1 (100,100) is dominated by N=2. N=4 is at normalized (1/3, 1/3).
  EXPECT_EQ(t.break_even.by_knee, 4);
  EXPECT_FALSE(t.rows[0].pareto);
  EXPECT_TRUE(t.rows[1].pareto);
  EXPECT_TRUE(t.rows[3].pareto);
}

// Weak scaling with the study's H200 figures: iteration time 73 ms at 1 GPU and
// 85 ms at 2 (batch 128 per GPU). On step times E'(2) = 73/(2*85) = 0.43; per
// image it is 73/85 = 0.86, what the throughput metric showed.
TEST(ScalingWeak, StepTimesBecomeTimePerSample) {
  const std::vector<double> one = {0.073}, two = {0.085};
  std::vector<ScalingPoint> step = {{1, one, {}}, {2, two, {}}};
  EXPECT_NEAR(scaling_table(step, {}).rows[1].efficiency, 0.073 / (2 * 0.085), 1e-12);
  std::vector<ScalingPoint> per_image = {{1, weak_scaling_unit_times(one, 1, 128), {}},
                                         {2, weak_scaling_unit_times(two, 2, 128), {}}};
  EXPECT_DOUBLE_EQ(per_image[1].times[0], 0.085 / 256);  // seconds per image: 1/3012 images/s
  const auto t = scaling_table(per_image, {});
  EXPECT_NEAR(t.rows[1].efficiency, 0.073 / 0.085, 1e-12);
  EXPECT_NEAR(t.rows[1].speedup, 2 * 0.073 / 0.085, 1e-12);
  // The unit does not change S or E'.
  std::vector<ScalingPoint> per_step = {{1, weak_scaling_unit_times(one, 1), {}},
                                        {2, weak_scaling_unit_times(two, 2), {}}};
  EXPECT_NEAR(scaling_table(per_step, {}).rows[1].efficiency, t.rows[1].efficiency, 1e-12);
  EXPECT_THROW(weak_scaling_unit_times(one, 0), Error);
  EXPECT_THROW(weak_scaling_unit_times(one, 2, 0), Error);
  EXPECT_THROW(weak_scaling_unit_times(one, 2, std::nan("")), Error);
}

TEST(ScalingWeak, WorkPerGpuTellsWeakFromStrong) {
  // Compute per iteration of one GPU: the same at 2 and 4 GPUs: weak.
  auto e = classify_work_per_step({{2, 0.051}, {1, 0.050}, {4, 0.049}});
  EXPECT_EQ(e.kind, WorkPerStep::kFixedPerGpu) << e.detail;
  EXPECT_NE(e.detail.find("1.02x at N=2 (weak: 1, strong: 0.5)"), std::string::npos) << e.detail;
  // Halved at 2 GPUs, a bit more than a quarter at 4 (small batches are less efficient): strong.
  e = classify_work_per_step({{1, 0.050}, {2, 0.027}, {4, 0.015}});
  EXPECT_EQ(e.kind, WorkPerStep::kFixedTotal) << e.detail;
  // In between, or a single count, or bad values: unknown.
  EXPECT_EQ(classify_work_per_step({{1, 0.050}, {2, 0.036}}).kind, WorkPerStep::kUnknown);
  EXPECT_EQ(classify_work_per_step({{1, 0.050}, {1, 0.051}}).kind, WorkPerStep::kUnknown);
  EXPECT_EQ(classify_work_per_step({{1, 0.050}, {2, 0}}).kind, WorkPerStep::kUnknown);
  EXPECT_EQ(classify_work_per_step({}).kind, WorkPerStep::kUnknown);
  // One count against the others: weak at 2 but strong at 4 is neither.
  EXPECT_EQ(classify_work_per_step({{1, 0.05}, {2, 0.05}, {4, 0.0125}}).kind, WorkPerStep::kUnknown);
}

TEST(ScalingTable, SpeedupCiIsRatioOfBonferroniEndpoints) {
  const auto t = scaling_table(law_points(), {});
  const auto ref = summarize(std::vector<double>{99, 100, 101}, 0.975);
  const auto two = summarize(std::vector<double>{49.5, 50, 50.5}, 0.975);
  EXPECT_NEAR(t.rows[1].speedup_low, ref.ci_low / two.ci_high, 1e-12);
  EXPECT_NEAR(t.rows[1].speedup_high, ref.ci_high / two.ci_low, 1e-12);
  EXPECT_NEAR(t.rows[1].efficiency_low, ref.ci_low / two.ci_high / 2, 1e-12);
}

TEST(ScalingTable, ThresholdAndReferenceAreOptions) {
  ScalingOptions opt;
  opt.threshold = 0.9;
  EXPECT_EQ(scaling_table(law_points(), opt).break_even.by_threshold, 2);
  opt.threshold = 0.5;
  EXPECT_EQ(scaling_table(law_points(), opt).break_even.by_threshold, 8);
  opt.ref_gpus = 2;
  const auto t = scaling_table(law_points(), opt);
  EXPECT_EQ(t.ref_gpus, 2);
  EXPECT_DOUBLE_EQ(t.rows[1].efficiency, 1);
  EXPECT_DOUBLE_EQ(t.rows[0].efficiency, 1);  // 2*50 / (1*100)
  opt.ref_gpus = 16;
  EXPECT_THROW(scaling_table(law_points(), opt), Error);
}

TEST(ScalingTable, AllFailedIsAnErrorNotANumber) {
  std::vector<ScalingPoint> pts = {{1, {}, {}}, {2, {}, {}}};
  EXPECT_THROW(scaling_table(pts, {}), Error);
  pts[1].times = {10, 11};
  const auto t = scaling_table(pts, {});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.ref_gpus, 2);
  EXPECT_EQ(t.missing_gpus, std::vector<int>{1});
  EXPECT_FALSE(t.break_even.by_knee.has_value());
  EXPECT_THROW(scaling_table({{1, {1}, {}}, {1, {2}, {}}}, {}), Error);
  EXPECT_THROW(scaling_table({{0, {1}, {}}}, {}), Error);
}

// One measured count is its own reference: E' = 1 by definition, so neither
// break-even rule is claimed (the study's accuracy sweep ran at 2 GPUs only).
TEST(ScalingTable, OneGpuCountClaimsNoBreakEven) {
  const auto t = scaling_table({{2, {112.2}, {}}}, {});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(t.rows[0].efficiency, 1);
  EXPECT_TRUE(t.rows[0].pareto);
  EXPECT_FALSE(t.break_even.by_threshold.has_value());
  EXPECT_FALSE(t.break_even.by_knee.has_value());
  ASSERT_EQ(t.break_even.notes.size(), 1u);
  EXPECT_EQ(t.break_even.notes[0], "only N=2 measured: no speedup, efficiency or break-even to report");
  // A second count that failed everywhere is named too.
  const auto u = scaling_table({{1, {}, {}}, {2, {112.2}, {}}}, {});
  EXPECT_FALSE(u.break_even.by_threshold.has_value());
  ASSERT_EQ(u.break_even.notes.size(), 2u);
  EXPECT_NE(u.break_even.notes[1].find("left out): 1"), std::string::npos);
}

TEST(ScalingTable, NoisyEfficiencyAtThresholdIsNoted) {
  std::vector<ScalingPoint> pts = {{1, {90, 100, 110}, {}}, {2, {55, 60, 65}, {}}};
  const auto t = scaling_table(pts, {});
  EXPECT_EQ(t.break_even.by_threshold, 2);  // 100 / 120 = 0.833
  ASSERT_FALSE(t.break_even.notes.empty());
  EXPECT_NE(t.break_even.notes[0].find("below the threshold"), std::string::npos);
}

TEST(ScalingPareto, FrontAndKnee) {
  std::vector<std::pair<double, double>> pts = {{5, 5}, {1, 10}, {2, 4}, {3, 2.5}, {10, 1}, {3, 2.5}};
  const auto front = pareto_front(pts);
  // (5,5) is dominated by (3,2.5); the second (3,2.5) is a tie of the first.
  EXPECT_EQ(front, (std::vector<size_t>{1, 2, 3, 4}));
  std::vector<std::pair<double, double>> f;
  for (size_t i : front) f.push_back(pts[i]);
  // Normalized: (0,1), (1/9, 3/9), (2/9, 1.5/9), (1,0): 1-u-v = 5/9 and 5.5/9.
  EXPECT_EQ(knee_index(f), 2u);
  std::vector<std::pair<double, double>> line = {{1, 3}, {2, 2}, {3, 1}};
  EXPECT_FALSE(knee_index(line).has_value());
  EXPECT_FALSE(knee_index(std::vector<std::pair<double, double>>{{1, 2}, {2, 1}}).has_value());
}

TEST(ScalingCompare, WelchOnLogsHandComputed) {
  // logs a = {0,1,2}, logs b = {1,2,3}: diff 1, se = sqrt(2/3), df = 4.
  const double e = std::exp(1.0);
  std::vector<double> a = {1, e, e * e}, b = {e, e * e, e * e * e};
  const auto c = compare(a, b);
  EXPECT_NEAR(c.ratio, e, 1e-12);
  EXPECT_NEAR(c.welch_p, 0.2878641347266906, 1e-9);  // 2 * (1 - F_t4(1.2247)), closed form for 4 df
  const double q = 2.7764451051977987;               // t(0.975, 4)
  EXPECT_NEAR(c.ratio_low, std::exp(1 - q * std::sqrt(2.0 / 3)), 1e-9);
  EXPECT_NEAR(c.ratio_high, std::exp(1 + q * std::sqrt(2.0 / 3)), 1e-9);
  EXPECT_FALSE(c.differs);
  // Shared values are ties: U = 3 + 2.5 + 1.5, normal approximation.
  EXPECT_FALSE(c.mann_whitney_exact);
  EXPECT_DOUBLE_EQ(c.u, 7);
}

TEST(ScalingCompare, ExactMannWhitneyExtreme) {
  // Every a below every b: U = 9, exact P = 2 * 1/C(6,3) = 0.1.
  const auto c = compare(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  EXPECT_TRUE(c.mann_whitney_exact);
  EXPECT_DOUBLE_EQ(c.u, 9);
  EXPECT_NEAR(c.mann_whitney_p, 0.1, 1e-12);
}

TEST(ScalingCompare, ExactMannWhitneyMiddleValue) {
  // a = {1,3}, b = {2,4}: U = #(a<b) = (1<2,1<4,3<4) = 3. Of the C(4,2) = 6
  // arrangements U takes 0,1,2,2,3,4: P(U>=3) = 2/6, p = 2/3.
  const auto c = compare(std::vector<double>{1, 3}, std::vector<double>{2, 4});
  EXPECT_DOUBLE_EQ(c.u, 3);
  EXPECT_NEAR(c.mann_whitney_p, 2.0 / 3, 1e-12);
}

TEST(ScalingCompare, ClearDifferenceIsDetected) {
  std::vector<double> a = {10.0, 10.1, 9.9, 10.05, 9.95}, b = {12.0, 12.1, 11.9, 12.05, 11.95};
  const auto c = compare(a, b);
  EXPECT_TRUE(c.differs);
  EXPECT_LT(c.welch_p, 1e-6);
  EXPECT_NEAR(c.ratio, 1.2, 1e-12);
  EXPECT_LT(c.ratio_low, 1.2);
  EXPECT_GT(c.ratio_high, 1.2);
  EXPECT_NEAR(c.mann_whitney_p, 2.0 / 252, 1e-12);  // 2 / C(10,5)
}

TEST(ScalingCompare, TiesUseNormalApproximation) {
  // a={1,1,2}, b={2,3,3}: U = 2*3 (1s) + 0.5 + 2 (2 vs 2 tie, 2<3 twice) = 8.5.
  const auto c = compare(std::vector<double>{1, 1, 2}, std::vector<double>{2, 3, 3});
  EXPECT_FALSE(c.mann_whitney_exact);
  EXPECT_DOUBLE_EQ(c.u, 8.5);
  // mu = 4.5, tie term = 3*(8-2) = 18, var = 9/12 * (7 - 18/30) = 4.8,
  // z = (4 - 0.5)/sqrt(4.8).
  const double z = 3.5 / std::sqrt(4.8);
  EXPECT_NEAR(c.mann_whitney_p, std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_THROW(compare(std::vector<double>{}, std::vector<double>{1}), Error);
  EXPECT_THROW(compare(std::vector<double>{-1}, std::vector<double>{1}), Error);
}

TEST(ScalingFit, AmdahlRecoversKnownLaw) {
  // T1 = 100, s = 0.05.
  std::vector<FitPoint> pts;
  for (int n : {1, 2, 4, 8}) pts.push_back({n, 100 * (0.05 + 0.95 / n)});
  const auto f = fit_model(ModelKind::kAmdahl, pts, std::nullopt, {16, 64}, 1, 100);
  ASSERT_TRUE(f.ok);
  auto param = [&](const std::string& k) {
    for (const auto& [name, v] : f.params)
      if (name == k) return v;
    return NAN * 1.0;
  };
  EXPECT_NEAR(param("T1"), 100, 1e-6);
  EXPECT_NEAR(param("s"), 0.05, 1e-9);
  EXPECT_LT(f.loo_max_abs_rel_error, 1e-9);
  ASSERT_EQ(f.predictions.size(), 2u);
  EXPECT_NEAR(f.predictions[0].time, 100 * (0.05 + 0.95 / 16), 1e-6);
  EXPECT_NEAR(f.predictions[1].efficiency, 100 / (64 * 100 * (0.05 + 0.95 / 64)), 1e-9);
}

TEST(ScalingFit, LatencyModelRecoversParametersWithNoise) {
  // T = 120/N + 0.4*(N-1) + 3, with +-1% deterministic noise.
  std::vector<FitPoint> pts;
  const double noise[] = {0.01, -0.008, 0.006, -0.01, 0.004, -0.002};
  int i = 0;
  for (int n : {1, 2, 4, 8, 16, 32}) pts.push_back({n, (120.0 / n + 0.4 * (n - 1) + 3) * (1 + noise[i++])});
  const auto f = fit_model(ModelKind::kComputeCommFixed, pts, std::nullopt, {64}, 1, pts[0].time);
  ASSERT_TRUE(f.ok);
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_NEAR(f.params[0].second, 120, 3);
  EXPECT_NEAR(f.params[1].second, 0.4, 0.03);
  EXPECT_NEAR(f.params[2].second, 3, 1);
  EXPECT_LT(f.loo_mean_abs_rel_error, 0.03);
  EXPECT_LT(f.rms_rel_residual, 0.015);
  EXPECT_NEAR(f.predictions[0].time, 120.0 / 64 + 0.4 * 63 + 3, 0.05 * (120.0 / 64 + 0.4 * 63 + 3));
}

TEST(ScalingFit, MeasuredCommunicationIsUsedAsIs) {
  CommModel comm{2e9, 1e11, 2e-5};  // 2 GB per step at 100 GB/s
  EXPECT_DOUBLE_EQ(comm.time(1), 0);
  EXPECT_NEAR(comm.time(4), 2 * 3.0 / 4 * 0.02 + 3 * 2e-5, 1e-15);
  std::vector<FitPoint> pts;
  for (int n : {1, 2, 4}) pts.push_back({n, 8.0 / n + comm.time(n) + 0.05});
  const auto f = fit_model(ModelKind::kComputeCommFixed, pts, comm, {8}, 1, pts[0].time);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.params[0].second, 8, 1e-9);
  EXPECT_NEAR(f.params[1].second, 0.05, 1e-9);
  EXPECT_NEAR(f.predictions[0].time, 1 + comm.time(8) + 0.05, 1e-9);
  EXPECT_LT(f.loo_max_abs_rel_error, 1e-9);
}

TEST(ScalingFit, NonNegativeAndTooFewPoints) {
  // Times that grow with N would need a negative a: NNLS keeps a >= 0.
  std::vector<FitPoint> pts = {{1, 10}, {2, 12}, {4, 14}};
  const auto f = fit_model(ModelKind::kAmdahl, pts, std::nullopt, {}, 1, 10);
  ASSERT_TRUE(f.ok);
  for (const auto& [k, v] : f.params) {
    if (k == "a" || k == "c") {
      EXPECT_GE(v, 0) << k;
    }
  }
  const auto g = fit_model(ModelKind::kComputeCommFixed, {{1, 10}, {2, 6}}, std::nullopt, {}, 1, 10);
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.note.find("at least 3"), std::string::npos);
  const auto h = fit_model(ModelKind::kAmdahl, {{1, 10}, {2, 6}}, std::nullopt, {}, 1, 10);
  EXPECT_TRUE(h.ok);
  EXPECT_TRUE(std::isnan(h.loo_mean_abs_rel_error));
  EXPECT_FALSE(model_assumptions(ModelKind::kComputeCommFixed, true).empty());
}

TEST(ScalingJson, RoundTripsKeyFields) {
  const auto t = scaling_table(law_points(), {});
  nlohmann::json j = t;
  EXPECT_EQ(j["ref_gpus"], 1);
  EXPECT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["break_even"]["by_knee"], 4);
  EXPECT_TRUE(j["rows"][0]["cost"].is_null());
  nlohmann::json s = summarize(std::vector<double>{1});
  EXPECT_NE(s.dump().find("\"ci_low\":null"), std::string::npos);  // NaN is written as null
}

}  // namespace
}  // namespace scalescope::scaling
