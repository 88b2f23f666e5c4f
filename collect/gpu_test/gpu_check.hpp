#pragma once
// Checks a profiled run against what is known about it: the ground-truth
// program's exact counts (ground_truth_spec.hpp), or a DDP job (every rank
// traced with NCCL collectives, NVML counters on the node). Pure functions of
// the loaded traces, so they are tested here on synthetic traces.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::collect {

struct GpuCheck {
  std::string name;
  bool pass = false;
  std::string detail;  // "expected 100, got 100"
};

// The checkers' common ending: one "PASS|FAIL name: detail" line per check
// on stdout; 0 when all pass, else 1.
int print_checks(const std::vector<GpuCheck>& checks);

std::vector<GpuCheck> check_ground_truth(const std::vector<trace::Trace>& traces);
// world_size: the number of ranks the job had.
std::vector<GpuCheck> check_ddp(const std::vector<trace::Trace>& traces, int world_size);

// --activities honoured, per trace: the groups left out of the trace's
// "activities" metadata have no records at all; kernels, when kept, have some.
std::vector<GpuCheck> check_activities(const std::vector<trace::Trace>& traces);
// The ground-truth program traced with `--activities kernel`: exact kernel and
// NCCL counts as in check_ground_truth, and no copy, memset, sync or NVTX record.
std::vector<GpuCheck> check_ground_truth_kernels(const std::vector<trace::Trace>& traces);
// A job traced in capture windows (--capture-range): every rank's trace
// opened `windows` windows and, where NVTX is recorded, holds exactly `steps`
// ranges named `range` (the steps run inside the windows); plus check_activities.
std::vector<GpuCheck> check_window(const std::vector<trace::Trace>& traces, std::string_view range, uint64_t steps,
                                   uint64_t windows);

// GPU counters by CUDA ordinal: the traces with counters list the CUDA
// ordinal of each NVML index as `expected` ("1,0" under
// CUDA_VISIBLE_DEVICES=1,0 with PCI order), and their counters use only
// those ordinals.
std::vector<GpuCheck> check_nvml_map(const std::vector<trace::Trace>& traces, std::string_view expected);

}  // namespace scalescope::collect
