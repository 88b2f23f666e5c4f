// Each advisor rule on synthetic traces: it fires above its threshold with the
// expected saving, and stays quiet below it.
#include "advise/advise.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/tests/trace_builder.hpp"
#include "trace/model/tests/test_support.hpp"
#include "base/format_units.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::advise {
namespace {

using analyze::testing::TraceBuilder;
using trace::MemcpyKind;
using trace::MemoryKind;

// The rules' PyTorch fixes need a PyTorch job: a trace that names one of
// its operators (analyze/job.cpp).
trace::Trace as_pytorch(trace::Trace t) {
  t.strings.intern("aten::mm");
  return t;
}

std::vector<Finding> run_on(const trace::Trace& t) {
  return advise(analyze::combine({analyze::analyze_rank(as_pytorch(t), analyze::Options{})}));
}

const Finding* find(const std::vector<Finding>& f, std::string_view id) {
  auto it = std::find_if(f.begin(), f.end(), [&](const Finding& x) { return x.id == id; });
  return it == f.end() ? nullptr : &*it;
}

TraceBuilder busy(int64_t end = 10000) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, end);
  return b;
}

// The rules are one table: every id it can report has its row in
// docs/advisor.md, and the document lists no rule that does not exist.
TEST(AdviseTest, EveryRuleIdHasItsRowInTheDocs) {
  std::ifstream in(std::string(SCALESCOPE_SOURCE_DIR) + "/docs/advisor.md");
  ASSERT_TRUE(in) << "docs/advisor.md";
  std::map<std::string, int> documented;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("| `")) ++documented[line.substr(3, line.find('`', 3) - 3)];
  const auto ids = rule_ids();
  std::set<std::string> known;
  for (auto id : ids) {
    EXPECT_TRUE(known.insert(std::string(id)).second) << id << " twice in the rules";
    EXPECT_EQ(documented[std::string(id)], 1) << id << " has no single row in docs/advisor.md";
  }
  for (const auto& [id, n] : documented) {
    EXPECT_TRUE(n == 0 || known.count(id)) << id << " is documented but no rule reports it";
  }
  EXPECT_GE(ids.size(), 16u);
}

// Figures as the report shows them: with units, never a raw float.
TEST(AdviseTest, FiguresAreFormattedWithTheirUnits) {
  EXPECT_EQ(format_figure({"wait", 60'702'501.55, "ns"}), "60.703 ms");
  EXPECT_EQ(format_figure({"share", 4.26e-4, "fraction"}), "0.043%");
  EXPECT_EQ(format_figure({"share", 0.25, "fraction"}), "25.0%");
  EXPECT_EQ(format_figure({"pageable bytes", 1.5 * 1024 * 1024, "bytes"}), "1.50 MiB");
  EXPECT_EQ(format_figure({"calls", 1234567, "count"}), "1,234,567");
  EXPECT_EQ(format_figure({"threads", 2.456, "count"}), "2.46");
  EXPECT_EQ(format_figure({"steady cv", 0.0412345, "ratio"}), "0.0412");
  EXPECT_EQ(format_figure({"bandwidth", 123.456, "GB/s"}), "123 GB/s");
  EXPECT_EQ(format_figure({"x", std::nan(""), "ns"}), "n/a");
}

TEST(AdviseTest, EmptyTraceHasNoFindings) {
  trace::Trace t;
  EXPECT_TRUE(run_on(t).empty());
  EXPECT_TRUE(advise(analyze::RunAnalysis{}).empty());
}

TEST(AdviseTest, PinnedMemoryByShareOfStepTime) {
  TraceBuilder b = busy();
  for (int i = 0; i < 5; ++i)
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 1000 * i, 1000 * i + 200, 1000, false);
  const auto f = run_on(b.t);
  const Finding* p = find(f, "pinned-memory");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->saving_fraction, 0.1);
  EXPECT_EQ(p->severity, Severity::kWarning);
  EXPECT_NE(p->fix.find("pin_memory=True"), std::string::npos);
  EXPECT_FALSE(p->evidence.empty());
  EXPECT_EQ(find(f, "sync-copies"), nullptr);  // pageable copies belong to pinned-memory
  // A few small pageable copies (1% of step time) next to pinned ones: quiet.
  TraceBuilder tuned = busy();
  tuned.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 0, 100, 8);
  for (int i = 0; i < 5; ++i)
    tuned.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 1000 * i, 1000 * i + 500, 1 << 20);
  EXPECT_EQ(find(run_on(tuned.t), "pinned-memory"), nullptr);
}

// A pageable copy blocks its calling thread while it is staged: when that
// wait is longer than the GPU's copy (2.2x in the H200 study's pageable
// runs), the saving is the wait.
TEST(AdviseTest, PinnedMemoryCountsTheHostWaitInPageableCopies) {
  TraceBuilder b = busy();
  for (uint32_t i = 0; i < 5; ++i) {
    const int64_t t = 1000 * i;
    b.api("cudaMemcpyAsync", t, t + 400, 100 + i);
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, t + 200, t + 300, 1000, true, 9, 100 + i);
    b.api("cudaLaunchKernel", t + 400, t + 410, 200 + i);  // not a copy: not counted
  }
  const auto f = run_on(b.t);
  const Finding* p = find(f, "pinned-memory");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->saving_fraction, 0.2);  // 5 x 400 ns of the host's wait in a 10 us step, not 5 x 100 ns of copy
  EXPECT_NE(p->evidence.find("wait"), std::string::npos);
}

// Seen on H200: step 0 took 21 s (cuDNN autotuning) of a 23 s window, which
// pushed the pageable share (15 ms of an 82 ms step) under 2% when measured
// against the whole span. Shares are per steady iteration.
TEST(AdviseTest, LongWarmupIterationDoesNotHidePageableCopies) {
  TraceBuilder b;
  b.range("ProfilerStep#0", 0, 21'000'000);
  b.kernel("conv_warmup", 0, 20'000'000);
  int64_t t = 21'000'000;
  for (int i = 1; i <= 30; ++i) {
    b.range("ProfilerStep#" + std::to_string(i), t, t + 82'000);
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, t, t + 15'000, 1 << 20);
    b.kernel("conv", t + 15'000, t + 80'000);
    t += 82'000;
  }
  const auto all = run_on(b.t);
  const Finding* p = find(all, "pinned-memory");
  ASSERT_NE(p, nullptr);
  EXPECT_GT(p->saving_fraction, 0.15);
  EXPECT_LT(p->saving_fraction, 0.20);
}

TEST(AdviseTest, ChannelsLast) {
  TraceBuilder b;
  b.kernel("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x32x16", 0, 9000)
      .kernel("void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>", 9000,
              10000);
  const auto c_all = run_on(b.t);
  const Finding* c = find(c_all, "channels-last");
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->saving_fraction, 0.1);
  EXPECT_NE(c->fix.find("torch.channels_last"), std::string::npos);
  TraceBuilder small;
  small.kernel("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32", 0, 9900).kernel("nhwcToNchwKernel", 9900, 10000);
  EXPECT_EQ(find(run_on(small.t), "channels-last"), nullptr);  // 1% < 3%
}

