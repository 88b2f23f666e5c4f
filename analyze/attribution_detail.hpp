#pragma once
// Private: the two steps of attribution (attribution.cpp), split so that
// analyze_rank finds the launch paths once and summarizes them per window.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/analyze.hpp"

namespace scalescope::analyze::detail {

inline constexpr uint32_t kNoLaunch = std::numeric_limits<uint32_t>::max();  // GPU work without an API call
inline constexpr uint32_t kNoParent = std::numeric_limits<uint32_t>::max();

// A node of the trie of range paths; node 0 is the root (no range).
struct PathNode {
  uint32_t parent = kNoParent;
  uint32_t name = 0;  // key into LaunchPaths::names
  RangeKind kind = RangeKind::kRange;
};

// One host range as pushed on its thread's stack (for calls and CPU time),
// in the order the ranges left their stacks. 24 bytes: the real trace has 300k of them.
struct RangeInstance {
  uint32_t row = 0;  // in the trace's NVTX table (its start)
  uint32_t node = 0;
  int64_t duration = 0;  // end cut at the parent's end, less the start
  int64_t child_ns = 0;  // time of the ranges directly inside
};

// Window-independent: the path of ranges each kernel, copy and set was launched under.
struct LaunchPaths {
  std::vector<std::string> names;  // key -> normalized name; 0 the root, 1 "(backward)"
  std::vector<RangeKind> name_kinds;
  std::vector<PathNode> nodes;
  std::vector<uint32_t> kernel_node, memcpy_node, memset_node;  // per row; kNoLaunch without API call
  std::vector<RangeInstance> instances;
  int64_t backward_links = 0;
  std::string link_source;
  bool any_ranges = false;
};

std::shared_ptr<const LaunchPaths> launch_paths(const trace::Trace& trace);
// kernel_info: classify_names() of the trace (indexed by kernel name id).
// whole_trace: no --window, so every range counts as a call, also those that
// start before the first GPU or API event (the window's start).
Attribution summarize_attribution(const trace::Trace& trace, const LaunchPaths& paths, trace::Timestamp window_start,
                                  trace::Timestamp window_end, bool whole_trace,
                                  const std::vector<Iteration>& iterations, const std::vector<KernelInfo>& kernel_info);

// What a range's text says: its name without emit_nvtx decorations
// ("aten::mm, seq = 12, sizes = [...]" -> "aten::mm", "ProfilerStep#3" ->
// "ProfilerStep#N"), its sequence number, and whether it is a backward node.
struct ParsedRange {
  std::string name;
  int64_t seq = -1;
  bool stashed = false;        // "stashed seq=N": a backward Function (emit_nvtx)
  bool decorated = false;      // carries emit_nvtx decorations
  bool backward_node = false;  // stashed, or named like an autograd node ("MulBackward0")
  bool operator_like = false;  // decorated, a backward node, or a "::" name (aten::, c10d::)
};
ParsedRange parse_range_text(std::string_view text);

}  // namespace scalescope::analyze::detail
