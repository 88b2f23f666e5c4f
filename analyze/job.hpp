#pragma once
// What program the trace shows: framework, communication libraries, launcher (job.cpp; docs/advisor.md).

#include <cstdint>
#include <string>
#include <string_view>

namespace scalescope::analyze {

// The framework whose operators the trace shows: the advisor's fixes name its
// API (a DataLoader fix means nothing to a CUDA C program).
enum class Framework : uint8_t {
  kUnknown = 0,  // no GPU work and no framework operators
  kPyTorch,      // a PyTorch-profiler trace, or aten::/ProfilerStep# ranges
  kCuda,         // GPU work without a framework's operators (CUDA C/C++, Fortran, ...)
};
std::string_view to_string(Framework f);

// Framework, communication libraries and launcher, read from the trace.
struct JobFacts {
  Framework framework = Framework::kUnknown;
  bool nccl = false;     // NCCL collectives or NCCL kernels
  bool mpi = false;      // MPI_* calls (CUDA API rows, or NVTX ranges as nsys's MPI tracing writes them)
  std::string launcher;  // trace::Metadata::launcher: "torchrun", "slurm", "mpi", "" (unknown)
  int64_t mpi_calls = 0;  // MPI_* calls in the window
  int64_t mpi_ns = 0;     // the union of their time in the window
  std::string evidence;   // what decided it: "4,210 aten:: operator ranges", "MPI_Send x10, MPI_Recv x5 (NVTX)"
};

}  // namespace scalescope::analyze
