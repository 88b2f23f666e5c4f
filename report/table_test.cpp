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

TEST(Table, SignificantColumnKeepsFiguresOnTheTerminalOnly) {
  Table t("times", {Column::significant("median", 4), Column("fixed", 4)});
  t.add_row({0.000612345, 0.000612345});
  t.add_row({0.0105, 12.5});
  t.add_row({std::monostate{}, 0.0});
  std::ostringstream term;
  t.print(term, OutputFormat::kTable);
  // Smallest non-zero value 0.000612345: 4 figures need 7 digits after the point.
  EXPECT_NE(term.str().find("0.0006123"), std::string::npos) << term.str();
  EXPECT_NE(term.str().find("0.0105000"), std::string::npos) << term.str();
  EXPECT_NE(term.str().find(" 0.0006\n"), std::string::npos) << term.str();  // the fixed column as before
  std::ostringstream csv;
  t.print(csv, OutputFormat::kCsv);
  EXPECT_EQ(csv.str(), "median,fixed\n0.000612345,0.000612345\n0.0105,12.5\n,0\n");
  Table big("big", {Column::significant("v", 3)});
  big.add_row({1234.6});
  std::ostringstream b;
  big.print(b, OutputFormat::kTable);
  EXPECT_NE(b.str().find("\n1235\n"), std::string::npos) << b.str();  // no digits after the point for large values
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
