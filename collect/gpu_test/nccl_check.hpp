#pragma once
// GPU checks of the NCCL bytes, communicators and sequence numbers the
// collector joins from NCCL's NVTX payloads (collect/nccl_nvtx_joiner.hpp).
// Pure functions of loaded traces, tested here on synthetic traces.

#include <string>
#include <vector>

#include "collect/gpu_test/gpu_check.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

// ground_truth.cu: every all-reduce kernel carries the call's bytes
// (kAllReduceFloats floats), a communicator, and sequence numbers 0, 1, ...
// in time order on each device.
std::vector<GpuCheck> check_ground_truth_nccl(const std::vector<trace::Trace>& traces);

// One expected kind of call of nccl_sizes_job.py: `calls` calls of `op` with
// NCCL's message size `bytes` on every rank.
struct ExpectedNcclCalls {
  trace::NcclOp op = trace::NcclOp::kUnknown;
  uint64_t bytes = 0;
  uint64_t calls = 0;
};
// Parses "AllReduce:4194332:5" (what the job writes); throws Error on bad text.
ExpectedNcclCalls parse_expected_nccl_calls(const std::string& text);

// A torchrun job of known collectives: on every one of `world_size` ranks,
// exactly `calls` NCCL kernels of each expected (op, bytes); the sequence
// numbers of those calls rise in time order and agree across ranks, as do
// their communicators.
std::vector<GpuCheck> check_nccl_sizes(const std::vector<trace::Trace>& traces, int world_size,
                                       const std::vector<ExpectedNcclCalls>& expected);

}  // namespace scalescope::collect
