#pragma once
// Gives each NCCL kernel the bytes, communicator and sequence number of the
// NCCL call that launched it. The kernel record knows only its correlation
// id; the launch API record (cuLaunchKernelEx, which NCCL calls) maps that id
// to a host thread and time; NCCL's NVTX range on that thread around the
// launch carries the payload (nccl_nvtx_payload.hpp).
//
// Calls made inside ncclGroupStart/End launch nothing themselves: their
// kernels are launched inside the "ncclGroupEnd" range, which has no payload.
// Such a kernel gets the grouped calls on that thread: all of them when the
// group launched one kernel, one each when it launched one kernel per call,
// one communicator's calls each when it launched one per communicator.
//
// The records arrive in any order across CUPTI buffers, so kernel rows wait
// here until their launch and range are known, at most `max_wait` drains
// (the collector drains once a flush, about a second); the rows leave in the
// order they came. Only launches inside an NCCL range are kept (a job makes
// thousands of compute launches per collective); the others wait in a short
// per-thread window until the range that might hold them has ended (CUPTI
// writes a thread's records in order, so that range ends soon after). Memory
// is bounded: old ranges and launches are pruned by time and count, and
// dropped calls are counted.
//
//   NcclNvtxJoiner j;
//   j.add_range(thread, start, end, call);  // every NCCL-domain range, payload or not
//   j.add_launch(thread, start, correlation);
//   j.add_kernel(row);                      // the row parsed from the kernel name
//   j.drain(batch.nccl, strings, /*force=*/false);

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "collect/nccl_nvtx_payload.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

class NcclNvtxJoiner {
 public:
  struct Stats {
    uint64_t joined = 0;          // kernel rows that got a call's bytes
    uint64_t unjoined = 0;        // rows emitted without (no launch, range or payload found)
    uint64_t ranges_dropped = 0;  // pruned before use, or over the bound
  };

  // Ranges older than this (host clock) behind the newest one are pruned.
  static constexpr trace::Timestamp kHorizonNs = int64_t{60} * 1000000000;
  static constexpr size_t kMaxRanges = size_t{1} << 16;    // over all threads
  static constexpr size_t kMaxLaunches = size_t{1} << 16;  // launches inside NCCL ranges
  static constexpr size_t kMaxRecent = size_t{1} << 16;    // other launches, per thread
  static constexpr size_t kMaxPending = size_t{1} << 16;   // kernel rows waiting

  explicit NcclNvtxJoiner(int max_wait = 3) : max_wait_(max_wait) {}

  // An NCCL-domain NVTX range that ended; `call` when it carried a payload.
  void add_range(uint32_t thread, trace::Timestamp start, trace::Timestamp end, std::optional<NcclNvtxCall> call);
  // A kernel launch API call (any launch; those outside NCCL ranges match nothing).
  void add_launch(uint32_t thread, trace::Timestamp start, uint32_t correlation);
  // An NCCL kernel's row as parsed from its name; held until drained.
  void add_kernel(const trace::NcclRecord& row);
  // Emits the rows that are joined or waited long enough (all when `force`),
  // in arrival order, filling bytes, count, communicator, sequence and
  // group size where known.
  void drain(trace::NcclTable& out, trace::StringTable& strings, bool force);

  size_t pending() const { return pending_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  struct Range {
    trace::Timestamp start = 0, end = 0;
    std::optional<NcclNvtxCall> call;
    bool used = false;      // a kernel already took this call's bytes
    int64_t sequence = -1;  // given when used
  };
  struct Launch {
    uint32_t thread = 0;
    trace::Timestamp time = 0;
  };
  struct Pending {
    trace::NcclRecord row;
    int waited = 0;
  };
  struct Thread {
    std::deque<Range> ranges;                                  // sorted by start
    std::deque<trace::Timestamp> launches;                     // sorted times of the launches kept
    std::deque<std::pair<trace::Timestamp, uint32_t>> recent;  // launches in no known range yet, by time
  };
  enum class Outcome { kWait, kJoined, kUnjoined };

  Outcome resolve(trace::NcclRecord& row, trace::StringTable& strings);
  void apply(trace::NcclRecord& row, const std::vector<Range*>& calls, trace::StringTable& strings);
  void prune();
  void keep_launch(uint32_t thread, Thread& th, trace::Timestamp time, uint32_t correlation);
  static bool in_a_range(const Thread& th, trace::Timestamp time);

  int max_wait_;
  std::unordered_map<uint32_t, Thread> threads_;
  std::unordered_map<uint32_t, Launch> launches_;                   // by correlation id
  std::deque<std::pair<trace::Timestamp, uint32_t>> launch_order_;  // for pruning
  std::deque<Pending> pending_;
  std::map<std::pair<uint64_t, uint32_t>, int64_t> next_sequence_;  // (communicator, device)
  std::unordered_map<uint64_t, int32_t> comm_ranks_;
  trace::Timestamp newest_ = 0;
  Stats stats_;
};

}  // namespace scalescope::collect
