// The advisor on the real traces in ../shared and examples/: the
// PyTorch-profiler trace of MobileNetV2 DDP (rank 0 of 2, a fully tuned job:
// pinned input, channels_last, fp16 autocast), so none of the findings about
// those may fire, and a 1 ms window of it can support none; the Nsight
// Systems export of an MPI + CUDA program, which must get no PyTorch advice;
// the H200 study's untuned and tuned MobileNetV2, compared per step. Skipped
// when the data is absent.
#include <filesystem>

#include <gtest/gtest.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/import/kineto_importer.hpp"

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

// A 1 ms window (shorter than one 88 ms step): findings only with a caution,
// never critical.
TEST(AdviseRealTrace, OneMillisecondWindowIsNeverCritical) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "real trace not found: " << kTrace;
  analyze::Options o;
  o.window = analyze::WindowSpec::parse("2000000:3000000");
  const auto findings = advise(analyze::combine({analyze::analyze_rank(trace::import_kineto_file(kTrace), o)}));
  for (const auto& f : findings) {
    EXPECT_NE(f.severity, Severity::kCritical) << f.id;
    EXPECT_FALSE(f.caveat.empty()) << f.id;
  }
}

// Launch gaps, host syncs and input gaps are carved out of the same idle
// time: combined, the first three root causes gain less than their sum.
TEST(AdviseRealTrace, OverlappingSavingsCombineBelowTheirSum) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "real trace not found: " << kTrace;
  const auto findings = advise(analyze::combine({analyze::analyze_rank(trace::import_kineto_file(kTrace), {})}));
  std::vector<const Finding*> roots;
  for (const auto& f : findings)
    if (f.explained_by.empty()) roots.push_back(&f);
  ASSERT_GE(roots.size(), 3u);
  const double sum = roots[0]->saving_fraction + roots[1]->saving_fraction + roots[2]->saving_fraction;
  EXPECT_EQ(roots[2]->combined_count, 3);
  EXPECT_GE(roots[2]->combined_fraction, roots[0]->saving_fraction);
  EXPECT_LT(roots[2]->combined_fraction, sum);
}

// An MPI + CUDA C program exported by Nsight Systems: its GPU idles while
// the host is in MPI_Send and MPI_Recv (host communication, not input
// starvation), and no fix names PyTorch.
TEST(AdviseRealTrace, MpiCudaProgramGetsNoPyTorchAdvice) {
  const std::filesystem::path sqlite =
      std::filesystem::path(SCALESCOPE_SHARED_DIR) / "data/nsys/saxpy-mpi-cuda-a100.sqlite";
  if (!std::filesystem::exists(sqlite)) GTEST_SKIP() << "real export not found: " << sqlite;
  const analyze::RunAnalysis run = analyze::analyze_path(sqlite, analyze::Options{});
  ASSERT_FALSE(run.ranks.empty());
  EXPECT_EQ(run.ranks.front().job.framework, analyze::Framework::kCuda);
  EXPECT_TRUE(run.ranks.front().job.mpi);
  const auto findings = advise(run);
  ASSERT_FALSE(findings.empty());
  const Finding* host = nullptr;
  const Finding* input = nullptr;
  for (const auto& f : findings) {
    if (f.id == "host-communication") host = &f;
    if (f.id == "input-starvation") input = &f;
  }
  ASSERT_NE(host, nullptr);
  EXPECT_GT(host->saving_fraction, 0.10);
  // The idle time inside MPI calls is left out of input starvation (89.8 %
  // of iteration time before); the rest of those gaps is host work the export
  // does not show.
  if (input) {
    EXPECT_LT(input->saving_fraction + host->saving_fraction, 0.898 + 1e-3);
  }
  for (const auto& f : findings) {
    for (const char* word : {"DataLoader", "torch", "bucket_cap_mb", "num_workers"})
      EXPECT_EQ(f.fix.find(word), std::string::npos) << f.id << ": " << f.fix;
  }
}

// The H200 study's untuned and tuned MobileNetV2 (2 GPUs): B is faster per
// step, and the verdict names the largest changes.
TEST(AdviseRealTrace, DiffOfUntunedAndTunedIsPerStep) {
  const std::filesystem::path root(SCALESCOPE_SOURCE_DIR);
  const auto a = root / "examples/h200/image-base/traces/0010-g2-arm_base-variant_ref-r0.ssrun";
  const auto b = root / "examples/h200/image-tuned/traces/0010-g2-arm_tuned-variant_ref-r0.ssrun";
  if (!std::filesystem::exists(a) || !std::filesystem::exists(b)) GTEST_SKIP() << "example runs not found";
  const analyze::RunDiff d = analyze::diff(analyze::analyze_path(a, {}), analyze::analyze_path(b, {}));
  EXPECT_EQ(d.basis, "per steady iteration");
  EXPECT_EQ(d.verdict.rfind("B is ", 0), 0u) << d.verdict;
  EXPECT_NE(d.verdict.find("% faster per step"), std::string::npos) << d.verdict;
  EXPECT_LT(d.iteration.ratio, 0.9);
}

}  // namespace
}  // namespace scalescope::advise
