#include "collect/nccl_nvtx_joiner.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace scalescope::collect {
namespace {

bool has_bytes(const std::optional<NcclNvtxCall>& c) { return c && c->bytes.has_value(); }

}  // namespace

void NcclNvtxJoiner::add_range(uint32_t thread, trace::Timestamp start, trace::Timestamp end,
                               std::optional<NcclNvtxCall> call) {
  if (end < start) end = start;
  if (call && call->communicator && call->ranks > 0) comm_ranks_[*call->communicator] = call->ranks;
  if (call && !call->bytes) call.reset();  // communicator creation and the like: no collective
  Thread& th = threads_[thread];
  // Ranges arrive when they end, inner before outer: keep them sorted by start.
  auto pos = std::upper_bound(th.ranges.begin(), th.ranges.end(), start,
                              [](trace::Timestamp s, const Range& r) { return s < r.start; });
  th.ranges.insert(pos, Range{start, end, std::move(call), false, -1});
  newest_ = std::max(newest_, end);
  // Launches that came before this range's end record and lie inside it.
  auto by_time = [](const std::pair<trace::Timestamp, uint32_t>& r, trace::Timestamp t) { return r.first < t; };
  auto lo = std::lower_bound(th.recent.begin(), th.recent.end(), start, by_time);
  auto hi = std::lower_bound(lo, th.recent.end(), end + 1, by_time);
  for (auto it = lo; it != hi; ++it) keep_launch(thread, th, it->first, it->second);
  th.recent.erase(lo, hi);
  if (th.ranges.size() > kMaxRanges) {
    if (has_bytes(th.ranges.front().call) && !th.ranges.front().used) ++stats_.ranges_dropped;
    th.ranges.pop_front();
  }
}

bool NcclNvtxJoiner::in_a_range(const Thread& th, trace::Timestamp time) {
  auto upper = std::upper_bound(th.ranges.begin(), th.ranges.end(), time,
                                [](trace::Timestamp t, const Range& r) { return t < r.start; });
  for (auto it = upper; it != th.ranges.begin();) {
    --it;
    if (it->end >= time) return true;
    if (upper - it > 256) break;
  }
  return false;
}

void NcclNvtxJoiner::keep_launch(uint32_t thread, Thread& th, trace::Timestamp time, uint32_t correlation) {
  launches_[correlation] = Launch{thread, time};
  launch_order_.emplace_back(time, correlation);
  th.launches.insert(std::upper_bound(th.launches.begin(), th.launches.end(), time), time);
  if (launch_order_.size() > kMaxLaunches) {
    launches_.erase(launch_order_.front().second);
    launch_order_.pop_front();
  }
  if (th.launches.size() > kMaxLaunches) th.launches.pop_front();
}

void NcclNvtxJoiner::add_launch(uint32_t thread, trace::Timestamp start, uint32_t correlation) {
  Thread& th = threads_[thread];
  newest_ = std::max(newest_, start);
  if (in_a_range(th, start)) {
    keep_launch(thread, th, start, correlation);
    return;
  }
  // Its range (if any) has not ended yet: wait in the per-thread window.
  auto pos =
      std::upper_bound(th.recent.begin(), th.recent.end(), start,
                       [](trace::Timestamp t, const std::pair<trace::Timestamp, uint32_t>& r) { return t < r.first; });
  th.recent.insert(pos, {start, correlation});
  if (th.recent.size() > kMaxRecent) th.recent.pop_front();
}

void NcclNvtxJoiner::add_kernel(const trace::NcclRecord& row) { pending_.push_back(Pending{row, 0}); }

void NcclNvtxJoiner::apply(trace::NcclRecord& row, const std::vector<Range*>& calls, trace::StringTable& strings) {
  const NcclNvtxCall& first = *calls.front()->call;
  bool same_op = true;
  for (const Range* r : calls) same_op = same_op && r->call->op == first.op;
  if (row.op == trace::NcclOp::kUnknown && same_op) row.op = first.op;
  const uint64_t comm = first.communicator.value_or(0);
  if (first.communicator) row.communicator = strings.intern(fmt::format("{:016x}", comm));
  bool fresh = true;  // no earlier kernel took these calls
  for (const Range* r : calls) fresh = fresh && !r->used;
  if (fresh) {
    // The sequence counts calls per communicator and device: one process may
    // drive several ranks of one communicator (ncclCommInitAll), each in order.
    int64_t& next = next_sequence_[{comm, row.device}];
    row.sequence = next;
    uint64_t bytes = 0;
    for (Range* r : calls) {
      bytes += *r->call->bytes;
      r->sequence = next++;
      r->used = true;
    }
    row.bytes = bytes;
    if (uint32_t size = nccl_datatype_bytes(strings.view(row.datatype)); size > 0) row.count = bytes / size;
  } else {
    // A further kernel of calls whose bytes an earlier kernel carries.
    row.sequence = calls.front()->sequence;
  }
  auto it = first.communicator ? comm_ranks_.find(comm) : comm_ranks_.end();
  row.group_size = it != comm_ranks_.end() ? it->second : -1;  // -1: no payload gave the communicator's size
}

