#pragma once
// Integers read from JSON that another program wrote (dumps, records, run
// files). nlohmann's get<T>() converts a fraction with a plain cast, which is
// undefined outside T's range (a pid of 1.8e29), and wraps an integer that
// does not fit (4294967297 as a uint32_t is 1). These refuse both.
//
//   json_integer<uint32_t>(j["pid"])                       // nullopt for 1.8e29, -1, 2.5, "7", true
//   json_integer_field<int64_t>(j, "unix_ns", "x.json")    // Error: x.json: "unix_ns" is not an integer in [...]
//   json_integer_or<int32_t>(j, "rank", -1, "x.json")      // -1 when absent or null

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace scalescope {

// The integer v holds, when it fits T: a JSON integer, or a number with no
// fraction (1e9 as Python may write it). Anything else is nullopt.
template <std::integral T>
  requires(!std::same_as<T, bool>)
std::optional<T> json_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (std::in_range<T>(i)) return static_cast<T>(i);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    // [lowest, max + 1): both ends are powers of two, exact as doubles.
    const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (d == std::trunc(d) && d >= static_cast<double>(std::numeric_limits<T>::lowest()) && d < end)
      return static_cast<T>(d);
  }
  return std::nullopt;
}

namespace detail {
[[noreturn]] inline void fail_json_integer(std::string_view where, std::string_view key, long long lo,
                                           unsigned long long hi, bool missing) {
  const std::string prefix = where.empty() ? std::string() : std::string(where) + ": ";
  if (missing) fail("{}\"{}\" is missing", prefix, key);
  fail("{}\"{}\" is not an integer in [{}, {}]", prefix, key, lo, hi);
}
}  // namespace detail

// o[key] as T; throws Error naming `where` (the file) when it is missing or
// not an integer that fits.
template <std::integral T>
T json_integer_field(const nlohmann::json& o, std::string_view key, std::string_view where) {
  const auto it = o.is_object() ? o.find(std::string(key)) : o.end();
  const bool missing = it == o.end() || it->is_null();
  if (!missing)
    if (const auto v = json_integer<T>(*it)) return *v;
  detail::fail_json_integer(where, key, static_cast<long long>(std::numeric_limits<T>::lowest()),
                            static_cast<unsigned long long>(std::numeric_limits<T>::max()), missing);
}

// o[key] as T, or `absent` when the field is missing or null; throws as above
// when it is present but not an integer that fits.
template <std::integral T>
T json_integer_or(const nlohmann::json& o, std::string_view key, T absent, std::string_view where) {
  const auto it = o.is_object() ? o.find(std::string(key)) : o.end();
  if (it == o.end() || it->is_null()) return absent;
  return json_integer_field<T>(o, key, where);
}

}  // namespace scalescope
