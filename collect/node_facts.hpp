#pragma once
// Facts about the node a process runs on, for multi-node runs: which node of
// how many (from the launcher's environment), and the node's own facts
// (hostname, CPUs, NUMA nodes, GPUs on the PCI bus), written once per node as
// node-<host>.json into the shared run directory.
//
//   NodeInfo n = collect::detect_node(collect::current_environment());
//   // srun -N4: n.node_rank = SLURM_NODEID, n.node_count = 4, n.node_list = "gpu[01-04]"

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "collect/host_facts.hpp"

namespace scalescope::collect {

struct NodeInfo {
  int32_t node_rank = -1;   // this node's id in the job, -1 unknown
  int32_t node_count = -1;  // nodes the job was launched on, -1 unknown
  std::string node_list;    // Slurm's compressed host list of the job ("gpu[01-04]"), "" unknown
  std::string source;       // whose variables: "torchrun", "slurm", "mpi", "pmi", ""
};

// torchrun: GROUP_RANK, WORLD_SIZE / LOCAL_WORLD_SIZE; Slurm: SLURM_NODEID,
// SLURM_STEP_NUM_NODES or SLURM_NNODES, SLURM_STEP_NODELIST or
// SLURM_JOB_NODELIST; Open MPI: OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE;
// MPICH/Hydra: PMI_SIZE / MPI_LOCALNRANKS. The innermost launcher (torchrun)
// wins for id and count; Slurm's node list is kept whoever gives the id.
NodeInfo detect_node(const Environment& env);

// Writes node_rank, node_count and node_list into meta.extra (when known):
// the analysis says from them which nodes did not report.
void add_node_facts(trace::Metadata& meta, const NodeInfo& node);

// This node: hostname, node id and count, launcher, CPUs allowed, NUMA nodes
// with their CPUs, memory policy, NVIDIA GPUs on the PCI bus.
nlohmann::json node_facts_json(const NodeInfo& node);

// <run_dir>/node-<host>.json, written through a temporary name and renamed
// (several processes of one node may race; the content is the same).
// Returns false when it could not be written (the traces still hold the facts).
bool write_node_facts(const std::filesystem::path& run_dir, const NodeInfo& node);

// Is `json` a node facts file (and not a process summary)?
bool is_node_facts(const nlohmann::json& json);

}  // namespace scalescope::collect
