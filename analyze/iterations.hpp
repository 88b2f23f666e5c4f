#pragma once
// The training iterations of a rank (iterations.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/availability.hpp"
#include "analyze/options.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct Iteration {
  trace::Timestamp start = 0, end = 0;
  bool warmup = false;
};

struct IterationStats {
  Availability availability;
  std::string source;                 // "nvtx:ProfilerStep#", "range:<name>", "detected:<pattern>"
  std::vector<Iteration> iterations;  // in the window, in time order
  // The number of iterations[0] among all detected iterations: what
  // --window itA:itB counts (a step begun before the trace's first event is
  // one of those, not of this list).
  int64_t first_number = 0;
  int64_t count = 0;
  int64_t warmup_count = 0;
  double median_ns = 0, p95_ns = 0, mean_ns = 0, cv = 0;          // all iterations
  double steady_median_ns = 0, steady_p95_ns = 0, steady_cv = 0;  // without warm-up
};

// analyze_rank's iterations (attribution left out).
IterationStats find_iterations(const trace::Trace& trace, const Options& options);

}  // namespace scalescope::analyze
