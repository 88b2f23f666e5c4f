#include <cmath>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scaling/scaling.hpp"
#include "base/error.hpp"

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
  o.batch_rule = BatchRule::kPerAccelerator;
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
    // slowest time over the batches from the geometric middle of the kept 512
    // and the rule's to the rule's.
    const double from = std::sqrt(512 * batch[i]);
    EXPECT_NEAR(p.batch_low, from, 1e-9) << p.gpus;
    EXPECT_NEAR(p.batch_high, batch[i], 1e-9) << p.gpus;
    double fastest = ref_time(p.gpus, batch[i]), slowest = fastest;
    for (int j = 0; j <= 100; ++j) {
      const double t = ref_time(p.gpus, from * std::pow(batch[i] / from, j / 100.0));
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
  // The batch at 64 is not known: from 1024 (the middle of the kept 512 and
  // the per-accelerator 2048) to 2048.
  // Both sizes have 32 per accelerator, so k/N and c/B cannot be told apart
  // and NNLS keeps c = 0: T = P(B) k/N grows with B, and the range runs from
  // the middle batch's time to the prediction's.
  EXPECT_NEAR(p.range_high / p.time, 1.0, 1e-12);
  EXPECT_NEAR(p.range_low / p.time, ref_progress(1024) / ref_progress(2048), 1e-9);  // from the middle, 1024
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

// A calibration with one cell of the default model at 2x, as a test writes it.
SpreadCalibration one_cell(size_t cases, double max_factor, std::vector<std::string> groups) {
  SpreadCalibration c;
  c.source = "test";
  c.rows.push_back({ModelKind::kStepConverge, false, "2x", 0.1, cases, max_factor, std::move(groups)});
  return c;
}

TEST(ScalingCurve, BatchRulesBeyondTheFittedSizes) {
  // Fitted up to 32 accelerators at batch 512 (16 per accelerator); the reference reaches 2048.
  std::vector<CurvePoint> pts;
  for (const auto& [n, b] : std::initializer_list<std::pair<int, double>>{{8, 256}, {16, 512}, {24, 512}, {32, 512}})
    pts.push_back({n, ref_time(n, b), b, 0.9 * ref_progress(b)});
  CurveFitOptions o;
  o.reference = kReference;
  const std::vector<int> sizes = {64, 256};
  auto batches = [&](BatchRule rule) {
    o.batch_rule = rule;
    const auto f = fit_curve(ModelKind::kStepConverge, pts, sizes, o);
    EXPECT_TRUE(f.ok) << f.note;
    if (rule != BatchRule::kPerAccelerator) {
      EXPECT_NE(f.formula.find(std::string("(") + batch_rule_name(rule) + " batch)"), std::string::npos) << f.formula;
    }
    std::vector<double> out;
    for (const auto& p : f.predictions) {
      EXPECT_NEAR(p.time / ref_time(p.gpus, p.global_batch), 1.0, 1e-9) << batch_rule_name(rule) << " " << p.gpus;
      // The interval's batches reach from the middle to the per-accelerator batch, and to the one assumed.
      EXPECT_LE(p.batch_low, std::min(p.global_batch, std::sqrt(512 * std::min(16.0 * p.gpus, 2048.0))) + 1e-9);
      EXPECT_GE(p.batch_high, std::max(p.global_batch, std::min(16.0 * p.gpus, 2048.0)) - 1e-9);
      EXPECT_LE(p.range_low, p.time);
      EXPECT_GE(p.range_high, p.time);
      out.push_back(p.global_batch);
    }
    return out;
  };
  const auto per_accelerator = batches(BatchRule::kPerAccelerator);
  EXPECT_NEAR(per_accelerator[0], 1024, 1e-9);
  EXPECT_NEAR(per_accelerator[1], 2048, 1e-9);  // capped at the largest reference batch
  const auto middle = batches(BatchRule::kGeometricMiddle);
  EXPECT_NEAR(middle[0], std::sqrt(512.0 * 1024), 1e-9);
  EXPECT_NEAR(middle[1], 1024, 1e-9);
  const auto kept = batches(BatchRule::kKept);
  EXPECT_NEAR(kept[0], 512, 1e-9);
  EXPECT_NEAR(kept[1], 512, 1e-9);
  // The fitted law through 256, 512, 512, 512 at 8, 16, 24, 32 grows slower than N.
  const auto law = batches(BatchRule::kFitted);
  EXPECT_GT(law[0], 512);
  EXPECT_LT(law[0], 1024);
  EXPECT_LE(law[1], 2048 + 1e-9);
  // Unset, the rule is the calibration's.
  SpreadCalibration cal = default_spread_calibration();
  cal.batch_rule = BatchRule::kKept;
  o.batch_rule.reset();
  o.calibration = &cal;
  const auto f = fit_curve(ModelKind::kStepConverge, pts, sizes, o);
  EXPECT_NEAR(f.predictions[1].global_batch, 512, 1e-9);
}

TEST(SpreadCalibration, BatchRuleScoreIsTheMeanOfBucketMedians) {
  std::vector<ValidationCase> cases;
  auto add = [&](double factor, double error, int n) {
    for (int i = 0; i < n; ++i) {
      ValidationCase c;
      c.factor = factor;
      c.rel_error = i % 2 ? error : -error;
      cases.push_back(c);
    }
  };
  add(2.0, 0.05, 9);   // 2x: median 5 %
  add(4.0, 0.20, 8);   // 4x: median 20 %
  add(16.0, 0.90, 3);  // 16x+: fewer than 8 cases, left out
  std::vector<const ValidationCase*> in;
  for (const auto& c : cases) in.push_back(&c);
  EXPECT_NEAR(batch_rule_score(in), (0.05 + 0.20) / 2, 1e-12);
  // With no bucket of 8 cases every bucket counts.
  EXPECT_NEAR(batch_rule_score({in.back()}), 0.90, 1e-12);
  EXPECT_TRUE(std::isnan(batch_rule_score({})));
}

TEST(SpreadCalibration, RoundTripsThroughJsonAndRejectsBadFiles) {
  SpreadCalibration c = one_cell(12, 2.5, {"bert", "gpt3"});
  c.distance = SpreadDistance::kLeverage;
  const auto back = read_spread_calibration(write_spread_calibration(c), "x.json");
  EXPECT_EQ(back.source, "test");
  EXPECT_EQ(back.distance, SpreadDistance::kLeverage);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(back.rows[0].tau, 0.1);
  EXPECT_EQ(back.rows[0].cases, 12u);
  EXPECT_EQ(back.rows[0].groups, (std::vector<std::string>{"bert", "gpt3"}));
  EXPECT_TRUE(back.knows_group("gpt3"));
  // The batch rule and the backtests that chose it travel; without them, the per-accelerator rule.
  EXPECT_EQ(back.batch_rule, BatchRule::kPerAccelerator);
  EXPECT_TRUE(back.batch_rule_backtests.empty());
  c.batch_rule = BatchRule::kGeometricMiddle;
  c.batch_rule_backtests = {{BatchRule::kPerAccelerator, 40, 0.125}, {BatchRule::kGeometricMiddle, 40, 0.0875}};
  const auto chosen = read_spread_calibration(write_spread_calibration(c), "x.json");
  EXPECT_EQ(chosen.batch_rule, BatchRule::kGeometricMiddle);
  ASSERT_EQ(chosen.batch_rule_backtests.size(), 2u);
  EXPECT_EQ(chosen.batch_rule_backtests[1].rule, BatchRule::kGeometricMiddle);
  EXPECT_EQ(chosen.batch_rule_backtests[1].cases, 40u);
  EXPECT_DOUBLE_EQ(chosen.batch_rule_backtests[1].score, 0.0875);
  nlohmann::json old_file = nlohmann::json::parse(write_spread_calibration(c));
  old_file.erase("batch_rule");
  old_file.erase("batch_rule_backtests");
  EXPECT_EQ(read_spread_calibration(old_file.dump(), "old.json").batch_rule, BatchRule::kPerAccelerator);
  EXPECT_FALSE(back.knows_group("flux1"));
  EXPECT_NE(back.find(ModelKind::kStepConverge, false, 2.0), nullptr);
  EXPECT_EQ(back.find(ModelKind::kStepConverge, false, 4.0), nullptr);
  EXPECT_EQ(back.find(ModelKind::kStepConverge, true, 2.0), nullptr);
  for (const char* bad : {"", "{}", "[1]", R"({"source":"s","level":0.8,"distance":"miles","rows":[]})",
                          R"({"source":"s","level":2,"distance":"doublings","rows":[]})",
                          R"({"source":"s","level":0.8,"distance":"doublings","rows":[{"model":"x"}]})",
                          R"({"source":"s","level":0.8,"distance":"doublings","pooled":false,"rows":[],)"
                          R"("batch_rule":"doubled"})"}) {
    try {
      (void)read_spread_calibration(bad, "bad.json");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  }
  // The embedded one names where it came from and covers the default model in every bucket.
  const auto& d = default_spread_calibration();
  EXPECT_FALSE(d.source.empty());
  for (double f : {2.0, 4.0, 8.0, 16.0})
    for (bool planned : {false, true}) EXPECT_NE(d.find(kDefaultCurveModel, planned, f), nullptr) << f << planned;
}

TEST(SpreadCalibration, DistanceGrowsWithExtrapolationAndShrinksWithMoreSizes) {
  EXPECT_DOUBLE_EQ(spread_distance(SpreadDistance::kDoublings, 64, {8, 16}), 3.0);
  EXPECT_DOUBLE_EQ(spread_distance(SpreadDistance::kDoublings, 12, {8, 16}), 1.0);
  // Leverage in log2 N: two sizes 8 and 16 (mean 3.5, Sxx 0.5), at 64: sqrt(1 + 1/2 + 2.5^2 / 0.5).
  EXPECT_NEAR(spread_distance(SpreadDistance::kLeverage, 64, {8, 16}), std::sqrt(1.5 + 12.5), 1e-12);
  const double two = spread_distance(SpreadDistance::kLeverage, 256, {16, 32});
  const double four = spread_distance(SpreadDistance::kLeverage, 256, {4, 8, 16, 32});
  EXPECT_LT(four, two);  // more and more widely spread sizes: nearer
  EXPECT_LT(spread_distance(SpreadDistance::kLeverage, 64, {4, 8, 16, 32}), four);
}

TEST(SpreadCalibration, PredictionsSayWhereTheBacktestsEnd) {
  const auto pts = step_curve({8, 16, 32});
  CurveFitOptions o;
  SpreadCalibration enough = one_cell(kMinValidatedCases, 2.5, {"bert"});
  o.calibration = &enough;
  o.group = "bert";
  auto f = fit_curve(ModelKind::kStepConverge, pts, {64, 90, 128}, o);
  ASSERT_TRUE(f.ok) << f.note;
  EXPECT_EQ(f.predictions[0].outside_validated, "");                              // 2x, seen
  EXPECT_NE(f.predictions[1].outside_validated.find("beyond the largest"), std::string::npos);  // 2.8x > 2.5x
  EXPECT_NE(f.predictions[2].outside_validated.find("no backtest"), std::string::npos);         // 4x: no row
  EXPECT_EQ(f.predictions[2].outside_validated.rfind("outside the validated range", 0), 0u);
  // The model's widest tau stands in for a missing cell.
  EXPECT_DOUBLE_EQ(f.predictions[2].tau, 0.1);
  o.group = "flux1";
  f = fit_curve(ModelKind::kStepConverge, pts, {64}, o);
  EXPECT_NE(f.predictions[0].outside_validated.find("flux1 was never backtested"), std::string::npos);
  SpreadCalibration few = one_cell(kMinValidatedCases - 1, 2.5, {"bert"});
  o.calibration = &few;
  o.group = "bert";
  f = fit_curve(ModelKind::kStepConverge, pts, {64}, o);
  EXPECT_NE(f.predictions[0].outside_validated.find("backtest cases"), std::string::npos);
}

TEST(SpreadCalibration, CalibrationFromCasesReproducesTheirCoverage) {
  // Cases of one cell with known log errors; the conformal tau holds at
  // least the level of them when the intervals are rebuilt with it.
  std::vector<ValidationCase> cases;
  for (int i = 0; i < 20; ++i) {
    ValidationCase c;
    c.group = i % 2 ? "a" : "b";
    c.round = "r1";
    c.fitted = {8, 16};
    c.gpus = 32;
    c.factor = 2;
    c.measured = 10;
    c.predicted = c.range_low = c.range_high = 10 * std::exp(0.01 * (i + 1) * (i % 3 ? 1 : -1));
    c.rel_error = (c.predicted - c.measured) / c.measured;
    cases.push_back(c);
  }
  const auto cal = calibrate_spread(cases, 0.8, SpreadDistance::kDoublings, false, "r1");
  ASSERT_EQ(cal.rows.size(), 1u);
  EXPECT_EQ(cal.rows[0].cases, 20u);
  EXPECT_DOUBLE_EQ(cal.rows[0].max_factor, 2.0);  // every case at 2x
  EXPECT_EQ(cal.rows[0].groups, (std::vector<std::string>{"a", "b"}));
  // ceil(21 x 0.8) = 17th of 20 scores 0.01 .. 0.20 (d = 2): 0.17 / 2 / z.
  EXPECT_NEAR(cal.rows[0].tau, 0.085 / 1.2815515655446004, 1e-9);
  Validation v;
  v.level = 0.8;
  v.cases = cases;
  for (auto& c : v.cases) c.round = "r2";
  const auto judged = select_rounds(v, {"r2"}, cal);
  ASSERT_EQ(judged.cases.size(), 20u);
  const auto all = std::find_if(judged.buckets.begin(), judged.buckets.end(),
                                [](const ValidationBucket& b) { return b.bucket == "all"; });
  ASSERT_NE(all, judged.buckets.end());
  EXPECT_DOUBLE_EQ(all->coverage, 17.0 / 20.0);
  ASSERT_EQ(judged.per_group.size(), 2u);
  EXPECT_TRUE(select_rounds(v, {"r1"}, cal).cases.empty());
}

TEST(ScalingCurve, StepsAndTimePerStepSplitTheTime) {
  CurveFitOptions o;
  o.reference = kReference;
  // Batches per accelerator 32, 16 and 32: k and c can be told apart.
  const std::vector<CurvePoint> pts = {{8, ref_time(8, 256), 256.0, 0.9 * ref_progress(256)},
                                       {16, ref_time(16, 256), 256.0, 0.9 * ref_progress(256)},
                                       {32, ref_time(32, 1024), 1024.0, 0.9 * ref_progress(1024)}};
  const auto f = fit_curve(ModelKind::kStepConverge, pts, {16, 64}, o);
  ASSERT_TRUE(f.ok);
  const auto& measured = f.predictions[0];
  EXPECT_EQ(measured.batch_basis, CurvePrediction::BatchBasis::kMeasured);
  EXPECT_NEAR(measured.steps, 0.9 * ref_progress(256) / 256, 1e-6);
  EXPECT_NEAR(measured.steps * measured.step_time, measured.time, 1e-9 * measured.time);
  const auto& extrapolated = f.predictions[1];
  EXPECT_EQ(extrapolated.batch_basis, CurvePrediction::BatchBasis::kExtrapolated);
  EXPECT_NEAR(extrapolated.batch_low, std::sqrt(1024.0 * 2048), 1e-9);  // the middle of kept and per accelerator
  EXPECT_DOUBLE_EQ(extrapolated.batch_high, 2048);
  // A planned batch moves the steps by P(B)/B; the time per step follows k B/N + c.
  CurveFitOptions planned = o;
  planned.planned_batch[64] = 1024;
  const auto planned_fit = fit_curve(ModelKind::kStepConverge, pts, {64}, planned);
  const auto& p = planned_fit.predictions[0];
  EXPECT_EQ(p.batch_basis, CurvePrediction::BatchBasis::kPlanned);
  EXPECT_DOUBLE_EQ(p.batch_low, 1024);
  EXPECT_DOUBLE_EQ(p.batch_high, 1024);
  EXPECT_NEAR(p.steps, 0.9 * ref_progress(1024) / 1024, 1e-6);
  EXPECT_NEAR(p.step_time, kK * 1024 / 64 + kC, 1e-6 * p.step_time);
  EXPECT_NEAR(extrapolated.step_time, kK * 2048 / 64 + kC, 1e-6 * extrapolated.step_time);
  // Models without a batch have no split.
  const auto power = fit_curve(ModelKind::kPowerLaw, pts, {64}, o);
  EXPECT_TRUE(std::isnan(power.predictions[0].steps));
  EXPECT_EQ(power.predictions[0].batch_basis, CurvePrediction::BatchBasis::kNone);
}

}  // namespace
}  // namespace scalescope::scaling
