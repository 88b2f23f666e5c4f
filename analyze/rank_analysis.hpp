#pragma once
// Everything analyze_rank says about one rank: one member per analysis.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyze/attribution.hpp"
#include "analyze/breakdown.hpp"
#include "analyze/collectives.hpp"
#include "analyze/copies.hpp"
#include "analyze/gpu_clocks.hpp"
#include "analyze/host_threads.hpp"
#include "analyze/idle_breakdown.hpp"
#include "analyze/input.hpp"
#include "analyze/iterations.hpp"
#include "analyze/job.hpp"
#include "analyze/kernel_classifier.hpp"
#include "analyze/launch.hpp"
#include "analyze/nccl_ops.hpp"
#include "analyze/numa.hpp"
#include "analyze/perturbation.hpp"
#include "analyze/precision_layout.hpp"
#include "analyze/python_frames.hpp"
#include "analyze/sync.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

// Everything about one rank; small (summaries and top lists only).
struct RankAnalysis {
  int32_t rank = -1;
  std::string label;   // file name or "rank N"
  std::string source;  // Metadata::source
  std::string hostname;
  uint32_t pid = 0;  // the traced process's
  std::vector<trace::ProcessGroup> process_groups;  // torch.distributed's, where the trace or run knows them
  // From the launcher's environment (the collector's meta.extra): node id,
  // node count and Slurm's node list; -1 / "" unknown.
  int32_t world_size = -1;
  int32_t node_rank = -1;
  int32_t node_count = -1;
  std::string node_list;
  RankBreakdown breakdown;
  IterationStats iterations;
  LaunchStats launch;
  CopyStats copies;
  SyncStats sync;
  PrecisionStats precision;
  LayoutStats layout;
  InputStats input;
  JobFacts job;
  IdleCover idle_cover;
  IdleBreakdown idle_breakdown;
  NumaStats numa;
  HostStats host;
  PythonFrames python;  // the Python bootstrap's stacks; read by analyze_path from a run directory
  GpuClockStats gpu_clocks;  // the rank's own GPU
  // Every GPU this trace sampled (a node's local rank 0 samples the node's
  // GPUs): combine() gives each rank of the host its own GPU's, then drops them.
  std::vector<GpuClockStats> sampled_gpus;
  ProfilerPerturbation perturbation;
  Attribution attribution;  // GPU time by operator, module and range (attribution.hpp)
  std::array<ClassTotal, kKernelClassCount> classes{};
  std::vector<KernelSummary> top_kernels;      // by total time, at most Options::top_kernels
  std::vector<CollectiveArrival> collectives;  // for straggler matching (compact)
  // NCCL collectives by operation and message size, whole trace (nccl_ops.hpp;
  // none in the steady pass).
  NcclOpStats nccl_ops;
  // The trace's problems of severity data loss ("torn_tail x1",
  // "checksum_mismatch x2"): the figures cover only what could be read.
  std::vector<std::string> data_loss;
  // Any kernel, copy, set or collective in the trace (whole trace, not window).
  bool gpu_activity = false;
  // Without --window, and with iterations found: the same analysis over the
  // steady iterations only (from the first iteration after warm-up to the
  // end of the last one). The advisor judges that, so a one-off cost (start-up,
  // cuDNN autotuning in step 0: 48,264 layout conversions on H200, none after)
  // is not taken for a per-step one, and a per-step cost is not diluted by
  // start-up time. Null when a window was given or no iteration was found.
  std::shared_ptr<const RankAnalysis> steady;
  int64_t steady_first_iteration = -1;  // 0-based index of its first iteration (it<first>:it<end>)
  int64_t steady_end_iteration = -1;    // one past its last
  // The rank's position in input order (files in list_trace_inputs order, the
  // processes of one file in its order), as analyze_path's visitor was told.
  size_t input_index = 0;
};

namespace detail {

// Who the rank is (identity, node facts, the collector's sampling facts,
// data lost while tracing), from the trace's metadata and problems.
void describe_rank(const trace::Trace& t, bool gpu_activity, RankAnalysis& r);
// With a window that holds no time of the rank (wall 0): the analyses that
// share out time say so instead of printing zeros.
void mark_empty_window(const Options& o, int64_t wall, RankAnalysis& r);
// The same for attribution, computed apart from the other analyses.
void mark_empty_window(const Options& o, int64_t wall, Attribution& a);

}  // namespace detail
}  // namespace scalescope::analyze
