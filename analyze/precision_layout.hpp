#pragma once
// Kernel time by precision, and layout conversions (NCHW <-> NHWC).

#include <array>
#include <cstdint>
#include <vector>

#include "analyze/availability.hpp"
#include "analyze/kernel_classifier.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct Options;       // options.hpp
struct RankAnalysis;  // rank_analysis.hpp

struct PrecisionStats {
  Availability availability;
  int64_t kernel_ns = 0;                                                            // all kernel time in the window
  std::array<int64_t, kPrecisionCount> ns{};                                        // indexed by Precision
  double fp64_fraction = 0, fp32_no_tensor_fraction = 0, tensor_core_fraction = 0;  // of kernel_ns
  double tf32_fraction = 0;                                                         // of kernel_ns
  std::vector<KernelSummary> top_fp32;  // biggest FP32 non-tensor-core GEMM/conv kernels
  std::vector<KernelSummary> top_fp64;
};

struct LayoutStats {
  Availability availability;
  int64_t conversion_count = 0;
  int64_t conversion_ns = 0;
  int64_t to_nchw_ns = 0;  // NHWC -> NCHW conversions: data is already channels_last
  double fraction = 0;     // of kernel time in the window
  // Half-precision kernels that exist only for NCHW data (batch norm,
  // depthwise convolution): the NHWC tensor-core path not taken.
  int64_t nchw_half_count = 0;
  int64_t nchw_half_ns = 0;
  double nchw_half_fraction = 0;  // of kernel time in the window
  std::vector<KernelSummary> top_nchw_half;
  std::vector<KernelSummary> top;
};

namespace detail {

// Precision and layout shares from the sums of the kernels in the window
// (r.precision, r.layout), and the top lists from the time per kernel name.
void finish_kernel_tables(bool no_kernels, const trace::StringTable& strings, const Options& o,
                          const std::vector<KernelInfo>& info, const std::vector<int64_t>& ns,
                          const std::vector<int64_t>& count, RankAnalysis& r);

}  // namespace detail
}  // namespace scalescope::analyze
