#include "trace/import/clock_alignment.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace scalescope::trace {
namespace {

constexpr int64_t kStart = 1'796'000'000'000'000'000;  // 2026, Unix ns

// `n` collectives 50 ms apart; each host's end = true end + clock(t) + noise.
struct Job {
  std::vector<RankCollectives> ranks;
};

Job make_job(const std::vector<std::string>& hosts, int per_host, int n,
             const std::vector<std::function<int64_t(int64_t)>>& clock_of_host, double noise_ns = 1500,
             uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, noise_ns);
  Job job;
  int32_t rank = 0;
  for (size_t h = 0; h < hosts.size(); ++h)
    for (int r = 0; r < per_host; ++r) {
      RankCollectives rc;
      rc.hostname = hosts[h];
      rc.rank = rank++;
      for (int i = 0; i < n; ++i) {
        const int64_t t = kStart + int64_t{i} * 50'000'000;
        rc.ends.push_back(
            {collective_key("pg0", NcclOp::kAllReduce, i), t + clock_of_host[h](t) + std::llround(noise(rng))});
      }
      job.ranks.push_back(std::move(rc));
    }
  return job;
}

auto constant(int64_t v) {
  return [v](int64_t) { return v; };
}

TEST(ClockAlignment, OneHostIsTheReferenceAlone) {
  Job job = make_job({"a"}, 4, 50, {constant(0)});
  ClockAlignment a = estimate_clock_alignment(job.ranks);
  ASSERT_EQ(a.hosts.size(), 1u);
  EXPECT_EQ(a.hosts[0].status, HostClockStatus::kReference);
  EXPECT_EQ(a.hosts[0].rank_count, 4);
  EXPECT_FALSE(a.any_applied());
}

TEST(ClockAlignment, RecoversOffsetsOfSeveralSizes) {
  for (int64_t offset : {int64_t{-50'000'000}, int64_t{5'000'000}, int64_t{100'000}, int64_t{10'000}}) {
    Job job = make_job({"a", "b"}, 2, 200, {constant(0), constant(offset)});
    ClockAlignment a = estimate_clock_alignment(job.ranks);
    ASSERT_EQ(a.hosts.size(), 2u);
    EXPECT_EQ(a.hosts[0].hostname, "a");
    const HostClock& b = a.hosts[1];
    EXPECT_EQ(b.status, HostClockStatus::kAligned) << offset;
    EXPECT_NEAR(static_cast<double>(b.offset_ns), static_cast<double>(offset), 500) << offset;
    EXPECT_EQ(b.drift_ppm, 0) << "no drift was put in";
    EXPECT_GT(b.uncertainty_ns, 0);
    EXPECT_LT(b.uncertainty_ns, 500);
    EXPECT_EQ(b.matched, 200);
    EXPECT_EQ(b.measured_against, "a");
  }
}

TEST(ClockAlignment, SmallOffsetsAreLeftAlone) {
  Job job = make_job({"a", "b"}, 1, 200, {constant(0), constant(800)});
  ClockAlignment a = estimate_clock_alignment(job.ranks);
  EXPECT_EQ(a.hosts[1].status, HostClockStatus::kAgrees);
  EXPECT_NEAR(static_cast<double>(a.hosts[1].offset_ns), 800, 500);
  EXPECT_FALSE(a.any_applied());
}

TEST(ClockAlignment, RecoversLinearDrift) {
  // 40 ppm: 400 us over the 10 s run, on top of 3 ms.
  auto drifting = [](int64_t t) { return 3'000'000 + static_cast<int64_t>(40e-6 * static_cast<double>(t - kStart)); };
  Job job = make_job({"a", "b"}, 2, 200, {constant(0), drifting});
  const HostClock b = estimate_clock_alignment(job.ranks).hosts[1];
  EXPECT_EQ(b.status, HostClockStatus::kAligned);
  EXPECT_NEAR(b.drift_ppm, 40, 1);
  for (int i = 0; i < 200; i += 20) {
    const int64_t t = kStart + int64_t{i} * 50'000'000;
    EXPECT_NEAR(static_cast<double>(b.correction_at(t + drifting(t))), static_cast<double>(drifting(t)), 1000) << i;
  }
}

