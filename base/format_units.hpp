#pragma once
// The one set of human formatters for durations, sizes and shares, used by
// the advisor's findings and by every table and page (findings said
// "1.23 ms" where the tables said "1.234 ms" for the same figure).
//
//   trace::format_duration_ns(1'234'567);   // "1.235 ms"
//   trace::format_bytes(3.5 * 1024 * 1024); // "3.50 MiB"
//   trace::format_percent(0.1234);          // "12.3%"

#include <string>

namespace scalescope::trace {

// Three decimals in the largest unit that is at least 1 (s, ms, us), whole ns
// below 1 us; "n/a" when not finite.
std::string format_duration_ns(double ns);
// Two decimals in the largest binary unit that is at least 1 (KiB ... TiB),
// whole bytes below 1 KiB.
std::string format_bytes(double bytes);
// A fraction as a percentage with one decimal; "n/a" when not finite (never "nan%").
std::string format_percent(double fraction);

}  // namespace scalescope::trace
