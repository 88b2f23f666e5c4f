#pragma once
// Private: interval algebra on sorted, disjoint unions of [start, end) spans.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace scalescope::analyze {

struct Interval {
  int64_t start = 0, end = 0;
};
using Intervals = std::vector<Interval>;

// Sorts by start (skipped when already sorted, the common case) and merges
// overlapping or touching spans, so the result is a disjoint sorted union.
inline void normalize(Intervals& v) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
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

// Union of two normalized unions.
inline Intervals unite(const Intervals& a, const Intervals& b) {
  Intervals out;
  out.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out),
             [](const Interval& x, const Interval& y) { return x.start < y.start; });
  normalize(out);
  return out;
}

}  // namespace scalescope::analyze
