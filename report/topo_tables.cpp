#include "report/topo_tables.hpp"

#include <map>

#include <fmt/format.h>

#include "base/json_fields.hpp"
#include "collect/host_facts.hpp"

namespace scalescope::report {
namespace {

// The host's CPUs by NUMA node, and this process's allowed CPUs by node
// (-1: a CPU of no known node): what the tables and the JSON both show.
struct CpusByNode {
  std::map<int32_t, std::vector<uint32_t>> cpus, allowed;

  explicit CpusByNode(const collect::HostTopology& host) {
    for (uint32_t c = 0; c < host.node_of_cpu.size(); ++c)
      if (host.node_of_cpu[c] >= 0) cpus[host.node_of_cpu[c]].push_back(c);
    for (uint32_t c : host.cpus_allowed) allowed[c < host.node_of_cpu.size() ? host.node_of_cpu[c] : -1].push_back(c);
  }
  static std::vector<uint32_t> of(const std::map<int32_t, std::vector<uint32_t>>& by_node, int32_t node) {
    const auto it = by_node.find(node);
    return it == by_node.end() ? std::vector<uint32_t>{} : it->second;
  }
  static int64_t gpus_on(const collect::HostTopology& host, int32_t node) {
    int64_t n = 0;
    for (const auto& g : host.gpus) n += g.numa_node == node;
    return n;
  }
};

}  // namespace

std::vector<Table> topo_tables(const collect::HostTopology& host, const std::string& sys_root) {
  const CpusByNode by_node(host);
  Table summary("Host", {"hostname", "cpus_online", "numa_nodes", "gpus", "cpus_allowed", "memory_policy"});
  summary.add_row({host.hostname, host.cpus_online, static_cast<int64_t>(by_node.cpus.size()),
                   static_cast<int64_t>(host.gpus.size()), collect::format_cpu_list(host.cpus_allowed),
                   host.memory_policy});
  if (by_node.cpus.empty()) summary.add_note("no NUMA information under " + sys_root + "/devices/system/node");

  Table numa("NUMA nodes", {"node", "cpus", "cpus_allowed_here", "gpus"});
  for (const auto& [node, cpus] : by_node.cpus)
    numa.add_row({int64_t{node}, collect::format_cpu_list(cpus),
                  collect::format_cpu_list(CpusByNode::of(by_node.allowed, node)), CpusByNode::gpus_on(host, node)});

  Table gpus("NVIDIA GPUs (PCI)", {"pci_bus_id", "pci_device_id", "numa_node", "numa_node_cpus"});
  for (const auto& g : host.gpus)
    gpus.add_row({g.bus_id, fmt::format("0x{:04x}", g.device_id), int64_t{g.numa_node},
                  collect::format_cpu_list(CpusByNode::of(by_node.cpus, g.numa_node))});
  if (host.gpus.empty()) gpus.add_note("no NVIDIA GPU (vendor 0x10de) under " + sys_root + "/bus/pci/devices");
  else gpus.add_note("numa_node -1: the platform does not report one (single-node host or VM)");
  return {std::move(summary), std::move(numa), std::move(gpus)};
}

nlohmann::json topo_json(const collect::HostTopology& host, const std::string& sys_root) {
  const CpusByNode by_node(host);
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [node, cpus] : by_node.cpus)
    nodes.push_back({{"node", node},
                     {"cpus", cpus},
                     {"cpus_allowed_here", CpusByNode::of(by_node.allowed, node)},
                     {"gpus", CpusByNode::gpus_on(host, node)}});
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : host.gpus)
    gpus.push_back({{"pci_bus_id", g.bus_id},
                    {"pci_device_id", g.device_id},
                    {"numa_node", g.numa_node >= 0 ? nlohmann::json(g.numa_node) : nlohmann::json(nullptr)},
                    {"numa_node_cpus", CpusByNode::of(by_node.cpus, g.numa_node)}});
  return json_with(SCALESCOPE_JSON_FIELDS(host, hostname, cpus_online, cpus_allowed, memory_policy),
                   {{"sys_root", sys_root}, {"numa_nodes", std::move(nodes)}, {"gpus", std::move(gpus)}});
}

}  // namespace scalescope::report
