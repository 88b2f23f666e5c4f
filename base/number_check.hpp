#pragma once
// The one check of the numbers a user gives, on the command line or in an
// input file: every floating-point and duration option of every command, and
// factors read from inputs, pass through here. NaN, infinities and values
// outside what the number can mean (a negative price, a threshold of 5, a
// timeout of 10^20 hours, a scaling factor of 1e-320) are refused with one
// line naming what the number is for.
//
//   check_number(v, "--threshold", {0, 1, true})    // "--threshold nan is not a finite number in (0, 1]"
//   parse_number("2.5", "--price-per-gpu-hour", {0, 1e6})  // 2.5
//   parse_duration("30m", "--timeout")                     // 1800

#include <string>
#include <string_view>

namespace scalescope::trace {

struct NumberRange {
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  bool contains(double v) const;  // false for NaN
  std::string text() const;       // "(0, 1]"
};

// Returns value when it is finite and in range; throws Error otherwise:
// "WHAT VALUE is not a finite number in RANGE" (WHAT may be empty).
double check_number(double value, std::string_view what, const NumberRange& range);

// A decimal number ("0.8", "-5", "1e3"; no leading space or '+'), checked as above.
double parse_number(std::string_view text, std::string_view what, const NumberRange& range);

// The longest duration an option takes: 366 days. Anything longer is a typo,
// and would overflow the clocks it is added to.
inline constexpr double kMaxDurationS = 366.0 * 24 * 3600;

// "30m", "90s", "2h", "45" (seconds): positive and at most kMaxDurationS, in seconds.
double parse_duration(std::string_view text, std::string_view what);

}  // namespace scalescope::trace
