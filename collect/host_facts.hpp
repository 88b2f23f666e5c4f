#pragma once
// Host facts of one process: who it is (hostname, pid, rank from the launcher's
// environment), where it may run (CPU affinity, NUMA node of each CPU and GPU,
// memory policy) and where its pages actually sit (/proc/self/numa_maps).
// Every parser is a pure function over text so that it is tested on captured
// /proc and /sys files; the read_* functions only fetch the text.
//
//   auto pages = collect::parse_numa_maps(text, 4096);

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/launcher.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

using trace::env_int;
using trace::Environment;

// The process environment as a map (for the rank and option parsing).
Environment current_environment();

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Throws scalescope::Error on bad text.
std::vector<uint32_t> parse_cpu_list(std::string_view text);

// Sums the N<node>=<pages> fields of numa_maps text into bytes per node.
// Lines with kernelpagesize_kB=<k> (huge pages) count k KiB per page; others
// count base_page_bytes. Malformed fields are skipped (the kernel's format is
// stable, but a torn read at process exit must not throw).
std::vector<trace::NumaPages> parse_numa_maps(std::string_view text, uint64_t base_page_bytes);

// NUMA node of each CPU from /sys/devices/system/node/node<N>/cpulist files
// under sys_root (index = cpu id, -1 unknown).
std::vector<int32_t> read_cpu_numa_nodes(const std::string& sys_root = "/sys");

struct PciGpu {
  std::string bus_id;      // "0000:19:00.0"
  uint32_t device_id = 0;  // PCI device id (0x2335 = H200)
  int32_t numa_node = -1;
};

// NVIDIA GPUs (vendor 0x10de, display/3D class) under sys_root/bus/pci/devices.
std::vector<PciGpu> read_pci_gpus(const std::string& sys_root = "/sys");

// numa_node of one PCI device; accepts CUDA's "00000000:19:00.0" spelling too.
int32_t read_pci_numa_node(std::string_view bus_id, const std::string& sys_root = "/sys");

// CUDA spells bus ids with an 8-digit domain; sysfs with 4, lower case.
std::string normalize_pci_bus_id(std::string_view bus_id);

// The calling thread's memory policy as "default", "bind:0", "interleave:0-1",
// "preferred:1", "local" (get_mempolicy(2)).
std::string read_memory_policy();
// The pure part of it: mode as get_mempolicy returns it and the node mask.
std::string format_memory_policy(int mode, const std::vector<uint32_t>& nodes);

// {0,1,2,5} -> "0-2,5".
std::string format_cpu_list(const std::vector<uint32_t>& cpus);

std::vector<uint32_t> read_cpu_affinity();
std::string read_hostname();

// What `scalescope topo` shows of this host: its CPUs, their NUMA nodes, the
// NVIDIA GPUs on PCI, and this process's affinity and memory policy.
struct HostTopology {
  std::string hostname;
  int64_t cpus_online = 0;
  std::vector<int32_t> node_of_cpu;  // read_cpu_numa_nodes
  std::vector<uint32_t> cpus_allowed;
  std::vector<PciGpu> gpus;
  std::string memory_policy;
};
// sysfs from sys_root (a captured /sys tree in tests); the rest from this process.
HostTopology read_host_topology(const std::string& sys_root = "/sys");
std::string read_command_line(const std::string& proc_self = "/proc/self");
std::optional<std::string> read_text_file(const std::string& path, size_t max_bytes = 64u << 20);

// Fills the host-fact fields of meta (hostname, pid, rank, affinity, NUMA,
// memory policy, pages at start) for the calling process.
void fill_host_facts(trace::Metadata& meta, const Environment& env);

}  // namespace scalescope::collect
