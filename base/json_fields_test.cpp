#include "base/json_fields.hpp"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace scalescope {
namespace {

struct Row {
  std::string name;
  int64_t total_ns = 0;
  double share = 0;
  std::vector<int> ranks;
  int kind = 0;
};

TEST(JsonFields, WritesEachFieldUnderItsMemberName) {
  const Row r{"gemm", 1500, 0.25, {0, 3}, 2};
  const nlohmann::json j = SCALESCOPE_JSON_FIELDS(r, name, total_ns, share, ranks);
  EXPECT_EQ(j.dump(), R"({"name":"gemm","ranks":[0,3],"share":0.25,"total_ns":1500})");
}

TEST(JsonFields, AddsFieldsUnderOtherNamesAndKeepsTheOutputOfAnObjectLiteral) {
  const Row r{"gemm", 1500, 0.25, {}, 2};
  const nlohmann::json written =
      json_with(SCALESCOPE_JSON_FIELDS(r, name, total_ns), {{"kind_name", r.kind == 2 ? "copy" : "other"}});
  const nlohmann::json literal = {{"name", r.name}, {"kind_name", "copy"}, {"total_ns", r.total_ns}};
  EXPECT_EQ(written.dump(), literal.dump());
}

TEST(JsonFields, OptionalIsItsValueOrNull) {
  EXPECT_EQ(or_null(std::optional<double>(1.5)).dump(), "1.5");
  EXPECT_TRUE(or_null(std::optional<int>()).is_null());
}

}  // namespace
}  // namespace scalescope
