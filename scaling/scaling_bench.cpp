// Cost of the analysis on a large sweep: many GPU counts with many repetitions,
// plus the exact Mann-Whitney distribution at its largest exact size.
#include <benchmark/benchmark.h>

#include <random>

#include "scaling/scaling.hpp"

namespace {

std::vector<scalescope::scaling::ScalingPoint> make_points(int counts, int reps) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<scalescope::scaling::ScalingPoint> pts;
  for (int i = 0; i < counts; ++i) {
    const int n = 1 << i;
    scalescope::scaling::ScalingPoint p;
    p.gpus = n;
    for (int r = 0; r < reps; ++r) p.times.push_back((100.0 / n + 0.3 * (n - 1) + 2) * (1 + noise(rng)));
    pts.push_back(std::move(p));
  }
  return pts;
}

void BM_ScalingTable(benchmark::State& state) {
  const auto pts = make_points(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(scalescope::scaling::scaling_table(pts, {}));
}
BENCHMARK(BM_ScalingTable)->Args({4, 5})->Args({10, 100});

void BM_FitWithLoo(benchmark::State& state) {
  std::vector<scalescope::scaling::FitPoint> pts;
  for (int i = 0; i < 10; ++i) pts.push_back({1 << i, 100.0 / (1 << i) + 0.3 * ((1 << i) - 1) + 2});
  for (auto _ : state)
    benchmark::DoNotOptimize(scalescope::scaling::fit_model(scalescope::scaling::ModelKind::kComputeCommFixed, pts,
                                                            std::nullopt, {2048, 4096}, 1, pts[0].time));
}
BENCHMARK(BM_FitWithLoo);

void BM_CompareExact20(benchmark::State& state) {
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) {
    a.push_back(10 + 0.01 * i);
    b.push_back(10.005 + 0.01 * i);
  }
  for (auto _ : state) benchmark::DoNotOptimize(scalescope::scaling::compare(a, b));
}
BENCHMARK(BM_CompareExact20);

}  // namespace

BENCHMARK_MAIN();
