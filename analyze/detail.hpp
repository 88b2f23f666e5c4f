#pragma once
// Private helpers shared by the analysis files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/analyze.hpp"
#include "analyze/intervals.hpp"
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

// The working sets of one window's analysis (analyze.cpp): interval lists
// and duration lists as long as the trace's tables. Kept between the whole
// and the steady pass of a rank, and between the ranks one thread of
// analyze_path analyses, so that each is touched fresh once: on these VMs a
// fresh page costs more than the work done on it (issue 20). Cleared, never
// shrunk; its memory is bounded by the largest rank it served.
struct StreamSlot {
  size_t begin = 0, end = 0;  // one stream's spans: streams[begin, end)
};
struct WindowScratch {
  std::vector<Interval> compute, comm, copy, merge;
  std::vector<Interval> streams;  // per-stream slices, then compute | comm
  std::unordered_map<uint64_t, StreamSlot> slots;
  std::vector<int64_t> kernel_durations;  // then the launch calls' durations
};

// analyze_rank with the caller's scratch (analyze_path: one per thread).
RankAnalysis analyze_rank(const trace::Trace& trace, const Options& options, WindowScratch& scratch);

// The host sampler's tables over [ws, we] and per iteration (host_threads.cpp).
HostStats analyze_host(const trace::Trace& t, trace::Timestamp ws, trace::Timestamp we,
                       const std::vector<Iteration>& iterations);

}  // namespace scalescope::analyze::detail
