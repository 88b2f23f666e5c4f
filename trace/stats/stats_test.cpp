#include "trace/stats/stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace scalescope::trace {
namespace {

KernelRecord kernel(Trace& t, std::string_view name, Timestamp start, int64_t dur) {
  KernelRecord k;
  k.start = start;
  k.end = start + dur;
  k.name = t.strings.intern(name);
  t.kernels.push(k);
  return k;
}

TEST(Stats, SummarizeDurations) {
  DurationStats s = summarize_durations({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.total, 10);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.avg, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stddev, 1.2909944487, 1e-9);  // sample stddev
  DurationStats one = summarize_durations({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_EQ(summarize_durations({}).count, 0u);
}

TEST(Stats, KernelsSortedByTotalWithShares) {
  Trace t;
  kernel(t, "b", 0, 10);
  kernel(t, "a", 100, 30);
  kernel(t, "b", 200, 20);
  kernel(t, "c", 300, 40);
  TraceStats s = compute_stats(t);
  ASSERT_EQ(s.kernels.size(), 3u);
  EXPECT_EQ(s.kernels[0].name, "c");  // 40, then a:30 and b:30 tie -> by name
  EXPECT_EQ(s.kernels[1].name, "a");
  EXPECT_EQ(s.kernels[2].name, "b");
  EXPECT_EQ(s.kernels[2].time.count, 2u);
  EXPECT_DOUBLE_EQ(s.kernels[2].time.median, 15);
  EXPECT_DOUBLE_EQ(s.kernels[0].share, 0.4);
}

// The typed JSON of `stats --format json`: the rows' numbers, durations in
// ns under keys that say so, shares as fractions, the short name beside the name.
TEST(Stats, JsonIsTypedWithUnitsInTheKeys) {
  Trace t;
  kernel(t, "void at::native::gemm<float>(int)", 0, 10);
  kernel(t, "void at::native::gemm<float>(int)", 100, 30);
  kernel(t, "c", 300, 60);
  const nlohmann::json j = compute_stats(t);
  EXPECT_EQ(j["traces"], 1);
  ASSERT_EQ(j["kernels"].size(), 2u);
  const auto& gemm = j["kernels"][1];
  EXPECT_EQ(gemm["name"], "void at::native::gemm<float>(int)");
  EXPECT_EQ(gemm["short_name"], "at::native::gemm");
  EXPECT_EQ(gemm["count"], 2);
  EXPECT_EQ(gemm["total_ns"], 40);
  EXPECT_EQ(gemm["min_ns"], 10);
  EXPECT_EQ(gemm["max_ns"], 30);
  EXPECT_DOUBLE_EQ(gemm["median_ns"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(gemm["share"].get<double>(), 0.4);
  for (const char* key : {"api", "memory_time", "memory_size", "nvtx", "nccl", "problems"})
    EXPECT_TRUE(j[key].is_array()) << key;
}

TEST(Stats, CombinesRanksByNameText) {
  Trace r0, r1;
  r1.strings.intern("padding so ids differ");
  kernel(r0, "gemm", 0, 10);
  kernel(r1, "gemm", 0, 30);
  kernel(r1, "other", 0, 1);
  std::vector<const Trace*> both{&r0, &r1};
  TraceStats s = compute_stats(both);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].name, "gemm");
  EXPECT_EQ(s.kernels[0].time.count, 2u);
  EXPECT_EQ(s.kernels[0].time.total, 40);
  EXPECT_EQ(s.traces, 2u);
}

TEST(Stats, MemoryNvtxNcclAndProblems) {
  Trace t;
  MemcpyRecord m;
  m.kind = MemcpyKind::kHtoD;
  m.src_kind = MemoryKind::kPinned;
  m.dst_kind = MemoryKind::kDevice;
  m.start = 0, m.end = 100, m.bytes = 1000;
  t.memcpys.push(m);
  m.start = 200, m.end = 400, m.bytes = 3000;
  t.memcpys.push(m);
  m.kind = MemcpyKind::kDtoD;
  m.src_kind = m.dst_kind = MemoryKind::kDevice;
  m.bytes = 8;
  m.start = 0, m.end = 1;
  t.memcpys.push(m);
  MemsetRecord z;
  z.dst_kind = MemoryKind::kDevice;
  z.start = 0, z.end = 5, z.bytes = 4;
  t.memsets.push(z);
  NvtxRecord n;
  n.domain = t.strings.intern("user_annotation");
  n.text = t.strings.intern("step");
  n.start = 0, n.end = 50;
  t.nvtx.push(n);
  n.kind = NvtxKind::kMark;
  t.nvtx.push(n);
  NcclRecord c;
  c.op = NcclOp::kAllReduce;
  c.algorithm = t.strings.intern("RING");
  c.protocol = t.strings.intern("LL");
  c.datatype = t.strings.intern("Float");
  c.bytes = 1000;
  c.start = 0, c.end = 1000;
  t.nccl.push(c);
  t.nccl.push(c);
  t.problems.add(Problem::kMalformedEvent, 3);

  TraceStats s = compute_stats(t);
  ASSERT_EQ(s.memory_size.size(), 3u);
  EXPECT_EQ(s.memory_size[0].kind, "HtoD");
  EXPECT_EQ(s.memory_size[0].src, "pinned");
  EXPECT_EQ(s.memory_size[0].total_bytes, 4000u);
  EXPECT_EQ(s.memory_size[0].min_bytes, 1000u);
  EXPECT_EQ(s.memory_size[0].max_bytes, 3000u);
  EXPECT_DOUBLE_EQ(s.memory_size[0].avg_bytes, 2000);
  ASSERT_EQ(s.memory_time.size(), 3u);
  EXPECT_EQ(s.memory_time[0].time.total, 300);
  EXPECT_EQ(s.memory_time[1].kind, "memset");
  ASSERT_EQ(s.nvtx.size(), 1u);  // the mark has no duration
  EXPECT_EQ(s.nvtx[0].text, "step");
  ASSERT_EQ(s.nccl.size(), 1u);
  EXPECT_EQ(s.nccl[0].op, "AllReduce");
  EXPECT_EQ(s.nccl[0].time.count, 2u);
  EXPECT_EQ(s.nccl[0].total_bytes, 2000u);
  EXPECT_DOUBLE_EQ(s.nccl[0].bus_bytes_per_s, 1e9);
  EXPECT_EQ(s.nccl[0].busbw_count, 0u);  // no communicator size: no bus bandwidth
  t.nccl.group_size[0] = t.nccl.group_size[1] = 4;
  s = compute_stats(t);
  EXPECT_EQ(s.nccl[0].busbw_count, 2u);
  EXPECT_DOUBLE_EQ(s.nccl[0].busbw_bytes_per_s, 1e9 * 2 * 3 / 4);  // all-reduce: 2(n-1)/n
  t.nccl.group_size[0] = t.nccl.group_size[1] = -1;
  t.meta.world_size = 2;  // the fallback
  EXPECT_DOUBLE_EQ(compute_stats(t).nccl[0].busbw_bytes_per_s, 1e9);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].count, 3u);
  EXPECT_EQ(s.problems[0].severity, "error");
}

TEST(Stats, NcclBusFactors) {
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllGather, 8), 7);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kReduceScatter, 2), 1);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kBroadcast, 8), 1);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllReduce, 1), 0);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kBarrier, 8), 0);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllReduce, -1), 0);
}

}  // namespace
}  // namespace scalescope::trace
