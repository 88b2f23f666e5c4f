#pragma once
// The one median and quantile of every part (six copies had drifted
// apart: upper median here, nearest rank there, interpolation on the page).
//
// Definition: the quantile q of n sorted values x_0..x_{n-1} interpolates
// linearly between the closest ranks, at position q (n - 1) (Hyndman & Fan's
// type 7, the default of numpy and R). So the median of an even count is the
// mean of the two middle values, and the same figure whether a table, a chart
// or a finding shows it. None: 0.
//
//   trace::median(std::vector<double>{1, 2, 3, 10});         // 2.5
//   trace::quantile(std::vector<double>{1, 2, 3, 4, 5}, 0.9); // 4.6

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace scalescope::trace {

// Of values already sorted ascending; q in [0, 1] (clamped).
inline double quantile_of_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double a = sorted[lo], b = sorted[hi];
  return a == b ? a : a + (b - a) * (pos - static_cast<double>(lo));
}

template <typename T>
double quantile(const std::vector<T>& values, double q) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return quantile_of_sorted(v, q);
}

// quantile 0.5 in O(n): reorders `values` (a partial sort), nothing else.
template <typename T>
double median_in_place(std::vector<T>& values) {
  if (values.empty()) return 0;
  const size_t n = values.size();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  const double hi = static_cast<double>(*mid);
  if (n % 2 == 1) return hi;
  const double lo = static_cast<double>(*std::max_element(values.begin(), mid));
  return lo == hi ? lo : lo + (hi - lo) * 0.5;
}

template <typename T>
double median(std::vector<T> values) {
  return median_in_place(values);
}

}  // namespace scalescope::trace
