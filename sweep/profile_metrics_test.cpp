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

}  // namespace
}  // namespace scalescope::sweep
