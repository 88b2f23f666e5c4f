#pragma once
// Input starvation: GPU time lost waiting for host-to-device input at each iteration's start.

#include <utility>
#include <cstdint>

#include "analyze/availability.hpp"
#include "analyze/iterations.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct InputStats {
  Availability availability;
  int64_t iterations = 0;
  int64_t starved_iterations = 0;  // iterations whose first compute waited behind an HtoD copy
  int64_t starvation_ns = 0;       // GPU idle from iteration start to first compute, while waiting for input
  int64_t compute_ns = 0;
  double fraction = 0;  // starvation / summed iteration time
};

namespace detail {

// The first and last times input starvation counts in: the iterations in the
// window, else the window [ws, we].
std::pair<trace::Timestamp, trace::Timestamp> input_span(const IterationStats& its, trace::Timestamp ws,
                                                         trace::Timestamp we);
// Its starvation sums set; any_htod: a host-to-device copy lies in the window.
void finish_input(InputStats& in, const IterationStats& its, trace::Timestamp ws, trace::Timestamp we,
                  bool any_htod, int64_t compute_ns);

}  // namespace detail
}  // namespace scalescope::analyze
