// Attribution of GPU time to host ranges on small traces with known answers.
#include "analyze/attribution.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"
#include "analyze/attribution_detail.hpp"
#include "analyze/tests/trace_builder.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::analyze {
namespace {

using testing::TraceBuilder;

const AttributionRow* find(const std::vector<AttributionRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// Path of a tree node: "a > b > c".
std::string path_of(const Attribution& a, size_t i) {
  std::string out;
  for (int32_t v = static_cast<int32_t>(i); v > 0; v = a.tree[static_cast<size_t>(v)].parent)
    out = a.tree[static_cast<size_t>(v)].name + (out.empty() ? "" : " > " + out);
  return out;
}
const AttributionNode* node_at(const Attribution& a, const std::string& path) {
  for (size_t i = 0; i < a.tree.size(); ++i)
    if (path_of(a, i) == path) return &a.tree[i];
  return nullptr;
}

// The identities every attribution keeps, whatever the trace.
void expect_adds_up(const Attribution& a) {
  EXPECT_EQ(a.attributed_ns + a.unattributed_ns, a.busy_ns);
  EXPECT_EQ(a.no_launch_ns + a.outside_ranges_ns, a.unattributed_ns);
  int64_t ops = a.no_operator_ns, ranges = a.no_range_ns;
  for (const auto& r : a.operators) ops += r.self_gpu_ns;
  for (const auto& r : a.ranges) ranges += r.self_gpu_ns;
  EXPECT_EQ(ops, a.busy_ns);
  EXPECT_EQ(ranges, a.busy_ns);
  ASSERT_FALSE(a.tree.empty());
  EXPECT_EQ(a.tree[0].gpu_ns, a.busy_ns);
  EXPECT_EQ(a.tree[0].self_gpu_ns, a.unattributed_ns);
  for (const auto& r : a.operators) {
    EXPECT_LE(r.self_gpu_ns, r.gpu_ns) << r.name;
    EXPECT_LE(r.gpu_ns, a.busy_ns) << r.name;
  }
}

Attribution attribute(const trace::Trace& t) { return analyze_rank(t, Options{}).attribution; }

// Thread 1: step [0, 1000) > aten::linear [100, 400) > aten::addmm [150, 350).
// Kernels run after their ranges ended: charged by launch time.
TEST(Attribution, NestedRangesByLaunchTimeNotKernelTime) {
  TraceBuilder b;
  b.range("step", 0, 1000, -1, "user_annotation", 1)
      .range("aten::linear", 100, 400, -1, "cpu_op", 1)
      .range("aten::addmm", 150, 350, -1, "cpu_op", 1)
      .api("cudaLaunchKernel", 200, 210, 1, 1)  // inside addmm
      .api("cudaLaunchKernel", 120, 130, 2, 1)  // inside linear, before addmm
      .api("cudaLaunchKernel", 450, 460, 3, 1)  // inside step only
      .kernel("gemm", 500, 600, 7, 0, 1)
      .kernel("bias", 600, 650, 7, 0, 2)
      .kernel("other", 700, 720, 7, 0, 3);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_TRUE(a.available) << a.reason;
  EXPECT_EQ(a.busy_ns, 170);
  EXPECT_EQ(a.attributed_ns, 170);
  EXPECT_EQ(a.unattributed_ns, 0);
  const AttributionRow* linear = find(a.operators, "aten::linear");
  const AttributionRow* addmm = find(a.operators, "aten::addmm");
  const AttributionRow* step = find(a.ranges, "step");
  ASSERT_TRUE(linear && addmm && step);
  EXPECT_EQ(linear->gpu_ns, 150);
  EXPECT_EQ(linear->self_gpu_ns, 50);
  EXPECT_EQ(linear->kernels, 2);
  EXPECT_EQ(linear->calls, 1);
  EXPECT_EQ(linear->cpu_ns, 300);
  EXPECT_EQ(linear->self_cpu_ns, 100);  // 300 less addmm's 200
  EXPECT_EQ(addmm->gpu_ns, 100);
  EXPECT_EQ(addmm->self_gpu_ns, 100);
  EXPECT_EQ(step->gpu_ns, 170);
  EXPECT_EQ(step->self_gpu_ns, 170);  // the ranges table's innermost range: operators do not count
  EXPECT_EQ(a.no_operator_ns, 20);
  EXPECT_EQ(a.operators.front().name, "aten::linear");  // by inclusive GPU time
  ASSERT_TRUE(node_at(a, "step > aten::linear > aten::addmm"));
  EXPECT_EQ(node_at(a, "step > aten::linear > aten::addmm")->gpu_ns, 100);
  EXPECT_EQ(node_at(a, "step > aten::linear")->self_gpu_ns, 50);
  EXPECT_EQ(node_at(a, "step")->gpu_ns, 170);
}

// Ranges of another thread open at the launch time do not count.
TEST(Attribution, OnlyTheLaunchingThreadsRanges) {
  TraceBuilder b;
  b.range("aten::addmm", 100, 400, -1, "cpu_op", 1)
      .range("aten::mul", 150, 250, -1, "cpu_op", 2)
      .api("cudaLaunchKernel", 200, 205, 1, 2)
      .api("cudaLaunchKernel", 210, 215, 2, 1)
      .kernel("mul_kernel", 300, 340, 7, 0, 1)
      .kernel("gemm", 340, 400, 7, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(find(a.operators, "aten::mul")->gpu_ns, 40);
  EXPECT_EQ(find(a.operators, "aten::addmm")->gpu_ns, 60);
}

// Work launched outside every range, and work without a launch call, is its own row.
TEST(Attribution, UnattributedWorkIsCountedNotLost) {
  TraceBuilder b;
  b.range("aten::add", 0, 100, -1, "cpu_op", 1)
      .api("cudaLaunchKernel", 10, 20, 1, 1)
      .api("cudaLaunchKernel", 200, 210, 2, 1)  // after the range
      .api("cudaMemsetAsync", 220, 230, 3, 1)
      .kernel("add", 300, 330, 7, 0, 1)
      .kernel("loose", 330, 350, 7, 0, 2)
      .kernel("no api", 400, 410, 7, 0, 99)  // correlation of no API call
      .kernel("no correlation", 410, 415, 7, 0, 0)
      .memset(500, 507, 9, 3);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(a.busy_ns, 30 + 20 + 10 + 5 + 7);
  EXPECT_EQ(a.attributed_ns, 30);
  EXPECT_EQ(a.outside_ranges_ns, 27);
  EXPECT_EQ(a.no_launch_ns, 15);
  EXPECT_EQ(a.activities, 5);
  EXPECT_EQ(a.unattributed_activities, 4);
}

// A CUDA graph: one launch, many kernels with the launch's correlation id.
TEST(Attribution, GraphLaunchChargesAllItsKernels) {
  TraceBuilder b;
  b.range("graph_replay", 0, 100, -1, "user_annotation", 1)
      .range("graph_replay", 200, 300, -1, "user_annotation", 1)
      .api("cudaGraphLaunch", 10, 20, 5, 1)
      .api("cudaGraphLaunch", 210, 220, 6, 1);
  for (int i = 0; i < 4; ++i) b.kernel("graph_kernel", 1000 + i * 10, 1005 + i * 10, 7, 0, 5);
  for (int i = 0; i < 4; ++i) b.kernel("graph_kernel", 2000 + i * 10, 1005 + 1000 + i * 10, 7, 0, 6);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  const AttributionRow* g = find(a.ranges, "graph_replay");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->calls, 2);
  EXPECT_EQ(g->kernels, 8);
  EXPECT_DOUBLE_EQ(g->kernels_per_call, 4.0);
  EXPECT_EQ(g->gpu_ns, 40);
}

// Overlapping work shares each instant: the shares add up to the union.
TEST(Attribution, OverlapIsSharedSoTotalsAddUpToBusyTime) {
  TraceBuilder b;
  b.range("compute", 0, 10, -1, "user_annotation", 1)
      .range("comm", 0, 10, -1, "user_annotation", 2)
      .api("cudaLaunchKernel", 1, 2, 1, 1)
      .api("ncclLaunch", 1, 2, 2, 2)
      .kernel("gemm", 100, 200, 7, 0, 1)
      .kernel("ncclDevKernel_AllReduce", 150, 251, 20, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(a.busy_ns, 151);
  const AttributionRow* compute = find(a.ranges, "compute");
  const AttributionRow* comm = find(a.ranges, "comm");
  EXPECT_EQ(compute->gpu_ns, 50 + 25);  // alone 50, half of the 50 shared
  EXPECT_EQ(comm->gpu_ns, 25 + 51);
  EXPECT_EQ(compute->sum_ns, 100);  // durations in full, as torch.profiler sums them
  EXPECT_EQ(comm->sum_ns, 101);
}

// Kineto: a fwdbwd link puts the backward ops under the forward op's module.
TEST(Attribution, BackwardOpsGoUnderTheForwardModuleThroughLinks) {
  TraceBuilder b;
  b.range("nn.Module: Linear_0", 0, 100, -1, "python_function", 1)
      .range("train.py(12): forward", 0, 100, -1, "python_function", 1)  // a Python frame: not a range
      .range("aten::linear", 10, 90, -1, "cpu_op", 1, /*link=*/5)
      .api("cudaLaunchKernel", 20, 25, 1, 1)
      .range("autograd::engine::evaluate_function: AddmmBackward0", 200, 400, -1, "cpu_op", 2)
      .range("AddmmBackward0", 210, 390, -1, "cpu_op", 2, /*link=*/5)
      .range("aten::mm", 220, 300, -1, "cpu_op", 2)
      .api("cudaLaunchKernel", 230, 235, 2, 2)
      .kernel("fwd_gemm", 500, 600, 7, 0, 1)
      .kernel("bwd_gemm", 600, 800, 7, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(a.link_source, "fwdbwd flows");
  EXPECT_EQ(a.backward_links, 1);
  const AttributionRow* module = find(a.ranges, "nn.Module: Linear_0");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->kind, RangeKind::kModule);
  EXPECT_EQ(module->gpu_ns, 300);  // forward 100 + backward 200
  EXPECT_EQ(find(a.ranges, "train.py(12): forward"), nullptr);
  const AttributionNode* bwd = node_at(
      a,
      "nn.Module: Linear_0 > (backward) > autograd::engine::evaluate_function: AddmmBackward0 > AddmmBackward0 > aten::mm");
  ASSERT_TRUE(bwd);
  EXPECT_EQ(bwd->gpu_ns, 200);
  EXPECT_EQ(find(a.operators, "AddmmBackward0")->gpu_ns, 200);
  EXPECT_EQ(find(a.operators, "autograd::engine::evaluate_function: AddmmBackward0")->gpu_ns, 200);
}

// Collector traces with emit_nvtx: decorations are cut from the names and the
// sequence numbers link backward nodes to the forward range's context.
TEST(Attribution, EmitNvtxSequenceNumbersLinkBackward) {
  TraceBuilder b;
  b.range("block1", 0, 1000, -1, "", 1)
      .range("aten::linear, seq = 7, op_id = 3, sizes = [[2, 3], [4, 3]]", 100, 900, -1, "", 1)
      .range("aten::empty", 110, 120, -1, "", 1)
      .api("cudaLaunchKernel", 200, 210, 1, 1)
      .range("autograd::engine::evaluate_function: AddmmBackward0, op_id = 40", 1990, 3010, -1, "", 2)
      .range("AddmmBackward0, stashed seq=7", 2000, 3000, -1, "", 2)
      .range("aten::mm, seq = 99", 2100, 2900, -1, "", 2)
      .api("cudaLaunchKernel", 2500, 2510, 2, 2)
      .kernel("fwd", 300, 400, 7, 0, 1)
      .kernel("bwd", 2600, 2800, 7, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(a.link_source, "emit_nvtx seq");
  EXPECT_EQ(a.backward_links, 1);
  for (const char* name : {"aten::linear", "aten::empty", "AddmmBackward0", "aten::mm"})
    ASSERT_TRUE(find(a.operators, name)) << name;
  ASSERT_TRUE(find(a.ranges, "block1"));
  EXPECT_EQ(find(a.operators, "aten::linear")->gpu_ns, 100);
  EXPECT_EQ(find(a.operators, "aten::empty")->calls, 1);
  EXPECT_EQ(find(a.operators, "AddmmBackward0")->gpu_ns, 200);
  EXPECT_EQ(find(a.operators, "aten::mm")->gpu_ns, 200);
  EXPECT_EQ(find(a.ranges, "block1")->gpu_ns, 300);
  EXPECT_TRUE(node_at(
      a, "block1 > (backward) > autograd::engine::evaluate_function: AddmmBackward0 > AddmmBackward0 > aten::mm"));
}

// The Python bootstrap's module ranges (NVTX, default domain, "nn.Module:
// NAME") are modules, with emit_nvtx's operators inside them; backward work
// goes under the forward module through the sequence number.
TEST(Attribution, BootstrapModuleRangesAreModules) {
  TraceBuilder b;
  b.range("nn.Module: Net", 0, 1000, -1, "", 1)
      .range("nn.Module: encoder.0", 50, 950, -1, "", 1)
      .range("aten::linear, seq = 7", 100, 900, -1, "", 1)
      .api("cudaLaunchKernel", 200, 210, 1, 1)
      .range("AddmmBackward0, seq = 7", 2000, 3000, -1, "", 2)
      .api("cudaLaunchKernel", 2500, 2510, 2, 2)
      .kernel("fwd", 300, 400, 7, 0, 1)
      .kernel("bwd", 2600, 2800, 7, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  const AttributionRow* module = find(a.ranges, "nn.Module: encoder.0");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->kind, RangeKind::kModule);
  EXPECT_EQ(module->gpu_ns, 300);  // its forward kernel and, through seq 7, the backward one
  EXPECT_EQ(find(a.operators, "aten::linear")->gpu_ns, 100);
  EXPECT_TRUE(node_at(a, "nn.Module: Net > nn.Module: encoder.0 > (backward) > AddmmBackward0"));
}

TEST(Attribution, ParsesEmitNvtxNames) {
  auto p = detail::parse_range_text("aten::addmm, seq = 12, op_id = 4, sizes = [[8, 16]]");
  EXPECT_EQ(p.name, "aten::addmm");
  EXPECT_EQ(p.seq, 12);
  EXPECT_TRUE(p.operator_like);
  EXPECT_FALSE(p.backward_node);
  p = detail::parse_range_text("MulBackward0, stashed seq=31");
  EXPECT_EQ(p.name, "MulBackward0");
  EXPECT_EQ(p.seq, 31);
  EXPECT_TRUE(p.backward_node);
  p = detail::parse_range_text("ProfilerStep#17");
  EXPECT_EQ(p.name, "ProfilerStep#N");
  EXPECT_FALSE(p.operator_like);
  p = detail::parse_range_text("forward");
  EXPECT_EQ(p.name, "forward");
  EXPECT_EQ(p.seq, -1);
  EXPECT_FALSE(p.operator_like);
  p = detail::parse_range_text("seq = 3");  // no decoration: a user's text
  EXPECT_EQ(p.name, "seq = 3");
  EXPECT_EQ(p.seq, -1);
}

// A child range that outlives its parent is cut at the parent's end.
TEST(Attribution, ImproperlyNestedRangesAreCut) {
  TraceBuilder b;
  b.range("outer", 0, 100, -1, "user_annotation", 1)
      .range("aten::inner", 50, 150, -1, "cpu_op", 1)
      .api("cudaLaunchKernel", 60, 61, 1, 1)
      .api("cudaLaunchKernel", 120, 121, 2, 1)
      .kernel("a", 200, 210, 7, 0, 1)
      .kernel("b", 210, 230, 7, 0, 2);
  const Attribution a = attribute(b.t);
  expect_adds_up(a);
  EXPECT_EQ(find(a.operators, "aten::inner")->gpu_ns, 10);
  EXPECT_EQ(a.outside_ranges_ns, 20);
}

// Per iteration: ProfilerStep ranges give the iterations; the steady window
// keeps only its work.
TEST(Attribution, PerIterationAndWindow) {
  TraceBuilder b;
  b.api("cudaFree", 0, 1, 0, 1).api("cudaStreamSynchronize", 3990, 4000, 0, 1);  // the trace spans the four steps
  for (int it = 0; it < 4; ++it) {
    const int64_t s = it * 1000;
    b.range("ProfilerStep#" + std::to_string(it), s, s + 1000, -1, "user_annotation", 1)
        .range("aten::conv2d", s + 10, s + 100, -1, "cpu_op", 1)
        .api("cudaLaunchKernel", s + 20, s + 21, static_cast<uint32_t>(it + 1), 1)
        .kernel("conv", s + 200, s + 200 + (it == 0 ? 600 : 100), 7, 0, static_cast<uint32_t>(it + 1));
  }
  const RankAnalysis r = analyze_rank(b.t, Options{});
  const Attribution& a = r.attribution;
  expect_adds_up(a);
  ASSERT_EQ(a.iteration_count, 4);
  ASSERT_EQ(a.iterations.size(), 4u);
  EXPECT_EQ(a.iterations[0].busy_ns, 600);
  EXPECT_EQ(a.iterations[1].top_operator_gpu_ns.at(0), 100);
  EXPECT_EQ(a.operators.front().name, "aten::conv2d");
  EXPECT_EQ(a.operators.front().calls, 4);
  EXPECT_DOUBLE_EQ(a.operators.front().gpu_ns_per_iteration, 900.0 / 4);
  EXPECT_EQ(find(a.ranges, "ProfilerStep#N")->calls, 4);
  Options o;
  o.window = WindowSpec::parse("it2:it4");
  const Attribution w = analyze_rank(b.t, o).attribution;
  expect_adds_up(w);
  EXPECT_EQ(w.busy_ns, 200);
  EXPECT_EQ(w.operators.front().calls, 2);
}

TEST(Attribution, SkippedWithoutRangesButStillCounted) {
  TraceBuilder b;
  b.api("cudaLaunchKernel", 0, 1, 1, 1).kernel("k", 10, 20, 7, 0, 1);
  const Attribution a = attribute(b.t);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("no host ranges"), std::string::npos);
  EXPECT_EQ(a.busy_ns, 10);
  EXPECT_EQ(a.unattributed_ns, 10);
  TraceBuilder empty;
  EXPECT_FALSE(attribute(empty.t).available);
}

// The synthetic DDP trace: attributed + unattributed is the breakdown's busy time.
TEST(Attribution, SyntheticTraceAddsUpToBusyTime) {
  const trace::Trace t = trace::make_synthetic_trace(60'000, 5);
  const RankAnalysis r = analyze_rank(t, Options{});
  const Attribution& a = r.attribution;
  expect_adds_up(a);
  EXPECT_TRUE(a.available) << a.reason;
  EXPECT_EQ(a.busy_ns, r.breakdown.wall_ns - r.breakdown.idle_ns);
  EXPECT_GT(a.attributed_ns, a.busy_ns / 2);
  ASSERT_TRUE(r.steady);
  expect_adds_up(r.steady->attribution);
  EXPECT_EQ(r.steady->attribution.busy_ns, r.steady->breakdown.wall_ns - r.steady->breakdown.idle_ns);
  const nlohmann::json j = r;
  EXPECT_EQ(j["attribution"]["busy_ns"].get<int64_t>(), a.busy_ns);
  ASSERT_FALSE(j["attribution"]["ranges"].empty());
  EXPECT_TRUE(j["attribution"]["operators"].is_array());
}

// ---- traces from an H200 (analyze/testdata/h200-smallnet, made by
// bench/attribution/gpu_check.py: a small CNN, 5 profiled SGD steps) ------------

const std::filesystem::path kH200 = std::filesystem::path(SCALESCOPE_SOURCE_DIR) / "analyze/testdata/h200-smallnet";

// torch.profiler's own key_averages() of the same steps: the operators' summed
// GPU time (inclusive, as cuda_time_total) agrees, so the order does too.
TEST(AttributionH200, AgreesWithTorchProfilerKeyAverages) {
  const trace::Trace t = trace::import_kineto_file(kH200 / "trace.json.gz");
  const RankAnalysis r = analyze_rank(t, Options{});
  const Attribution& a = r.attribution;
  expect_adds_up(a);
  EXPECT_EQ(a.busy_ns, r.breakdown.wall_ns - r.breakdown.idle_ns);
  EXPECT_EQ(a.link_source, "fwdbwd flows");
  EXPECT_GT(a.backward_links, 50);
  EXPECT_GT(a.attributed_ns, a.busy_ns * 99 / 100);
  std::ifstream in(kH200 / "key_averages.json");
  const nlohmann::json torch = nlohmann::json::parse(in);
  std::vector<std::pair<std::string, double>> expected;  // cpu ops only, by torch's device time
  for (const auto& e : torch) {
    const std::string name = e["name"];
    if (find(a.operators, name)) expected.emplace_back(name, e["device_time_total_us"].get<double>() * 1000);
  }
  ASSERT_GE(expected.size(), 20u);
  std::vector<double> ours_sorted, torch_sorted;
  for (size_t i = 0; i < 15; ++i) {
    const auto& [name, ns] = expected[i];
    const AttributionRow* row = find(a.operators, name);
    EXPECT_NEAR(static_cast<double>(row->sum_ns), ns, 0.001 * ns + 1000) << name;
    torch_sorted.push_back(ns);
  }
  std::vector<AttributionRow> by_sum = a.operators;
  std::sort(by_sum.begin(), by_sum.end(), [](const auto& x, const auto& y) { return x.sum_ns > y.sum_ns; });
  for (size_t i = 0; i < 15; ++i)
    EXPECT_NEAR(static_cast<double>(by_sum[i].sum_ns), torch_sorted[i], 0.001 * torch_sorted[i] + 1000) << i;
  // with_stack: layers are modules, and backward ops sit under the layer that made them.
  const AttributionRow* conv = find(a.ranges, "nn.Module: Conv2d_0");
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->kind, RangeKind::kModule);
  bool backward_under_module = false;
  for (size_t i = 0; i < a.tree.size(); ++i)
    if (a.tree[i].kind == RangeKind::kBackward && a.tree[i].gpu_ns > 0 &&
        a.tree[static_cast<size_t>(a.tree[i].parent)].kind == RangeKind::kModule)
      backward_under_module = true;
  EXPECT_TRUE(backward_under_module);
  // The advisor's "who": the NCHW<->NHWC conversions come from convolutions.
  ASSERT_FALSE(a.layout_conversions.empty());
  EXPECT_NE(a.layout_conversions.front().name.find("conv"), std::string::npos) << a.layout_conversions.front().name;
}

// A collector trace of the same steps inside emit_nvtx(): operator names and
// backward links come from the NVTX texts.
TEST(AttributionH200, CollectorTraceWithEmitNvtx) {
  const trace::Trace t = trace::read_trace(kH200 / "nvtx.ssrun/vm-486.sstrace");
  const RankAnalysis r = analyze_rank(t, Options{});
  const Attribution& a = r.attribution;
  expect_adds_up(a);
  EXPECT_TRUE(a.available) << a.reason;
  EXPECT_EQ(a.busy_ns, r.breakdown.wall_ns - r.breakdown.idle_ns);
  EXPECT_EQ(a.link_source, "emit_nvtx seq");
  EXPECT_GT(a.backward_links, 50);
  for (const char* name :
       {"aten::cudnn_convolution", "aten::convolution_backward", "ConvolutionBackward0", "aten::addmm"})
    EXPECT_TRUE(find(a.operators, name)) << name;
  for (const auto& op : a.operators) EXPECT_EQ(op.name.find(", seq"), std::string::npos) << op.name;
  EXPECT_TRUE(find(a.ranges, "ProfilerStep#N"));
}

// A study run (examples/h200: collector traces of the image workload on two
// H200s, ProfilerStep#N NVTX ranges only): the identities hold on every rank.
TEST(AttributionStudy, CollectorRunAddsUpToBusyTime) {
  const std::filesystem::path run = std::filesystem::path(SCALESCOPE_SOURCE_DIR) /
                                    "examples/h200/image-base/traces/0010-g2-arm_base-variant_ref-r0.ssrun";
  if (!std::filesystem::exists(run)) GTEST_SKIP() << "no study run: " << run;
  const RunAnalysis analysis = analyze_path(run, Options{});
  int gpu_ranks = 0;
  for (const RankAnalysis& r : analysis.ranks) {
    if (!r.gpu_activity) continue;
    ++gpu_ranks;
    const Attribution& a = r.attribution;
    SCOPED_TRACE(r.label);
    EXPECT_TRUE(a.available) << a.reason;
    expect_adds_up(a);
    EXPECT_EQ(a.busy_ns, r.breakdown.wall_ns - r.breakdown.idle_ns);
    EXPECT_GT(a.attributed_ns, 0);
    ASSERT_TRUE(find(a.ranges, "ProfilerStep#N"));
    ASSERT_TRUE(r.steady);
    expect_adds_up(r.steady->attribution);
    EXPECT_EQ(r.steady->attribution.busy_ns, r.steady->breakdown.wall_ns - r.steady->breakdown.idle_ns);
  }
  EXPECT_EQ(gpu_ranks, 2);
}

// Random traces (nested and crossing ranges on a few threads, links, seq
// decorations, launches, overlapping work on a few streams, copies and sets,
// unknown correlation ids): the identities hold and nothing faults.
TEST(Attribution, RandomTracesKeepTheIdentities) {
  std::mt19937_64 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const char* names[] = {
      "aten::mm",       "aten::add, seq = 3", "MulBackward0, stashed seq=3", "block",
      "nn.Module: L_0", "ProfilerStep#1",     "AddBackward0, seq = 5",       "aten::linear, seq = 5"};
  const char* domains[] = {"cpu_op", "user_annotation", "python_function", "", "gpu_user_annotation"};
  for (int round = 0; round < 300; ++round) {
    TraceBuilder b;
    const int ranges = static_cast<int>(pick(0, 30)), calls = static_cast<int>(pick(0, 40));
    for (int i = 0; i < ranges; ++i) {
      const int64_t s = pick(0, 1000);
      b.range(names[pick(0, 7)], s, s + pick(-5, 400), pick(0, 9) == 0 ? 0 : -1, domains[pick(0, 4)],
              static_cast<uint32_t>(pick(1, 3)), static_cast<uint32_t>(pick(0, 3) == 0 ? pick(1, 4) : 0));
    }
    for (int i = 0; i < calls; ++i) {
      const int64_t s = pick(0, 1200);
      b.api("cudaLaunchKernel", s, s + pick(0, 20), static_cast<uint32_t>(pick(0, 50)),
            static_cast<uint32_t>(pick(1, 3)));
    }
    for (int i = 0; i < 40; ++i) {
      const int64_t s = pick(0, 3000);
      const auto corr = static_cast<uint32_t>(pick(0, 60));
      switch (pick(0, 5)) {
        case 0: b.memset(s, s + pick(0, 50), static_cast<uint32_t>(pick(1, 3)), corr); break;
        case 1:
          b.copy(trace::MemcpyKind::kHtoD, trace::MemoryKind::kPinned, trace::MemoryKind::kDevice, s, s + pick(0, 300),
                 64, true, static_cast<uint32_t>(pick(1, 3)), corr);
          break;
        default:
          b.kernel(pick(0, 1) ? "gemm" : "tiny", s, s + pick(0, 300), static_cast<uint32_t>(pick(1, 4)), 0, corr);
      }
    }
    const RankAnalysis r = analyze_rank(b.t, Options{});
    SCOPED_TRACE(round);
    expect_adds_up(r.attribution);
    if (r.breakdown.availability.available) {
      EXPECT_EQ(r.attribution.busy_ns, r.breakdown.wall_ns - r.breakdown.idle_ns);
    }
    Options o;
    o.window = WindowSpec::parse("20%:70%");
    const RankAnalysis w = analyze_rank(b.t, o);
    expect_adds_up(w.attribution);
    if (w.breakdown.availability.available) {
      EXPECT_EQ(w.attribution.busy_ns, w.breakdown.wall_ns - w.breakdown.idle_ns);
    }
  }
}

}  // namespace
}  // namespace scalescope::analyze
