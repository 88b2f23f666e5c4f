// The time breakdown of a window from its interval sums.
#include "analyze/breakdown.hpp"

namespace scalescope::analyze {

void detail::finish_breakdown(RankBreakdown& b, bool rows) {
  if (!rows) b.availability = {false, "skipped: the trace has no GPU activity (kernels, copies, sets or collectives)"};
  b.exposed_communication_ns = b.communication_ns - b.overlap_ns;
  b.idle_ns = b.wall_ns - b.compute_ns - b.exposed_communication_ns - b.copy_ns;
  b.overlap_fraction =
      b.communication_ns > 0 ? static_cast<double>(b.overlap_ns) / static_cast<double>(b.communication_ns) : 0;
}

}  // namespace scalescope::analyze