TEST(ClockAlignment, OutliersDoNotMoveTheEstimate) {
  Job job = make_job({"a", "b"}, 1, 200, {constant(0), constant(2'000'000)});
  for (size_t i = 0; i < job.ranks[1].ends.size(); i += 10)
    job.ranks[1].ends[i].end_unix_ns += 30'000'000;  // 10% wildly late
  const HostClock b = estimate_clock_alignment(job.ranks).hosts[1];
  EXPECT_NEAR(static_cast<double>(b.offset_ns), 2'000'000, 1000);
  EXPECT_EQ(b.drift_ppm, 0);
}

TEST(ClockAlignment, HostsWithoutSharedCollectivesWithTheReferenceAreChained) {
  // a and b share communicator "ab"; b and c share "bc"; c never meets a.
  std::vector<RankCollectives> ranks(3);
  const int64_t off_b = 7'000'000, off_c = -4'000'000;
  for (int i = 0; i < 100; ++i) {
    const int64_t t = kStart + int64_t{i} * 10'000'000;
    ranks[0].ends.push_back({collective_key("ab", NcclOp::kAllReduce, i), t});
    ranks[1].ends.push_back({collective_key("ab", NcclOp::kAllReduce, i), t + off_b + (i % 3) * 100});
    ranks[1].ends.push_back({collective_key("bc", NcclOp::kAllGather, i), t + 5'000'000 + off_b});
    ranks[2].ends.push_back({collective_key("bc", NcclOp::kAllGather, i), t + 5'000'000 + off_c + (i % 5) * 100});
  }
  ranks[0].hostname = "a";
  ranks[1].hostname = "b";
  ranks[2].hostname = "c";
  for (int r = 0; r < 3; ++r) ranks[r].rank = r;
  ClockAlignment a = estimate_clock_alignment(ranks);
  ASSERT_EQ(a.hosts.size(), 3u);
  const HostClock* c = a.find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, HostClockStatus::kAligned);
  EXPECT_EQ(c->measured_against, "b");
  EXPECT_NEAR(static_cast<double>(c->offset_ns), static_cast<double>(off_c), 500);
}

TEST(ClockAlignment, UnmatchedHostIsLeftAlone) {
  std::vector<RankCollectives> ranks(2);
  ranks[0].hostname = "a";
  ranks[1].hostname = "b";
  for (int i = 0; i < 20; ++i) {
    ranks[0].ends.push_back({collective_key("x", NcclOp::kAllReduce, i), kStart + i});
    ranks[1].ends.push_back({collective_key("y", NcclOp::kAllReduce, i), kStart + 9'000'000 + i});
  }
  ClockAlignment a = estimate_clock_alignment(ranks);
  EXPECT_EQ(a.hosts[1].status, HostClockStatus::kUnmatched);
  EXPECT_EQ(a.hosts[1].matched, 0);
  EXPECT_FALSE(a.any_applied());
}

TEST(ClockAlignment, DisabledEstimatesWithoutApplying) {
  Job job = make_job({"a", "b"}, 1, 100, {constant(0), constant(5'000'000)});
  AlignOptions o;
  o.apply = false;
  const HostClock b = estimate_clock_alignment(job.ranks, o).hosts[1];
  EXPECT_EQ(b.status, HostClockStatus::kDisabled);
  EXPECT_FALSE(b.applied());
  EXPECT_NEAR(static_cast<double>(b.offset_ns), 5'000'000, 500);
}

TEST(ClockAlignment, ProcessesWithoutAHostAreClocksOfTheirOwn) {
  Job job = make_job({"", ""}, 1, 100, {constant(0), constant(5'000'000)});
  ClockAlignment a = estimate_clock_alignment(job.ranks);
  ASSERT_EQ(a.hosts.size(), 2u);
  EXPECT_EQ(a.hosts[1].status, HostClockStatus::kAligned);
  EXPECT_NE(a.hosts[0].hostname, a.hosts[1].hostname);
}

