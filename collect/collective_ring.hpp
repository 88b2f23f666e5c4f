#pragma once
// A process's last collectives and iterations, kept at all times (inside
// windows and while CUPTI is detached) for a hang dump (trace/model/hang_dump.hpp):
// a fixed ring written by the job's threads in NCCL's NVTX range hooks and at
// each iteration's beginning, read by the encoder thread when a dump is due.
//
// No allocation and no lock on the job's threads: each slot is a seqlock of
// relaxed atomics (the writer marks it odd, fills it, marks it even; the
// reader keeps a slot only when its mark was even and unchanged across the
// read), and the per-communicator call counts live in a fixed open-addressed
// table claimed by compare-and-swap. Cost per collective: bench/RESULTS.md
// ("Hang report").
//
//   auto& ring = CollectiveRing::instance();
//   uint64_t ticket = ring.enter(trace::NcclOp::kAllReduce, comm_hash, bytes);  // the NCCL range's push
//   ring.leave(ticket);                                                         // its pop
//   trace::HangDump d = ring.snapshot();  // the encoder thread

#include <array>
#include <atomic>
#include <cstdint>

#include "trace/model/hang_dump.hpp"

namespace scalescope::collect {

class CollectiveRing {
 public:
  static constexpr size_t kCollectives = 64;     // the last calls: enough to see a rank's last few iterations
  static constexpr size_t kIterations = 16;
  static constexpr size_t kCommunicators = 256;  // distinct communicators counted; more get sequence 0

  static CollectiveRing& instance();  // one per process, never destroyed
  CollectiveRing() = default;         // a ring of one's own: tests and the benchmark

  // A collective call entered (its NVTX range pushed). Returns the ticket its
  // leave() takes; the call's sequence is this process's count of calls on
  // `communicator` so far, from 1.
  uint64_t enter(trace::NcclOp op, uint64_t communicator, uint64_t bytes);
  void leave(uint64_t ticket);
  // An iteration began (the capture window's iteration markers).
  void iteration(uint64_t index);
  // NCCL's ranges reach the ring (the collector's own NVTX hooks take NVTX).
  void set_collectives_recorded(bool on) { collectives_recorded_.store(on, std::memory_order_relaxed); }

  // What the ring holds now, oldest first; host, pid, rank and reason are the caller's.
  trace::HangDump snapshot() const;

 private:
  struct CollectiveSlot {
    std::atomic<uint64_t> mark{0};  // 2 x ticket when whole, odd while written, 0 never written
    std::atomic<uint8_t> op{0};
    std::atomic<uint64_t> communicator{0}, sequence{0}, bytes{0};
    std::atomic<int64_t> enter_ns{0}, leave_ns{0};
  };
  struct IterationSlot {
    std::atomic<uint64_t> mark{0};
    std::atomic<uint64_t> index{0};
    std::atomic<int64_t> begin_ns{0};
  };
  struct Communicator {
    std::atomic<uint64_t> key{0};  // commHash + 1 (0: a free entry)
    std::atomic<uint64_t> calls{0};
  };
  uint64_t next_sequence(uint64_t communicator);

  std::array<CollectiveSlot, kCollectives> collectives_;
  std::array<IterationSlot, kIterations> iterations_;
  std::array<Communicator, kCommunicators> communicators_;
  std::atomic<uint64_t> next_ticket_{0}, next_iteration_{0};
  std::atomic<bool> collectives_recorded_{false};
};

}  // namespace scalescope::collect
