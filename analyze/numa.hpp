#pragma once
// NUMA placement of the process's CPUs and memory against the GPU's node.

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct NumaStats {
  Availability availability;
  int32_t gpu_node = -1;
  std::vector<int32_t> cpu_nodes;  // nodes of the CPUs the process may run on
  std::vector<trace::NumaPages> memory_nodes;
  std::string memory_policy;
  bool cpus_cross_node = false;       // may run on CPUs off the GPU's node
  double remote_memory_fraction = 0;  // share of pages off the GPU's node
};

namespace detail {

// NUMA placement of the process's CPUs and memory against the GPU's node.
NumaStats analyze_numa(const trace::Metadata& meta);

}  // namespace detail
}  // namespace scalescope::analyze
