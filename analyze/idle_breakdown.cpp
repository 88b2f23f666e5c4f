// GPU idle time split into host wait, kernel wait and other (analyze.hpp,
// IdleBreakdown; docs/idle-time.md, "Idle time breakdown").
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "analyze/detail.hpp"
#include "trace/trace.hpp"

namespace scalescope::analyze::detail {

namespace {

constexpr trace::Timestamp kNoLaunch = std::numeric_limits<trace::Timestamp>::max();

struct Start {
  trace::Timestamp gpu = 0;     // when the activity began on the GPU
  trace::Timestamp launch = 0;  // when its launch call began on the host; kNoLaunch: no call in the trace
};

}  // namespace

IdleBreakdown idle_breakdown(const trace::Trace& t, const Intervals& busy, trace::Timestamp span_start,
                             trace::Timestamp span_end, int64_t threshold_ns) {
  IdleBreakdown b;
  b.threshold_ns = threshold_ns;
  if (span_end <= span_start) {
    b.availability = {false, "skipped: the window holds no time"};
    return b;
  }
  // The earliest call of each correlation id (a launch, or the copy's or set's call).
  std::unordered_map<uint32_t, trace::Timestamp> launch_of;
  launch_of.reserve(t.api.size());
  for (size_t i = 0; i < t.api.size(); ++i) {
    if (t.api.correlation[i] == 0) continue;
    auto [it, fresh] = launch_of.try_emplace(t.api.correlation[i], t.api.start[i]);
    if (!fresh) it->second = std::min(it->second, t.api.start[i]);
  }
  // The activities that may end a gap: those starting inside the span or
  // just after it (the one that ends the last gap).
  std::vector<Start> starts;
  auto add = [&](const std::vector<trace::Timestamp>& start, const std::vector<uint32_t>& correlation) {
    for (size_t i = 0; i < start.size(); ++i) {
      if (start[i] < span_start) continue;
      auto it = correlation[i] ? launch_of.find(correlation[i]) : launch_of.end();
      starts.push_back({start[i], it == launch_of.end() ? kNoLaunch : it->second});
    }
  };
  add(t.kernels.start, t.kernels.correlation);
  add(t.memcpys.start, t.memcpys.correlation);
  add(t.memsets.start, t.memsets.correlation);
  add(t.nccl.start, t.nccl.correlation);
  std::sort(starts.begin(), starts.end(), [](const Start& x, const Start& y) { return x.gpu < y.gpu; });

  // One gap: the GPU's last activity ended at `gap_start` (or the span
  // began), the next one begins at `next`; `inside` of it lies in the span.
  auto judge = [&](trace::Timestamp gap_start, trace::Timestamp next, int64_t inside) {
    if (inside <= 0) return;
    auto it = std::lower_bound(starts.begin(), starts.end(), next,
                               [](const Start& s, trace::Timestamp v) { return s.gpu < v; });
    trace::Timestamp launch = kNoLaunch;
    for (; it != starts.end() && it->gpu == next; ++it) launch = std::min(launch, it->launch);
    b.idle_ns += inside;
    if (launch == kNoLaunch) ++b.unlaunched_gaps;
    if (launch != kNoLaunch && launch > gap_start) {
      b.host_wait_ns += inside;
      ++b.host_wait_gaps;
    } else if (next - gap_start < threshold_ns) {
      b.kernel_wait_ns += inside;
      ++b.kernel_wait_gaps;
    } else {
      b.other_ns += inside;
      ++b.other_gaps;
    }
  };
  trace::Timestamp last_end = span_start;  // the real start of the current gap, before the span if so
  trace::Timestamp at = span_start;        // idle counted from here
  bool closed = false;
  for (const Interval& iv : busy) {
    if (iv.end <= span_start) {
      last_end = iv.end;
      continue;
    }
    if (iv.start >= span_end) {  // the last gap runs past the span: this activity ends it
      if (at < span_end) judge(last_end, iv.start, span_end - at);
      closed = true;
      break;
    }
    if (iv.start > at) judge(last_end, iv.start, iv.start - at);
    at = std::max(at, iv.end);
    last_end = iv.end;
  }
  if (!closed && at < span_end) {  // nothing ran after it: no activity to wait for
    b.idle_ns += span_end - at;
    b.other_ns += span_end - at;
    ++b.other_gaps;
  }
  return b;
}

}  // namespace scalescope::analyze::detail
