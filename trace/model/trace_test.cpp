#include "trace/model/trace.hpp"

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

TEST(StringTable, InternsOnceAndKeepsViewsValid) {
  StringTable t;
  EXPECT_EQ(t.intern(""), kNoString);
  StringId a = t.intern("gemm");
  std::string_view view = t.view(a);
  for (int i = 0; i < 10000; ++i) t.intern("k" + std::to_string(i));  // growth must not move strings
  EXPECT_EQ(view, "gemm");
  EXPECT_EQ(t.intern("gemm"), a);
  EXPECT_EQ(t.size(), 10002u);
}

TEST(KernelTable, PushAndRowRoundTrip) {
  KernelTable k;
  KernelRecord r{.start = 10,
                 .end = 20,
                 .device = 1,
                 .stream = 7,
                 .name = 3,
                 .grid_x = 4,
                 .grid_y = 5,
                 .grid_z = 6,
                 .block_x = 128,
                 .block_y = 1,
                 .block_z = 1,
                 .registers_per_thread = 32,
                 .shared_memory_bytes = 4096,
                 .correlation = 99};
  k.push(r);
  KernelRecord back = k.row(0);
  EXPECT_EQ(back.end, 20);
  EXPECT_EQ(back.grid_z, 6u);
  EXPECT_EQ(back.shared_memory_bytes, 4096u);
  EXPECT_EQ(back.correlation, 99u);
}

TEST(NcclOpFromName, AcceptsEverySpelling) {
  EXPECT_EQ(nccl_op_from_name("AllReduce"), NcclOp::kAllReduce);
  EXPECT_EQ(nccl_op_from_name("allreduce"), NcclOp::kAllReduce);
  EXPECT_EQ(nccl_op_from_name("nccl:all_reduce"), NcclOp::kAllReduce);
  EXPECT_EQ(nccl_op_from_name("_allgather_base"), NcclOp::kAllGather);
  EXPECT_EQ(nccl_op_from_name("reduce_scatter_tensor"), NcclOp::kReduceScatter);
  EXPECT_EQ(nccl_op_from_name("frobnicate"), NcclOp::kUnknown);
}

TEST(Metadata, ClockAnchorsCorrectOffsetAndDrift) {
  Metadata m;
  EXPECT_EQ(m.to_unix_ns(5), 5);
  m.clock.push_back({1000, 1'000'000});
  EXPECT_EQ(m.to_unix_ns(1500), 1'000'500);
  m.clock.push_back({2000, 1'002'000});  // unix clock runs twice as fast
  EXPECT_EQ(m.to_unix_ns(1500), 1'001'000);
}

TEST(Trace, TimeSpanAndEventCount) {
  Trace t;
  EXPECT_EQ(t.time_span(), (std::pair<Timestamp, Timestamp>{0, 0}));
  t.kernels.push({.start = 100, .end = 200});
  t.api.push({.start = 50, .end = 60});
  t.memcpys.push({.start = 150, .end = 300});
  EXPECT_EQ(t.time_span(), (std::pair<Timestamp, Timestamp>{50, 300}));
  EXPECT_EQ(t.event_count(), 3u);
}

TEST(Trace, EmptyCountsTheHostTablesEventCountLeavesOut) {
  Trace t;
  EXPECT_TRUE(t.empty());
  t.host_threads.push({});
  EXPECT_EQ(t.event_count(), 0u);
  EXPECT_FALSE(t.empty());
  Trace m;
  m.host_modules.push({});
  EXPECT_FALSE(m.empty());
  Trace k;
  k.kernels.push({.start = 1, .end = 2});
  EXPECT_FALSE(k.empty());
}

TEST(ProblemCounts, DataLossIsDetected) {
  ProblemCounts p;
  p.add(Problem::kUnknownEvent, 3);
  EXPECT_FALSE(p.any_data_loss());
  p.add(Problem::kTornTail);
  EXPECT_TRUE(p.any_data_loss());
  EXPECT_EQ(to_string(Problem::kTornTail), "torn_tail");
}

}  // namespace
}  // namespace scalescope::trace
