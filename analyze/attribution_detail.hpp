#pragma once
// Private: the pieces of attribution (attribution.cpp) that its sweep over a
// rank's chunks (attribution_stream.cpp) runs.
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

// Window-independent: the trie of range paths the GPU work was launched under.
struct LaunchPaths {
  std::vector<std::string> names;  // key -> normalized name; 0 the root, 1 "(backward)"
  std::vector<RangeKind> name_kinds;
  std::vector<PathNode> nodes;
  int64_t backward_links = 0;
  std::string link_source;
  bool any_ranges = false;
};

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