// Seen on H200 (MobileNetV2, channels_last, bf16 autocast): cuDNN converts back to
// NCHW for depthwise convolutions. The job is already channels_last, so the
// advisor must not tell it to switch; it reports the fallback instead.
TEST(AdviseTest, ChannelsLastJobConvertingBackIsNotToldToSwitch) {
  TraceBuilder b;
  b.kernel("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", 0, 9000)
      .kernel("void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true>", 9000,
              9800)
      .kernel("void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false>", 9800,
              10000);
  const auto all = run_on(b.t);
  EXPECT_EQ(find(all, "channels-last"), nullptr);
  const Finding* f = find(all, "layout-fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->saving_fraction, 0.1);
  EXPECT_EQ(f->fix.find("memory_format=torch.channels_last"), std::string::npos);
}

// Seen on H200 (tuned MobileNetV2, fp16, channels_last): cuDNN's autotuning
// in step 0 ran 48,264 NHWC->NCHW conversions and no later step ran one. Over
// the whole trace they were 8.6 % of kernel time and a "critical" finding;
// the advisor judges the steady iterations, where they cost nothing, and says
// so in the evidence. The same conversions in every step still fire.
TEST(AdviseTest, OneOffLayoutConversionsInWarmupAreNotAPerStepCost) {
  const std::string conversion = "void cudnn::engines_precompiled::nhwcToNchwKernel<__half, __half, float, true>";
  auto job = [&](bool every_step) {
    TraceBuilder b;
    b.range("ProfilerStep#0", 0, 400'000);
    b.kernel("conv_nhwc_autotune", 0, 200'000);
    b.kernel(conversion, 200'000, 390'000);
    int64_t t = 400'000;
    for (int i = 1; i <= 20; ++i) {
      b.range("ProfilerStep#" + std::to_string(i), t, t + 10'000);
      b.kernel("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc", t, t + 8'000);
      if (every_step) b.kernel(conversion, t + 8'000, t + 9'000);
      t += 10'000;
    }
    return b;
  };
  const auto one_off = run_on(job(false).t);
  EXPECT_EQ(find(one_off, "layout-fallback"), nullptr);
  EXPECT_EQ(find(one_off, "channels-last"), nullptr);
  const auto every = run_on(job(true).t);
  const Finding* f = find(every, "layout-fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->saving_fraction, 0.1, 1e-9);  // 1 us of conversion in each 10 us step
  // Step 0 is warm-up; step 20 ends after the trace's last GPU work, outside the whole-trace window.
  EXPECT_NE(f->evidence.find("steady iterations it1:it20"), std::string::npos) << f->evidence;
  // With an explicit window the advisor judges that window, warm-up included.
  analyze::Options whole;
  whole.window = analyze::WindowSpec::parse("0%:100%");
  const auto windowed = advise(analyze::combine({analyze::analyze_rank(job(false).t, whole)}));
  EXPECT_NE(find(windowed, "layout-fallback"), nullptr);
}

// Seen on H200: an fp16 MobileNetV2 in NCHW took 1.29x the time of NHWC at 2
// GPUs, and its conversions were only 3.5 % of kernel time; the cost was in
// NCHW-only half-precision kernels (cuDNN's 1C11 batch norm, PyTorch's
// depthwise convolution). Those count toward `channels-last`; in FP32 they
// do not (no tensor-core path to gain).
TEST(AdviseTest, ChannelsLastCountsNchwOnlyHalfPrecisionKernels) {
  auto job = [](const char* bn) {
    TraceBuilder b;
    b.kernel("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32", 0, 6000).kernel(bn, 6000, 10000);
    return b;
  };
  const auto half = run_on(job("void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, int, 512, true, 1, true>(int)").t);
  const Finding* f = find(half, "channels-last");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->saving_fraction, 0.4);
  EXPECT_NE(f->title.find("NCHW data"), std::string::npos) << f->title;
  EXPECT_NE(f->evidence.find("exist only for NCHW data"), std::string::npos) << f->evidence;
  EXPECT_NE(f->fix.find("memory_format=torch.channels_last"), std::string::npos);
  EXPECT_EQ(find(run_on(job("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(int)").t),
                 "channels-last"),
            nullptr);
}

TEST(AdviseTest, MixedPrecisionAndFp64) {
  TraceBuilder b;
  b.kernel("volta_sgemm_128x64_nn", 0, 6000)
      .kernel("ampere_dgemm_64x32_nn", 6000, 7000)
      .kernel("elementwise", 7000, 10000);
  const auto f = run_on(b.t);
  const Finding* m = find(f, "mixed-precision");
  ASSERT_NE(m, nullptr);
  EXPECT_NEAR(m->saving_fraction, 0.6 * 0.875, 1e-12);
  EXPECT_NE(m->fix.find("torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)"), std::string::npos);
  const Finding* d = find(f, "fp64");
  ASSERT_NE(d, nullptr);
  EXPECT_DOUBLE_EQ(d->saving_fraction, 0.1);
  // Ranked by saving.
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i - 1].saving_fraction, f[i].saving_fraction);
  TraceBuilder tf32;
  tf32.kernel("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16", 0, 4000)
      .kernel("elementwise", 4000, 10000);
  const auto t_all = run_on(tf32.t);
  const Finding* t = find(t_all, "mixed-precision");
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->saving_fraction, 0.2);
  TraceBuilder tc;
  tc.kernel("nvjet_sm90_hsh_192x192_64x4_1x2_h_ssched_bz_coopB_TNN", 0, 10000);
  const auto quiet = run_on(tc.t);
  EXPECT_EQ(find(quiet, "mixed-precision"), nullptr);
  EXPECT_EQ(find(quiet, "fp64"), nullptr);
}

TEST(AdviseTest, ExposedCommunication) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 200).kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000, 20);
  const auto e_all = run_on(b.t);
  const Finding* e = find(e_all, "exposed-communication");
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->saving_fraction, 0.8);
  EXPECT_EQ(e->severity, Severity::kCritical);
  EXPECT_NE(e->fix.find("bucket_cap_mb"), std::string::npos);
  EXPECT_NE(e->fix.find("gradient_as_bucket_view=True"), std::string::npos);
  TraceBuilder hidden;
  hidden.kernel("gemm_kernel", 0, 1000).kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 900, 20);
  EXPECT_EQ(find(run_on(hidden.t), "exposed-communication"), nullptr);
}

// Findings print figures as the tables do (base/format_units.hpp): 1.235 ms,
// not the advisor's own "1.23 ms" of before.
TEST(AdviseTest, EvidenceFormatsDurationsAsTheTables) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 100).kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1'234'667, 20);
  const auto all = run_on(b.t);
  const Finding* e = find(all, "exposed-communication");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->evidence.find(trace::format_duration_ns(1'234'567)), std::string::npos) << e->evidence;
  EXPECT_NE(e->evidence.find("1.235 ms"), std::string::npos) << e->evidence;
}

TEST(AdviseTest, LaunchBoundSuggestsCudaGraphs) {
  TraceBuilder b;
  for (int i = 0; i < 100; ++i) {
    b.api("cudaLaunchKernel", 10000 * i, 10000 * i + 5000);
    b.kernel("tiny_kernel", 10000 * i + 6000, 10000 * i + 8000);
  }
  const auto l_all = run_on(b.t);
  const Finding* l = find(l_all, "launch-bound");
  ASSERT_NE(l, nullptr);
  EXPECT_GT(l->saving_fraction, 0.7);
  EXPECT_NE(l->fix.find("CUDA graphs"), std::string::npos);
  EXPECT_NE(l->evidence.find("median launch call 5.000 us"), std::string::npos) << l->evidence;
}