NcclNvtxJoiner::Outcome NcclNvtxJoiner::resolve(trace::NcclRecord& row, trace::StringTable& strings) {
  auto lit = launches_.find(row.correlation);
  if (lit == launches_.end()) return Outcome::kWait;
  const Launch launch = lit->second;
  auto tit = threads_.find(launch.thread);
  if (tit == threads_.end()) return Outcome::kWait;
  Thread& th = tit->second;
  // The innermost range around the launch: the latest start among those that
  // contain it (ranges nest, so few are scanned).
  auto upper = std::upper_bound(th.ranges.begin(), th.ranges.end(), launch.time,
                                [](trace::Timestamp t, const Range& r) { return t < r.start; });
  auto range = th.ranges.end();
  for (auto it = upper; it != th.ranges.begin();) {
    --it;
    if (it->end >= launch.time) {
      range = it;
      break;
    }
    if (upper - it > 256) break;
  }
  if (range == th.ranges.end()) return Outcome::kWait;  // its range may not have ended yet
  launches_.erase(lit);
  if (range->call) {
    apply(row, {&*range}, strings);
    return Outcome::kJoined;
  }
  // A range without payload around the launch (ncclGroupEnd): the grouped
  // calls are the payload ranges that launched nothing, since the previous
  // range without payload on this thread.
  auto launched_inside = [&th](const Range& r) {
    auto l = std::lower_bound(th.launches.begin(), th.launches.end(), r.start);
    return l != th.launches.end() && *l <= r.end;
  };
  std::vector<Range*> grouped;
  for (auto it = range; it != th.ranges.begin();) {
    --it;
    if (it->end > range->start) continue;          // overlaps the group range (an outer range)
    if (!it->call || launched_inside(*it)) break;  // the previous group end, or a call that launched its own kernel
    grouped.push_back(&*it);
    if (grouped.size() > 4096) break;
  }
  std::reverse(grouped.begin(), grouped.end());
  if (grouped.empty()) return Outcome::kUnjoined;
  auto first_launch = std::lower_bound(th.launches.begin(), th.launches.end(), range->start);
  auto last_launch = std::upper_bound(th.launches.begin(), th.launches.end(), range->end);
  const size_t k = static_cast<size_t>(last_launch - first_launch);
  const size_t j = static_cast<size_t>(std::lower_bound(first_launch, last_launch, launch.time) - first_launch);
  if (k <= 1) {
    apply(row, grouped, strings);
    return Outcome::kJoined;
  }
  if (j >= k) return Outcome::kUnjoined;
  if (k == grouped.size()) {
    apply(row, {grouped[j]}, strings);
    return Outcome::kJoined;
  }
  // One kernel per communicator: the j-th communicator in call order.
  std::vector<uint64_t> comms;
  for (const Range* r : grouped) {
    uint64_t c = r->call->communicator.value_or(0);
    if (std::find(comms.begin(), comms.end(), c) == comms.end()) comms.push_back(c);
  }
  if (comms.size() != k) return Outcome::kUnjoined;
  std::vector<Range*> mine;
  for (Range* r : grouped)
    if (r->call->communicator.value_or(0) == comms[j]) mine.push_back(r);
  apply(row, mine, strings);
  return Outcome::kJoined;
}

void NcclNvtxJoiner::drain(trace::NcclTable& out, trace::StringTable& strings, bool force) {
  for (auto& p : pending_) ++p.waited;
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    Outcome o = resolve(p.row, strings);
    if (o == Outcome::kWait && !force && p.waited <= max_wait_ && pending_.size() <= kMaxPending) break;
    if (o == Outcome::kJoined) ++stats_.joined;
    else ++stats_.unjoined;
    out.push(p.row);
    pending_.pop_front();
  }
  prune();
}

void NcclNvtxJoiner::prune() {
  const trace::Timestamp cutoff = newest_ - kHorizonNs;
  while (!launch_order_.empty() && launch_order_.front().first < cutoff) {
    auto it = launches_.find(launch_order_.front().second);
    if (it != launches_.end() && it->second.time == launch_order_.front().first) launches_.erase(it);
    launch_order_.pop_front();
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    Thread& th = it->second;
    while (!th.ranges.empty() && th.ranges.front().end < cutoff) {
      if (has_bytes(th.ranges.front().call) && !th.ranges.front().used) ++stats_.ranges_dropped;
      th.ranges.pop_front();
    }
    while (!th.launches.empty() && th.launches.front() < cutoff) th.launches.pop_front();
    while (!th.recent.empty() && th.recent.front().first < cutoff) th.recent.pop_front();
    if (th.ranges.empty() && th.launches.empty() && th.recent.empty()) it = threads_.erase(it);
    else ++it;
  }
}

}  // namespace scalescope::collect
