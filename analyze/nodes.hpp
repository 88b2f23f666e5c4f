#pragma once
// A multi-node run grouped by host, and its communicators (nodes.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/availability.hpp"
#include "analyze/stragglers.hpp"

namespace scalescope::analyze {

struct RankAnalysis;  // rank_analysis.hpp

struct NodeSummary {
  std::string hostname;
  int32_t node_rank = -1;  // the launcher's node id, -1 unknown
  std::vector<int32_t> ranks;
  // Means over the node's ranks that have a breakdown (ns).
  double wall_ns = 0, compute_ns = 0, exposed_communication_ns = 0, copy_ns = 0, idle_ns = 0;
  double steady_median_iteration_ns = 0;  // of the node's slowest rank; 0 without iterations
  int64_t late_ns = 0;                    // its ranks' summed lateness at matched collectives
  int64_t steady_late_ns = 0;             // ... at those reached in steady iterations only
  int64_t times_last = 0;
};

// One communicator: does it span hosts (inter-node) or not (intra-node)?
struct CommunicatorSummary {
  std::string name;  // "" for collectives known only by their kernels
  // The process group it serves (process_group_of): "" when no rank's trace
  // or run names one. group: its description ("default_pg") or else its name.
  std::string group, group_name, backend;
  std::vector<int32_t> group_ranks;
  int32_t ranks = 0, hosts = 0;
  bool inter_node = false;
  int64_t collectives = 0;  // distinct collectives seen
  int64_t time_ns = 0;      // collective kernel time summed over its ranks
};

struct NodeStats {
  Availability availability;                       // skipped for one host with none missing
  std::vector<NodeSummary> nodes;                  // by node id, then first rank
  std::vector<CommunicatorSummary> communicators;  // by time, descending
  int64_t intra_node_collectives = 0, inter_node_collectives = 0;
  int64_t intra_node_ns = 0, inter_node_ns = 0;
  std::string slowest_node;     // most lateness per rank; else longest steady iteration
  std::string slowest_node_by;  // "lateness at collectives" or "steady median iteration"
  int32_t expected_nodes = -1;  // from the launcher's environment (SLURM_NNODES, WORLD_SIZE / LOCAL_WORLD_SIZE, ...)
  int32_t expected_ranks = -1;  // the world size
  std::vector<std::string> missing_nodes;  // names from SLURM_JOB_NODELIST, else "node N", else "N nodes"
  std::vector<int32_t> missing_ranks;
};

// Slurm's compressed host list: "gpu[01-03,7],login1" -> gpu01 gpu02 gpu03
// gpu7 login1. Throws Error on malformed text; at most 65,536 names.
std::vector<std::string> expand_slurm_hostlist(std::string_view text);

// Needs the ranks' collectives (before combine() drops them).
NodeStats find_nodes(const std::vector<RankAnalysis>& ranks, const StragglerStats& stragglers);

}  // namespace scalescope::analyze