// A launch-bound step whose trace has no launch calls (the API records of a
// sampled window missing, as in an older 1-GPU collector run, or --api
// none): the evidence says that, not "median launch call 0 ns".
TEST(AdviseTest, LaunchBoundWithoutLaunchCallsSaysSo) {
  TraceBuilder b;
  for (int i = 0; i < 100; ++i) b.kernel("tiny_kernel", 10000 * i + 6000, 10000 * i + 8000);
  const auto all = run_on(b.t);
  const Finding* l = find(all, "launch-bound");
  ASSERT_NE(l, nullptr);
  EXPECT_NE(l->evidence.find("no launch calls recorded in the window"), std::string::npos) << l->evidence;
  EXPECT_EQ(l->evidence.find("median launch call"), std::string::npos) << l->evidence;
}

// The collector's self-measured perturbation (trace metadata): above 5 % at
// the interval's lower bound, findings read from CPU-side timing say the
// profiler inflated them; below, or without the figure, they do not.
TEST(AdviseTest, LargeProfilerPerturbationIsNamedInLaunchBoundEvidence) {
  auto job = [](const char* pct, const char* low) {
    TraceBuilder b;
    for (int i = 0; i < 100; ++i) {
      b.api("cudaLaunchKernel", 10000 * i, 10000 * i + 5000);
      b.kernel("tiny_kernel", 10000 * i + 6000, 10000 * i + 8000);
    }
    b.t.meta.extra["sampling"] = "sampled";
    b.t.meta.extra["iterations_seen"] = "300";
    b.t.meta.extra["iterations_inside"] = "20";
    b.t.meta.extra["iterations_outside"] = "250";
    b.t.meta.extra["perturbation_measured"] = "true";
    b.t.meta.extra["perturbation_pct"] = pct;
    b.t.meta.extra["perturbation_ci_low_pct"] = low;
    b.t.meta.extra["perturbation_ci_high_pct"] = "30";
    return b;
  };
  const auto large = run_on(job("18.5", "12.0").t);
  const Finding* l = find(large, "launch-bound");
  ASSERT_NE(l, nullptr);
  EXPECT_NE(l->evidence.find("caution: the profiler made traced iterations 18.5 % (95 % CI 12.0 to 30.0 %) slower"),
            std::string::npos)
      << l->evidence;
  const auto small = run_on(job("3.0", "1.0").t);
  ASSERT_NE(find(small, "launch-bound"), nullptr);
  EXPECT_EQ(find(small, "launch-bound")->evidence.find("caution"), std::string::npos);
  const auto bad = run_on(job("abc", "12.0").t);  // unparsable: not measured, no caution
  EXPECT_EQ(find(bad, "launch-bound")->evidence.find("caution"), std::string::npos);
  // --repeat-every: the note says the steady analysis spans the detached iterations between windows.
  auto repeated = job("3.0", "1.0");
  repeated.t.meta.extra["repeat_every"] = "40";
  EXPECT_NE(analyze::analyze_rank(repeated.t, analyze::Options{})
                .perturbation.text.find("windows repeat every 40 iterations: the steady analysis spans the detached"),
            std::string::npos);
  auto once = job("3.0", "1.0");
  once.t.meta.extra["repeat_every"] = "0";
  EXPECT_EQ(analyze::analyze_rank(once.t, analyze::Options{}).perturbation.text.find("repeat"), std::string::npos);
  const auto r = analyze::analyze_rank(job("18.5", "12.0").t, analyze::Options{});
  EXPECT_TRUE(r.perturbation.measured);
  EXPECT_TRUE(r.perturbation.matters);
  EXPECT_EQ(r.perturbation.inside, 20);
  EXPECT_EQ(r.perturbation.outside, 250);
  EXPECT_EQ(r.perturbation.seen, 300);
}

TEST(AdviseTest, HostSyncBoundedByIdle) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 2000).kernel("gemm_kernel", 6000, 10000);
  b.sync(trace::SyncKind::kStreamSynchronize, 2000, 3000).sync(trace::SyncKind::kStreamSynchronize, 5000, 6000);
  b.sync(trace::SyncKind::kDeviceSynchronize, 8000, 8500);
  const auto s_all = run_on(b.t);
  const Finding* s = find(s_all, "host-sync");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->saving_fraction, 0.25);
  // The same waits while the GPU is busy the whole time cost nothing.
  TraceBuilder full = busy();
  full.sync(trace::SyncKind::kStreamSynchronize, 2000, 5000);
  EXPECT_EQ(find(run_on(full.t), "host-sync"), nullptr);
}

TEST(AdviseTest, InputStarvation) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 1000).kernel("gemm_kernel", 3000, 4000);
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 2000, 2900, 1 << 20);
  const auto i_all = run_on(b.t);
  const Finding* i = find(i_all, "input-starvation");
  ASSERT_NE(i, nullptr);
  EXPECT_DOUBLE_EQ(i->saving_fraction, 0.5);
  EXPECT_NE(i->fix.find("num_workers"), std::string::npos);
}

TEST(AdviseTest, NumaPlacement) {
  TraceBuilder b = busy();
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 0, 500, 1 << 20);
  b.t.meta.cpu_affinity = {0, 1, 2, 3};
  b.t.meta.cpu_numa_node = {1, 1, 0, 0};
  trace::DeviceInfo d;
  d.numa_node = 1;
  b.t.meta.devices.push_back(d);
  const auto n_all = run_on(b.t);
  const Finding* n = find(n_all, "numa-placement");
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->fix.find("numactl --cpunodebind=1 --membind=1"), std::string::npos);
  EXPECT_DOUBLE_EQ(n->saving_fraction, 0.05);
  b.t.meta.cpu_affinity = {0, 1};
  EXPECT_EQ(find(run_on(b.t), "numa-placement"), nullptr);
}

TEST(AdviseTest, IterationVariance) {
  TraceBuilder b;
  int64_t t = 0;
  for (int i = 0; i < 10; ++i) {
    const int64_t d = i % 3 == 2 ? 2000 : 1000;
    b.range("ProfilerStep#" + std::to_string(i), t, t + d);
    t += d;
  }
  b.kernel("gemm_kernel", 0, t);
  const auto v_all = run_on(b.t);
  const Finding* v = find(v_all, "iteration-variance");
  ASSERT_NE(v, nullptr);
  EXPECT_NEAR(v->saving_fraction, 3000.0 / 13000.0, 1e-9);
}

// Two ranks of 10 steps of 1000 ns, one all-reduce a step arriving at 500 ns
// plus delay(rank, step).
template <typename Delay>
analyze::RunAnalysis two_ranks_at_allreduces(Delay delay) {
  std::vector<analyze::RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b;
    b.rank(r);
    for (int i = 0; i < 10; ++i) {
      const int64_t t = 1000 * i;
      b.range("ProfilerStep#" + std::to_string(i), t, t + 1000);
      b.kernel("gemm_kernel", t, t + 1000);
      b.nccl(trace::NcclOp::kAllReduce, t + 500 + delay(r, i), t + 950, i);
    }
    ranks.push_back(analyze::analyze_rank(b.t, analyze::Options{}));
  }
  return analyze::combine(std::move(ranks));
}

