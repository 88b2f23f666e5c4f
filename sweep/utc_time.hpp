#pragma once
// The current UTC time as "2026-12-01T13:24:51Z", for the sweep database's
// `created` column and the sweep lock's holder line (private to sweep/).

#include <ctime>
#include <string>

namespace scalescope::sweep {

inline std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace scalescope::sweep
