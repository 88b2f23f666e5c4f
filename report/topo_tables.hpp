#pragma once
// The tables of `scalescope topo`, from the host's topology as collect/ reads
// it: the host, its NUMA nodes, and the NVIDIA GPUs on PCI.
//
//   report::print_tables(std::cout, "topo", report::topo_tables(collect::read_host_topology("/sys"), "/sys"), format);

#include <string>
#include <vector>

#include "report/table.hpp"

namespace scalescope::collect {
struct HostTopology;
}

namespace scalescope::report {

// sys_root: where the topology was read (named in the notes that say what
// it lacks).
std::vector<Table> topo_tables(const collect::HostTopology& host, const std::string& sys_root);

}  // namespace scalescope::report
