#include "base/json_number.hpp"

#include <gtest/gtest.h>

namespace scalescope {
namespace {

using nlohmann::json;

TEST(JsonInteger, FitsOrIsRefused) {
  EXPECT_EQ(json_integer<uint32_t>(json(7)), 7u);
  EXPECT_EQ(json_integer<uint32_t>(json(4294967295ull)), 4294967295u);
  EXPECT_FALSE(json_integer<uint32_t>(json(4294967296ull))) << "wrapped to 0 by get<uint32_t>()";
  EXPECT_FALSE(json_integer<uint32_t>(json(-1)));
  EXPECT_EQ(json_integer<int32_t>(json(-2147483648ll)), -2147483648ll);
  EXPECT_FALSE(json_integer<int32_t>(json(2147483648ll)));
  EXPECT_EQ(json_integer<uint64_t>(json(18446744073709551615ull)), 18446744073709551615ull);
  EXPECT_FALSE(json_integer<int64_t>(json(18446744073709551615ull)));
}

TEST(JsonInteger, NumbersWithoutAFractionCountOthersDoNot) {
  EXPECT_EQ(json_integer<int64_t>(json::parse("1e9")), 1000000000);
  EXPECT_EQ(json_integer<int64_t>(json::parse("-9.223372036854775808e18")), INT64_MIN);
  EXPECT_FALSE(json_integer<int64_t>(json::parse("9.223372036854775808e18"))) << "2^63 is one past the end";
  EXPECT_FALSE(json_integer<int64_t>(json::parse("1.79658e+29"))) << "undefined as a cast";
  EXPECT_EQ(json_integer<uint64_t>(json::parse("1.8446744073709550e19")), 18446744073709549568ull);
  EXPECT_FALSE(json_integer<uint64_t>(json::parse("1.8446744073709552e19"))) << "2^64";
  EXPECT_FALSE(json_integer<int32_t>(json::parse("2.5")));
  EXPECT_FALSE(json_integer<int32_t>(json::parse("-0.5")));
  EXPECT_FALSE(json_integer<int32_t>(json("7")));
  EXPECT_FALSE(json_integer<int32_t>(json(true)));
  EXPECT_FALSE(json_integer<int32_t>(json()));
}

TEST(JsonInteger, FieldsNameTheFileAndTheKey) {
  const json o = json::parse(R"({"pid": 42, "rank": null, "tid": 1e30})");
  EXPECT_EQ(json_integer_field<uint32_t>(o, "pid", "a.json"), 42u);
  EXPECT_EQ(json_integer_or<int32_t>(o, "rank", -1, "a.json"), -1) << "null is absent";
  EXPECT_EQ(json_integer_or<int32_t>(o, "local_rank", -1, "a.json"), -1);
  try {
    json_integer_field<uint32_t>(o, "tid", "a.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a.json: \"tid\" is not an integer in [0, 4294967295]");
  }
  try {
    json_integer_or<uint32_t>(o, "tid", 0, "a.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a.json: \"tid\" is not an integer in [0, 4294967295]");
  }
  try {
    json_integer_field<uint32_t>(o, "host", "");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "\"host\" is missing");
  }
  EXPECT_THROW(json_integer_field<uint32_t>(json::array(), "pid", "a.json"), Error);
}

}  // namespace
}  // namespace scalescope
