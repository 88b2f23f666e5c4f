#pragma once
// The `stats` summaries (what people know from `nsys stats`) as pure functions
// of traces, returning plain rows; cli/stats_command.cpp turns them into
// report::Table (trace/ must not depend on report/).
//
//   std::vector<const Trace*> ranks = {&t0, &t1};
//   TraceStats all = compute_stats(ranks);     // combined across ranks
//   TraceStats r0 = compute_stats({&t0});      // one rank
//
// Rows are sorted by total time (bytes for sizes) descending, then by name, so
// that output is deterministic.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// Durations in ns. median: mean of the middle two for an even count;
// stddev: sample standard deviation (n - 1), 0 for one value.
struct DurationStats {
  uint64_t count = 0;
  int64_t total = 0, min = 0, max = 0;
  double avg = 0, median = 0, stddev = 0;
};

struct NamedDurationRow {
  std::string name;
  DurationStats time;
  double share = 0;  // fraction of the table's total time (API time, GPU kernel time)
};

// Memory operations grouped by kind and memory kinds; memsets appear with
// kind "memset" (source kind empty).
struct MemoryTimeRow {
  std::string kind, src, dst;
  DurationStats time;
  double share = 0;
};

struct MemorySizeRow {
  std::string kind, src, dst;
  uint64_t count = 0, total_bytes = 0, min_bytes = 0, max_bytes = 0;
  double avg_bytes = 0;
};

struct NvtxRow {
  std::string domain, text;
  DurationStats time;
};

struct NcclRow {
  std::string op, algorithm, protocol, datatype;
  uint64_t total_bytes = 0;
  DurationStats time;          // time.count is the number of collectives
  double bus_bytes_per_s = 0;  // total_bytes / total time: payload rate, not NCCL's busBw
  // NCCL's bus bandwidth (as nccl-tests defines it) over the `busbw_count`
  // collectives whose communicator size is known (group_size, else the
  // trace's world_size) and whose op has a bus factor; 0 when none.
  double busbw_bytes_per_s = 0;
  uint64_t busbw_count = 0;
};

// nccl-tests' bus bandwidth factor for one collective of `ranks` ranks,
// applied to NCCL's message size per rank (the count passed to NCCL times the
// element size): all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all
// n-1 (their busbw is (n-1)/n of the n-rank total); broadcast, reduce,
// send/recv 1; 0 when unknown (other ops, ranks < 1).
double nccl_bus_factor(NcclOp op, int32_t ranks);

// The bus bytes of collective `i` of `trace` (NCCL's message x
// nccl_bus_factor), the one place every part computes them (`stats`, the
// report's NCCL table, a sweep's all-reduce bus bandwidth): the communicator
// size is the record's group_size, else the trace's WORLD_SIZE; a Kineto
// reduce-scatter records PyTorch's input, ranks x NCCL's message. 0 when
// unknown (no size, no communicator size, an op without a factor).
//   bus GB/s = sum(nccl_bus_bytes) / sum(kernel ns) over the collectives where it is > 0.
double nccl_bus_bytes(const Trace& trace, size_t i);

struct ProblemRow {
  std::string problem, severity;
  uint64_t count = 0;
};

struct TraceStats {
  size_t traces = 0;
  std::vector<NamedDurationRow> api, kernels;
  std::vector<MemoryTimeRow> memory_time;
  std::vector<MemorySizeRow> memory_size;
  std::vector<NvtxRow> nvtx;
  std::vector<NcclRow> nccl;
  std::vector<ProblemRow> problems;
};

// Summarizes one or more traces as if they were one (names matched as text).
TraceStats compute_stats(std::span<const Trace* const> traces);
inline TraceStats compute_stats(const Trace& trace) {
  const Trace* one = &trace;
  return compute_stats(std::span<const Trace* const>(&one, 1));
}

// Summary of a list of durations (sorts a copy; exposed for tests).
DurationStats summarize_durations(std::vector<int64_t> durations);

// JSON of the summaries (`stats --format json`, the C library, Python): the
// numbers of the tables, typed. Durations in ns (count, total_ns, avg_ns,
// median_ns, min_ns, max_ns, stddev_ns, flat in each row), shares as
// fractions, rates in bytes per second (busbw_bytes_per_s null where NCCL's
// bus bandwidth is unknown); each kernel row has the short name the tables show.
void to_json(nlohmann::json& j, const DurationStats& d);
void to_json(nlohmann::json& j, const TraceStats& s);

}  // namespace scalescope::trace
