#include "collect/collective_ring.hpp"

#include <algorithm>

#include "collect/sampler_common.hpp"

namespace scalescope::collect {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}  // namespace

CollectiveRing& CollectiveRing::instance() {
  static CollectiveRing* ring = new CollectiveRing;  // never destroyed: NVTX calls may come during exit
  return *ring;
}

uint64_t CollectiveRing::next_sequence(uint64_t communicator) {
  const uint64_t key = communicator + 1;
  size_t at = static_cast<size_t>((communicator * 0x9E3779B97F4A7C15ull) >> 56) % kCommunicators;
  for (size_t probe = 0; probe < kCommunicators; ++probe, at = (at + 1) % kCommunicators) {
    Communicator& c = communicators_[at];
    uint64_t seen = c.key.load(std::memory_order_acquire);
    if (seen == 0 && c.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) seen = key;
    if (seen == key) return c.calls.fetch_add(1, kRelaxed) + 1;
  }
  return 0;  // the table is full: the call is kept, its sequence unknown
}

uint64_t CollectiveRing::enter(trace::NcclOp op, uint64_t communicator, uint64_t bytes) {
  const uint64_t ticket = next_ticket_.fetch_add(1, kRelaxed) + 1;
  const uint64_t sequence = next_sequence(communicator);
  CollectiveSlot& s = collectives_[ticket % kCollectives];
  s.mark.store(2 * ticket + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.op.store(static_cast<uint8_t>(op), kRelaxed);
  s.communicator.store(communicator, kRelaxed);
  s.sequence.store(sequence, kRelaxed);
  s.bytes.store(bytes, kRelaxed);
  s.enter_ns.store(realtime_ns(), kRelaxed);
  s.leave_ns.store(0, kRelaxed);
  s.mark.store(2 * ticket, std::memory_order_release);
  return ticket;
}

void CollectiveRing::leave(uint64_t ticket) {
  if (ticket == 0) return;
  CollectiveSlot& s = collectives_[ticket % kCollectives];
  // The slot still holds this call (not overwritten by 64 newer ones).
  if (s.mark.load(std::memory_order_acquire) == 2 * ticket) s.leave_ns.store(realtime_ns(), kRelaxed);
}

void CollectiveRing::iteration(uint64_t index) {
  const uint64_t ticket = next_iteration_.fetch_add(1, kRelaxed) + 1;
  IterationSlot& s = iterations_[ticket % kIterations];
  s.mark.store(2 * ticket + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.index.store(index, kRelaxed);
  s.begin_ns.store(realtime_ns(), kRelaxed);
  s.mark.store(2 * ticket, std::memory_order_release);
}

trace::HangDump CollectiveRing::snapshot() const {
  trace::HangDump d;
  d.collectives_recorded = collectives_recorded_.load(kRelaxed);
  std::vector<std::pair<uint64_t, trace::HangCollective>> calls;
  for (const auto& s : collectives_) {
    const uint64_t m = s.mark.load(std::memory_order_acquire);
    if (m == 0 || m % 2 != 0) continue;
    trace::HangCollective c;
    c.op = static_cast<trace::NcclOp>(s.op.load(kRelaxed));
    c.communicator = s.communicator.load(kRelaxed);
    c.sequence = s.sequence.load(kRelaxed);
    c.bytes = s.bytes.load(kRelaxed);
    c.enter_unix_ns = s.enter_ns.load(kRelaxed);
    c.leave_unix_ns = s.leave_ns.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.mark.load(kRelaxed) != m) continue;  // rewritten while read: a newer call, read next time
    calls.emplace_back(m, c);
  }
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [m, c] : calls) d.collectives.push_back(c);
  std::vector<std::pair<uint64_t, trace::HangIteration>> its;
  for (const auto& s : iterations_) {
    const uint64_t m = s.mark.load(std::memory_order_acquire);
    if (m == 0 || m % 2 != 0) continue;
    trace::HangIteration i{s.index.load(kRelaxed), s.begin_ns.load(kRelaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.mark.load(kRelaxed) != m) continue;
    its.emplace_back(m, i);
  }
  std::sort(its.begin(), its.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [m, i] : its) d.iterations.push_back(i);
  return d;
}

}  // namespace scalescope::collect
