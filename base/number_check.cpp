#include "base/number_check.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace scalescope::trace {

bool NumberRange::contains(double v) const {
  return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

std::string NumberRange::text() const {
  return fmt::format("{}{}, {}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
}

double check_number(double value, std::string_view what, const NumberRange& range) {
  if (!std::isfinite(value) || !range.contains(value))
    fail("{}{}{} is not a finite number in {}", what, what.empty() ? "" : " ", value, range.text());
  return value;
}

double parse_number(std::string_view text, std::string_view what, const NumberRange& range) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // from_chars also reads "nan" and "inf": the range check refuses those.
  if (ec == std::errc::result_out_of_range && end == text.data() + text.size())
    fail("{}{}'{}' is a number beyond what a double holds (about 1e-308 to 1e308 in size)", what,
         what.empty() ? "" : " ", text);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail("{}{}'{}' is not a number", what, what.empty() ? "" : " ", text);
  return check_number(v, what, range);
}

double parse_duration(std::string_view text, std::string_view what) {
  double unit = 1;
  std::string_view number = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 's': number.remove_suffix(1); break;
      case 'm': unit = 60, number.remove_suffix(1); break;
      case 'h': unit = 3600, number.remove_suffix(1); break;
      default: break;
    }
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  const bool parsed = !number.empty() && ec == std::errc() && end == number.data() + number.size();
  if (!parsed || !(v > 0) || !std::isfinite(v))
    fail("{}{}'{}' is not a duration: a positive number with an optional unit s, m or h (e.g. 30m)", what,
         what.empty() ? "" : " ", text);
  const double seconds = v * unit;
  if (!(seconds <= kMaxDurationS))
    fail("{}{}'{}' is longer than {:.0f} days", what, what.empty() ? "" : " ", text, kMaxDurationS / 86400);
  return seconds;
}

}  // namespace scalescope::trace
