#pragma once
// GPU idle time split by host-side cause (IdleCover) and by what ended each gap (IdleBreakdown).

#include <array>
#include <cstdint>

#include "analyze/availability.hpp"

namespace scalescope::analyze {

// GPU idle time split by the host-side explanations that cover it, so that
// savings carved out of the same idle time are combined over the timeline
// (the union of their intervals), not summed. by_causes[set] is the idle time
// covered by exactly that set of IdleCause bits (0: by none).
enum IdleCause : unsigned {
  kIdleLaunchGap = 1,  // a gap under 1 ms between GPU activities (launch-bound's gaps)
  kIdleHostSync = 2,   // the host inside a synchronize call (host-sync)
  kIdleInput = 4,      // a gap that ends with a host-to-device copy (input-starvation's gaps)
  kIdleMpi = 8,        // the host inside an MPI_* call (host-communication)
};
inline constexpr unsigned kIdleCauseSets = 16;
struct IdleCover {
  Availability availability;
  int64_t span_ns = 0;  // the iterations' span (the window without iterations)
  int64_t idle_ns = 0;  // GPU idle inside it: no kernel, copy, set or collective
  std::array<int64_t, kIdleCauseSets> by_causes{};
  // Idle time covered by at least one cause of `causes` (a set of IdleCause bits).
  int64_t covered_ns(unsigned causes) const;
};

// GPU idle time inside the iterations, split the way Holistic Trace
// Analysis' idle-time breakdown splits it (docs/idle-time.md, "Idle time
// breakdown"). Each idle gap of the GPU (no kernel, copy, set or collective
// on any stream) is judged by the activity that ends it: host wait when that
// activity's launch call began after the gap began (the GPU waited for the
// host), else kernel wait when the gap is shorter than the threshold (the
// launch was queued: the cost of going from one kernel to the next), else
// other. host_wait_ns + kernel_wait_ns + other_ns == idle_ns ==
// IdleCover::idle_ns.
inline constexpr int64_t kKernelWaitThresholdNs = 30'000;  // HTA's consecutive_kernel_delay (30 us)
struct IdleBreakdown {
  Availability availability;
  int64_t threshold_ns = kKernelWaitThresholdNs;
  int64_t idle_ns = 0;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  int64_t host_wait_gaps = 0, kernel_wait_gaps = 0, other_gaps = 0;
  int64_t unlaunched_gaps = 0;  // gaps ended by an activity with no launch call in the trace (judged by length)
};

}  // namespace scalescope::analyze