TEST(AdviseTest, StragglerNamesTheLateRank) {
  const auto f = advise(two_ranks_at_allreduces([](int r, int) { return r == 1 ? 200 : 0; }));
  const Finding* s = find(f, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int32_t>{1});
  EXPECT_DOUBLE_EQ(s->saving_fraction, 0.2);
}

// Rank 0 waits 6 us once in a 10 us warm-up step; rank 1 is 100 ns late at
// each of the 9 steady 1 us steps. The finding names rank 1, with its steady
// figures, not the rank with the most lateness in total.
TEST(AdviseTest, StragglerIsJudgedOnTheSteadyStepsNotTheWarmUp) {
  std::vector<analyze::RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b;
    b.rank(r);
    for (int i = 0; i < 10; ++i) {
      const int64_t t = i == 0 ? 0 : 10000 + 1000 * (i - 1), len = i == 0 ? 10000 : 1000;
      const int64_t late = i == 0 ? (r == 0 ? 6000 : 0) : (r == 1 ? 100 : 0);
      b.range("ProfilerStep#" + std::to_string(i), t, t + len);
      b.kernel("gemm_kernel", t, t + len / 4);
      b.nccl(trace::NcclOp::kAllReduce, t + len / 4 + late, t + len - 50, i);
      b.kernel("gemm_kernel", t + len - 50, t + len);
    }
    ranks.push_back(analyze::analyze_rank(b.t, analyze::Options{}));
  }
  const auto run = analyze::combine(std::move(ranks));
  ASSERT_EQ(run.stragglers.ranked_by, "steady iterations");
  const auto findings = advise(run);
  const Finding* s = find(findings, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int32_t>{1});
  EXPECT_DOUBLE_EQ(s->saving_fraction, 0.1);  // 100 ns of a 1000 ns steady step
  EXPECT_NE(s->evidence.find("9 of 9 matched collectives of the steady iterations"), std::string::npos) << s->evidence;
}

// Seen on H200 (DPO, 2 GPUs): both ranks late about as often and as much
// (1.37 s and 1.23 s); neither is a straggler, fixing one would not help.
TEST(AdviseTest, RanksTakingTurnsAreNoStraggler) {
  // Rank 0 late at even steps, rank 1 (a little more) at odd ones.
  const auto run = two_ranks_at_allreduces([](int r, int i) { return (i % 2) == r ? 200 + 10 * r : 0; });
  ASSERT_EQ(run.stragglers.ranks.size(), 2u);
  EXPECT_GT(run.stragglers.ranks[0].late_per_iteration_ns, 0.09 * 1000);  // each is late ~10 % of a step
  EXPECT_EQ(find(advise(run), "straggler"), nullptr);  // 1 % beyond the other: under the 5 % threshold
}

TEST(AdviseTest, FindingJson) {
  TraceBuilder b;
  b.kernel("volta_sgemm_128x64_nn", 0, 10000);
  const nlohmann::json j = run_on(b.t);
  ASSERT_TRUE(j.is_array());
  ASSERT_FALSE(j.empty());
  for (const char* key : {"id", "title", "severity", "evidence", "figures", "saving_fraction", "saving_method", "fix"})
    EXPECT_TRUE(j[0].contains(key)) << key;
  EXPECT_EQ(j[0]["severity"], "critical");
}

// ---- host threads: host-bound, loader-bound, contention ----------------------

namespace host_case {
using analyze::testing::host_case::each_sample;
using analyze::testing::host_case::kMs;
using trace::ProcessRole;
using trace::ThreadState;

// The shared host case (analyze/tests/trace_builder.hpp) on a process allowed 4 CPUs.
TraceBuilder steps(int64_t gpu_ms = 40) {
  TraceBuilder b = analyze::testing::host_case::steps(gpu_ms);
  b.t.meta.cpu_affinity = {0, 1, 2, 3};
  return b;
}
}  // namespace host_case

TEST(AdviseHost, HostBoundWhenTheLaunchingThreadRunsTheWholeStep) {
  using namespace host_case;
  TraceBuilder b = steps();
  each_sample([&](int64_t t) { b.host_sample(t, 100, 100, ThreadState::kRunning, 0, 95 * kMs / 10); });
  const auto f = run_on(b.t);
  const Finding* h = find(f, "host-bound");
  ASSERT_NE(h, nullptr);
  EXPECT_NEAR(h->saving_fraction, 0.6, 0.02);  // the GPU's idle time
  EXPECT_NE(h->evidence.find("ran 95.0%"), std::string::npos) << h->evidence;
  EXPECT_NE(h->fix.find("CUDA graphs"), std::string::npos);
  EXPECT_EQ(find(f, "loader-bound"), nullptr);
  EXPECT_EQ(find(f, "host-contention"), nullptr);
  // Busy 80 %: below the threshold.
  TraceBuilder q = steps();
  each_sample([&](int64_t t) { q.host_sample(t, 100, 100, ThreadState::kRunning, 0, 8 * kMs); });
  EXPECT_EQ(find(run_on(q.t), "host-bound"), nullptr);
  // A busy host with a busy GPU (idle 5 %) holds nothing back.
  TraceBuilder g = steps(95);
  each_sample([&](int64_t t) { g.host_sample(t, 100, 100, ThreadState::kRunning, 0, 10 * kMs); });
  EXPECT_EQ(find(run_on(g.t), "host-bound"), nullptr);
}

TEST(AdviseHost, LoaderBoundWhenTheMainThreadSleepsWhileWorkersWork) {
  using namespace host_case;
  TraceBuilder b = steps();
  for (uint32_t w = 0; w < 2; ++w) b.host_thread(200 + w, 200 + w, "pt_data_worker", ProcessRole::kDescendant, 100);
  each_sample([&](int64_t t) {
    b.host_sample(t, 100, 100, ThreadState::kSleeping, 0, 2 * kMs);
    for (uint32_t w = 0; w < 2; ++w) b.host_sample(t, 200 + w, 200 + w, ThreadState::kRunning, int32_t(1 + w), 9 * kMs);
  });
  const auto f = run_on(b.t);
  const Finding* l = find(f, "loader-bound");
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->saving_fraction, 0.6, 0.02);  // min(GPU idle 60 %, main off-CPU 80 %)
  EXPECT_NE(l->evidence.find("2 worker processes used 1.80 cores"), std::string::npos) << l->evidence;
  EXPECT_NE(l->fix.find("num_workers"), std::string::npos);
  EXPECT_EQ(find(f, "host-bound"), nullptr);
  bool has_workers_figure = false;
  for (const auto& fig : l->figures)
    has_workers_figure |= fig.name == "worker processes' CPU" && std::abs(fig.value - 1.8) < 1e-9;
  EXPECT_TRUE(has_workers_figure);
  // The same sleeping main thread without busy workers or late input: not the loader.
  TraceBuilder idle = steps();
  each_sample([&](int64_t t) { idle.host_sample(t, 100, 100, ThreadState::kSleeping, 0, 2 * kMs); });
  EXPECT_EQ(find(run_on(idle.t), "loader-bound"), nullptr);
}

