#pragma once
// The collectives one rank took part in, as straggler matching reads them.

#include <vector>
#include <cstdint>
#include <string>

#include "trace/model/trace.hpp"
#include "analyze/iterations.hpp"
#include "analyze/kernel_classifier.hpp"

namespace scalescope::analyze {

// One collective as this rank saw it: enough to match it across ranks.
struct CollectiveArrival {
  trace::StringId communicator = trace::kNoString;  // in the rank's own string table
  std::string communicator_name;                    // filled only for the matching key
  trace::NcclOp op = trace::NcclOp::kUnknown;
  int64_t sequence = -1;        // from the trace, or order of occurrence per (communicator, op)
  int64_t arrival_unix_ns = 0;  // kernel start, on the Unix clock
  int64_t end_unix_ns = 0;
  bool warmup = false;  // started before the rank's first steady iteration
};

namespace detail {

// Collectives for straggler matching over [ws, we], in start order.
// Reads the NCCL table, else the kernels `info` classes as communication, of t.
std::vector<CollectiveArrival> collective_arrivals(const trace::Trace& t, trace::Timestamp ws, trace::Timestamp we,
                                                   const std::vector<KernelInfo>& info,
                                                   const std::vector<Iteration>& iterations);

}  // namespace detail
}  // namespace scalescope::analyze
