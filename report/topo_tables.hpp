#pragma once
// The tables and the JSON of `scalescope topo`, from the host's topology as
// collect/ reads it: the host, its NUMA nodes, and the NVIDIA GPUs on PCI.
//
//   report::print_tables(std::cout, "topo", report::topo_tables(collect::read_host_topology("/sys"), "/sys"), format);

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.hpp"

namespace scalescope::collect {
struct HostTopology;
}

namespace scalescope::report {

// sys_root: where the topology was read (named in the notes that say what
// it lacks).
std::vector<Table> topo_tables(const collect::HostTopology& host, const std::string& sys_root);

// The same facts typed, CPUs as lists of numbers: {"sys_root", "hostname",
// "cpus_online", "cpus_allowed", "memory_policy", "numa_nodes": [{"node",
// "cpus", "cpus_allowed_here", "gpus"}], "gpus": [{"pci_bus_id",
// "pci_device_id", "numa_node" (null: the platform does not report one),
// "numa_node_cpus"}]}.
nlohmann::json topo_json(const collect::HostTopology& host, const std::string& sys_root);

}  // namespace scalescope::report
