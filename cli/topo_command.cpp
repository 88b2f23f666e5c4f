// scalescope topo: what scalescope knows of this host (CPUs, NUMA nodes, GPUs
// on PCI with their NUMA nodes, this process's affinity and memory policy).
// Works without a GPU or driver: everything comes from /sys and the kernel.
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/usage_error.hpp"
#include "cli/output_format_option.hpp"
#include "collect/host_facts.hpp"
#include "report/json_envelope.hpp"
#include "report/table.hpp"
#include "report/topo_tables.hpp"

namespace scalescope::cli {

void add_topo_command(CLI::App& app, int& /*exit_code*/) {
  auto format = std::make_shared<report::OutputFormat>(report::OutputFormat::kTable);
  auto sys_root = std::make_shared<std::string>("/sys");
  auto* cmd = app.add_subcommand("topo", "this host's CPUs, NUMA nodes and GPUs, and this process's affinity");
  add_output_format(cmd, *format, "how to print the host's facts");
  cmd->add_option("--sys-root", *sys_root, "read sysfs from here (for captured /sys trees)");
  cmd->callback([format, sys_root] {
    std::error_code ec;
    if (!std::filesystem::is_directory(*sys_root, ec))
      fail_usage("--sys-root {}: {}", *sys_root,
                 std::filesystem::exists(*sys_root, ec) ? "not a directory" : "no such directory");
    const collect::HostTopology host = collect::read_host_topology(*sys_root);
    const auto output = *format;
    if (output == report::OutputFormat::kJson)  // typed: the host's facts, CPUs as numbers
      std::cout << report::json_text(report::json_envelope("topo", report::topo_json(host, *sys_root)), 2) << "\n";
    else report::print_tables(std::cout, "topo", report::topo_tables(host, *sys_root), output);
  });
}

}  // namespace scalescope::cli
