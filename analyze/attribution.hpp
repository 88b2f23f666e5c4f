#pragma once
// GPU time by operator, module and range: every kernel, copy and set is
// charged to the host ranges that enclosed its launch call on the launching
// thread (GPU record -> correlation id -> API call -> thread and time ->
// the ranges open there), at every nesting level. Rules: docs/attribution.md.
//
//   const analyze::Attribution& a = rank_analysis.attribution;
//   for (const auto& op : a.operators) ...   // by gpu_ns, descending
//   a.attributed_ns + a.unattributed_ns == a.busy_ns
//
// Plain structs of vectors, so that bindings (Python) can copy them as they are.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::analyze {

enum class RangeKind : uint8_t {
  kOperator = 0,  // aten::..., autograd nodes (Kineto cpu_op; emit_nvtx ranges)
  kModule,        // nn.Module (Kineto python_function "nn.Module: ...")
  kRange,         // any other annotation: record_function, torch.cuda.nvtx.range, ProfilerStep#N
  kBackward,      // tree only: the backward pass of the module above it (a forward-backward link)
};
std::string_view to_string(RangeKind k);

// One name's totals over the window. Times are GPU time unless named cpu.
struct AttributionRow {
  std::string name;  // normalized: "ProfilerStep#N", emit_nvtx decorations (", seq = 12") cut
  RangeKind kind = RangeKind::kOperator;
  int64_t calls = 0;        // ranges of this name that started in the window
  int64_t gpu_ns = 0;       // inclusive: share of GPU busy time of the work launched inside
  int64_t self_gpu_ns = 0;  // ... where this name is the innermost range of its table
  int64_t sum_ns = 0;       // inclusive summed durations (overlapping work counted in full, as torch.profiler)
  int64_t self_sum_ns = 0;
  int64_t kernels = 0;              // kernels, copies and sets launched inside (inclusive)
  int64_t cpu_ns = 0;               // summed wall time of the ranges (a range nested in one of its name counts once)
  int64_t self_cpu_ns = 0;          // ... less the time of the ranges directly inside them
  double step_fraction = 0;         // gpu_ns / window wall time
  double gpu_ns_per_iteration = 0;  // gpu_ns / iterations in the window (0 without iterations)
  double kernels_per_call = 0;
};

// A node of the tree of paths (module > ... > operator > ...). Node 0 is the
// root (GPU work outside every range); parents come before their children.
struct AttributionNode {
  int32_t parent = -1;
  std::string name;
  RangeKind kind = RangeKind::kRange;
  int64_t gpu_ns = 0;  // inclusive
  int64_t self_gpu_ns = 0;
  int64_t kernels = 0;  // inclusive
};

// One iteration: its busy time and the GPU time of the top operators.
struct AttributionIteration {
  trace::Timestamp start = 0, end = 0;
  int64_t busy_ns = 0;
  int64_t attributed_ns = 0;
  std::vector<int64_t> top_operator_gpu_ns;  // aligned with Attribution::operators[0 .. kTopIterationOperators)
};

// Kernels of one kind (layout conversions, FP32 without tensor cores, tiny
// kernels) grouped by the operator that launched them and its module: what
// the advisor names as responsible.
struct ResponsibleOperator {
  std::string name;    // innermost operator, "" when launched outside every operator
  std::string module;  // innermost module or range around it (the forward module for backward ops), "" none
  int64_t count = 0;   // kernels
  int64_t sum_ns = 0;  // their summed durations
};

struct Attribution {
  // available == false with a reason when the trace has no GPU work or no
  // host ranges (then everything is unattributed and the tables are empty).
  bool available = true;
  std::string reason;
  int64_t busy_ns = 0;            // union of kernels, copies and sets in the window
  int64_t attributed_ns = 0;      // launched inside at least one range
  int64_t unattributed_ns = 0;    // = no_launch_ns + outside_ranges_ns
  int64_t no_launch_ns = 0;       // no API call with the work's correlation id in the trace
  int64_t outside_ranges_ns = 0;  // launched outside every range
  int64_t no_operator_ns = 0;     // launched outside every operator (rest of operators' self_gpu_ns)
  int64_t no_range_ns = 0;        // launched outside every module or range (rest of ranges' self_gpu_ns)
  int64_t activities = 0;         // kernels, copies and sets in the window
  int64_t unattributed_activities = 0;
  int64_t backward_links = 0;  // backward ranges placed under the forward module that made them
  std::string link_source;     // "fwdbwd flows", "emit_nvtx seq", "" (none)
  int64_t iteration_count = 0;
  std::vector<AttributionRow> operators;  // by gpu_ns, descending
  std::vector<AttributionRow> ranges;     // modules and other ranges, by gpu_ns, descending
  std::vector<AttributionNode> tree;      // at most kMaxTreeNodes nodes, the largest (with their ancestors)
  std::vector<AttributionIteration> iterations;
  std::vector<ResponsibleOperator> layout_conversions;  // NCHW<->NHWC conversion kernels, by time (top 5)
  std::vector<ResponsibleOperator> fp32_no_tensor;      // FP32 GEMM/conv on CUDA cores, by time (top 5)
  std::vector<ResponsibleOperator> tiny_kernels;        // kernels under 10 us, by count (top 5)
  static constexpr int64_t kTinyKernelNs = 10'000;
  static constexpr size_t kTopIterationOperators = 10;
  static constexpr size_t kMaxTreeNodes = 2000;
};

}  // namespace scalescope::analyze
