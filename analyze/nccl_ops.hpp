#pragma once
// NCCL collectives grouped by operation and message size: count, GPU time,
// algorithm and bus bandwidth. One rank's from its whole trace (the
// collector's NCCL table: calls, not windows), the run's by adding its ranks'.
//
//   NcclOpStats r = summarize_nccl_ops(trace);        // one rank
//   NcclOpStats all = combine_nccl_ops(run.ranks);   // every rank

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct RankAnalysis;

struct NcclOpSize {
  std::string operation;       // "AllReduce", ... (trace::to_string(NcclOp))
  uint64_t message_bytes = 0;  // one call's message; 0: the trace does not record it
  int64_t count = 0;
  int64_t time_ns = 0;  // GPU time of the collective kernels
  uint64_t bytes = 0;   // message bytes summed over the calls
  // nccl-tests' bus bytes (trace::nccl_bus_bytes) and the time of the calls
  // that have them (communicator size, else WORLD_SIZE, known).
  double bus_bytes = 0;
  int64_t bus_ns = 0;

  double mean_ns() const { return count ? static_cast<double>(time_ns) / static_cast<double>(count) : 0; }
  // NCCL's algbw (message bytes / kernel time), GB/s; none when the size is unknown.
  std::optional<double> algorithm_gb_per_s() const;
  // NCCL's busbw, GB/s; none when no call's bus factor is known.
  std::optional<double> bus_gb_per_s() const;
};

struct NcclOpStats {
  bool available = true;
  std::string reason;              // why not, when unavailable
  std::vector<NcclOpSize> groups;  // by operation name, then message size
};

NcclOpStats summarize_nccl_ops(const trace::Trace& trace);
// The ranks' groups added up (same operation and message size); unavailable
// when a rank's is, naming it.
NcclOpStats combine_nccl_ops(const std::vector<RankAnalysis>& ranks);

}  // namespace scalescope::analyze
