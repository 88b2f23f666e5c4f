#pragma once
// Kernel launch overhead: launch calls against kernel times and the GPU's gaps.

#include <cstdint>

#include "analyze/availability.hpp"

namespace scalescope::analyze {

struct LaunchStats {
  Availability availability;
  int64_t kernel_count = 0;
  int64_t kernel_ns = 0;  // sum of kernel durations
  int64_t launch_api_count = 0;
  int64_t launch_api_ns = 0;  // CPU time in cudaLaunchKernel & co
  double median_kernel_ns = 0;
  double median_launch_ns = 0;
  int64_t gpu_gap_ns = 0;  // idle time between kernels inside busy stretches (gaps < 1 ms)
  int64_t gap_count = 0;
  double small_kernel_fraction = 0;  // kernels shorter than 10 us
  bool launch_bound = false;         // median launch >= median kernel and gaps >= 10% of window
  double gap_fraction = 0;           // gpu_gap_ns / window wall
};

namespace detail {

// The figures derived from the sums over one window (the sums: window_figures.cpp,
// stream_sweep.cpp); `rows`: whether the trace has rows of the tables read, else skipped.
// Its counts, sums, gaps and medians set; `small`: kernels under kSmallKernelNs.
void finish_launch(LaunchStats& ls, int64_t small, int64_t wall, bool rows);

}  // namespace detail
}  // namespace scalescope::analyze
