// The analyses on the real PyTorch-profiler trace in ../shared (the advisor's
// test on it is advise/advise_real_trace_test.cpp):
// MobileNetV2 DDP, rank 0 of 2, 60 profiled steps, a fully tuned job (pinned
// input, channels_last, fp16 autocast). Skipped when the data is absent.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyze/analyze.hpp"
#include "trace/import/clock_alignment.hpp"
#include "trace/import/kineto_importer.hpp"

namespace scalescope::analyze {
namespace {

const std::filesystem::path kTrace =
    std::filesystem::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";

class RealTraceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::filesystem::exists(kTrace)) trace_ = std::make_unique<trace::Trace>(trace::import_kineto_file(kTrace));
  }
  static void TearDownTestSuite() { trace_.reset(); }
  void SetUp() override {
    if (!trace_) GTEST_SKIP() << "real trace not found: " << kTrace;
  }
  static std::unique_ptr<trace::Trace> trace_;
};
std::unique_ptr<trace::Trace> RealTraceTest::trace_;

TEST_F(RealTraceTest, BreakdownPartsSumToWallTime) {
  const RankAnalysis r = analyze_rank(*trace_, Options{});
  const RankBreakdown& b = r.breakdown;
  ASSERT_TRUE(b.availability.available);
  EXPECT_GT(b.wall_ns, 0);
  EXPECT_EQ(b.compute_ns + b.exposed_communication_ns + b.copy_ns + b.idle_ns, b.wall_ns);
  EXPECT_GT(b.compute_ns, 0);
  EXPECT_GT(b.communication_ns, 0);
  EXPECT_GE(b.idle_ns, 0);
  EXPECT_LE(b.overlap_ns, b.communication_ns);
  Options o;
  o.window = WindowSpec::parse("10%:90%");
  const RankBreakdown w = analyze_rank(*trace_, o).breakdown;
  EXPECT_EQ(w.compute_ns + w.exposed_communication_ns + w.copy_ns + w.idle_ns, w.wall_ns);
  EXPECT_LT(w.wall_ns, b.wall_ns);
}

// The idle time breakdown covers the idle time inside the iterations exactly.
TEST_F(RealTraceTest, IdleBreakdownPartsSumToIdleTime) {
  const RankAnalysis r = analyze_rank(*trace_, Options{});
  const IdleBreakdown& i = r.idle_breakdown;
  ASSERT_TRUE(i.availability.available) << i.availability.reason;
  EXPECT_GT(i.idle_ns, 0);
  EXPECT_EQ(i.host_wait_ns + i.kernel_wait_ns + i.other_ns, i.idle_ns);
  EXPECT_EQ(i.idle_ns, r.idle_cover.idle_ns);
  // Kineto links every kernel to its launch: every gap is judged by its launch.
  EXPECT_GT(i.host_wait_ns, 0);
  EXPECT_GT(i.kernel_wait_ns, 0);
  EXPECT_EQ(i.unlaunched_gaps, 0);
  // Short names of the top kernels never read alike.
  std::set<std::string> names;
  for (const KernelSummary& k : r.top_kernels) {
    EXPECT_LE(k.short_name.size(), k.name.size()) << k.name;
    names.insert(k.short_name);
  }
  EXPECT_EQ(names.size(), r.top_kernels.size());
}

TEST_F(RealTraceTest, SixtyIterationsFromRangeNamesAndDetection) {
  for (const char* name : {"Optimizer.step#SGD.step", "DistributedDataParallel.forward"}) {
    Options o;
    o.iteration_range = name;
    const IterationStats s = find_iterations(*trace_, o);
    EXPECT_EQ(s.count, 60) << name;
    EXPECT_GT(s.steady_median_ns, 0) << name;
  }
  const IterationStats automatic = find_iterations(*trace_, Options{});
  EXPECT_EQ(automatic.count, 60) << automatic.source;
  Options w;
  w.window = WindowSpec::parse("it5:it50");
  EXPECT_EQ(analyze_rank(*trace_, w).iterations.count, 45);
}

