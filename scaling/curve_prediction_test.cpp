#include <cmath>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scaling/scaling.hpp"
#include "trace/error.hpp"

namespace scalescope::scaling {
namespace {

// A known step x converge law: B(N) = 256 (N/8), P(B) = 2e6 (B/256)^0.5,
// time per unit of progress u = k/N + c/B.
constexpr double kK = 4e-4, kC = 0.02;
double true_batch(int n) { return 256.0 * n / 8.0; }
double true_progress(double b) { return 2e6 * std::sqrt(b / 256.0); }
double true_time(int n) {
  const double b = true_batch(n);
  return true_progress(b) * (kK / n + kC / b);
}

std::vector<CurvePoint> step_curve(std::initializer_list<int> sizes) {
  std::vector<CurvePoint> out;
  for (int n : sizes) out.push_back({n, true_time(n), true_batch(n), true_progress(true_batch(n))});
  return out;
}

TEST(ScalingCurve, StepConvergeLawIsRecovered) {
  const auto f = fit_curve(ModelKind::kStepConverge, step_curve({8, 16, 32, 64}), {256, 1024}, {});
  ASSERT_TRUE(f.ok) << f.note;
  ASSERT_EQ(f.predictions.size(), 2u);
  for (const auto& p : f.predictions) {
    EXPECT_NEAR(p.time / true_time(p.gpus), 1.0, 1e-9) << p.gpus;
    EXPECT_NEAR(p.global_batch / true_batch(p.gpus), 1.0, 1e-9);
    EXPECT_LT(p.low, p.time);
    EXPECT_GT(p.high, p.time);
  }
  EXPECT_NEAR(f.residual_sd, 0.0, 1e-9);
  EXPECT_NEAR(f.loo_max_abs_rel_error, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(f.predictions[0].extrapolation, 4.0);
}

// Reference convergence points (as MLPerf's RCPs) and a curve whose systems
// converge in 0.9 of the reference's progress, with a per-GPU batch of 32.
const std::vector<ReferenceConvergence> kReference = {{256, 2.0e6}, {512, 2.4e6}, {1024, 3.0e6}, {2048, 4.2e6}};
double ref_progress(double b) {  // linear between the points, as the RCP checker interpolates
  for (size_t i = 1; i < kReference.size(); ++i)
    if (b <= kReference[i].global_batch)
      return kReference[i - 1].progress + (kReference[i].progress - kReference[i - 1].progress) *
                                              (b - kReference[i - 1].global_batch) /
                                              (kReference[i].global_batch - kReference[i - 1].global_batch);
  return kReference.back().progress;
}
double ref_time(int n, double b) { return 0.9 * ref_progress(b) * (kK / n + kC / b); }

TEST(ScalingCurve, ReferenceConvergenceLawIsRecovered) {
  // The per-GPU batch varies over the fitted sizes, so k and c are told apart
  // (with B proportional to N both terms go as 1/N).
  std::vector<CurvePoint> pts;
  for (const auto& [n, b] : std::initializer_list<std::pair<int, double>>{{8, 256}, {16, 512}, {24, 512}, {32, 512}})
    pts.push_back({n, ref_time(n, b), b, 0.9 * ref_progress(b)});
  CurveFitOptions o;
  o.reference = {kReference[3], kReference[1], kReference[0], kReference[2]};  // any order
  const auto f = fit_curve(ModelKind::kStepConverge, pts, {48, 64, 128, 256}, o);
  ASSERT_TRUE(f.ok) << f.note;
  // The batch keeps the largest size's 16 per GPU up to the largest reference batch, then stays there.
  const double batch[] = {768, 1024, 2048, 2048};
  for (size_t i = 0; i < 4; ++i) {
    const auto& p = f.predictions[i];
    EXPECT_NEAR(p.global_batch, batch[i], 1e-9) << p.gpus;
    EXPECT_NEAR(p.time / ref_time(p.gpus, batch[i]), 1.0, 1e-9) << p.gpus;
    EXPECT_LT(p.low, p.time);
    EXPECT_GT(p.high, p.time);
    // The batch there is not known: the range is the true law's fastest and
    // slowest time over the batches from the kept 512 to the rule's.
    double fastest = ref_time(p.gpus, 512), slowest = fastest;
    for (int j = 0; j <= 100; ++j) {
      const double t = ref_time(p.gpus, 512 * std::pow(batch[i] / 512, j / 100.0));
      fastest = std::min(fastest, t);
      slowest = std::max(slowest, t);
    }
    EXPECT_NEAR(p.range_low / fastest, 1.0, 1e-9) << p.gpus;
    EXPECT_NEAR(p.range_high / slowest, 1.0, 1e-9) << p.gpus;
    EXPECT_LT(p.range_low, p.range_high) << p.gpus;
  }
  EXPECT_NEAR(f.residual_sd, 0.0, 1e-9);
  EXPECT_NE(f.formula.find("0.9 x reference(B)"), std::string::npos) << f.formula;
  // A planned batch replaces the rule at that size.
  o.planned_batch[64] = 512;
  const auto planned = fit_curve(ModelKind::kStepConverge, pts, {64}, o);
  EXPECT_NEAR(planned.predictions[0].global_batch, 512, 1e-9);
  EXPECT_NEAR(planned.predictions[0].time / ref_time(64, 512), 1.0, 1e-9);
}

TEST(ScalingCurve, ReferenceWithTwoPointsGivesAnIntervalAndBadPointsAreRefused) {
  CurveFitOptions o;
  o.reference = kReference;
  const auto f = fit_curve(
      ModelKind::kStepConverge,
      {{8, ref_time(8, 256), 256.0, 0.9 * ref_progress(256)}, {16, ref_time(16, 512), 512.0, 0.9 * ref_progress(512)}},
      {64}, o);
  ASSERT_TRUE(f.ok);
  EXPECT_TRUE(std::isnan(f.residual_sd));  // k, c and the progress scale: no residual left
  EXPECT_NE(f.note.find("no residual left"), std::string::npos);
  const auto& p = f.predictions[0];
  EXPECT_NEAR(p.time / ref_time(64, 2048), 1.0, 1e-9);
  // The batch at 64 is not known: from 512 (kept) to 2048 (per accelerator).
  // Both sizes have 32 per accelerator, so k/N and c/B cannot be told apart
  // and NNLS keeps c = 0: T = P(B) k/N grows with B, and the range runs from
  // the kept batch's time to the prediction's.
  EXPECT_NEAR(p.range_high / p.time, 1.0, 1e-12);
  EXPECT_NEAR(p.range_low / p.time, ref_progress(512) / ref_progress(2048), 1e-9);
  EXPECT_LT(p.range_low, p.range_high);
  EXPECT_LE(p.range_low, p.time);
  EXPECT_GE(p.range_high, p.time);
  // 4x: d = 3, the range widened by the 4x bucket's extrapolation spread alone.
  const double z = 1.2815515655446004;
  EXPECT_DOUBLE_EQ(p.tau, extrapolation_spread(ModelKind::kStepConverge, 4));
  EXPECT_NEAR(std::log(p.high / p.range_high), z * p.tau * 3, 1e-9);
  EXPECT_NEAR(std::log(p.range_low / p.low), z * p.tau * 3, 1e-9);
  EXPECT_GT(p.high / p.low, 1.5);
  // Planned, the batch is known: a point, and the planned setting's spread.
  CurveFitOptions planned = o;
  planned.planned_batch[64] = 1024;
  const auto fp = fit_curve(
      ModelKind::kStepConverge,
      {{8, ref_time(8, 256), 256.0, 0.9 * ref_progress(256)}, {16, ref_time(16, 512), 512.0, 0.9 * ref_progress(512)}},
      {64}, planned);
  EXPECT_DOUBLE_EQ(fp.predictions[0].range_low, fp.predictions[0].time);
  EXPECT_DOUBLE_EQ(fp.predictions[0].range_high, fp.predictions[0].time);
  EXPECT_DOUBLE_EQ(fp.predictions[0].tau, extrapolation_spread(ModelKind::kStepConverge, 4, true));
  EXPECT_NEAR(std::log(fp.predictions[0].high / fp.predictions[0].time), z * fp.predictions[0].tau * 3, 1e-9);
  // Points without a logged batch cannot be read against the reference: the fitted laws (Amdahl here).
  const auto no_batch = fit_curve(ModelKind::kStepConverge, {{8, 40.0, {}, {}}, {16, 21.0, {}, {}}}, {32}, o);
  EXPECT_EQ(no_batch.formula.find("reference"), std::string::npos) << no_batch.formula;
  EXPECT_NEAR(no_batch.predictions[0].time, 11.5, 1e-9);  // 304/N + 2 through both points
  o.reference.push_back({4096, -1.0});
  EXPECT_THROW(fit_curve(ModelKind::kStepConverge, {{8, 1.0, 256.0, 1e6}, {16, 0.6, 512.0, 1e6}}, {32}, o), Error);
  o.reference.pop_back();
  o.planned_batch[32] = 0;
  EXPECT_THROW(fit_curve(ModelKind::kStepConverge, {{8, 1.0, 256.0, 1e6}, {16, 0.6, 512.0, 1e6}}, {32}, o), Error);
}

TEST(ScalingCurve, ProgressAtMostProportionalToBatch) {
  // Progress that grows faster than the batch (g = 2) is clamped to g = 1: a
  // larger batch never needs more steps. The fit then misses, and says so in its residuals.
  std::vector<CurvePoint> pts;
  for (int n : {8, 16, 32, 64}) {
    const double b = 100.0 * n;
    pts.push_back({n, 1e-3 * b * b / n, b, b * b});
  }
  const auto f = fit_curve(ModelKind::kStepConverge, pts, {128}, {});
  ASSERT_TRUE(f.ok);
  EXPECT_NE(f.formula.find("^1.000, P(B)"), std::string::npos) << f.formula;  // batch law exponent 1
  EXPECT_TRUE(f.formula.ends_with("^1.000")) << f.formula;                    // progress law clamped to 1
  EXPECT_GT(f.residual_sd, 0.1);
}

TEST(ScalingCurve, PowerAndAmdahlLawsAreRecovered) {
  std::vector<CurvePoint> power, amdahl;
  for (int n : {2, 4, 8, 16}) {
    power.push_back({n, 500.0 * std::pow(n, -0.8), {}, {}});
    amdahl.push_back({n, 100.0 / n + 3.0, {}, {}});
  }
  const auto p = fit_curve(ModelKind::kPowerLaw, power, {128}, {});
  ASSERT_TRUE(p.ok);
  EXPECT_NEAR(p.predictions[0].time, 500.0 * std::pow(128, -0.8), 1e-9);
  const auto a = fit_curve(ModelKind::kAmdahl, amdahl, {128}, {});
  ASSERT_TRUE(a.ok);
  EXPECT_NEAR(a.predictions[0].time, 100.0 / 128 + 3.0, 1e-9);
  // Without a batch or progress the step model is Amdahl's law on the time.
  const auto s = fit_curve(ModelKind::kStepConverge, amdahl, {128}, {});
  EXPECT_NEAR(s.predictions[0].time, 100.0 / 128 + 3.0, 1e-9);
}

TEST(ScalingCurve, OnePointGivesBoundsNotAPrediction) {
  const auto f = fit_curve(ModelKind::kStepConverge, {{8, 40.0, 256.0, 1e6}}, {8, 32, 2}, {});
  EXPECT_FALSE(f.ok);
  ASSERT_EQ(f.predictions.size(), 3u);
  EXPECT_DOUBLE_EQ(f.predictions[0].time, 40.0);  // the measured size itself
  EXPECT_TRUE(std::isnan(f.predictions[1].time));
  EXPECT_DOUBLE_EQ(f.predictions[1].low, 10.0);   // ideal scaling
  EXPECT_DOUBLE_EQ(f.predictions[1].high, 40.0);  // no speedup
  EXPECT_DOUBLE_EQ(f.predictions[2].low, 40.0);
  EXPECT_DOUBLE_EQ(f.predictions[2].high, 160.0);
  EXPECT_NE(f.note.find("only N=8 measured"), std::string::npos);
}

TEST(ScalingCurve, TwoPointsGiveAWideIntervalNotFalsePrecision) {
  // Two sizes fit two parameters exactly: no residual is left, so the interval
  // is the extrapolation spread alone, and it is wide at 4x.
  const auto f = fit_curve(ModelKind::kAmdahl, {{8, 40.0, {}, {}}, {16, 21.0, {}, {}}}, {32, 64, 256}, {});
  ASSERT_TRUE(f.ok);
  EXPECT_TRUE(std::isnan(f.residual_sd));
  EXPECT_NE(f.note.find("no residual left"), std::string::npos);
  const double tau = extrapolation_spread(ModelKind::kAmdahl, 4);
  const double z = 1.2815515655446004;
  EXPECT_DOUBLE_EQ(f.predictions[1].range_low, f.predictions[1].time);  // no batch: a point
  // 4x: d = 1 + log2(4) = 3.
  EXPECT_NEAR(std::log(f.predictions[1].high / f.predictions[1].time), z * tau * 3, 1e-9);
  EXPECT_GT(f.predictions[1].high / f.predictions[1].low, 2.0);
  // The interval widens with the extrapolation.
  EXPECT_GT(f.predictions[2].high / f.predictions[2].low, f.predictions[1].high / f.predictions[1].low);
  EXPECT_GT(f.predictions[1].high / f.predictions[1].low, f.predictions[0].high / f.predictions[0].low);
}

TEST(ScalingCurve, ResidualsWidenTheInterval) {
  std::vector<CurvePoint> clean, noisy;
  const double noise[] = {1.06, 0.95, 1.05, 0.94};
  int i = 0;
  for (int n : {2, 4, 8, 16}) {
    clean.push_back({n, 100.0 / n + 3.0, {}, {}});
    noisy.push_back({n, (100.0 / n + 3.0) * noise[i++], {}, {}});
  }
  const auto c = fit_curve(ModelKind::kAmdahl, clean, {64}, {});
  const auto n = fit_curve(ModelKind::kAmdahl, noisy, {64}, {});
  EXPECT_GT(n.residual_sd, 0.03);
  EXPECT_GT(n.predictions[0].high / n.predictions[0].low, c.predictions[0].high / c.predictions[0].low);
  EXPECT_GT(n.loo_mean_abs_rel_error, 0.01);
}

TEST(ScalingCurve, TooFewSizesAndBadInput) {
  const auto f = fit_curve(ModelKind::kComputeCommFixed, {{8, 40.0, {}, {}}, {16, 21.0, {}, {}}}, {32}, {});
  EXPECT_FALSE(f.ok);
  EXPECT_TRUE(f.predictions.empty());
  EXPECT_NE(f.note.find("needs at least 3"), std::string::npos);
  EXPECT_THROW(fit_curve(ModelKind::kAmdahl, {{0, 1.0, {}, {}}}, {8}, {}), Error);
  EXPECT_THROW(fit_curve(ModelKind::kAmdahl, {{8, -1.0, {}, {}}}, {8}, {}), Error);
  EXPECT_THROW(fit_curve(ModelKind::kAmdahl, {{8, 1.0, {}, {}}}, {0}, {}), Error);
  CurveFitOptions bad;
  bad.level = 1.5;
  EXPECT_THROW(fit_curve(ModelKind::kAmdahl, {{8, 1.0, {}, {}}}, {8}, bad), Error);
  EXPECT_THROW(fit_model(ModelKind::kPowerLaw, {{8, 1.0}}, std::nullopt, {16}, 8, 1.0), Error);
}

TEST(ScalingCurve, GrowingBatchOfASweepKeepsTheStepTime) {
  // A fixed per-GPU batch and a fixed number of steps: the step model keeps
  // the step time (compute per GPU is constant), it does not divide it by N.
  std::vector<CurvePoint> pts = {{1, 10.0, {}, {}}, {2, 10.4, {}, {}}, {4, 10.2, {}, {}}};
  CurveFitOptions o;
  o.batch_grows = true;
  const auto f = fit_curve(ModelKind::kStepConverge, pts, {16}, o);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.predictions[0].time, 10.2, 0.3);
  EXPECT_NEAR(f.predictions[0].global_batch, 16.0, 1e-9);
  // Without the option the same points read as strong scaling that stopped: Amdahl's flat line.
  const auto strong = fit_curve(ModelKind::kStepConverge, pts, {16}, {});
  EXPECT_TRUE(std::isnan(strong.predictions[0].global_batch) || strong.predictions[0].global_batch == 1.0);
}

TEST(ScalingCurve, ExtrapolationBuckets) {
  EXPECT_STREQ(extrapolation_bucket(1.33), "2x");
  EXPECT_STREQ(extrapolation_bucket(2.0), "2x");
  EXPECT_STREQ(extrapolation_bucket(3.0), "4x");
  EXPECT_STREQ(extrapolation_bucket(8.0), "8x");
  EXPECT_STREQ(extrapolation_bucket(11.0), "8x");
  EXPECT_STREQ(extrapolation_bucket(12.0), "16x+");
  EXPECT_STREQ(extrapolation_bucket(100.0), "16x+");
}

TEST(ScalingValidation, ExactLawsValidateWithoutErrorAndNoisyOnesWithError) {
  std::vector<NamedCurve> curves;
  NamedCurve exact{"exact", "a", {}}, short_curve{"short", "b", {}}, noisy{"noisy", "c", {}};
  for (int n : {8, 16, 32, 64, 128}) exact.points.push_back({n, 500.0 * std::pow(n, -0.9), {}, {}});
  for (int n : {8, 16, 32}) short_curve.points.push_back({n, 1.0 / n, {}, {}});
  const double noise[] = {1.0, 1.1, 0.9, 1.2};
  int i = 0;
  for (int n : {8, 16, 32, 64}) noisy.points.push_back({n, 500.0 * std::pow(n, -0.9) * noise[i++], {}, {}});
  curves = {exact, short_curve, noisy};
  const auto v = validate_curves(curves, {ModelKind::kPowerLaw, ModelKind::kAmdahl}, 4, 0.8);
  EXPECT_EQ(v.curves, 2u);  // "short" has 3 sizes
  // exact: k = 2, 3, 4 -> 3 + 2 + 1 cases per model; noisy: 2 + 1.
  size_t power_cases = 0;
  for (const auto& c : v.cases) {
    EXPECT_NE(c.curve, "short");
    if (c.kind != ModelKind::kPowerLaw) continue;
    ++power_cases;
    if (c.curve == "exact") {
      EXPECT_NEAR(c.rel_error, 0.0, 1e-9);
      EXPECT_TRUE(c.covered);
    }
  }
  EXPECT_EQ(power_cases, 9u);
  bool saw_all = false;
  for (const auto& b : v.buckets) {
    if (b.kind == ModelKind::kPowerLaw && b.bucket == "all") {
      saw_all = true;
      EXPECT_EQ(b.cases, 9u);
      EXPECT_GT(b.worst_abs_rel_error, 0.05);  // the noisy curve
      EXPECT_NE(b.worst.find("noisy"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_all);
  // One estimate per model and bucket that has cases, with the constant used there.
  for (const auto& t : v.tau_estimates) {
    const double factor = t.bucket == "2x" ? 2 : t.bucket == "4x" ? 4 : t.bucket == "8x" ? 8 : 16;
    EXPECT_DOUBLE_EQ(t.used, extrapolation_spread(t.kind, factor, t.batch_planned)) << t.bucket;
  }
  EXPECT_GE(v.tau_estimates.size(), 2u);
  const auto j = nlohmann::json(v);
  EXPECT_EQ(j["cases"].size(), v.cases.size());
}

TEST(ScalingValidation, PlannedBatchesAreValidatedApart) {
  // The batch jumps as a submitter would choose it, not by the per-GPU rule:
  // given as planned, the law is exact; extrapolated, it is not.
  NamedCurve c{"ref", "a", {}, kReference};
  const std::pair<int, double> sizes[] = {{8, 256}, {16, 256}, {32, 1024}, {64, 512}, {128, 2048}};
  for (const auto& [n, b] : sizes) c.points.push_back({n, ref_time(n, b), b, 0.9 * ref_progress(b)});
  const auto v = validate_curves({c}, {ModelKind::kStepConverge, ModelKind::kPowerLaw}, 4, 0.8, true);
  size_t planned = 0, extrapolated = 0;
  double worst_extrapolated = 0;
  for (const auto& k : v.cases) {
    if (k.kind != ModelKind::kStepConverge) {
      EXPECT_FALSE(k.batch_planned);
      continue;
    }
    if (k.batch_planned) {
      ++planned;
      EXPECT_NEAR(k.rel_error, 0.0, 1e-9) << k.gpus;
    } else {
      ++extrapolated;
      worst_extrapolated = std::max(worst_extrapolated, std::abs(k.rel_error));
    }
  }
  EXPECT_EQ(planned, 6u);  // k = 2, 3, 4: 3 + 2 + 1
  EXPECT_EQ(extrapolated, 6u);
  EXPECT_GT(worst_extrapolated, 0.05);
  size_t planned_buckets = 0;
  for (const auto& b : v.buckets) planned_buckets += b.batch_planned;
  EXPECT_GE(planned_buckets, 2u);  // at least one factor and "all"
  size_t planned_estimates = 0;    // per model, setting and bucket
  for (const auto& t : v.tau_estimates) planned_estimates += t.batch_planned;
  EXPECT_GE(planned_estimates, 1u);
  EXPECT_EQ(nlohmann::json(v)["cases"][0].count("batch_planned"), 1u);
}

}  // namespace
}  // namespace scalescope::scaling
