// The analyses and the advisor on the real PyTorch-profiler trace in ../shared:
// MobileNetV2 DDP, rank 0 of 2, 60 profiled steps, a fully tuned job (pinned
// input, channels_last, fp16 autocast). Skipped when the data is absent.
#include <algorithm>
#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/clock_alignment.hpp"
#include "trace/kineto_importer.hpp"

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

TEST_F(RealTraceTest, TunedJobGetsNoPinnedLayoutOrPrecisionFinding) {
  const RunAnalysis run = combine({analyze_rank(*trace_, Options{})});
  const auto findings = advise::advise(run);
  for (const auto& f : findings) {
    EXPECT_NE(f.id, "pinned-memory") << f.evidence;
    EXPECT_NE(f.id, "channels-last") << f.evidence;
    EXPECT_NE(f.id, "mixed-precision") << f.evidence;
    EXPECT_NE(f.id, "fp64") << f.evidence;
  }
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
      {"aten::convolution_backward", 212818309}, {"aten::cudnn_batch_norm_backward", 189758250},
      {"aten::copy_", 166293236},                {"aten::cudnn_batch_norm", 140851149},
      {"c10d::allreduce_", 380322089},
  };
  for (const auto& [name, ns] : kExternalIdSums) EXPECT_NEAR(static_cast<double>(sum_of(name)), ns, 0.01 * ns) << name;
  // The DDP module gets its backward too: more than its forward range alone.
  for (const auto& g : a.ranges)
    if (g.name == "DistributedDataParallel.forward") {
      EXPECT_GT(g.gpu_ns, a.busy_ns / 2);
    }
}


}  // namespace
}  // namespace scalescope::analyze
