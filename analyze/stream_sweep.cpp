#include "analyze/stream_sweep.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace scalescope::analyze::detail {

size_t StreamSweep::add_window(Timestamp ws, Timestamp we, Timestamp span_start, Timestamp span_end) {
  Window w;
  w.ws = ws;
  w.we = we;
  w.span_start = span_start;
  w.span_end = span_end;
  w.busy.assign(keys_.size(), 0);
  w.cover = std::make_unique<Cover>(span_start, span_end);
  windows_.push_back(std::move(w));
  return windows_.size() - 1;
}

IdleCover StreamSweep::idle_cover(size_t w) {
  Window& win = windows_[w];
  win.cover->gaps.push_back({{win.open ? win.cur.end : win.ws, win.we}, 0});
  split_gaps(*win.cover, std::numeric_limits<Timestamp>::max(), false, 0);
  return win.cover->split.result();
}

IdleBreakdown StreamSweep::idle_breakdown(size_t w) {
  launches_.finish();
  Window& win = windows_[w];
  win.cover->breakdown.tail(win.open ? win.cur.end : win.span_start);
  return win.cover->breakdown.result();
}

uint32_t StreamSweep::stream_index(uint32_t device, uint32_t stream) {
  const uint64_t key = (uint64_t{device} << 32) | stream;
  auto [it, fresh] = index_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
  if (fresh) {
    keys_.push_back(key);
    lists_.emplace_back();
    for (Window& w : windows_) w.busy.push_back(0);
  }
  return it->second;
}

void StreamSweep::cut(Timestamp at, uint32_t unread_correlation) {
  launches_.sort();
  auto by_start = [](const Pending& a, const Pending& b) { return a.start < b.start; };
  // Rows before sorted_ are sorted: sort the new ones and merge.
  if (sorted_ < pending_.size()) {
    auto mid = pending_.begin() + static_cast<std::ptrdiff_t>(sorted_);
    std::sort(mid, pending_.end(), by_start);
    std::inplace_merge(pending_.begin(), mid, pending_.end(), by_start);
  }
  auto first_at = [&](size_t from, size_t to, Timestamp t) {  // the first row in [from, to) starting at t or later
    return static_cast<size_t>(std::lower_bound(pending_.begin() + static_cast<std::ptrdiff_t>(from),
                                                pending_.begin() + static_cast<std::ptrdiff_t>(to), t,
                                                [](const Pending& p, Timestamp x) { return p.start < x; }) -
                               pending_.begin());
  };
  size_t head = 0;  // rows before it are summed
  const size_t stop = first_at(0, pending_.size(), at);
  for (Timestamp t = std::numeric_limits<Timestamp>::min(); t != at && head < stop;) {
    // This piece: rows [head, end) cut at t.
    size_t end = stop;
    t = at;
    if (stop - head > kPieceRows) {
      t = pending_[head + kPieceRows].start;
      end = first_at(head, head + kPieceRows, t);
      if (end == head) {  // its first rows all start at t: take them all
        end = first_at(head, stop, t + 1);
        t = end < stop ? pending_[end].start : at;
      }
    }
    for (Intervals* v : {&compute_, &comm_, &copy_}) v->clear();
    for (uint32_t s : touched_) lists_[s].clear();
    touched_.clear();
    tails_.clear();
    Intervals* by_category[3] = {&compute_, &comm_, &copy_};
    for (size_t i = head; i < end; ++i) {
      const Pending& p = pending_[i];
      const Interval part{p.start, std::min(p.end, t)};
      by_category[p.category]->push_back(part);
      if (lists_[p.stream].empty()) touched_.push_back(p.stream);
      lists_[p.stream].push_back(part);
      if (p.end > t) tails_.push_back({t, p.end, p.stream, p.category});
    }
    // The tails start at the cut, before every row left: they take the
    // places of the last rows summed.
    head = end - tails_.size();
    std::copy(tails_.begin(), tails_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(head));
    segment();
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(head));
  sorted_ = pending_.size();
  launches_.passed(at, unread_correlation);
}

std::vector<StreamUtilization> StreamSweep::streams(size_t w, int64_t wall) const {
  const Window& win = windows_[w];
  std::vector<StreamUtilization> out;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (win.busy[i] == 0) continue;  // no span of it lies in the window
    StreamUtilization su;
    su.device = static_cast<uint32_t>(keys_[i] >> 32);
    su.stream = static_cast<uint32_t>(keys_[i] & 0xffffffffu);
    su.busy_ns = win.busy[i];
    su.fraction = wall > 0 ? static_cast<double>(su.busy_ns) / static_cast<double>(wall) : 0;
    out.push_back(su);
  }
  std::sort(out.begin(), out.end(), [](const StreamUtilization& x, const StreamUtilization& y) {
    return std::tie(x.device, x.stream) < std::tie(y.device, y.stream);
  });
  return out;
}

