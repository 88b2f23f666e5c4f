// Fuzzes the statistics with arbitrary samples (bytes read as doubles, NaN and
// infinities included): every function must return or throw scalescope::Error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "scaling/scaling.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope::scaling;
  if (size < 1 || size > 8 * 256 + 1) return 0;
  const int groups = 1 + data[0] % 5;
  std::vector<double> v((size - 1) / 8);
  if (!v.empty()) std::memcpy(v.data(), data + 1, v.size() * 8);
  std::vector<ScalingPoint> pts;
  for (int g = 0; g < groups; ++g) pts.push_back({1 << g, {}, {}});
  for (size_t i = 0; i < v.size(); ++i) pts[i % static_cast<size_t>(groups)].times.push_back(v[i]);
  try {
    (void)summarize(v);
  } catch (const scalescope::Error&) {}
  try {
    ScalingOptions o;
    o.price_per_gpu_hour = 1.5;
    (void)scaling_table(pts, o);
  } catch (const scalescope::Error&) {}
  try {
    (void)compare(pts[0].times, pts.back().times);
  } catch (const scalescope::Error&) {}
  std::vector<FitPoint> fp;
  for (const auto& p : pts)
    if (!p.times.empty()) fp.push_back({p.gpus, p.times[0]});
  for (auto kind : {ModelKind::kAmdahl, ModelKind::kComputeCommFixed}) {
    try {
      (void)fit_model(kind, fp, std::nullopt, {64}, 1, 1.0);
      (void)fit_model(kind, fp, CommModel{1e6, 1e9, 1e-5}, {64}, 1, 1.0);
    } catch (const scalescope::Error&) {}
  }
  // Curves with batches and progress taken from the same bytes (any sign, NaN, inf).
  std::vector<CurvePoint> cp;
  for (size_t i = 0; i + 2 < v.size(); i += 3) cp.push_back({1 << (i % 12), v[i], v[i + 1], v[i + 2]});
  for (auto kind : {ModelKind::kStepConverge, ModelKind::kPowerLaw, ModelKind::kAmdahl, ModelKind::kComputeCommFixed}) {
    try {
      CurveFitOptions o;
      o.batch_grows = data[0] & 1;
      if (data[0] & 2) {  // reference convergence points and a planned batch, one of each from the bytes
        o.reference = {{256, 2e6}, {1024, 3e6}};
        if (v.size() >= 2) o.reference.push_back({v[0], v[1]});
        // Without a plan at 4096 the batch range beyond the fitted sizes is exercised.
        if (data[0] & 8) o.planned_batch[4096] = v.empty() ? 1.0 : v.back();
      }
      const auto f = fit_curve(kind, cp, {1, 3, 4096}, o);
      (void)validate_curves({{"fuzz", "fuzz", cp, o.reference}}, {kind}, 4, 0.8, (data[0] & 4) != 0);
      for (const auto& p : f.predictions)
        if (f.ok && p.time > 0 && std::isfinite(p.time) && std::isfinite(p.low) &&
            !(p.low <= p.range_low && p.range_low <= p.time && p.time <= p.range_high && p.range_high <= p.high))
          __builtin_trap();
    } catch (const scalescope::Error&) {}
  }
  return 0;
}