// A run directory as `scalescope profile` leaves it: the rank's trace and
// the Python bootstrap's stacks of the rank's process (pid 100) and of one
// forked DataLoader worker (pid 201, parent 100). loader-bound names the
// worker's hottest frame and host-bound the main thread's.
namespace python_case {
std::string stacks_file(uint32_t pid, uint32_t ppid, const std::string& stacks) {
  return fmt::format(
      R"({{"kind":"scalescope python stacks","format":1,"pid":{0},"ppid":{1},"hostname":"h","hz":100,)"
      R"("state":"on in windows","windows":1,"window_seconds":1.0,"samples":100,"thread_samples":100,"dropped":0,)"
      R"("truncated":0,"sampler_cpu_per_second":0.001,"threads":[{{"id":{0},"name":"MainThread","main":true}}],)"
      R"("stacks":{2}}})",
      pid, ppid, stacks);
}

std::vector<Finding> advise_run_dir(const std::string& name, trace::Trace t) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("scalescope-advise-python-{}-{}", name, ::getpid()) / "job.ssrun";
  std::filesystem::remove_all(dir.parent_path());
  std::filesystem::create_directories(dir);
  t.meta.hostname = "h";
  t.meta.pid = 100;
  trace::write_trace(dir / "h-100.sstrace", as_pytorch(std::move(t)));
  std::ofstream(dir / "python-stacks-h-100.json") << stacks_file(
      100, 1,
      R"([{"thread":100,"samples":83,"frames":[["/job/train.py",57,"forward"],["/job/train.py",90,"main"]]},)"
      R"({"thread":100,"samples":17,"frames":[["/job/train.py",90,"main"]]}])");
  std::ofstream(dir / "python-stacks-h-201.json") << stacks_file(
      201, 100,
      R"([{"thread":201,"samples":63,"frames":[["/job/dataset.py",41,"__getitem__"],["/t/worker.py",349,"_worker_loop"]]},)"
      R"({"thread":201,"samples":37,"frames":[["/t/worker.py",349,"_worker_loop"]]}])");
  auto findings = advise(analyze::analyze_path(dir, analyze::Options{}));
  std::filesystem::remove_all(dir.parent_path());
  return findings;
}
}  // namespace python_case

TEST(AdviseHost, LoaderBoundNamesTheWorkersHottestPythonFrame) {
  using namespace host_case;
  TraceBuilder b = steps();
  for (uint32_t w = 0; w < 2; ++w) b.host_thread(200 + w, 200 + w, "pt_data_worker", ProcessRole::kDescendant, 100);
  each_sample([&](int64_t t) {
    b.host_sample(t, 100, 100, ThreadState::kSleeping, 0, 2 * kMs);
    for (uint32_t w = 0; w < 2; ++w) b.host_sample(t, 200 + w, 200 + w, ThreadState::kRunning, int32_t(1 + w), 9 * kMs);
  });
  const auto f = python_case::advise_run_dir("loader", b.t);
  const Finding* l = find(f, "loader-bound");
  ASSERT_NE(l, nullptr);
  EXPECT_NE(l->evidence.find("Hottest Python frames of its DataLoader workers (100 samples of their main threads in windows, 1 worker process): "
                             "dataset.py:41 __getitem__, 63.0% of worker samples; worker.py:349 _worker_loop, 37.0% "
                             "of worker samples"),
            std::string::npos)
      << l->evidence;
}

TEST(AdviseHost, HostBoundNamesTheMainThreadsHottestPythonFrame) {
  using namespace host_case;
  TraceBuilder b = steps();
  each_sample([&](int64_t t) { b.host_sample(t, 100, 100, ThreadState::kRunning, 0, 95 * kMs / 10); });
  const auto f = python_case::advise_run_dir("host", b.t);
  const Finding* h = find(f, "host-bound");
  ASSERT_NE(h, nullptr);
  EXPECT_NE(h->evidence.find("Hottest Python frames of the main thread (100 samples in windows): train.py:57 forward, "
                             "83.0% of main-thread samples"),
            std::string::npos)
      << h->evidence;
}

TEST(AdviseHost, ContentionWhenMoreThreadsAreRunnableThanCores) {
  using namespace host_case;
  TraceBuilder b = steps();
  for (uint32_t w = 0; w < 6; ++w) b.host_thread(200 + w, 200 + w, "pt_data_worker", ProcessRole::kDescendant, 100);
  each_sample([&](int64_t t) {
    // Main: 5 ms on a CPU and 4 ms runnable but waiting in each 10 ms.
    b.host_sample(t, 100, 100, ThreadState::kRunning, 0, 5 * kMs, 4 * kMs);
    for (uint32_t w = 0; w < 6; ++w)
      b.host_sample(t, 200 + w, 200 + w, ThreadState::kRunning, int32_t(w % 4), 5 * kMs, 5 * kMs);
  });
  const auto f = run_on(b.t);
  const Finding* c = find(f, "host-contention");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->saving_fraction, 0.4, 0.02);  // min(GPU idle 60 %, main run-queue wait 40 %)
  EXPECT_NE(c->evidence.find("7.0 threads were runnable on average (at most 7) for 4 CPUs"), std::string::npos)
      << c->evidence;
  EXPECT_NE(c->evidence.find("more than the CPUs in 100.0%"), std::string::npos) << c->evidence;
  EXPECT_EQ(find(f, "host-bound"), nullptr);  // busy 50 %
  // Four runnable threads on four CPUs with no waiting: quiet.
  TraceBuilder q = steps();
  each_sample([&](int64_t t) {
    q.host_sample(t, 100, 100, ThreadState::kRunning, 0, 5 * kMs);
    for (uint32_t w = 0; w < 3; ++w) q.host_sample(t, 200 + w, 200 + w, ThreadState::kRunning, 1, 5 * kMs);
  });
  EXPECT_EQ(find(run_on(q.t), "host-contention"), nullptr);
}


// ---- the job: fixes that fit its framework -----------------------------------

// No PyTorch word in the fix of a job that does not run PyTorch.
void expect_no_pytorch_advice(const std::vector<Finding>& findings) {
  for (const Finding& f : findings)
    for (const char* word : {"DataLoader", "torch", "bucket_cap_mb", "pin_memory", "num_workers", "DDP", ".item()"})
      EXPECT_EQ(f.fix.find(word), std::string::npos) << f.id << ": " << f.fix;
}

