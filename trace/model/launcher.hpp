#pragma once
// Launchers: the rank a launcher gives a process through its environment
// (read by the collector from its own, by the nsys importer from the one a
// capture recorded), and which processes of a run are launchers, not ranks.
// torchrun's agent (like other launchers that load CUDA) is traced by the
// collector, but it has no rank and runs no GPU work; every command leaves it
// out by one rule.
//
//   LauncherRank r = rank_from_environment({{"SLURM_PROCID", "5"}});  // r.rank 5, r.launcher "slurm"
//   std::vector<Trace> ranks = load_traces("run.ssrun");
//   std::vector<std::string> left_out = drop_launchers(ranks);  // {"no rank (host pid 812)"}

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

using Environment = std::map<std::string, std::string, std::less<>>;

// The variable `name` as a non-negative int32; nullopt when unset or not one.
std::optional<int32_t> env_int(const Environment& env, std::string_view name);

struct LauncherRank {
  int32_t rank = -1, local_rank = -1, world_size = -1;  // -1 unknown
  std::string launcher;       // "torchrun", "mpi", "pmi", "slurm" or "" (none found)
  std::string rank_variable;  // the variable the rank came from ("SLURM_PROCID"), "" none
};

// torchrun (RANK/LOCAL_RANK/WORLD_SIZE) wins over Open MPI, then PMI, then
// Slurm: srun may wrap torchrun or mpirun, and the innermost launcher knows
// the process's real rank. A variable that is not a number is passed over.
LauncherRank rank_from_environment(const Environment& env);

// Kernels, copies, sets or NCCL calls recorded.
bool has_gpu_activity(const Trace& t);

// The rule: no rank and no GPU work while another process of the run has some.
// (When no process has GPU work, nothing can tell a launcher apart: all stay.)
bool is_launcher(int32_t rank, bool gpu_activity, bool any_process_has_gpu_activity);

// Removes the launchers from `traces`, keeping the order of the rest, and
// returns a label for each one removed.
std::vector<std::string> drop_launchers(std::vector<Trace>& traces);

// The same rule without moving a trace: the traces that are not launchers,
// in order, and a label for each launcher in `left_out`.
std::vector<const Trace*> ranks_of(const std::vector<Trace>& traces, std::vector<std::string>& left_out);

}  // namespace scalescope::trace
