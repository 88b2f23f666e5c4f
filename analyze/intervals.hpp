#pragma once
// Private: interval algebra on sorted, disjoint unions of [start, end) spans.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace scalescope::analyze {

struct Interval {
  int64_t start = 0, end = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};
using Intervals = std::vector<Interval>;

// Merges overlapping or touching spans of a list sorted by start, in place.
inline void merge_sorted(Intervals& v) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].end <= v[i].start) continue;
    if (out > 0 && v[i].start <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, v[i].end);
    } else {
      v[out++] = v[i];
    }
  }
  v.resize(out);
}

// Sorts by start (skipped when already sorted, the common case) and merges
// overlapping or touching spans, so the result is a disjoint sorted union.
inline void normalize(Intervals& v) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
  merge_sorted(v);
}

// The same union, with `buffer` (any content; its capacity is reused) for
// merging: lists built table by table are a few runs sorted by start (one per
// table or stream), which are merged pairwise in O(n log runs) instead of
// sorted. The union does not depend on the order of equal starts, so the
// result is the one normalize() gives. Works on p[0, n) and returns the new
// length (the union's spans are left in p[0, length)).
inline size_t normalize_range(Interval* p, size_t n, Intervals& buffer) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  constexpr size_t kMaxRuns = 64;  // more: sort
  std::vector<size_t> runs{0};
  for (size_t i = 1; i < n && runs.size() <= kMaxRuns; ++i)
    if (p[i].start < p[i - 1].start) runs.push_back(i);
  if (runs.size() > kMaxRuns) {
    std::sort(p, p + n, by_start);
  } else if (runs.size() > 1) {
    runs.push_back(n);
    buffer.resize(n);
    Interval* from = p;
    Interval* to = buffer.data();
    while (runs.size() > 2) {
      std::vector<size_t> next{0};
      for (size_t r = 0; r + 1 < runs.size(); r += 2) {
        const size_t a = runs[r], m = runs[r + 1], e = r + 2 < runs.size() ? runs[r + 2] : runs[r + 1];
        std::merge(from + a, from + m, from + m, from + e, to + a, by_start);
        next.push_back(e);
      }
      std::swap(from, to);
      runs = std::move(next);
    }
    if (from != p) std::copy(from, from + n, p);
  }
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i].end <= p[i].start) continue;
    if (out > 0 && p[i].start <= p[out - 1].end) {
      p[out - 1].end = std::max(p[out - 1].end, p[i].end);
    } else {
      p[out++] = p[i];
    }
  }
  return out;
}

inline void normalize(Intervals& v, Intervals& buffer) { v.resize(normalize_range(v.data(), v.size(), buffer)); }

inline int64_t total(const Interval* p, size_t n) {
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i].end - p[i].start;
  return sum;
}

// Gaps between the spans of the union of two normalized unions that are
// longer than 0 and shorter than `limit`: their count and summed length, as
// the consecutive spans of unite(a, b) give them, without building the union.
inline std::pair<int64_t, int64_t> union_gaps(const Intervals& a, const Intervals& b, int64_t limit) {
  int64_t count = 0, sum = 0;
  size_t i = 0, j = 0;
  bool open = false;
  Interval cur;
  while (i < a.size() || j < b.size()) {
    const Interval& next = j == b.size() || (i < a.size() && a[i].start < b[j].start) ? a[i++] : b[j++];
    if (!open) {
      cur = next;
      open = true;
    } else if (next.start <= cur.end) {
      cur.end = std::max(cur.end, next.end);
    } else {
      const int64_t gap = next.start - cur.end;
      if (gap < limit) {
        ++count;
        sum += gap;
      }
      cur = next;
    }
  }
  return {count, sum};
}

// Appends one span to a list being built, merged into the last span when it
// starts inside or at the end of it (rows of one stream come in start order
// and often back to back): the list normalizes to the same union and stays
// shorter, so fewer fresh pages are touched. Empty spans are dropped, as
// normalize drops them.
inline void append(Intervals& v, Interval iv) {
  if (iv.end <= iv.start) return;
  if (!v.empty() && iv.start >= v.back().start && iv.start <= v.back().end) {
    v.back().end = std::max(v.back().end, iv.end);
    return;
  }
  v.push_back(iv);
}

inline int64_t total(const Intervals& v) {
  int64_t sum = 0;
  for (const Interval& i : v) sum += i.end - i.start;
  return sum;
}

// Length of the intersection of two normalized unions (linear merge).
inline int64_t intersection_length(const Intervals& a, const Intervals& b) {
  int64_t sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start, b[j].start);
    const int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    if (a[i].end < b[j].end) ++i;
    else ++j;
  }
  return sum;
}

// Union of two normalized unions, into `out` (its capacity reused).
inline void unite(const Intervals& a, const Intervals& b, Intervals& out) {
  out.resize(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(),
             [](const Interval& x, const Interval& y) { return x.start < y.start; });
  merge_sorted(out);
}

inline Intervals unite(const Intervals& a, const Intervals& b) {
  Intervals out;
  unite(a, b, out);
  return out;
}

}  // namespace scalescope::analyze
