#pragma once
// Checks a profiled run against what is known about it: the ground-truth
// program's exact counts (ground_truth_spec.hpp), or a DDP job (every rank
// traced with NCCL collectives, NVML counters on the node). Pure functions of
// the loaded traces, so they are tested here on synthetic traces.

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace scalescope::collect {

struct GpuCheck {
  std::string name;
  bool pass = false;
  std::string detail;  // "expected 100, got 100"
};

std::vector<GpuCheck> check_ground_truth(const std::vector<trace::Trace>& traces);
// world_size: the number of ranks the job had.
std::vector<GpuCheck> check_ddp(const std::vector<trace::Trace>& traces, int world_size);

}  // namespace scalescope::collect