void StreamSweep::split_gaps(Cover& c, Timestamp to, bool input, Timestamp from) {
  if (c.gaps_from == c.gaps.size() || c.gaps[c.gaps_from].first.end > to) return;
  if (!c.waits_sorted) {  // waits read since: erase what was passed, normalize the rest
    c.waits.erase(c.waits.begin(), c.waits.begin() + static_cast<std::ptrdiff_t>(c.split.waits_passed()));
    c.mpi.erase(c.mpi.begin(), c.mpi.begin() + static_cast<std::ptrdiff_t>(c.split.mpi_passed()));
    c.split.trimmed();
    normalize(c.waits);
    c.waits_sorted = true;
  }
  size_t n = c.gaps_from;
  for (; n < c.gaps.size() && c.gaps[n].first.end <= to; ++n) {
    const auto& [gap, bits] = c.gaps[n];
    c.split.add(gap, bits | (input && gap.start >= from ? unsigned{kIdleInput} : 0u));
  }
  // The gaps split are dropped once they are half the list: erasing them at
  // every call costs the list's length each time (a segment's gaps squared).
  c.gaps_from = n;
  if (2 * c.gaps_from >= c.gaps.size()) {
    c.gaps.erase(c.gaps.begin(), c.gaps.begin() + static_cast<std::ptrdiff_t>(c.gaps_from));
    c.gaps_from = 0;
  }
}

void StreamSweep::clip(Intervals& v, Timestamp a, Timestamp b) {
  size_t out = 0;
  for (const Interval& iv : v) {
    const Interval c{std::max(iv.start, a), std::min(iv.end, b)};
    if (c.end > c.start) v[out++] = c;
  }
  v.resize(out);
}

int64_t StreamSweep::clipped_total(const Intervals& v, Timestamp a, Timestamp b) {
  int64_t sum = 0;
  for (const Interval& iv : v) sum += std::max<int64_t>(0, std::min(iv.end, b) - std::max(iv.start, a));
  return sum;
}

void StreamSweep::segment() {
  normalize(compute_, merge_);
  normalize(comm_, merge_);
  normalize(copy_, merge_);
  for (uint32_t s : touched_) normalize(lists_[s], merge_);
  for (size_t i = 0; i < windows_.size(); ++i) {
    Window& w = windows_[i];
    const bool whole = w.ws <= lo_ && w.we >= hi_;
    if (whole) {
      sum(w, compute_, comm_, copy_);
    } else if (i + 1 == windows_.size()) {  // the last window may clip the lists in place
      clip(compute_, w.ws, w.we);
      clip(comm_, w.ws, w.we);
      clip(copy_, w.ws, w.we);
      sum(w, compute_, comm_, copy_);
    } else {
      for (auto [from, to] : {std::pair{&compute_, &w_compute_}, {&comm_, &w_comm_}, {&copy_, &w_copy_}}) {
        *to = *from;
        clip(*to, w.ws, w.we);
      }
      sum(w, w_compute_, w_comm_, w_copy_);
    }
    for (uint32_t s : touched_) w.busy[s] += whole ? total(lists_[s]) : clipped_total(lists_[s], w.ws, w.we);
  }
}

void StreamSweep::sum(Window& w, const Intervals& compute, const Intervals& comm, const Intervals& copy) {
  Sums& s = w.sums;
  s.compute_ns += total(compute);
  s.communication_ns += total(comm);
  s.overlap_ns += intersection_length(comm, compute);
  unite(compute, comm, compute_comm_);
  s.copy_ns += total(copy) - intersection_length(copy, compute_comm_);
  // union_gaps(compute_comm, copy) with its open span kept between segments.
  // Its gaps go to the idle split before the gaps of compute | comm below
  // close: those say which of them are input gaps.
  const Intervals& a = compute_comm_;
  const Intervals& b = copy;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const Interval& next = j == b.size() || (i < a.size() && a[i].start < b[j].start) ? a[i++] : b[j++];
    if (!w.open) {
      w.cover->gaps.push_back({{w.ws, next.start}, 0});
      judge(w, w.span_start, next.start);  // no activity ended before it
      w.cur = next;
      w.open = true;
    } else if (next.start <= w.cur.end) {
      w.cur.end = std::max(w.cur.end, next.end);
    } else {
      const int64_t gap = next.start - w.cur.end;
      if (gap < kLaunchGapLimitNs) {
        ++s.gap_count;
        s.gap_ns += gap;
      }
      w.cover->gaps.push_back({{w.cur.end, next.start}, gap < kLaunchGapLimitNs ? unsigned{kIdleLaunchGap} : 0u});
      judge(w, w.cur.end, next.start);
      w.cur = next;
    }
  }
  for (const Interval& iv : compute_comm_) {
    if (!w.cc_open) {
      idle(w, w.ws, iv.start);
      w.cc_cur = iv;
      w.cc_open = true;
    } else if (iv.start <= w.cc_cur.end) {
      w.cc_cur.end = std::max(w.cc_cur.end, iv.end);
    } else {
      idle(w, w.cc_cur.end, iv.start);
      w.cc_cur = iv;
    }
  }
}

void StreamSweep::idle(Window& w, Timestamp from, Timestamp to) {
  auto& ends = w.input_ends;
  while (!ends.empty() && ends.top() < from) ends.pop();
  const bool input = !ends.empty() && ends.top() < to;  // a copy ended in it
  split_gaps(*w.cover, to, input, from);
  if (!input) return;
  const int64_t inside = std::min(to, w.span_end) - std::max(from, w.span_start);
  if (inside <= 0) return;
  w.sums.starvation_ns += inside;
  w.sums.starved_gaps += 1;
}

}  // namespace scalescope::analyze::detail
