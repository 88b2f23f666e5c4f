// NUMA placement of a rank, from its trace's host facts.
#include "analyze/numa.hpp"

#include <algorithm>
#include <set>

namespace scalescope::analyze {

// NUMA placement of the process's CPUs and memory against the GPU's node.
NumaStats detail::analyze_numa(const trace::Metadata& meta) {
  NumaStats nu;
  int32_t gpu_node = -1;
  for (const auto& d : meta.devices)
    if (d.numa_node >= 0) {
      gpu_node = d.numa_node;
      break;
    }
  if (meta.cpu_affinity.empty() || meta.cpu_numa_node.empty()) {
    nu.availability = {false, meta.source == "kineto"
                                  ? "skipped: the trace has no host facts (imported from PyTorch profiler)"
                                  : "skipped: the trace has no CPU affinity or CPU NUMA map"};
    return nu;
  }
  if (gpu_node < 0) {
    nu.availability = {false, "skipped: the NUMA node of the GPU is unknown"};
    return nu;
  }
  nu.gpu_node = gpu_node;
  std::set<int32_t> nodes;
  for (uint32_t cpu : meta.cpu_affinity)
    if (cpu < meta.cpu_numa_node.size() && meta.cpu_numa_node[cpu] >= 0) nodes.insert(meta.cpu_numa_node[cpu]);
  nu.cpu_nodes.assign(nodes.begin(), nodes.end());
  nu.cpus_cross_node = std::any_of(nodes.begin(), nodes.end(), [&](int32_t n) { return n != gpu_node; });
  nu.memory_nodes = meta.pages_at_end.empty() ? meta.pages_at_start : meta.pages_at_end;
  nu.memory_policy = meta.memory_policy;
  uint64_t all = 0, remote = 0;
  for (const auto& p : nu.memory_nodes) {
    all += p.bytes;
    if (p.node != gpu_node) remote += p.bytes;
  }
  nu.remote_memory_fraction = all > 0 ? static_cast<double>(remote) / static_cast<double>(all) : 0;
  return nu;
}

}  // namespace scalescope::analyze
