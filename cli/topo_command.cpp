// scalescope topo: what scalescope knows of this host (CPUs, NUMA nodes, GPUs
// on PCI with their NUMA nodes, this process's affinity and memory policy).
// Works without a GPU or driver: everything comes from /sys and the kernel.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/usage_error.hpp"
#include "collect/host_facts.hpp"
#include "report/table.hpp"
#include "base/error.hpp"
#include <fmt/format.h>

namespace scalescope::cli {

void add_topo_command(CLI::App& app, int& exit_code) {
  auto format = std::make_shared<std::string>("table");
  auto sys_root = std::make_shared<std::string>("/sys");
  auto* cmd = app.add_subcommand("topo", "this host's CPUs, NUMA nodes and GPUs, and this process's affinity");
  cmd->add_option("--format", *format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("--sys-root", *sys_root, "read sysfs from here (for captured /sys trees)");
  cmd->callback([format, sys_root, &exit_code] {
    using report::Table;
    std::error_code ec;
    if (!std::filesystem::is_directory(*sys_root, ec))
      fail_usage("--sys-root {}: {}", *sys_root,
                 std::filesystem::exists(*sys_root, ec) ? "not a directory" : "no such directory");
    auto node_of_cpu = collect::read_cpu_numa_nodes(*sys_root);
    auto affinity = collect::read_cpu_affinity();
    std::map<int32_t, std::vector<uint32_t>> cpus_of_node, allowed_of_node;
    for (uint32_t c = 0; c < node_of_cpu.size(); ++c)
      if (node_of_cpu[c] >= 0) cpus_of_node[node_of_cpu[c]].push_back(c);
    for (uint32_t c : affinity) allowed_of_node[c < node_of_cpu.size() ? node_of_cpu[c] : -1].push_back(c);

    Table host("Host", {"hostname", "cpus_online", "numa_nodes", "gpus", "cpus_allowed", "memory_policy"});
    auto gpus = collect::read_pci_gpus(*sys_root);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    host.add_row({collect::read_hostname(), int64_t{online}, static_cast<int64_t>(cpus_of_node.size()),
                  static_cast<int64_t>(gpus.size()), collect::format_cpu_list(affinity),
                  collect::read_memory_policy()});
    if (cpus_of_node.empty()) host.add_note("no NUMA information under " + *sys_root + "/devices/system/node");

    Table numa("NUMA nodes", {"node", "cpus", "cpus_allowed_here", "gpus"});
    for (const auto& [node, cpus] : cpus_of_node) {
      int64_t n_gpus = 0;
      for (const auto& g : gpus) n_gpus += g.numa_node == node;
      auto allowed = allowed_of_node.find(node);
      numa.add_row({int64_t{node}, collect::format_cpu_list(cpus),
                    allowed == allowed_of_node.end() ? std::string() : collect::format_cpu_list(allowed->second),
                    n_gpus});
    }

    Table gpu_table("NVIDIA GPUs (PCI)", {"pci_bus_id", "pci_device_id", "numa_node", "numa_node_cpus"});
    for (const auto& g : gpus) {
      auto it = cpus_of_node.find(g.numa_node);
      gpu_table.add_row({g.bus_id, fmt::format("0x{:04x}", g.device_id), int64_t{g.numa_node},
                         it == cpus_of_node.end() ? std::string() : collect::format_cpu_list(it->second)});
    }
    if (gpus.empty()) gpu_table.add_note("no NVIDIA GPU (vendor 0x10de) under " + *sys_root + "/bus/pci/devices");
    else gpu_table.add_note("numa_node -1: the platform does not report one (single-node host or VM)");

    report::print_tables(std::cout, "topo", {host, numa, gpu_table}, *report::parse_output_format(*format));
    exit_code = 0;
  });
}

}  // namespace scalescope::cli
