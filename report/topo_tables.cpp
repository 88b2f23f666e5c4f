#include "report/topo_tables.hpp"

#include <map>

#include <fmt/format.h>

#include "collect/host_facts.hpp"

namespace scalescope::report {

std::vector<Table> topo_tables(const collect::HostTopology& host, const std::string& sys_root) {
  // CPUs by NUMA node, and this process's allowed CPUs by node (-1: a CPU of no known node).
  std::map<int32_t, std::vector<uint32_t>> cpus_of_node, allowed_of_node;
  for (uint32_t c = 0; c < host.node_of_cpu.size(); ++c)
    if (host.node_of_cpu[c] >= 0) cpus_of_node[host.node_of_cpu[c]].push_back(c);
  for (uint32_t c : host.cpus_allowed)
    allowed_of_node[c < host.node_of_cpu.size() ? host.node_of_cpu[c] : -1].push_back(c);
  const auto cpus_of = [](const std::map<int32_t, std::vector<uint32_t>>& by_node, int32_t node) {
    const auto it = by_node.find(node);
    return it == by_node.end() ? std::string() : collect::format_cpu_list(it->second);
  };

  Table summary("Host", {"hostname", "cpus_online", "numa_nodes", "gpus", "cpus_allowed", "memory_policy"});
  summary.add_row({host.hostname, host.cpus_online, static_cast<int64_t>(cpus_of_node.size()),
                   static_cast<int64_t>(host.gpus.size()), collect::format_cpu_list(host.cpus_allowed),
                   host.memory_policy});
  if (cpus_of_node.empty()) summary.add_note("no NUMA information under " + sys_root + "/devices/system/node");

  Table numa("NUMA nodes", {"node", "cpus", "cpus_allowed_here", "gpus"});
  for (const auto& [node, cpus] : cpus_of_node) {
    int64_t gpus = 0;
    for (const auto& g : host.gpus) gpus += g.numa_node == node;
    numa.add_row({int64_t{node}, collect::format_cpu_list(cpus), cpus_of(allowed_of_node, node), gpus});
  }

  Table gpus("NVIDIA GPUs (PCI)", {"pci_bus_id", "pci_device_id", "numa_node", "numa_node_cpus"});
  for (const auto& g : host.gpus)
    gpus.add_row({g.bus_id, fmt::format("0x{:04x}", g.device_id), int64_t{g.numa_node}, cpus_of(cpus_of_node, g.numa_node)});
  if (host.gpus.empty()) gpus.add_note("no NVIDIA GPU (vendor 0x10de) under " + sys_root + "/bus/pci/devices");
  else gpus.add_note("numa_node -1: the platform does not report one (single-node host or VM)");
  return {std::move(summary), std::move(numa), std::move(gpus)};
}

}  // namespace scalescope::report