Trace trace_with_anchors(std::vector<ClockAnchor> anchors) {
  Trace t;
  t.meta.hostname = "b";
  t.meta.clock = std::move(anchors);
  KernelRecord k;
  k.start = 1'000'000;
  k.end = 9'000'000'000;
  k.name = t.strings.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  t.kernels.push(k);
  return t;
}

TEST(ClockAlignment, CorrectionRewritesAnchorsWhateverTheirNumber) {
  HostClock h;
  h.hostname = "b";
  h.status = HostClockStatus::kAligned;
  h.offset_ns = 5'000'000;
  h.drift_ppm = 20;
  for (auto anchors : {std::vector<ClockAnchor>{}, std::vector<ClockAnchor>{{0, kStart}},
                       std::vector<ClockAnchor>{{0, kStart}, {10'000'000'000, kStart + 10'000'000'000}}}) {
    Trace t = trace_with_anchors(anchors);
    h.reference_unix_ns = t.meta.to_unix_ns(5'000'000'000);
    std::vector<int64_t> before;
    for (Timestamp x : {Timestamp{1'000'000}, Timestamp{5'000'000'000}, Timestamp{9'000'000'000}})
      before.push_back(t.meta.to_unix_ns(x));
    apply_clock_correction(t, h);
    size_t i = 0;
    for (Timestamp x : {Timestamp{1'000'000}, Timestamp{5'000'000'000}, Timestamp{9'000'000'000}}) {
      const int64_t want = before[i] - h.correction_at(before[i]);
      EXPECT_NEAR(static_cast<double>(t.meta.to_unix_ns(x)), static_cast<double>(want), 2)
          << anchors.size() << " " << x;
      ++i;
    }
    EXPECT_TRUE(t.meta.extra.count("clock_correction"));
  }
}

TEST(ClockAlignment, CollectivesFromKernelNamesWhenThereIsNoNcclTable) {
  Trace t = trace_with_anchors({{0, kStart}});
  KernelRecord other;
  other.start = 10;
  other.end = 20;
  other.name = t.strings.intern("volta_sgemm_128x64_nn");
  t.kernels.push(other);
  const RankCollectives c = collectives_of(t);
  ASSERT_EQ(c.ends.size(), 1u);
  EXPECT_EQ(c.ends[0].key, collective_key("", NcclOp::kAllReduce, 0));
  EXPECT_EQ(c.ends[0].end_unix_ns, kStart + 9'000'000'000);
  EXPECT_EQ(nccl_op_of_kernel_name("ncclKernel_AllGather_RING_LL_Sum_int8_t"), NcclOp::kAllGather);
  EXPECT_EQ(nccl_op_of_kernel_name("ncclAllReduceRingLLKernel_sum_f32"), NcclOp::kAllReduce);
  EXPECT_EQ(nccl_op_of_kernel_name("sgemm"), NcclOp::kUnknown);
}

TEST(ClockAlignment, AlignClocksShiftsTheTracesOfAnotherHost) {
  std::vector<Trace> traces;
  for (int r = 0; r < 2; ++r) {
    Trace t;
    t.meta.hostname = r == 0 ? "a" : "b";
    t.meta.rank = r;
    t.meta.clock = {{0, kStart + (r == 1 ? 20'000'000 : 0)}};
    const StringId comm = t.strings.intern("pg");
    for (int i = 0; i < 50; ++i) {
      NcclRecord n;
      n.start = int64_t{i} * 1'000'000;
      n.end = n.start + 500'000 + (r == 1 ? (i % 4) * 200 : 0);
      n.op = NcclOp::kAllReduce;
      n.communicator = comm;
      n.sequence = i;
      t.nccl.push(n);
    }
    traces.push_back(std::move(t));
  }
  ClockAlignment a = align_clocks(traces);
  ASSERT_EQ(a.hosts.size(), 2u);
  EXPECT_EQ(a.hosts[1].status, HostClockStatus::kAligned);
  EXPECT_NEAR(static_cast<double>(traces[1].meta.to_unix_ns(500'000)), static_cast<double>(kStart + 500'000), 500);
  EXPECT_EQ(traces[0].meta.to_unix_ns(500'000), kStart + 500'000) << "the reference is not touched";
}

}  // namespace
}  // namespace scalescope::trace
