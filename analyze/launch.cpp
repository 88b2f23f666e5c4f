// Launch overhead of a window from its sums and medians.
#include "analyze/launch.hpp"

namespace scalescope::analyze {

void detail::finish_launch(LaunchStats& ls, int64_t small, int64_t wall, bool rows) {
  ls.small_kernel_fraction =
      ls.kernel_count > 0 ? static_cast<double>(small) / static_cast<double>(ls.kernel_count) : 0;
  ls.gap_fraction = wall > 0 ? static_cast<double>(ls.gpu_gap_ns) / static_cast<double>(wall) : 0;
  if (!rows) {
    ls.availability = {false, "skipped: the trace has no kernels"};
    return;
  }
  const bool cpu_slower =
      ls.launch_api_count > 0 ? ls.median_launch_ns >= 0.5 * ls.median_kernel_ns : ls.small_kernel_fraction >= 0.5;
  ls.launch_bound = ls.gap_fraction >= 0.10 && cpu_slower;
}

}  // namespace scalescope::analyze
