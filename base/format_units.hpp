#pragma once
// The one set of human formatters for durations, sizes and shares, used by
// the advisor's findings and by every table and page (findings said
// "1.23 ms" where the tables said "1.234 ms" for the same figure).
//
//   trace::format_duration_ns(1'234'567);   // "1.235 ms"
//   trace::format_bytes(3.5 * 1024 * 1024); // "3.50 MiB"
//   trace::format_percent(0.1234);          // "12.3%"
//   trace::integer_ranges(std::vector{0, 1, 2, 3, 5}, ",");  // "0-3,5"

#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

// Three decimals in the largest unit that is at least 1 (s, ms, us), whole ns
// below 1 us; "n/a" when not finite.
std::string format_duration_ns(double ns);
// Two decimals in the largest binary unit that is at least 1 (KiB ... TiB),
// whole bytes below 1 KiB.
std::string format_bytes(double bytes);
// A fraction as a percentage with one decimal; "n/a" when not finite (never "nan%").
std::string format_percent(double fraction);

// Sorted integers with each run of consecutive values as "first-last", the
// pieces joined by `sep` (a group of 512 ranks stays one short cell).
template <typename T>
std::string integer_ranges(const std::vector<T>& sorted, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += sep;
    out += std::to_string(sorted[i]);
    if (j > i) out += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace scalescope::trace
