#include "collect/host_facts.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/error.hpp"
#include "base/format_units.hpp"
#include "base/text_input.hpp"

extern char** environ;

namespace scalescope::collect {
namespace {

using trace::trim;

bool parse_u64(std::string_view s, uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

Environment current_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

std::vector<uint32_t> parse_cpu_list(std::string_view text) {
  std::vector<uint32_t> cpus;
  text = trim(text);
  if (text.empty()) return cpus;
  for (std::string_view piece : trace::split(text, ',')) {
    const std::string_view item = trim(piece);
    uint64_t lo = 0, hi = 0;
    size_t dash = item.find('-');
    bool ok = dash == std::string_view::npos
                  ? parse_u64(item, lo) && (hi = lo, true)
                  : parse_u64(item.substr(0, dash), lo) && parse_u64(item.substr(dash + 1), hi);
    // 1<<20 CPUs bounds memory on garbage input.
    if (!ok || hi < lo || hi >= (1u << 20)) fail("bad CPU list '{}': expected e.g. 0-3,8", text.substr(0, 64));
    if (cpus.size() + (hi - lo) >= (1u << 20)) fail("bad CPU list '{}': more than 1048576 CPUs", text.substr(0, 64));
    for (uint64_t c = lo; c <= hi; ++c) cpus.push_back(static_cast<uint32_t>(c));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<uint32_t>& cpus) { return trace::integer_ranges(cpus, ","); }

std::vector<trace::NumaPages> parse_numa_maps(std::string_view text, uint64_t base_page_bytes) {
  std::map<int32_t, uint64_t> bytes;
  for (std::string_view line : trace::split(text, '\n')) {
    uint64_t page = base_page_bytes;
    std::vector<std::pair<int32_t, uint64_t>> counts;
    for (std::string_view field : trace::split(line, ' ')) {
      uint64_t v = 0;
      if (field.size() > 1 && field[0] == 'N' && std::isdigit(static_cast<unsigned char>(field[1]))) {
        size_t eq = field.find('=');
        uint64_t node = 0;
        if (eq != std::string_view::npos && parse_u64(field.substr(1, eq - 1), node) &&
            parse_u64(field.substr(eq + 1), v) && node < 4096)
          counts.emplace_back(static_cast<int32_t>(node), v);
      } else if (field.starts_with("kernelpagesize_kB=") &&
                 parse_u64(field.substr(sizeof("kernelpagesize_kB=") - 1), v) && v > 0) {
        page = v * 1024;
      }
    }
    for (auto [node, n] : counts) bytes[node] += n * page;
  }
  std::vector<trace::NumaPages> out;
  for (auto [node, b] : bytes) out.push_back({node, b});
  return out;
}

std::optional<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out;
  char buf[65536];
  while (in && out.size() < max_bytes) {
    in.read(buf, static_cast<std::streamsize>(std::min(sizeof(buf), max_bytes - out.size())));
    out.append(buf, static_cast<size_t>(in.gcount()));
  }
  return out;
}

std::vector<int32_t> read_cpu_numa_nodes(const std::string& sys_root) {
  std::vector<int32_t> node_of_cpu;
  std::error_code ec;
  std::filesystem::directory_iterator it(sys_root + "/devices/system/node", ec);
  if (ec) return node_of_cpu;
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    uint64_t node = 0;
    if (!name.starts_with("node") || !parse_u64(std::string_view(name).substr(4), node)) continue;
    auto text = read_text_file(entry.path().string() + "/cpulist", 1 << 16);
    if (!text) continue;
    std::vector<uint32_t> cpus;
    try {
      cpus = parse_cpu_list(*text);
    } catch (const Error&) {
      continue;  // one unreadable node leaves its CPUs unknown
    }
    for (uint32_t c : cpus) {
      if (c >= node_of_cpu.size()) node_of_cpu.resize(c + 1, -1);
      node_of_cpu[c] = static_cast<int32_t>(node);
    }
  }
  return node_of_cpu;
}

std::string normalize_pci_bus_id(std::string_view bus_id) {
  std::string id(trim(bus_id));
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "00000000:19:00.0" -> "0000:19:00.0"
  auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

int32_t read_pci_numa_node(std::string_view bus_id, const std::string& sys_root) {
  auto text = read_text_file(sys_root + "/bus/pci/devices/" + normalize_pci_bus_id(bus_id) + "/numa_node", 64);
  if (!text) return -1;
  int32_t node = -1;
  auto t = trim(*text);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), node);
  return ec == std::errc() ? node : -1;
}

std::vector<PciGpu> read_pci_gpus(const std::string& sys_root) {
  std::vector<PciGpu> gpus;
  std::error_code ec;
  std::filesystem::directory_iterator it(sys_root + "/bus/pci/devices", ec);
  if (ec) return gpus;
  for (const auto& entry : it) {
    std::string dir = entry.path().string();
    auto vendor = read_text_file(dir + "/vendor", 64);
    auto cls = read_text_file(dir + "/class", 64);
    if (!vendor || trim(*vendor) != "0x10de" || !cls) continue;
    // 0x0300xx VGA, 0x0302xx 3D controller (data-centre GPUs); skips NVIDIA audio and bridges.
    auto c = trim(*cls);
    if (!c.starts_with("0x0300") && !c.starts_with("0x0302")) continue;
    PciGpu gpu;
    gpu.bus_id = entry.path().filename().string();
    if (auto dev = read_text_file(dir + "/device", 64)) {
      auto d = trim(*dev);
      if (d.starts_with("0x")) d.remove_prefix(2);
      std::from_chars(d.data(), d.data() + d.size(), gpu.device_id, 16);
    }
    gpu.numa_node = read_pci_numa_node(gpu.bus_id, sys_root);
    gpus.push_back(std::move(gpu));
  }
  std::sort(gpus.begin(), gpus.end(), [](const PciGpu& a, const PciGpu& b) { return a.bus_id < b.bus_id; });
  return gpus;
}

std::string format_memory_policy(int mode, const std::vector<uint32_t>& nodes) {
  // Values of MPOL_* from <linux/mempolicy.h>; mode flags live in the high bits.
  constexpr int kModeFlags = (1 << 15) | (1 << 14) | (1 << 13);  // MPOL_F_STATIC/RELATIVE_NODES, MPOL_F_NUMA_BALANCING
  std::string list = format_cpu_list(nodes);
  switch (mode & ~kModeFlags) {
    case 0: return "default";
    case 1: return nodes.empty() ? "local" : "preferred:" + list;
    case 2: return "bind:" + list;
    case 3: return "interleave:" + list;
    case 4: return "local";
    case 5: return "preferred_many:" + list;
    case 6: return "weighted_interleave:" + list;
  }
  return "unknown(" + std::to_string(mode) + ")";
}

std::string read_memory_policy() {
  // The raw syscall keeps the collector free of a libnuma dependency on the GPU hosts.
  constexpr unsigned long kMaxNodes = 1024;
  int mode = 0;
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, kMaxNodes, nullptr, 0UL) != 0) return "unknown";
  std::vector<uint32_t> nodes;
  for (uint32_t n = 0; n < kMaxNodes; ++n)
    if (mask[n / (8 * sizeof(unsigned long))] & (1UL << (n % (8 * sizeof(unsigned long))))) nodes.push_back(n);
  return format_memory_policy(mode, nodes);
}