// An MPI + CUDA program (no PyTorch): each 100 us round receives with
// MPI_Recv for 60 us (an NVTX range, as nsys's MPI tracing writes it) while
// the GPU idles, copies 10 us from pageable memory, then runs a 29 us kernel.
// The idle time ends with an input copy, but the host is inside MPI_Recv:
// host communication, not input starvation, and every fix is CUDA's or MPI's.
TEST(AdviseJob, MpiCudaProgramGetsHostCommunicationNotInputStarvation) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 100000 * i;
    b.range("MPI_Recv", t, t + 60000, -1, "MPI");
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, t + 60000, t + 70000, 1 << 20, false);
    b.kernel("saxpy_kernel", t + 71000, t + 100000);
  }
  b.t.meta.launcher = "mpi";
  const analyze::RankAnalysis r = analyze::analyze_rank(b.t, analyze::Options{});
  EXPECT_EQ(r.job.framework, analyze::Framework::kCuda);
  EXPECT_TRUE(r.job.mpi);
  EXPECT_FALSE(r.job.nccl);
  EXPECT_GE(r.job.mpi_ns, 540000);  // the window starts at the first copy: the first call is outside
  EXPECT_NE(r.job.evidence.find("MPI_Recv x10 (NVTX)"), std::string::npos) << r.job.evidence;
  ASSERT_TRUE(r.idle_cover.availability.available);
  // The input gaps' idle time is inside MPI_Recv but for 1 us a round.
  const auto& c = r.idle_cover;
  EXPECT_GE(c.covered_ns(analyze::kIdleMpi), 480000);
  EXPECT_LE(c.covered_ns(analyze::kIdleInput) - c.covered_ns(analyze::kIdleMpi), 10000);
  const auto f = advise(analyze::combine({r}));
  const Finding* h = find(f, "host-communication");
  ASSERT_NE(h, nullptr);
  EXPECT_GT(h->saving_fraction, 0.5);
  EXPECT_NE(h->fix.find("MPI_Isend"), std::string::npos);
  EXPECT_EQ(find(f, "input-starvation"), nullptr);
  const Finding* p = find(f, "pinned-memory");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->fix.find("cudaMallocHost"), std::string::npos);
  expect_no_pytorch_advice(f);
  // The same rounds in a PyTorch job whose gaps hold no MPI call: input starvation.
  TraceBuilder torch;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 100000 * i;
    torch.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, t + 60000, t + 70000, 1 << 20);
    torch.kernel("saxpy_kernel", t + 71000, t + 100000);
  }
  const auto g = run_on(torch.t);
  const Finding* in = find(g, "input-starvation");
  ASSERT_NE(in, nullptr);
  EXPECT_NE(in->fix.find("DataLoader"), std::string::npos);
  EXPECT_EQ(find(g, "host-communication"), nullptr);
}

// Every rule that fires on a plain CUDA program gives a fix without PyTorch.
TEST(AdviseJob, PlainCudaFindingsNeverGetPyTorchAdvice) {
  TraceBuilder b;
  for (int i = 0; i < 100; ++i) {
    b.api("cudaLaunchKernel", 10000 * i, 10000 * i + 5000);
    b.kernel(i % 2 ? "volta_sgemm_128x64_nn" : "tiny_kernel", 10000 * i + 6000, 10000 * i + 8000);
  }
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1000000, 1400000, 20);
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 1400000, 1500000, 1 << 20, false);
  b.sync(trace::SyncKind::kDeviceSynchronize, 0, 600000);
  analyze::Options whole;  // the whole trace, not the steady iterations the kernels' repetition makes
  whole.window = analyze::WindowSpec::parse("0%:100%");
  const auto f = advise(analyze::combine({analyze::analyze_rank(b.t, whole)}));
  std::set<std::string> ids;
  for (const Finding& x : f) ids.insert(x.id);
  for (const char* id : {"launch-bound", "mixed-precision", "exposed-communication", "pinned-memory", "host-sync"})
    EXPECT_TRUE(ids.count(id)) << id;
  expect_no_pytorch_advice(f);
  // The same trace from PyTorch gets PyTorch's fixes.
  const auto g = advise(analyze::combine({analyze::analyze_rank(as_pytorch(b.t), whole)}));
  const Finding* e = find(g, "exposed-communication");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->fix.find("bucket_cap_mb"), std::string::npos);
}

// ---- windows that cannot support a finding ---------------------------------------

// Ten 10 ms steps, each 2 ms of compute then 8 ms of exposed all-reduce. A
// 1 ms window inside one all-reduce holds no complete step: its finding says
// so and is no more than info; the whole trace gives the critical finding.
TEST(AdviseWindow, OneMillisecondWindowGivesFindingsOnlyWithACaution) {
  constexpr int64_t kMs = 1000000;
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 10 * kMs * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 10 * kMs);
    b.kernel("gemm_kernel", t, t + 2 * kMs);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 2 * kMs, t + 10 * kMs, 20);
  }
  const trace::Trace t = as_pytorch(b.t);
  analyze::Options window;
  window.window = analyze::WindowSpec::parse("12000000:13000000");
  const auto narrow = advise(analyze::combine({analyze::analyze_rank(t, window)}));
  ASSERT_FALSE(narrow.empty());
  for (const Finding& f : narrow) {
    EXPECT_EQ(f.severity, Severity::kInfo) << f.id;
    EXPECT_NE(f.caveat.find("holds 0 complete iterations"), std::string::npos) << f.caveat;
    EXPECT_NE(f.evidence.find("caution: "), std::string::npos) << f.evidence;
  }
  const nlohmann::json j = narrow;
  EXPECT_TRUE(j[0].contains("caveat"));
  const auto whole = advise(analyze::combine({analyze::analyze_rank(t, analyze::Options{})}));
  const Finding* e = find(whole, "exposed-communication");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->severity, Severity::kCritical);
  EXPECT_TRUE(e->caveat.empty());
  // One complete step in the window is not enough either; two are.
  window.window = analyze::WindowSpec::parse("it3:it4");
  EXPECT_NE(advise(analyze::combine({analyze::analyze_rank(t, window)})).front().caveat.find("holds 1 complete iteration "),
            std::string::npos);
  window.window = analyze::WindowSpec::parse("it3:it5");
  EXPECT_TRUE(advise(analyze::combine({analyze::analyze_rank(t, window)})).front().caveat.empty());
}

// ---- causes, not symptoms ------------------------------------------------------

// Two ranks, ten 1 ms steps: 200 us compute, the all-reduce, compute to the
// end. Rank 0's GPU idles 400 us before it reaches the all-reduce at 600 us;
// rank 1 arrives at 200 us and waits inside it until 650 us (450 us of
// exposed communication). `ms_scale` 1 makes every kernel short (launch-bound
// on rank 0); 100 does not.
analyze::RunAnalysis planted_straggler(int64_t scale) {
  std::vector<analyze::RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b;
    b.rank(r);
    for (int i = 0; i < 10; ++i) {
      const int64_t t = 10000 * scale * i;
      b.range("ProfilerStep#" + std::to_string(i), t, t + 10000 * scale);
      b.kernel("gemm_kernel", t, t + 2000 * scale);
      b.nccl(trace::NcclOp::kAllReduce, t + (r == 0 ? 6000 : 2000) * scale, t + 6500 * scale, i);
      b.kernel("gemm_kernel", t + 6500 * scale, t + 10000 * scale);
    }
    ranks.push_back(analyze::analyze_rank(as_pytorch(b.t), analyze::Options{}));
  }
  return analyze::combine(std::move(ranks));
}

TEST(AdviseCauses, StragglerExplainsItsPartnersExposedCommunication) {
  const auto f = advise(planted_straggler(100));
  const Finding* st = find(f, "straggler");
  const Finding* ex = find(f, "exposed-communication");
  ASSERT_NE(st, nullptr);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(st->ranks, std::vector<int32_t>{0});
  EXPECT_DOUBLE_EQ(st->saving_fraction, 0.4);
  EXPECT_EQ(ex->ranks, std::vector<int32_t>{1});
  EXPECT_NEAR(ex->saving_fraction, 0.45, 1e-9);
  // The partner's wait is the straggler's cost: one cause, listed first.
  EXPECT_EQ(ex->explained_by, "straggler");
  EXPECT_EQ(st->explains, std::vector<std::string>{"exposed-communication"});
  EXPECT_TRUE(st->explained_by.empty());
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[0].id, "straggler");
  EXPECT_EQ(f[1].id, "exposed-communication");
  EXPECT_NEAR(f[0].chain_saving_fraction, 0.45, 1e-9);  // fixing the root gains what it explains
  EXPECT_EQ(f[1].combined_fraction, 0);                 // no combined figure of its own
  // The late rank's own evidence decides its cause: its GPU idles 40 % with
  // the same compute as rank 1.
  EXPECT_NE(st->title.find("its GPU waits for its host"), std::string::npos) << st->title;
  EXPECT_NE(st->evidence.find("rank 0's GPU idles 40.0% of its time against 0.0%"), std::string::npos)
      << st->evidence;
  EXPECT_EQ(st->fix.find("nvidia-smi"), std::string::npos) << st->fix;
  const nlohmann::json j = f;
  EXPECT_EQ(j[1]["explained_by"], "straggler");
  EXPECT_EQ(j[0]["explains"], nlohmann::json::array({"exposed-communication"}));
  EXPECT_TRUE(j[0]["explained_by"].is_null());
}

