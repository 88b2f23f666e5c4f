#include "sweep/profile_metrics.hpp"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "analyze/test_trace_builder.hpp"
#include "trace/trace_file.hpp"

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
      b.kernel("volta_sgemm_128x64_nn", t + 10, t + 10 + (i == 0 ? 3000 : 300 + 100 * rank));
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