std::vector<uint32_t> read_cpu_affinity() {
  std::vector<uint32_t> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (uint32_t c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::string read_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}

HostTopology read_host_topology(const std::string& sys_root) {
  HostTopology t;
  t.hostname = read_hostname();
  t.cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
  t.node_of_cpu = read_cpu_numa_nodes(sys_root);
  t.cpus_allowed = read_cpu_affinity();
  t.gpus = read_pci_gpus(sys_root);
  t.memory_policy = read_memory_policy();
  return t;
}

std::string read_command_line(const std::string& proc_self) {
  auto text = read_text_file(proc_self + "/cmdline", 1 << 16);
  if (!text) return {};
  std::string out = *text;
  while (!out.empty() && out.back() == '\0') out.pop_back();
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

void fill_host_facts(trace::Metadata& meta, const Environment& env) {
  meta.hostname = read_hostname();
  meta.pid = static_cast<uint32_t>(getpid());
  const trace::LauncherRank r = trace::rank_from_environment(env);
  meta.rank = r.rank;
  meta.local_rank = r.local_rank;
  meta.world_size = r.world_size;
  meta.launcher = r.launcher;
  meta.command_line = read_command_line();
  meta.cpu_affinity = read_cpu_affinity();
  meta.cpu_numa_node = read_cpu_numa_nodes();
  meta.memory_policy = read_memory_policy();
  if (auto maps = read_text_file("/proc/self/numa_maps"))
    meta.pages_at_start = parse_numa_maps(*maps, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

}  // namespace scalescope::collect
