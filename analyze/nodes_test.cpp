#include <map>

#include <gtest/gtest.h>

#include "analyze/analyze.hpp"
#include "base/error.hpp"

namespace scalescope::analyze {
namespace {

constexpr int64_t kT0 = 1'796'000'000'000'000'000;

// A rank on `host` with collectives on "world" (all ranks) and "local-<host>"
// (its host only); `late` ns late at each, `clock` ns off.
RankAnalysis rank_on(int32_t rank, const std::string& host, int32_t node, int64_t late, int64_t clock = 0) {
  RankAnalysis r;
  r.rank = rank;
  r.label = "rank " + std::to_string(rank);
  r.hostname = host;
  r.node_rank = node;
  r.node_count = 3;
  r.world_size = 6;
  r.gpu_activity = true;
  r.breakdown.wall_ns = 1'000'000;
  r.breakdown.compute_ns = 600'000 - late;
  r.breakdown.idle_ns = 400'000 + late;
  for (int i = 0; i < 20; ++i) {
    const int64_t end = kT0 + int64_t{i} * 10'000'000 + 500'000;
    r.collectives.push_back({trace::kNoString, "world", trace::NcclOp::kAllReduce, i,
                             kT0 + int64_t{i} * 10'000'000 + late + clock, end + clock});
    r.collectives.push_back({trace::kNoString, "local-" + host, trace::NcclOp::kAllGather, i,
                             kT0 + int64_t{i} * 10'000'000 + 600'000 + clock, end + 200'000 + clock});
  }
  return r;
}

TEST(Nodes, PerNodeBreakdownCommunicatorsAndTheSlowestNode) {
  // Two nodes of the three the launcher promised; node b's rank 3 is late,
  // and node b's clock is 8 ms ahead.
  std::vector<RankAnalysis> ranks = {rank_on(0, "a", 0, 0), rank_on(1, "a", 0, 5'000),
                                     rank_on(2, "b", 1, 10'000, 8'000'000), rank_on(3, "b", 1, 90'000, 8'000'000)};
  const RunAnalysis run = combine(ranks);
  ASSERT_TRUE(run.stragglers.availability.available) << run.stragglers.availability.reason;
  EXPECT_EQ(run.stragglers.ranks.front().rank, 3);
  const trace::HostClock* b = run.clocks.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->status, trace::HostClockStatus::kAligned);
  EXPECT_NEAR(static_cast<double>(b->offset_ns), 8'000'000, 100);

  const NodeStats& n = run.nodes;
  ASSERT_TRUE(n.availability.available);
  ASSERT_EQ(n.nodes.size(), 2u);
  EXPECT_EQ(n.nodes[0].hostname, "a");
  EXPECT_EQ(n.nodes[0].ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(n.nodes[1].node_rank, 1);
  EXPECT_DOUBLE_EQ(n.nodes[0].compute_ns, (600'000.0 + 595'000.0) / 2);
  EXPECT_EQ(n.nodes[1].late_ns, 20 * (10'000 + 90'000));
  EXPECT_EQ(n.slowest_node, "b");
  EXPECT_EQ(n.slowest_node_by, "lateness at collectives in steady iterations");
  // "world" spans both hosts, each "local-*" one host.
  ASSERT_EQ(n.communicators.size(), 3u);
  int inter = 0;
  for (const auto& c : n.communicators) {
    inter += c.inter_node;
    EXPECT_EQ(c.inter_node, c.name == "world") << c.name;
    EXPECT_EQ(c.collectives, 20) << c.name;
  }
  EXPECT_EQ(inter, 1);
  EXPECT_EQ(n.inter_node_collectives, 20);
  EXPECT_EQ(n.intra_node_collectives, 40);
  // Node 2 and ranks 4, 5 never reported.
  EXPECT_EQ(n.expected_nodes, 3);
  EXPECT_EQ(n.missing_nodes, (std::vector<std::string>{"node 2"}));
  EXPECT_EQ(n.missing_ranks, (std::vector<int32_t>{4, 5}));
}

TEST(Nodes, MissingNodesByNameFromTheSlurmNodeList) {
  std::vector<RankAnalysis> ranks = {rank_on(0, "gpu01.cluster", 0, 0), rank_on(1, "gpu03", 2, 0)};
  for (auto& r : ranks) r.node_list = "gpu[01-03],login7";
  const RunAnalysis run = combine(ranks);
  EXPECT_EQ(run.nodes.missing_nodes, (std::vector<std::string>{"gpu02", "login7"}));
  EXPECT_EQ(run.nodes.expected_nodes, 4);
}

TEST(Nodes, OneHostIsNotAMultiNodeRun) {
  std::vector<RankAnalysis> ranks = {rank_on(0, "a", 0, 0), rank_on(1, "a", 0, 1'000)};
  for (auto& r : ranks) r.node_count = r.world_size = -1;
  const RunAnalysis run = combine(ranks);
  EXPECT_FALSE(run.nodes.availability.available);
  ASSERT_EQ(run.clocks.hosts.size(), 1u);
  EXPECT_EQ(run.clocks.hosts[0].status, trace::HostClockStatus::kReference);
}

// Ranks whose traces name no host: not "one host" (their clocks are
// estimated per process), but unknown.
TEST(Nodes, TracesWithoutHostNamesAreNotCalledOneHost) {
  std::vector<RankAnalysis> ranks = {rank_on(0, "", 0, 0), rank_on(1, "", 0, 1'000)};
  for (auto& r : ranks) r.node_count = r.world_size = -1;
  const RunAnalysis run = combine(ranks);
  EXPECT_FALSE(run.nodes.availability.available);
  EXPECT_EQ(run.nodes.availability.reason, "skipped: the traces do not name their hosts");
  std::vector<RankAnalysis> named = {rank_on(0, "a", 0, 0), rank_on(1, "a", 0, 1'000)};
  for (auto& r : named) r.node_count = r.world_size = -1;
  EXPECT_EQ(combine(named).nodes.availability.reason, "skipped: every rank ran on one host");
}

TEST(Nodes, OneHostOfTwoReportingSaysWhichIsMissing) {
  std::vector<RankAnalysis> ranks = {rank_on(0, "a", 0, 0), rank_on(1, "a", 0, 1'000)};
  for (auto& r : ranks) r.node_count = 2;
  const RunAnalysis run = combine(ranks);
  EXPECT_TRUE(run.nodes.availability.available);
  EXPECT_EQ(run.nodes.missing_nodes, (std::vector<std::string>{"node 1"}));
}

TEST(Nodes, SlurmHostlists) {
  EXPECT_EQ(expand_slurm_hostlist("gpu[01-03,7]"), (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu7"}));
  EXPECT_EQ(expand_slurm_hostlist("a,b[8-10]-ib"), (std::vector<std::string>{"a", "b8-ib", "b9-ib", "b10-ib"}));
  EXPECT_EQ(expand_slurm_hostlist("node[098-101]"),
            (std::vector<std::string>{"node098", "node099", "node100", "node101"}));
  for (const char* bad : {"gpu[01-", "gpu]", "gpu[3-1]", "gpu[a-b]", "a,,b", "x[0-99999999]", "gpu[[1]]"})
    EXPECT_THROW(expand_slurm_hostlist(bad), Error) << bad;
}


trace::ProcessGroup group(std::string name, std::string description, std::vector<int32_t> ranks) {
  return {std::move(name), std::move(description), "nccl", std::move(ranks)};
}

TEST(Nodes, CommunicatorsNamedByTheirProcessGroup) {
  // Four ranks on one host. Their traces name communicators by NCCL's hash
  // ("world" over all four, "local-a" over all four too here) and the
  // bootstrap gave each rank torch.distributed's groups.
  std::vector<RankAnalysis> ranks;
  for (int32_t r = 0; r < 4; ++r) {
    ranks.push_back(rank_on(r, "a", 0, 0));
    ranks.back().node_count = ranks.back().world_size = -1;
    ranks.back().collectives.push_back(
        {trace::kNoString, "0xpair" + std::to_string(r / 2), trace::NcclOp::kBroadcast, 0, kT0, kT0 + 1'000});
    ranks.back().process_groups = {group("0", "default_pg", {0, 1, 2, 3}), group("1", "", {0, 1}),
                                   group("2", "pipeline", {2, 3})};
  }
  RunAnalysis run = combine(ranks);
  EXPECT_FALSE(run.nodes.availability.available);  // one host: no node table, but the groups are named
  std::map<std::string, const CommunicatorSummary*> by_name;
  for (const auto& c : run.nodes.communicators) by_name[c.name] = &c;
  ASSERT_EQ(by_name.size(), 4u);
  EXPECT_EQ(by_name["0xpair0"]->group, "group 1");
  EXPECT_EQ(by_name["0xpair0"]->group_ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(by_name["0xpair1"]->group, "pipeline");
  EXPECT_EQ(by_name["0xpair1"]->group_name, "2");
  EXPECT_EQ(by_name["0xpair1"]->backend, "nccl");
  EXPECT_EQ(by_name["world"]->group, "default_pg");
  EXPECT_EQ(by_name["local-a"]->group, "default_pg");

  // Rank 3 left no trace: the one smallest group holding ranks 0-2 is the
  // world; rank 2 alone in its pair could be in "pipeline" or the world: the
  // smallest is "pipeline".
  ranks.pop_back();
  run = combine(ranks);
  by_name.clear();
  for (const auto& c : run.nodes.communicators) by_name[c.name] = &c;
  EXPECT_EQ(by_name["world"]->group, "default_pg");
  EXPECT_EQ(by_name["0xpair1"]->group, "pipeline");

  // Two groups over the same ranks are named together; a group the traces
  // name directly (PyTorch-profiler traces carry torch's name) is that one.
  for (auto& r : ranks) r.process_groups.push_back(group("7", "dp", {0, 1}));
  for (auto& r : ranks) r.collectives.push_back({trace::kNoString, "2", trace::NcclOp::kBroadcast, 1, kT0, kT0 + 9});
  run = combine(ranks);
  by_name.clear();
  for (const auto& c : run.nodes.communicators) by_name[c.name] = &c;
  EXPECT_EQ(by_name["0xpair0"]->group, "group 1 = dp");
  EXPECT_EQ(by_name["0xpair0"]->group_name, "1,7");
  EXPECT_EQ(by_name["2"]->group, "pipeline");
}

TEST(Nodes, NoGroupIsGuessed) {
  // No rank knows any group; or the ranks seen fit two groups of one size.
  std::vector<RankAnalysis> ranks = {rank_on(0, "a", 0, 0), rank_on(1, "a", 0, 0)};
  RunAnalysis run = combine(ranks);
  for (const auto& c : run.nodes.communicators) EXPECT_EQ(c.group, "") << c.name;
  for (auto& r : ranks) r.process_groups = {group("1", "x", {0, 1, 5}), group("2", "y", {0, 1, 6})};
  run = combine(ranks);
  for (const auto& c : run.nodes.communicators) EXPECT_EQ(c.group, "") << c.name;
}

}  // namespace
}  // namespace scalescope::analyze
