#include "trace/model/launcher.hpp"

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

Trace process(int32_t rank, bool kernel, uint32_t pid) {
  Trace t;
  t.meta.rank = rank;
  t.meta.pid = pid;
  t.meta.hostname = "node1";
  if (kernel) {
    KernelRecord k;
    k.start = 10, k.end = 20;
    k.name = t.strings.intern("gemm");
    t.kernels.push(k);
  }
  ApiRecord a;
  a.start = 1, a.end = 2;
  a.name = t.strings.intern("cudaGetDeviceCount");
  t.api.push(a);
  return t;
}

TEST(Launcher, TheTorchrunAgentIsLeftOutOfARun) {
  std::vector<Trace> run;
  run.push_back(process(-1, false, 811));  // the agent: loaded CUDA, no rank, no GPU work
  run.push_back(process(0, true, 812));
  const auto left_out = drop_launchers(run);
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].meta.rank, 0);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_EQ(left_out[0], "no rank (node1 pid 811)");
}

TEST(Launcher, ProcessesWithGpuWorkOrARankStay) {
  std::vector<Trace> run;
  run.push_back(process(-1, true, 1));  // a rank-less process that did GPU work: a rank of unknown number
  run.push_back(process(1, false, 2));  // a rank that did no GPU work in the window
  run.push_back(process(0, true, 3));
  EXPECT_TRUE(drop_launchers(run).empty());
  EXPECT_EQ(run.size(), 3u);
}

TEST(Launcher, NothingIsLeftOutWhenNoProcessHasGpuWork) {
  std::vector<Trace> run;
  run.push_back(process(-1, false, 1));
  run.push_back(process(-1, false, 2));
  EXPECT_TRUE(drop_launchers(run).empty());
  EXPECT_EQ(run.size(), 2u);
  EXPECT_FALSE(is_launcher(-1, false, false));
  EXPECT_TRUE(is_launcher(-1, false, true));
}

}  // namespace
}  // namespace scalescope::trace
