#pragma once
// An enum's names as one list in value order, for enums whose values run from
// 0 to `Last`: the list's length is checked against Last at compile time, a
// value past it (as a newer file may hold) reads as `other`, and the list
// parses names back.
//
//   static constexpr auto kNames = std::to_array<std::string_view>({"warmup", "inside", "outside"});
//   return name_by_value<IterationClass::kOutside>(kNames, c, "?");
//   std::optional<IterationClass> c = value_by_name<IterationClass>(kNames, "inside");

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace scalescope {

template <auto Last, typename Name, size_t N>
constexpr Name name_by_value(const std::array<Name, N>& names, decltype(Last) value, std::type_identity_t<Name> other) {
  static_assert(N == static_cast<size_t>(Last) + 1, "one name per value, from 0 to Last");
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : other;
}

template <typename E, typename Name, size_t N>
constexpr std::optional<E> value_by_name(const std::array<Name, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace scalescope
