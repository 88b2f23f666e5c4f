#pragma once
// Input starvation: GPU time lost waiting for host-to-device input at each iteration's start.

#include <cstdint>

#include "analyze/availability.hpp"

namespace scalescope::analyze {

struct InputStats {
  Availability availability;
  int64_t iterations = 0;
  int64_t starved_iterations = 0;  // iterations whose first compute waited behind an HtoD copy
  int64_t starvation_ns = 0;       // GPU idle from iteration start to first compute, while waiting for input
  int64_t compute_ns = 0;
  double fraction = 0;  // starvation / summed iteration time
};

}  // namespace scalescope::analyze
