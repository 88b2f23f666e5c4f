#pragma once
// Metrics of a profiled run, from its trace directory: the slowest rank's
// median steady-state iteration time (analyze library), energy from the NVML
// counters (kEnergyJoules differences), and all-reduce bytes and bus bandwidth
// for the communication term of scaling predictions.

#include <filesystem>

#include "sweep/sweep.hpp"

namespace scalescope::sweep {

// Adds "iteration_s", "energy_j", "allreduce_bytes_per_iter", "allreduce_busbw"
// and "compute_s_per_iter" (one GPU's compute seconds per steady iteration,
// the union of its compute kernels as `analyze` breaks time down, mean over
// ranks) to `metrics` where the trace has them, and a note for each of the
// first four that is missing. The ranks go through analyze::analyze_path.
void add_profile_metrics(const std::filesystem::path& trace_dir, RunMetrics& metrics);

}  // namespace scalescope::sweep