TEST(AdviseCauses, LateRanksOwnFindingIsTheRootCause) {
  // Short kernels: rank 0's 400 ns gaps make it launch-bound; rank 1 has none.
  const auto f = advise(planted_straggler(1));
  const Finding* lb = find(f, "launch-bound");
  const Finding* st = find(f, "straggler");
  const Finding* ex = find(f, "exposed-communication");
  ASSERT_NE(lb, nullptr);
  ASSERT_NE(st, nullptr);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(lb->ranks, std::vector<int32_t>{0});
  EXPECT_EQ(st->explained_by, "launch-bound");
  EXPECT_EQ(ex->explained_by, "straggler");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, "launch-bound");  // the chain, root first
  EXPECT_EQ(f[1].id, "straggler");
  EXPECT_EQ(f[2].id, "exposed-communication");
  EXPECT_NE(st->fix.find("fix rank 0's launch-bound"), std::string::npos) << st->fix;
}

// ---- one combined estimate ------------------------------------------------------

// Ten 100 us steps: a 20 us kernel, a 40 us gap, a 40 us kernel. In the gap
// the host waits in cudaStreamSynchronize the whole time and a pinned input
// copy runs from 35 to 38 us: the launch gaps, the host sync and the input
// gap are the same 37 us of idle time. Their own savings (37 %, 37 %, 40 %)
// sum to 114 %; combined over the timeline they are 40 %.
TEST(AdviseCombined, OverlappingIdleSavingsCombineAsTheirUnion) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 100000 * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 100000);
    b.api("cudaLaunchKernel", t, t + 20000);
    b.kernel("gemm_kernel", t, t + 20000);
    b.sync(trace::SyncKind::kStreamSynchronize, t + 20000, t + 60000);
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, t + 55000, t + 58000, 1 << 20);
    b.api("cudaLaunchKernel", t + 60000, t + 80000);
    b.kernel("gemm_kernel", t + 60000, t + 100000);
  }
  const analyze::RankAnalysis r = analyze::analyze_rank(as_pytorch(b.t), analyze::Options{});
  ASSERT_TRUE(r.idle_cover.availability.available);
  EXPECT_EQ(r.idle_cover.span_ns, 1000000);
  EXPECT_EQ(r.idle_cover.idle_ns, 370000);
  const unsigned all = analyze::kIdleLaunchGap | analyze::kIdleHostSync | analyze::kIdleInput;
  EXPECT_EQ(r.idle_cover.by_causes[all], 370000);  // every idle instant has all three causes
  EXPECT_EQ(r.idle_cover.covered_ns(analyze::kIdleMpi), 0);
  const auto f = advise(analyze::combine({r}));
  const Finding* lb = find(f, "launch-bound");
  const Finding* hs = find(f, "host-sync");
  const Finding* in = find(f, "input-starvation");
  ASSERT_NE(lb, nullptr);
  ASSERT_NE(hs, nullptr);
  ASSERT_NE(in, nullptr);
  EXPECT_NEAR(lb->saving_fraction, 0.37, 1e-9);
  EXPECT_NEAR(hs->saving_fraction, 0.37, 1e-9);
  EXPECT_NEAR(in->saving_fraction, 0.40, 1e-9);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, "input-starvation");
  EXPECT_NEAR(f[0].combined_fraction, 0.40, 1e-9);
  EXPECT_EQ(f[2].combined_count, 3);
  EXPECT_NEAR(f[2].combined_fraction, 0.40, 1e-9);  // not 114 %
  for (const Finding& x : f) EXPECT_EQ(x.saving_kind, SavingKind::kUpperBound) << x.id;
  // The one JSON of a finding (analyze --json, the C library, the page):
  // each figure with its text, and how a combined saving was estimated.
  const nlohmann::json j = f;
  EXPECT_EQ(j[2]["combined_method"], std::string(combined_method()));
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_EQ(j[i].contains("combined_method"), f[i].combined_count > 1) << j[i].dump();
  ASSERT_FALSE(f[0].figures.empty());
  EXPECT_EQ(j[0]["figures"][0]["text"], format_figure(f[0].figures[0]));
}

// Savings from different parts of the step add: FP32 compute and exposed
// communication, and the estimate says it is one.
TEST(AdviseCombined, DisjointPartsAdd) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 10000 * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 10000);
    b.kernel("volta_sgemm_128x64_nn", t, t + 4000);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 4000, t + 10000, 20);
  }
  const auto f = run_on(b.t);
  const Finding* m = find(f, "mixed-precision");
  const Finding* e = find(f, "exposed-communication");
  ASSERT_NE(m, nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(m->saving_kind, SavingKind::kEstimate);
  EXPECT_NEAR(m->saving_fraction, 0.4 * 7 / 8, 1e-9);
  EXPECT_NEAR(e->saving_fraction, 0.6, 1e-9);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[1].combined_fraction, 0.6 + 0.35, 1e-9);
}

// ---- GPU clocks and throttling (NVML samples) --------------------------------

// One NVML sample of device 0 at `t`: the SM clock and, when `reasons` >= 0,
// the clocks-event reasons; the maximum clock when `max_mhz` > 0.
void nvml_sample(TraceBuilder& b, int64_t t, double mhz, int64_t reasons, double max_mhz = 0) {
  using M = trace::CounterMetric;
  b.t.counters.push({t, 0, M::kSmClockMHz, mhz});
  if (reasons >= 0) b.t.counters.push({t, 0, M::kClocksEventReasons, static_cast<double>(reasons)});
  if (max_mhz > 0) b.t.counters.push({t, 0, M::kSmClockMaxMHz, max_mhz});
  b.t.counters.push({t, 0, M::kTemperatureCelsius, 70});
  const bool capped = reasons > 0 && (reasons & static_cast<int64_t>(trace::kClocksEventSwPowerCap)) != 0;
  b.t.counters.push({t, 0, M::kPowerWatts, capped ? 699.0 : 500.0});
  b.t.counters.push({t, 0, M::kPowerLimitWatts, 700});
}

