#pragma once
// Which processes of a run are launchers, not ranks. torchrun's agent (like
// other launchers that load CUDA) is traced by the collector, but it has no
// rank and runs no GPU work; every command leaves it out by this one rule.
//
//   std::vector<Trace> ranks = load_traces("run.ssrun");
//   std::vector<std::string> left_out = drop_launchers(ranks);  // {"no rank (host pid 812)"}

#include <cstdint>
#include <string>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// Kernels, copies, sets or NCCL calls recorded.
bool has_gpu_activity(const Trace& t);

// The rule: no rank and no GPU work while another process of the run has some.
// (When no process has GPU work, nothing can tell a launcher apart: all stay.)
bool is_launcher(int32_t rank, bool gpu_activity, bool any_process_has_gpu_activity);

// Removes the launchers from `traces`, keeping the order of the rest, and
// returns a label for each one removed.
std::vector<std::string> drop_launchers(std::vector<Trace>& traces);

// The same rule without moving a trace: the traces that are not launchers,
// in order, and a label for each launcher in `left_out`.
std::vector<const Trace*> ranks_of(const std::vector<Trace>& traces, std::vector<std::string>& left_out);

}  // namespace scalescope::trace
