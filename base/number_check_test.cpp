#include "base/number_check.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::trace {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NumberCheck, RefusesNanInfinitiesAndValuesOutOfRange) {
  const NumberRange efficiency{0, 1, true};
  EXPECT_DOUBLE_EQ(check_number(0.8, "--threshold", efficiency), 0.8);
  EXPECT_DOUBLE_EQ(check_number(1, "--threshold", efficiency), 1);
  EXPECT_EQ(error_of([&] { check_number(std::nan(""), "--threshold", efficiency); }),
            "--threshold nan is not a finite number in (0, 1]");
  EXPECT_THAT(error_of([&] { check_number(0, "--threshold", efficiency); }), HasSubstr("(0, 1]"));
  EXPECT_THAT(error_of([&] { check_number(std::numeric_limits<double>::infinity(), "x", {0, 1e6}); }),
              HasSubstr("x inf is not"));
  EXPECT_THAT(error_of([&] { check_number(-5, "--price-per-gpu-hour", {0, 1e6}); }),
              HasSubstr("--price-per-gpu-hour -5 is not a finite number in [0, 1000000]"));
  // A subnormal factor is outside any range with a sensible floor.
  EXPECT_THAT(error_of([&] { check_number(1e-320, "scaling_factor", {1e-3, 1e3}); }), HasSubstr("1e-320"));
  EXPECT_EQ(error_of([&] { check_number(std::nan(""), "", {0, 1}); }), "nan is not a finite number in [0, 1]");
}

TEST(NumberCheck, ParsesPlainNumbersOnly) {
  EXPECT_DOUBLE_EQ(parse_number("2.5", "p", {0, 10}), 2.5);
  EXPECT_DOUBLE_EQ(parse_number("1e1", "p", {0, 10}), 10);
  for (const char* bad : {"", " 1", "1x", "0x10", "1e999x"})
    EXPECT_THAT(error_of([&] { parse_number(bad, "p", {0, 10}); }), HasSubstr("is not a number")) << bad;
  // A number all the same, too large or too small for a double: said so.
  for (const char* far : {"1e999", "1e-400", "-1e999"})
    EXPECT_EQ(error_of([&] { parse_number(far, "--threshold", {0, 10}); }),
              fmt::format("--threshold '{}' is a number beyond what a double holds (about 1e-308 to 1e308 in size)", far))
        << far;
  for (const char* bad : {"nan", "inf", "-inf", "-1", "11"})
    EXPECT_THAT(error_of([&] { parse_number(bad, "p", {0, 10}); }), HasSubstr("is not a finite number")) << bad;
}

TEST(NumberCheck, DurationsArePositiveAndAtMostAYear) {
  EXPECT_DOUBLE_EQ(parse_duration("30m", "--timeout"), 1800);
  EXPECT_DOUBLE_EQ(parse_duration("1.5h", "--timeout"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration("45", "--timeout"), 45);
  EXPECT_DOUBLE_EQ(parse_duration("2s", "--timeout"), 2);
  EXPECT_DOUBLE_EQ(parse_duration("8784h", "--timeout"), kMaxDurationS);
  for (const char* bad : {"soon", "-3m", "0", "nan", "infh", "", "h", "1e999s"})
    EXPECT_THAT(error_of([&] { parse_duration(bad, "--kill-grace"); }), HasSubstr("is not a duration")) << bad;
  // Once accepted, 10^20 hours overflowed the clock it was added to (SIGKILL at once).
  EXPECT_EQ(error_of([&] { parse_duration("99999999999999999999h", "--kill-grace"); }),
            "--kill-grace '99999999999999999999h' is longer than 366 days");
  EXPECT_THAT(error_of([&] { parse_duration("8785h", "--timeout"); }), HasSubstr("longer than 366 days"));
}

}  // namespace
}  // namespace scalescope::trace
