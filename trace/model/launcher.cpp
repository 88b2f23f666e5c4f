#include "trace/model/launcher.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace scalescope::trace {

std::optional<int32_t> env_int(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  const std::string& v = it->second;
  int32_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < 0) return std::nullopt;
  return out;
}

LauncherRank rank_from_environment(const Environment& env) {
  struct Launcher {
    const char* name;
    const char* rank;
    const char* local_rank;
    const char* size;
  };
  static constexpr Launcher kLaunchers[] = {  // innermost first
      {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
      {"mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
  };
  LauncherRank info;
  for (const auto& l : kLaunchers) {
    auto rank = env_int(env, l.rank);
    if (!rank) continue;
    info.launcher = l.name;
    info.rank_variable = l.rank;
    info.rank = *rank;
    info.local_rank = env_int(env, l.local_rank).value_or(-1);
    info.world_size = env_int(env, l.size).value_or(-1);
    // Intel MPI / MPICH hydra spell the local rank differently.
    if (info.local_rank < 0 && std::string_view(l.name) == "pmi")
      info.local_rank = env_int(env, "PALS_LOCAL_RANKID").value_or(-1);
    return info;
  }
  // LOCAL_RANK alone (some launchers) still selects the node's NVML sampler.
  info.local_rank = env_int(env, "LOCAL_RANK").value_or(-1);
  return info;
}

bool has_gpu_activity(const Trace& t) {
  return t.kernels.size() + t.memcpys.size() + t.memsets.size() + t.nccl.size() > 0;
}

bool is_launcher(int32_t rank, bool gpu_activity, bool any_process_has_gpu_activity) {
  return any_process_has_gpu_activity && rank < 0 && !gpu_activity;
}

std::vector<const Trace*> ranks_of(const std::vector<Trace>& traces, std::vector<std::string>& left_out) {
  const bool any_gpu = std::any_of(traces.begin(), traces.end(), has_gpu_activity);
  std::vector<const Trace*> kept;
  kept.reserve(traces.size());
  for (const Trace& t : traces) {
    if (is_launcher(t.meta.rank, has_gpu_activity(t), any_gpu)) {
      left_out.push_back(t.meta.hostname.empty() && t.meta.pid == 0
                             ? std::string("no rank")
                             : fmt::format("no rank ({} pid {})", t.meta.hostname, t.meta.pid));
      continue;
    }
    kept.push_back(&t);
  }
  return kept;
}

std::vector<std::string> drop_launchers(std::vector<Trace>& traces) {
  std::vector<std::string> labels;
  const std::vector<const Trace*> ranks = ranks_of(traces, labels);
  if (ranks.size() == traces.size()) return labels;
  std::vector<Trace> kept;
  kept.reserve(ranks.size());
  for (const Trace* t : ranks) kept.push_back(std::move(traces[static_cast<size_t>(t - traces.data())]));
  traces = std::move(kept);
  return labels;
}

}  // namespace scalescope::trace