TEST_F(RealTraceTest, CopiesAndPrecision) {
  const RankAnalysis r = analyze_rank(*trace_, Options{});
  int64_t dtod = 0, htod_pinned = 0, htod_pageable = 0;
  for (const CopyGroup& g : r.copies.groups) {
    if (g.kind == trace::MemcpyKind::kDtoD) dtod += g.count;
    if (g.kind == trace::MemcpyKind::kHtoD && g.src_kind == trace::MemoryKind::kPinned) htod_pinned += g.count;
    if (g.kind == trace::MemcpyKind::kHtoD && g.src_kind == trace::MemoryKind::kPageable) htod_pageable += g.count;
  }
  EXPECT_EQ(dtod, 21000);
  EXPECT_EQ(htod_pinned, 60);
  EXPECT_EQ(htod_pageable, 60);
  EXPECT_GT(r.precision.tensor_core_fraction, 0.05);
  EXPECT_LT(r.precision.fp32_no_tensor_fraction, 0.01);
  EXPECT_EQ(r.precision.fp64_fraction, 0);
  EXPECT_EQ(r.layout.conversion_count, 0);
  EXPECT_FALSE(r.numa.availability.available);
  EXPECT_NE(r.numa.availability.reason.find("no host facts"), std::string::npos);
  EXPECT_GT(r.classes[static_cast<int>(KernelClass::kCommunication)].count, 0);
}

