// GPU idle time split into host wait, kernel wait and other (analyze.hpp,
// IdleBreakdown; docs/idle-time.md, "Idle time breakdown"): the rule gap by
// gap (IdleGaps), the whole-trace analysis (idle_breakdown) and the lookup of
// launch calls for a rank read chunk by chunk (ChunkedLaunches).
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

IdleBreakdown idle_breakdown(const trace::Trace& t, const Intervals& busy, trace::Timestamp span_start,
                             trace::Timestamp span_end, int64_t threshold_ns) {
  IdleGaps gaps(span_start, span_end, threshold_ns);
  if (!gaps.result().availability.available) return gaps.result();
  // The earliest call of each correlation id (a launch, or the copy's or set's call).
  std::unordered_map<uint32_t, trace::Timestamp> launch_of;
  launch_of.reserve(t.api.size());
  for (size_t i = 0; i < t.api.size(); ++i) {
    if (t.api.correlation[i] == 0) continue;
    auto [it, fresh] = launch_of.try_emplace(t.api.correlation[i], t.api.start[i]);
    if (!fresh) it->second = std::min(it->second, t.api.start[i]);
  }
  // The activities that may end a gap: those starting inside the span or
  // just after it (the one that ends the last gap); a row that ends before
  // it starts is no activity.
  struct Start {
    trace::Timestamp gpu = 0;     // when the activity began on the GPU
    trace::Timestamp launch = 0;  // when its launch call began on the host; kNoLaunch: no call in the trace
  };
  constexpr trace::Timestamp kNoLaunch = std::numeric_limits<trace::Timestamp>::max();
  std::vector<Start> starts;
  auto add = [&](const std::vector<trace::Timestamp>& start, const std::vector<trace::Timestamp>& end,
                 const std::vector<uint32_t>& correlation) {
    for (size_t i = 0; i < start.size(); ++i) {
      if (start[i] < span_start || end[i] < start[i]) continue;
      auto it = correlation[i] ? launch_of.find(correlation[i]) : launch_of.end();
      starts.push_back({start[i], it == launch_of.end() ? kNoLaunch : it->second});
    }
  };
  add(t.kernels.start, t.kernels.end, t.kernels.correlation);
  add(t.memcpys.start, t.memcpys.end, t.memcpys.correlation);
  add(t.memsets.start, t.memsets.end, t.memsets.correlation);
  add(t.nccl.start, t.nccl.end, t.nccl.correlation);
  std::sort(starts.begin(), starts.end(), [](const Start& x, const Start& y) { return x.gpu < y.gpu; });
  // The earliest launch of the activities that begin at `next`, against the gap's start.
  auto launch_at = [&](trace::Timestamp gap_start, trace::Timestamp next) {
    auto it = std::lower_bound(starts.begin(), starts.end(), next,
                               [](const Start& s, trace::Timestamp v) { return s.gpu < v; });
    trace::Timestamp launch = kNoLaunch;
    for (; it != starts.end() && it->gpu == next; ++it) launch = std::min(launch, it->launch);
    return launch == kNoLaunch ? GapLaunch::kNone : launch > gap_start ? GapLaunch::kAfterGap : GapLaunch::kBeforeGap;
  };
  trace::Timestamp last_end = span_start;  // where the GPU's last activity ended (the span's start before any)
  for (const Interval& iv : busy) {
    if (gaps.inside(last_end, iv.start) > 0) gaps.gap(last_end, iv.start, launch_at(last_end, iv.start));
    last_end = iv.end;
  }
  gaps.tail(last_end);
  return gaps.result();
}

// ---- chunk by chunk ----------------------------------------------------------

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
