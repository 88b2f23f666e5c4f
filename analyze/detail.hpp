#pragma once
// Private helpers shared by the analysis files.
#include <string>
#include <utility>
#include <vector>

#include "analyze/analyze.hpp"
#include "trace/quantile.hpp"

namespace scalescope::analyze::detail {

struct Detected {
  std::string source;  // "" when none found
  std::string reason;  // why none were found
  std::vector<Iteration> iterations;
};

// Iterations over the whole trace (no window): NVTX ranges named `range_name`,
// else ProfilerStep#N ranges, else the repeating sequence of annotations,
// collectives or kernels.
Detected detect_iterations(const trace::Trace& trace, const std::string& range_name);

// Fills the statistics of `stats.iterations` (marks warm-up iterations).
void summarize_iterations(IterationStats& stats, double warmup_tolerance);

// Resolves a window against a trace: [start, end] in trace-clock ns.
std::pair<trace::Timestamp, trace::Timestamp> resolve_window(const trace::Trace& trace, const Options& options,
                                                             const Detected& detected);

// The one median and quantile of every part (trace/quantile.hpp).
using trace::median;
using trace::quantile;

// The host sampler's tables over [ws, we] and per iteration (host_threads.cpp).
HostStats analyze_host(const trace::Trace& t, trace::Timestamp ws, trace::Timestamp we,
                       const std::vector<Iteration>& iterations);

}  // namespace scalescope::analyze::detail
