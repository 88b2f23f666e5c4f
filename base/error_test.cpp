#include "base/error.hpp"

// A file that only throws must not parse fmt: error.hpp keeps it in error.cpp.
#ifdef FMT_VERSION
#error "base/error.hpp includes fmt"
#endif

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace scalescope {
namespace {

template <typename... Args>
std::string message_of(detail::ErrorFormat<std::type_identity_t<Args>...> format, const Args&... args) {
  try {
    fail(format, args...);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Error, FormatsEachKindOfArgumentAsFmtDoes) {
  const std::string name = "rank0.sstrace";
  const std::string_view view = "events";
  EXPECT_EQ(message_of("{}: {} {}", name, view, "missing"), "rank0.sstrace: events missing");
  EXPECT_EQ(message_of("{} {} {} {}", int8_t{-3}, uint8_t{200}, int64_t{-1} << 40, ~uint64_t{0}),
            fmt::format("{} {} {} {}", int8_t{-3}, uint8_t{200}, int64_t{-1} << 40, ~uint64_t{0}));
  EXPECT_EQ(message_of("{} {} {}", 0.1f, 0.1, 1e300), fmt::format("{} {} {}", 0.1f, 0.1, 1e300));
  EXPECT_EQ(message_of("{:.1f} {:>6} {:#x} {:08.3f}", 2.25, 42, 255u, 3.14159),
            fmt::format("{:.1f} {:>6} {:#x} {:08.3f}", 2.25, 42, 255u, 3.14159));
  EXPECT_EQ(message_of("{} {} '{}'", true, size_t{7}, 'x'), "true 7 'x'");
  EXPECT_EQ(message_of("{1} before {0}", "b", "a"), "a before b");
  EXPECT_EQ(message_of("{{literal}} {}", 1), "{literal} 1");
  EXPECT_EQ(message_of("no arguments"), "no arguments");
}

TEST(Error, ASpecifierThatDoesNotFitItsArgumentStillGivesTheError) {
  // Only the count of fields is checked at compile time: a float specifier
  // on a string would make fmt throw its own exception, which no caller of
  // fail() catches. The Error comes all the same, with the text as written.
  const std::string m = message_of("{:.2f} is broken", "rank0.sstrace");
  EXPECT_EQ(m.rfind("{:.2f} is broken (message left unformatted: ", 0), 0u) << m;
}

TEST(Error, CountsReplacementFieldsAtCompileTime) {
  static_assert(detail::format_arguments("") == 0);
  static_assert(detail::format_arguments("{} and {:.2f}") == 2);
  static_assert(detail::format_arguments("{{}} {}") == 1);
  static_assert(detail::format_arguments("{0} {0} {1}") == 2);
  static_assert(detail::format_arguments("{:{}}") == 2);
  static_assert(detail::format_arguments("{") == -1);
  static_assert(detail::format_arguments("}") == -1);
}

}  // namespace
}  // namespace scalescope
