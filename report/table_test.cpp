#include "report/table.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace scalescope::report {
namespace {

Table sample() {
  Table t("kernels", {"name", "calls", "share"});
  t.add_row({std::string("gemm, \"big\""), int64_t{12}, 0.5});
  t.add_row({std::string("<script>"), int64_t{3}, std::monostate{}});
  return t;
}

TEST(Table, CsvQuotesCommasAndQuotes) {
  std::ostringstream out;
  sample().print(out, OutputFormat::kCsv);
  EXPECT_EQ(out.str(), "name,calls,share\n\"gemm, \"\"big\"\"\",12,0.5\n<script>,3,\n");
}

TEST(Table, JsonKeepsTypes) {
  auto j = nlohmann::json::parse(sample().to_json());
  EXPECT_EQ(j["title"], "kernels");
  EXPECT_EQ(j["rows"][0]["calls"], 12);
  EXPECT_DOUBLE_EQ(j["rows"][0]["share"].get<double>(), 0.5);
  EXPECT_TRUE(j["rows"][1]["share"].is_null());
}

TEST(Table, TerminalAlignsColumns) {
  std::ostringstream out;
  sample().print(out, OutputFormat::kTable);
  std::string s = out.str();
  EXPECT_NE(s.find("kernels\n"), std::string::npos);
  EXPECT_NE(s.find("calls"), std::string::npos);
  EXPECT_EQ(s.find("\033["), std::string::npos);  // no colour off a tty
}

TEST(Table, RowWithWrongWidthIsABug) {
  Table t("x", {"a", "b"});
  EXPECT_THROW(t.add_row({int64_t{1}}), std::logic_error);
}

TEST(Format, HumanUnits) {
  EXPECT_EQ(format_duration_ns(1500), "1.500 us");
  EXPECT_EQ(format_bytes(1024.0 * 1024 * 3), "3.00 MiB");
  EXPECT_EQ(format_percent(0.125), "12.5%");
  EXPECT_EQ(parse_output_format("json"), OutputFormat::kJson);
  EXPECT_FALSE(parse_output_format("xml").has_value());
}

}  // namespace
}  // namespace scalescope::report