// Attribution: attributed + unattributed = the GPU's busy time, backward ops
// linked through the fwdbwd flows, and the operators' summed GPU time as an
// independent count over Kineto's own "External id" links gives it
// (bench/attribution/kineto_key_averages.py, the way key_averages() counts).
TEST_F(RealTraceTest, AttributionAddsUpAndAgreesWithKinetoExternalIds) {
  const RankAnalysis r = analyze_rank(*trace_, Options{});
  for (const RankAnalysis* x : {&r, r.steady.get()}) {
    ASSERT_TRUE(x);
    const Attribution& a = x->attribution;
    ASSERT_TRUE(a.available) << a.reason;
    EXPECT_EQ(a.attributed_ns + a.unattributed_ns, a.busy_ns);
    EXPECT_EQ(a.busy_ns, x->breakdown.wall_ns - x->breakdown.idle_ns);
    int64_t ops = a.no_operator_ns, ranges = a.no_range_ns;
    for (const auto& o : a.operators) ops += o.self_gpu_ns;
    for (const auto& o : a.ranges) ranges += o.self_gpu_ns;
    EXPECT_EQ(ops, a.busy_ns);
    EXPECT_EQ(ranges, a.busy_ns);
    EXPECT_GT(a.attributed_ns, a.busy_ns * 95 / 100);
  }
  const Attribution& a = r.attribution;
  EXPECT_EQ(a.link_source, "fwdbwd flows");
  EXPECT_GT(a.backward_links, 10'000);
  auto sum_of = [&](const std::string& name) -> int64_t {
    for (const auto& o : a.operators)
      if (o.name == name) return o.sum_ns;
    ADD_FAILURE() << name << " missing";
    return 0;
  };
  const std::pair<const char*, double> kExternalIdSums[] = {
      {"aten::convolution_backward", 212818309},
      {"aten::cudnn_batch_norm_backward", 189758250},
      {"aten::copy_", 166293236},
      {"aten::cudnn_batch_norm", 140851149},
      {"c10d::allreduce_", 380322089},
  };
  for (const auto& [name, ns] : kExternalIdSums) EXPECT_NEAR(static_cast<double>(sum_of(name)), ns, 0.01 * ns) << name;
  // The DDP module gets its backward too: more than its forward range alone.
  for (const auto& g : a.ranges)
    if (g.name == "DistributedDataParallel.forward") {
      EXPECT_GT(g.gpu_ns, a.busy_ns / 2);
    }
}

// ---- clock alignment with known offsets ------------------------------------
// The trace holds only rank 0 of its two, so rank 1 is made from it the way a
// second rank of the same job differs: each collective ends up to +-2 us apart
// (the last chunk's arrival), and rank 1 reaches every third collective up to
// 20 us late (its kernel starts later, ends with rank 0's). As in a directory
// of Kineto traces, neither knows its host: each is a clock of its own. Rank
// 1's clock is then moved by 1 us, 100 us, 5 ms, +-50 ms, and 5 ms plus a 10
// ppm drift; alignment must recover each within 5 us at every collective, and
// the straggler analysis must give the unshifted copy's answer.
//
// The shift is written as two clock anchors at the ends of the data (the real
// clock's mapping, t -> t + shift(t), is linear). Kineto's one anchor sits at
// trace time 0 (baseTimeNanoseconds), 59 days before this trace's first event
// (its "ts" counts from there): moving that anchor by shift(anchor) adds the
// drift term at day 0, 10 ppm x -5.12e6 s = -51.2 s, to the whole trace. An
// earlier version of this test did so (-51,199,813,729 ns at the anchor), and
// the estimator found exactly that.
namespace {

constexpr double kAlignToleranceNs = 5'000;

struct KnownShift {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t at_unix_ns = 0;  // where the drift term is 0
  int64_t operator()(int64_t unix_ns) const {
    return offset_ns + std::llround(drift_ppm * 1e-6 * static_cast<double>(unix_ns - at_unix_ns));
  }
};

uint64_t hash_of(uint64_t x) {  // splitmix64: a fixed, repeatable jitter
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

trace::Trace second_rank_of(const trace::Trace& rank0) {
  trace::Trace t = rank0;
  t.meta.rank = 1;
  trace::NcclTable& n = t.nccl;
  for (size_t i = 0; i < n.size(); ++i) {
    const int64_t d = n.end[i] - n.start[i];
    const int64_t room = std::min<int64_t>(2'000, d / 4);
    n.end[i] += room > 0 ? static_cast<int64_t>(hash_of(i) % static_cast<uint64_t>(2 * room + 1)) - room : 0;
    if (i % 3 == 0) n.start[i] += std::min<int64_t>(20'000, (n.end[i] - n.start[i]) / 2);
  }
  return t;
}

// Rank 1's host clock reads shift(t) ahead of rank 0's at Unix time t.
void shift_clock(trace::Trace& t, const KnownShift& shift) {
  const auto [lo, hi] = t.time_span();
  const int64_t a = t.meta.to_unix_ns(lo), b = t.meta.to_unix_ns(hi);
  t.meta.clock = {{lo, a + shift(a)}, {hi, b + shift(b)}};
}

std::vector<KnownShift> known_shifts(int64_t at) {
  return {{1'000, 0, at},      {100'000, 0, at},     {5'000'000, 0, at},
          {50'000'000, 0, at}, {-50'000'000, 0, at}, {5'000'000, 10, at}};
}

std::string describe(const KnownShift& s) {
  return std::to_string(s.offset_ns) + " ns + " + std::to_string(s.drift_ppm) + " ppm";
}

}  // namespace

TEST_F(RealTraceTest, ClockAlignmentRecoversKnownShiftsOfTheSecondRank) {
  const trace::Trace rank1 = second_rank_of(*trace_);
  const trace::RankCollectives ends = trace::collectives_of(rank1);
  ASSERT_GE(ends.ends.size(), 240u);
  for (const KnownShift& s : known_shifts(ends.ends.front().end_unix_ns)) {
    std::vector<trace::Trace> ranks = {*trace_, rank1};
    shift_clock(ranks[1], s);
    const trace::ClockAlignment a = trace::align_clocks(ranks);
    ASSERT_EQ(a.hosts.size(), 2u);
    const trace::HostClock& h = a.hosts[1];
    EXPECT_EQ(h.hostname, "(unknown host, process 1)");
    EXPECT_EQ(h.measured_against, "(unknown host, process 0)");
    EXPECT_GE(h.matched, 240) << describe(s);
    EXPECT_EQ(h.rejected, 0) << describe(s);
    const bool small = std::abs(s.offset_ns) <= 2'000 && s.drift_ppm == 0;
    EXPECT_EQ(h.status, small ? trace::HostClockStatus::kAgrees : trace::HostClockStatus::kAligned) << describe(s);
    double worst = 0;
    for (const trace::CollectiveEnd& e : ends.ends) {
      const int64_t on_host = e.end_unix_ns + s(e.end_unix_ns);
      worst = std::max(worst, std::abs(static_cast<double>(h.correction_at(on_host) - s(e.end_unix_ns))));
    }
    std::printf("shift %s: estimate %lld ns, %.3f ppm, +-%.0f ns; worst error %.0f ns\n", describe(s).c_str(),
                static_cast<long long>(h.offset_ns), h.drift_ppm, h.uncertainty_ns, worst);
    EXPECT_LE(worst, kAlignToleranceNs) << describe(s) << ": estimate " << h.offset_ns << " ns, " << h.drift_ppm
                                        << " ppm";
    EXPECT_LE(h.uncertainty_ns, kAlignToleranceNs) << describe(s);
    if (s.drift_ppm != 0) {
      EXPECT_NEAR(h.drift_ppm, s.drift_ppm, 0.1 * s.drift_ppm) << describe(s);
    }
    if (h.applied()) {  // what load_run applies: rank 1's times read rank 0's clock again
      const trace::RankCollectives back = trace::collectives_of(ranks[1]);
      ASSERT_EQ(back.ends.size(), ends.ends.size());
      for (size_t i = 0; i < ends.ends.size(); i += 7)
        EXPECT_NEAR(static_cast<double>(back.ends[i].end_unix_ns), static_cast<double>(ends.ends[i].end_unix_ns),
                    kAlignToleranceNs)
            << describe(s) << " collective " << i;
    }
  }
}

TEST_F(RealTraceTest, StragglersOfTheShiftedSecondRankGiveTheUnshiftedAnswer) {
  const trace::Trace rank1 = second_rank_of(*trace_);
  Options o;
  o.attribution = false;
  const std::vector<RankAnalysis> base = {analyze_rank(*trace_, o), analyze_rank(rank1, o)};
  const RunAnalysis want = combine(base);
  ASSERT_TRUE(want.stragglers.availability.available) << want.stragglers.availability.reason;
  ASSERT_GE(want.stragglers.matched_collectives, 240);
  ASSERT_EQ(want.stragglers.ranks.size(), 2u);
  EXPECT_EQ(want.stragglers.ranks[0].rank, 1) << "the copy is late at every third collective";
  EXPECT_GT(want.stragglers.ranks[0].total_late_ns, 100 * want.stragglers.ranks[1].total_late_ns + 100'000);
  const int64_t at = trace::collectives_of(rank1).ends.front().end_unix_ns;
  const double slack = kAlignToleranceNs * static_cast<double>(want.stragglers.matched_collectives);
  for (const KnownShift& s : known_shifts(at)) {
    std::vector<RankAnalysis> ranks = base;
    if (s.offset_ns == 5'000'000) {  // the whole path: a shifted trace analysed
      trace::Trace moved = rank1;
      shift_clock(moved, s);
      ranks[1] = analyze_rank(moved, o);
    } else {
      for (CollectiveArrival& c : ranks[1].collectives) {
        c.arrival_unix_ns += s(c.arrival_unix_ns);
        c.end_unix_ns += s(c.end_unix_ns);
      }
    }
    const RunAnalysis got = combine(ranks);
    const StragglerStats& g = got.stragglers;
    ASSERT_TRUE(g.availability.available) << describe(s) << ": " << g.availability.reason;
    EXPECT_EQ(g.matched_collectives, want.stragglers.matched_collectives) << describe(s);
    ASSERT_EQ(g.ranks.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(g.ranks[i].rank, want.stragglers.ranks[i].rank) << describe(s);
      EXPECT_NEAR(static_cast<double>(g.ranks[i].total_late_ns),
                  static_cast<double>(want.stragglers.ranks[i].total_late_ns), slack)
          << describe(s);
    }
    EXPECT_NEAR(static_cast<double>(g.total_wait_ns), static_cast<double>(want.stragglers.total_wait_ns), slack)
        << describe(s);
    if (std::abs(s.offset_ns) >= 100'000) {
      // The same shift unaligned breaks the analysis: alignment did the work.
      const RunAnalysis off = combine(ranks, false);
      EXPECT_FALSE(off.stragglers.availability.available &&
                   off.stragglers.ranks.front().rank == want.stragglers.ranks.front().rank &&
                   std::abs(off.stragglers.total_wait_ns - want.stragglers.total_wait_ns) <= slack)
          << describe(s);
    }
  }
}

}  // namespace
}  // namespace scalescope::analyze
