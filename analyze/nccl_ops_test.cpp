// NCCL collectives by operation and message size: one rank's groups, the
// run's as the pipeline adds them up, and what a streamed rank says.
#include "analyze/nccl_ops.hpp"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"
#include "analyze/tests/trace_builder.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;

// Two all-reduces of 1 MiB, one of 4 MiB and a broadcast of unknown size, on a
// 4-rank world whose communicator sizes are not recorded.
testing::TraceBuilder four_collectives(int rank, int64_t slower_ns) {
  testing::TraceBuilder b;
  b.rank(rank);
  b.t.meta.world_size = 4;
  b.range("ProfilerStep#0", 0, 100'000);
  b.kernel("volta_sgemm_128x64_nn", 10, 5'000);
  b.nccl(trace::NcclOp::kAllReduce, 10'000, 11'000 + slower_ns, 0);
  b.nccl(trace::NcclOp::kAllReduce, 20'000, 22'000, 1);
  b.nccl(trace::NcclOp::kAllReduce, 30'000, 34'000, 2);
  b.t.nccl.bytes[2] = 4 << 20;
  b.nccl(trace::NcclOp::kBroadcast, 40'000, 40'500, 3);
  b.t.nccl.bytes[3] = 0;
  return b;
}

TEST(NcclOps, GroupsByOperationAndMessageSize) {
  const NcclOpStats s = summarize_nccl_ops(four_collectives(0, 0).t);
  ASSERT_TRUE(s.available);
  ASSERT_EQ(s.groups.size(), 3u);
  const NcclOpSize& small = s.groups[0];
  EXPECT_EQ(small.operation, "AllReduce");
  EXPECT_EQ(small.message_bytes, 1u << 20);
  EXPECT_EQ(small.count, 2);
  EXPECT_EQ(small.time_ns, 3'000);
  EXPECT_EQ(small.mean_ns(), 1'500);
  EXPECT_DOUBLE_EQ(*small.algorithm_gb_per_s(), 2.0 * (1 << 20) / 3'000);
  // nccl-tests' bus factor 2 (n - 1) / n with n = WORLD_SIZE = 4.
  EXPECT_DOUBLE_EQ(*small.bus_gb_per_s(), 1.5 * 2 * (1 << 20) / 3'000);
  EXPECT_EQ(s.groups[1].message_bytes, 4u << 20);
  EXPECT_EQ(s.groups[1].count, 1);
  const NcclOpSize& unknown = s.groups[2];
  EXPECT_EQ(unknown.operation, "Broadcast");
  EXPECT_EQ(unknown.message_bytes, 0u);
  EXPECT_FALSE(unknown.algorithm_gb_per_s());  // unknown size: no bandwidth, not 0 GB/s
  EXPECT_FALSE(unknown.bus_gb_per_s());
}

struct RunDir {
  // One per test: ctest runs the tests of this file at once.
  fs::path path = fs::path(::testing::TempDir()) /
                  (std::string("nccl_ops_test-") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                   ".ssrun");
  RunDir() {
    fs::remove_all(path);
    fs::create_directories(path);
    for (int rank = 0; rank < 2; ++rank)
      trace::write_trace(path / ("rank" + std::to_string(rank) + ".sstrace"), four_collectives(rank, 1'000 * rank).t);
  }
  ~RunDir() { fs::remove_all(path); }
};

TEST(NcclOps, TheRunsAreItsRanksAddedUp) {
  RunDir dir;
  const RunAnalysis run = analyze_path(dir.path, Options{});
  ASSERT_EQ(run.ranks.size(), 2u);
  for (const RankAnalysis& r : run.ranks) EXPECT_EQ(r.nccl_ops.groups.size(), 3u) << r.label;
  ASSERT_TRUE(run.nccl_ops.available);
  ASSERT_EQ(run.nccl_ops.groups.size(), 3u);
  EXPECT_EQ(run.nccl_ops.groups[0].count, 4);
  EXPECT_EQ(run.nccl_ops.groups[0].time_ns, 3'000 + 4'000);  // rank 1's first all-reduce is 1 us slower
  EXPECT_EQ(run.nccl_ops.groups[2].count, 2);
  // The same from traces already in memory.
  std::vector<trace::Trace> traces = {four_collectives(0, 0).t, four_collectives(1, 1'000).t};
  const RunAnalysis loaded = analyze_traces(traces, {"rank0.sstrace", "rank1.sstrace"}, Options{});
  EXPECT_EQ(nlohmann::json(loaded.nccl_ops), nlohmann::json(run.nccl_ops));
}

TEST(NcclOps, AStreamedRankGivesTheSameTable) {
  RunDir dir;
  Options streamed;
  streamed.stream_above_rows = 0;
  const RunAnalysis run = analyze_path(dir.path, streamed);
  const RunAnalysis whole = analyze_path(dir.path, Options{});
  ASSERT_EQ(run.ranks.size(), 2u);
  ASSERT_EQ(whole.ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(run.ranks[r].nccl_ops.available) << run.ranks[r].nccl_ops.reason;
    EXPECT_FALSE(run.ranks[r].nccl_ops.groups.empty());
    EXPECT_EQ(nlohmann::json(run.ranks[r].nccl_ops), nlohmann::json(whole.ranks[r].nccl_ops));
  }
  EXPECT_TRUE(run.nccl_ops.available) << run.nccl_ops.reason;
  EXPECT_EQ(nlohmann::json(run.nccl_ops), nlohmann::json(whole.nccl_ops));
}

}  // namespace
}  // namespace scalescope::analyze
