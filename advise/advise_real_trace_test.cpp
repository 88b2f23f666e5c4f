// The advisor on the real PyTorch-profiler trace in ../shared: MobileNetV2
// DDP, rank 0 of 2, a fully tuned job (pinned input, channels_last, fp16
// autocast), so none of the findings about those may fire. Skipped when the
// data is absent.
#include <filesystem>

#include <gtest/gtest.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/kineto_importer.hpp"

namespace scalescope::advise {
namespace {

const std::filesystem::path kTrace =
    std::filesystem::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";

TEST(AdviseRealTrace, TunedJobGetsNoPinnedLayoutOrPrecisionFinding) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "real trace not found: " << kTrace;
  const trace::Trace t = trace::import_kineto_file(kTrace);
  const analyze::RunAnalysis run = analyze::combine({analyze::analyze_rank(t, analyze::Options{})});
  const auto findings = advise(run);
  ASSERT_TRUE(run.ranks.front().breakdown.availability.available);
  for (const auto& f : findings) {
    EXPECT_NE(f.id, "pinned-memory") << f.evidence;
    EXPECT_NE(f.id, "channels-last") << f.evidence;
    EXPECT_NE(f.id, "mixed-precision") << f.evidence;
    EXPECT_NE(f.id, "fp64") << f.evidence;
  }
}

}  // namespace
}  // namespace scalescope::advise
