#include "collect/node_facts.hpp"

#include <unistd.h>

#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace scalescope::collect {
namespace {

constexpr size_t kMaxNodeListBytes = 4096;  // a trace's extra facts stay small

// total / per_node when both are known and divide evenly (a homogeneous job).
int32_t nodes_from_sizes(const Environment& env, const char* total, const char* per_node) {
  auto t = env_int(env, total), n = env_int(env, per_node);
  if (!t || !n || *n == 0 || *t % *n != 0) return -1;
  return *t / *n;
}

std::string first_of(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto it = env.find(n); it != env.end() && !it->second.empty()) return it->second;
  return {};
}

}  // namespace

NodeInfo detect_node(const Environment& env) {
  NodeInfo n;
  n.node_list = first_of(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (n.node_list.size() > kMaxNodeListBytes) n.node_list.clear();
  if (env.count("RANK") && env.count("LOCAL_WORLD_SIZE")) {  // torchrun
    n.source = "torchrun";
    n.node_rank = env_int(env, "GROUP_RANK").value_or(-1);
    n.node_count = nodes_from_sizes(env, "WORLD_SIZE", "LOCAL_WORLD_SIZE");
    return n;
  }
  if (env.count("SLURM_NODEID")) {
    n.source = "slurm";
    n.node_rank = env_int(env, "SLURM_NODEID").value_or(-1);
    n.node_count = env_int(env, "SLURM_STEP_NUM_NODES").value_or(env_int(env, "SLURM_NNODES").value_or(-1));
    return n;
  }
  if (env.count("OMPI_COMM_WORLD_RANK")) {
    n.source = "mpi";
    n.node_count = nodes_from_sizes(env, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
    return n;
  }
  if (env.count("PMI_RANK")) {
    n.source = "pmi";
    n.node_count = nodes_from_sizes(env, "PMI_SIZE", "MPI_LOCALNRANKS");
  }
  return n;
}

void add_node_facts(trace::Metadata& meta, const NodeInfo& node) {
  if (node.node_rank >= 0) meta.extra["node_rank"] = std::to_string(node.node_rank);
  if (node.node_count >= 0) meta.extra["node_count"] = std::to_string(node.node_count);
  if (!node.node_list.empty()) meta.extra["node_list"] = node.node_list;
}

nlohmann::json node_facts_json(const NodeInfo& node) {
  nlohmann::json h;
  h["kind"] = "node_facts";
  h["hostname"] = read_hostname();
  h["node_rank"] = node.node_rank;
  h["node_count"] = node.node_count;
  h["node_list"] = node.node_list;
  h["node_source"] = node.source;
  h["cpus_allowed"] = format_cpu_list(read_cpu_affinity());
  h["memory_policy"] = read_memory_policy();
  auto nodes = read_cpu_numa_nodes();
  std::map<int32_t, std::vector<uint32_t>> cpus_of_node;
  for (uint32_t c = 0; c < nodes.size(); ++c)
    if (nodes[c] >= 0) cpus_of_node[nodes[c]].push_back(c);
  nlohmann::json numa = nlohmann::json::array();
  for (auto& [id, cpus] : cpus_of_node) numa.push_back({{"node", id}, {"cpus", format_cpu_list(cpus)}});
  h["numa_nodes"] = numa;
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : read_pci_gpus())
    gpus.push_back({{"pci_bus_id", g.bus_id},
                    {"pci_device_id", fmt::format("0x{:04x}", g.device_id)},
                    {"numa_node", g.numa_node}});
  h["gpus"] = gpus;
  return h;
}

bool write_node_facts(const std::filesystem::path& run_dir, const NodeInfo& node) {
  nlohmann::json j = node_facts_json(node);
  j["written_by_pid"] = static_cast<int64_t>(getpid());
  const std::filesystem::path path = run_dir / ("node-" + j["hostname"].get<std::string>() + ".json");
  std::filesystem::path tmp = path;
  tmp += fmt::format(".{}.tmp", getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(1) << '\n';
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

bool is_node_facts(const nlohmann::json& json) {
  return json.is_object() && json.value("kind", std::string()) == "node_facts";
}

}  // namespace scalescope::collect
