// GPU idle time split into host wait, kernel wait and other (analyze.hpp,
// IdleBreakdown; docs/idle-time.md, "Idle time breakdown"): the rule gap by
// gap (IdleGaps) and the lookup of launch calls for a rank read chunk by
// chunk (ChunkedLaunches).
#include "analyze/idle_breakdown.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "analyze/detail.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze::detail {

int64_t IdleGaps::inside(trace::Timestamp gap_start, trace::Timestamp next) const {
  return std::min(next, span_end_) - std::max(gap_start, span_start_);
}

void IdleGaps::gap(trace::Timestamp gap_start, trace::Timestamp next, GapLaunch launch) {
  const int64_t in = inside(gap_start, next);
  if (in <= 0) return;
  b_.idle_ns += in;
  if (launch == GapLaunch::kNone) ++b_.unlaunched_gaps;
  if (launch == GapLaunch::kAfterGap) {
    b_.host_wait_ns += in;
    ++b_.host_wait_gaps;
  } else if (next - gap_start < b_.threshold_ns) {
    b_.kernel_wait_ns += in;
    ++b_.kernel_wait_gaps;
  } else {
    b_.other_ns += in;
    ++b_.other_gaps;
  }
}

void IdleGaps::tail(trace::Timestamp gap_start) {
  const int64_t in = inside(gap_start, span_end_);
  if (in <= 0) return;
  b_.idle_ns += in;
  b_.other_ns += in;
  ++b_.other_gaps;
}

void ChunkedLaunches::call(uint32_t correlation, trace::Timestamp start) {
  auto [it, fresh] = launch_of_.try_emplace(correlation, start);
  if (!fresh) it->second = std::min(it->second, start);
  if (!wanted_.empty() && wanted_.count(correlation)) seen_.insert(correlation);
}

void ChunkedLaunches::sort() {
  auto by_start = [](const RowStart& a, const RowStart& b) { return a.start < b.start; };
  if (sorted_ == starts_.size()) return;
  auto mid = starts_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  std::sort(mid, starts_.end(), by_start);
  std::inplace_merge(starts_.begin(), mid, starts_.end(), by_start);
  sorted_ = starts_.size();
}

void ChunkedLaunches::judge(IdleGaps& gaps, trace::Timestamp gap_start, trace::Timestamp next) {
  auto it = std::lower_bound(starts_.begin(), starts_.begin() + static_cast<std::ptrdiff_t>(sorted_), next,
                             [](const RowStart& s, trace::Timestamp v) { return s.start < v; });
  // Every call that starts before the gap's end has been read: a call found
  // says whether the earliest one began before the gap; one not found either
  // starts later (after the gap began) or is not in the trace.
  constexpr trace::Timestamp kNoCall = std::numeric_limits<trace::Timestamp>::max();
  trace::Timestamp launch = kNoCall;
  const size_t unseen_from = unseen_.size();
  for (; it != starts_.end() && it->start == next; ++it) {
    if (it->correlation == 0) continue;
    auto found = launch_of_.find(it->correlation);
    if (found != launch_of_.end()) launch = std::min(launch, found->second);
    else if (calls_) unseen_.push_back(it->correlation);
  }
  if (launch != kNoCall || unseen_.size() == unseen_from) {
    unseen_.resize(unseen_from);
    gaps.gap(gap_start, next,
             launch == kNoCall ? GapLaunch::kNone : launch > gap_start ? GapLaunch::kAfterGap : GapLaunch::kBeforeGap);
    return;
  }
  // Only calls not read yet can launch it: judged once every call has been.
  for (size_t i = unseen_from; i < unseen_.size(); ++i) wanted_.insert(unseen_[i]);
  deferred_.push_back({&gaps, gap_start, next, unseen_from, unseen_.size()});
}

void ChunkedLaunches::passed(trace::Timestamp at, uint32_t unread_correlation) {
  auto first_left = std::lower_bound(starts_.begin(), starts_.end(), at,
                                     [](const RowStart& s, trace::Timestamp v) { return s.start < v; });
  starts_.erase(starts_.begin(), first_left);
  sorted_ = starts_.size();
  if (launch_of_.size() < 2 * kept_ + 1024) return;
  // Calls whose correlation no row still to come carries: with ids that grow
  // with time (CUPTI's, Kineto's), those of the work already judged.
  uint32_t keep_from = unread_correlation;
  for (const RowStart& s : starts_)
    if (s.correlation != 0) keep_from = std::min(keep_from, s.correlation);
  std::erase_if(launch_of_, [&](const auto& entry) { return entry.first < keep_from; });
  kept_ = launch_of_.size();
}

void ChunkedLaunches::finish() {
  for (const Deferred& d : deferred_) {
    bool called = false;
    for (size_t i = d.unseen_begin; i < d.unseen_end && !called; ++i) called = seen_.count(unseen_[i]) > 0;
    d.gaps->gap(d.gap_start, d.next, called ? GapLaunch::kAfterGap : GapLaunch::kNone);
  }
  deferred_.clear();
  unseen_.clear();
}

}  // namespace scalescope::analyze::detail
