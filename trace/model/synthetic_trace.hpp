#pragma once
// A realistic synthetic trace for tests and benchmarks: iterations of a DDP
// training step on one rank. Each iteration has an NVTX ProfilerStep#N range,
// forward and backward kernels (realistic names, grids, durations) on the
// compute stream with a cudaLaunchKernel API call of the same correlation id,
// gradient-bucket NCCL all-reduces on a communication stream overlapping the
// backward pass, an HtoD input copy, a memset, optimizer kernels, a stream
// synchronize, and counter samples (utilization, power, memory, clocks).
// Deterministic for a given seed.

#include <cstddef>
#include <cstdint>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

struct SyntheticOptions {
  size_t events = 100'000;  // total events over all tables, approximately (within one iteration)
  uint64_t seed = 1;
  int32_t rank = 0;
  int32_t world_size = 8;
  uint32_t device = 0;                             // CUDA ordinal of the rank's GPU
  Timestamp start_ns = 1'700'000'000'000'000'000;  // trace clock of the first event
};

Trace make_synthetic_trace(const SyntheticOptions& options);
inline Trace make_synthetic_trace(size_t events, uint64_t seed = 1) {
  SyntheticOptions o;
  o.events = events;
  o.seed = seed;
  return make_synthetic_trace(o);
}

}  // namespace scalescope::trace