// Ten 100 ms steps, 60 ms of compute each (40 ms idle gaps: no launch
// gaps), at a median 1,400 MHz of 1,980 held down by the power cap (one idle
// sample at 300 MHz is left out of the clocks).
TEST(AdviseClocks, ThrottledGpuIsAFindingWithTheClockRatioSaving) {
  constexpr int64_t kMs = 1'000'000;
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 100 * kMs * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 100 * kMs);
    b.kernel("gemm_kernel", t, t + 60 * kMs);
    nvml_sample(b, t + kMs, 1400, static_cast<int64_t>(trace::kClocksEventSwPowerCap), 1980);
  }
  nvml_sample(b, 990 * kMs, 300, static_cast<int64_t>(trace::kClocksEventGpuIdle));
  const analyze::RankAnalysis r = analyze::analyze_rank(as_pytorch(b.t), analyze::Options{});
  const auto& g = r.steady ? r.steady->gpu_clocks : r.gpu_clocks;
  ASSERT_TRUE(g.availability.available) << g.availability.reason;
  EXPECT_EQ(g.sm_clock_median_mhz, 1400);
  EXPECT_EQ(g.sm_clock_min_mhz, 1400);  // the idle sample does not count
  EXPECT_EQ(g.sm_clock_max_mhz, 1980);
  EXPECT_DOUBLE_EQ(g.power_cap_share, 1.0);
  EXPECT_DOUBLE_EQ(g.throttled_share, 1.0);
  EXPECT_EQ(g.power_limit_w, 700);
  const auto f = advise(analyze::combine({r}));
  const Finding* t = find(f, "gpu-throttling");
  ASSERT_NE(t, nullptr);
  EXPECT_NEAR(t->saving_fraction, 0.6 * (1 - 1400.0 / 1980), 1e-9);
  EXPECT_EQ(t->saving_kind, SavingKind::kEstimate);
  EXPECT_NE(t->fix.find("power limit"), std::string::npos) << t->fix;
  ASSERT_EQ(f.size(), 1u);  // the idle gaps are over 1 ms and wait for no input: nothing else
  EXPECT_NEAR(t->combined_fraction, t->saving_fraction, 1e-9);
}

// The same clocks without a reason that lowers a working GPU's clock (NVML
// says only "idle" or nothing): not throttling. Without any NVML sample: no
// finding, and the analysis says why it is skipped.
TEST(AdviseClocks, NoFindingWithoutThrottleReasonsOrWithoutCounters) {
  for (const bool counters : {true, false}) {
    TraceBuilder b;
    for (int i = 0; i < 10; ++i) {
      const int64_t t = 1000 * i;
      b.range("ProfilerStep#" + std::to_string(i), t, t + 1000);
      b.kernel("gemm_kernel", t, t + 600);
      if (counters) nvml_sample(b, t + 100, 1400, 0, 1980);
    }
    const analyze::RankAnalysis r = analyze::analyze_rank(as_pytorch(b.t), analyze::Options{});
    const auto& g = r.steady ? r.steady->gpu_clocks : r.gpu_clocks;
    EXPECT_EQ(g.availability.available, counters);
    if (!counters) {
      EXPECT_NE(g.availability.reason.find("no GPU counter samples"), std::string::npos);
    }
    EXPECT_EQ(find(advise(analyze::combine({r})), "gpu-throttling"), nullptr);
  }
}

// Rank 1's GPU runs at 1,400 MHz against rank 0's 1,980: its 700 ns of
// compute per step makes it 200 ns late at every all-reduce. With the
// maximum clock recorded, its gpu-throttling finding is the straggler's
// cause; without it, the clocks against the other rank's still are (and
// its extra compute is not taken for uneven work).
TEST(AdviseClocks, StragglerExplainedByItsThrottledGpu) {
  for (const bool max_recorded : {true, false}) {
    std::vector<analyze::RankAnalysis> ranks;
    for (int r = 0; r < 2; ++r) {
      TraceBuilder b;
      b.rank(r);
      const int64_t compute = r == 1 ? 700 : 500;
      for (int i = 0; i < 10; ++i) {
        const int64_t t = 1000 * i;
        b.range("ProfilerStep#" + std::to_string(i), t, t + 1000);
        b.kernel("gemm_kernel", t, t + compute);
        b.nccl(trace::NcclOp::kAllReduce, t + compute, t + 950, i);
        nvml_sample(b, t + 100, r == 1 ? 1400 : 1980,
                    r == 1 ? static_cast<int64_t>(trace::kClocksEventSwThermalSlowdown) : 0, max_recorded ? 1980 : 0);
      }
      ranks.push_back(analyze::analyze_rank(as_pytorch(b.t), analyze::Options{}));
    }
    const auto f = advise(analyze::combine(std::move(ranks)));
    const Finding* st = find(f, "straggler");
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->ranks, std::vector<int32_t>{1});
    EXPECT_NE(st->evidence.find("1400 MHz median"), std::string::npos) << st->evidence;
    EXPECT_NE(st->fix.find("cooling"), std::string::npos) << st->fix;
    EXPECT_EQ(st->title.find("computes more"), std::string::npos) << st->title;
    const Finding* t = find(f, "gpu-throttling");
    if (max_recorded) {
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->ranks, std::vector<int32_t>{1});
      EXPECT_EQ(st->explained_by, "gpu-throttling");
      const size_t at = static_cast<size_t>(t - f.data());
      ASSERT_LT(at + 1, f.size());
      EXPECT_EQ(f[at + 1].id, "straggler");  // the root, then what it explains
    } else {
      EXPECT_EQ(t, nullptr);
      EXPECT_EQ(st->title, "Rank 1 makes the others wait: its GPU runs at lower clocks");
    }
  }
}

// The same rank above and below the streaming threshold (--stream-above):
// the split of idle time and so the combined estimate are the same, exactly.
TEST(AdviseCombined, SameCombinedEstimateWhenTheRankIsStreamed) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 100000 * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 100000);
    b.api("cudaLaunchKernel", t, t + 20000);
    b.kernel("gemm_kernel", t, t + 20000);
    b.sync(trace::SyncKind::kStreamSynchronize, t + 20000, t + 50000);
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, t + 55000, t + 58000, 1 << 20);
    b.api("cudaLaunchKernel", t + 60000, t + 80000);
    b.kernel("gemm_kernel", t + 60300, t + 100000);
  }
  trace::testing::TempDir dir("advise-test");
  const auto path = trace::testing::write_in_chunks(dir, as_pytorch(b.t), 5);
  analyze::Options whole, streamed;
  streamed.stream_above_rows = 0;
  const analyze::RunAnalysis a = analyze::analyze_path(path, whole), s = analyze::analyze_path(path, streamed);
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_TRUE(a.ranks[0].steady && s.ranks[0].steady);
  EXPECT_TRUE(a.ranks[0].steady->idle_cover.availability.available);
  EXPECT_EQ(nlohmann::json(a.ranks[0].steady->idle_cover), nlohmann::json(s.ranks[0].steady->idle_cover));
  const auto fa = advise(a), fb = advise(s);
  ASSERT_EQ(fa.size(), fb.size());
  ASSERT_GE(fa.size(), 3u);  // launch-bound, host-sync, input-starvation
  for (size_t i = 0; i < fa.size(); ++i) {
    EXPECT_EQ(fa[i].id, fb[i].id);
    EXPECT_EQ(fa[i].saving_fraction, fb[i].saving_fraction) << fa[i].id;
    EXPECT_EQ(fa[i].combined_fraction, fb[i].combined_fraction) << fa[i].id;
  }
  // Combined over the timeline, not added: the three share the same idle time.
  double sum = 0;
  for (const Finding& f : fa) sum += f.saving_fraction;
  EXPECT_LT(fa.back().combined_fraction, sum - 0.1);
}

}  // namespace
}  // namespace scalescope::advise
