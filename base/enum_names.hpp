#pragma once
// An enum's name from the list of its names in value order, for enums whose
// values run from 0 to `Last`; the list's length is checked against Last at
// compile time, and a value past it (as a newer file may hold) reads as `other`.
//
//   static constexpr auto kNames = std::to_array<std::string_view>({"warmup", "inside", "outside"});
//   return name_by_value<IterationClass::kOutside>(kNames, c, "?");

#include <array>
#include <cstddef>
#include <string_view>

namespace scalescope {

template <auto Last, size_t N>
constexpr std::string_view name_by_value(const std::array<std::string_view, N>& names, decltype(Last) value,
                                         std::string_view other) {
  static_assert(N == static_cast<size_t>(Last) + 1, "one name per value, from 0 to Last");
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : other;
}

}  // namespace scalescope
