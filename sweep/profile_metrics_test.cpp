#include "sweep/profile_metrics.hpp"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "analyze/analyze.hpp"
#include "analyze/tests/trace_builder.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::sweep {
namespace {

// compute_s_per_iter from a profiled run: one GPU's compute-kernel time per
// steady iteration (warm-up and communication kernels left out), mean over ranks.
TEST(ProfileMetrics, ComputePerIterationOfOneGpu) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "profile_metrics_test.ssrun";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) {
    analyze::testing::TraceBuilder b;
    b.rank(rank);
    int64_t t = 0;
    for (int i = 0; i < 6; ++i) {
      const int64_t step = i == 0 ? 4000 : 1000;  // step 0 is warm-up (> 1.5 x median)
      b.range("ProfilerStep#" + std::to_string(i), t, t + step);
      // Step 0's kernel starts with the trace, so that the step lies inside
      // the trace's span (iterations that begin before its first event are
      // left out, not taken for warm-up).
      const int64_t at = i == 0 ? 0 : 10;
      b.kernel("volta_sgemm_128x64_nn", t + at, t + at + (i == 0 ? 3000 : 300 + 100 * rank));
      b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 500, t + 900);
      t += step;
    }
    trace::write_trace(dir / ("rank" + std::to_string(rank) + ".sstrace"), b.t);
  }
  RunMetrics m;
  add_profile_metrics(dir, m);
  ASSERT_TRUE(m.values.contains("compute_s_per_iter"));
  EXPECT_NEAR(m.values["compute_s_per_iter"], 350e-9, 1e-15);  // ranks: 300 and 400 ns per steady step
  EXPECT_NEAR(m.values["iteration_s"], 1000e-9, 1e-15);
  std::filesystem::remove_all(dir);
}

// Two compute kernels running at once on two streams count once, as the
// time breakdown of `analyze` counts them (the union of their intervals): the
// sweep's compute time per iteration is analyze's over the steady iterations.
TEST(ProfileMetrics, ConcurrentKernelsCountOnceAsInAnalyze) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "profile_metrics_concurrent.ssrun";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) {
    analyze::testing::TraceBuilder b;
    b.rank(rank);
    int64_t t = 0;
    for (int i = 0; i < 6; ++i) {
      const int64_t step = i == 0 ? 4000 : 1000;  // step 0 is warm-up (it starts with the trace)
      b.range("ProfilerStep#" + std::to_string(i), t, t + step);
      b.kernel("volta_sgemm_128x64_nn", t, t + 300, 7);
      b.kernel("volta_sgemm_128x64_tn", t + 100, t + 400 + 100 * rank, 8);  // under the first for 200 ns
      t += step;
    }
    trace::write_trace(dir / ("rank" + std::to_string(rank) + ".sstrace"), b.t);
  }
  RunMetrics m;
  add_profile_metrics(dir, m);
  ASSERT_TRUE(m.values.contains("compute_s_per_iter"));
  // Union per steady step: 400 ns (rank 0) and 500 ns (rank 1); summed
  // durations would be 600 and 700 ns.
  EXPECT_NEAR(m.values["compute_s_per_iter"], 450e-9, 1e-15);
  // analyze over the steady iterations gives the same compute time: steps 1
  // to 4 (step 5 ends after the trace's last event), `--window it1:it5`.
  const analyze::RunAnalysis whole = analyze::analyze_path(dir, analyze::Options{});
  ASSERT_EQ(whole.ranks.size(), 2u);
  for (const auto& r : whole.ranks) {
    EXPECT_EQ(r.steady_first_iteration, 1) << r.label;
    EXPECT_EQ(r.steady_end_iteration, 5) << r.label;
  }
  analyze::Options steady;
  steady.window = analyze::WindowSpec::parse("it1:it5");
  const analyze::RunAnalysis run = analyze::analyze_path(dir, steady);
  ASSERT_EQ(run.ranks.size(), 2u);
  double per_iteration = 0;
  for (const auto& r : run.ranks) per_iteration += static_cast<double>(r.breakdown.compute_ns) * 1e-9 / 4 / 2;
  EXPECT_NEAR(m.values["compute_s_per_iter"], per_iteration, 1e-15);
  std::filesystem::remove_all(dir);
}

// The all-reduce bus bandwidth as `stats` computes it (trace::nccl_bus_bytes):
// a trace whose collectives do not say their communicator size (a Kineto trace
// without distributedInfo's group size) falls back to WORLD_SIZE instead of
// giving no bandwidth (the sweep's own copy of the formula had no fallback).
TEST(ProfileMetrics, AllReduceBusBandwidthFallsBackToWorldSize) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "profile_metrics_busbw.ssrun";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  analyze::testing::TraceBuilder b;
  b.t.meta.world_size = 4;
  int64_t t = 0;
  for (int i = 0; i < 6; ++i) {
    b.range("ProfilerStep#" + std::to_string(i), t, t + 10'000);
    b.kernel("volta_sgemm_128x64_nn", t + 10, t + 1000);
    b.nccl(trace::NcclOp::kAllReduce, t + 2000, t + 3000, i);  // 1 MiB in 1000 ns, group size unknown
    t += 10'000;
  }
  ASSERT_EQ(b.t.nccl.group_size[0], -1);
  trace::write_trace(dir / "rank0.sstrace", b.t);
  RunMetrics m;
  add_profile_metrics(dir, m);
  ASSERT_TRUE(m.values.contains("allreduce_busbw"));
  // nccl-tests: 2 (n - 1) / n x bytes / time, n = 4.
  EXPECT_NEAR(m.values["allreduce_busbw"], 1.5 * (1 << 20) / 1000e-9, 1e-3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace scalescope::sweep
