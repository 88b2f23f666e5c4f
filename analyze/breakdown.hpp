#pragma once
// Where a rank's wall time went: compute, exposed communication, copies, idle; per-stream busy time.

#include <cstdint>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct StreamUtilization {
  uint32_t device = 0, stream = 0;
  int64_t busy_ns = 0;  // union of this stream's GPU activity inside the window
  double fraction = 0;  // busy / window wall time
};

// Compute + exposed communication + copies/sets + idle == wall_ns exactly.
// Priority where activities overlap: compute, then communication, then copies.
struct RankBreakdown {
  Availability availability;
  trace::Timestamp window_start = 0, window_end = 0;
  int64_t wall_ns = 0;
  int64_t compute_ns = 0;
  int64_t exposed_communication_ns = 0;  // communication not under any compute
  int64_t copy_ns = 0;                   // copies, sets and memory kernels not under compute/communication
  int64_t idle_ns = 0;
  int64_t communication_ns = 0;  // all communication time (union)
  int64_t overlap_ns = 0;        // communication hidden under compute
  double overlap_fraction = 0;   // overlap / communication (0 when none)
  std::vector<StreamUtilization> streams;
};

namespace detail {

// The figures derived from the sums over one window (the sums: window_figures.cpp,
// stream_sweep.cpp); `rows`: whether the trace has rows of the tables read, else skipped.
// Its window, compute, communication, overlap and copy sums set.
void finish_breakdown(RankBreakdown& b, bool rows);

}  // namespace detail
}  // namespace scalescope::analyze
