// Copies and sets of a window from their sums per kind.
#include "analyze/copies.hpp"

#include <algorithm>

namespace scalescope::analyze {

void detail::finish_copies(CopyStats& cp, CopyGroups& groups, uint64_t host_bytes, bool rows) {
  for (auto& [key, g] : groups) {
    g.bandwidth_gbps = g.time_ns > 0 ? static_cast<double>(g.bytes) / static_cast<double>(g.time_ns) : 0;
    cp.groups.push_back(g);
  }
  std::sort(cp.groups.begin(), cp.groups.end(),
            [](const CopyGroup& a, const CopyGroup& b) { return a.time_ns > b.time_ns; });
  cp.pageable_fraction = host_bytes > 0 ? static_cast<double>(cp.pageable_bytes) / static_cast<double>(host_bytes) : 0;
  if (!rows) cp.availability = {false, "skipped: the trace has no memory copies or sets"};
}

}  // namespace scalescope::analyze
