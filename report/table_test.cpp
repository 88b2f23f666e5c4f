#include "report/table.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "report/json_envelope.hpp"
#include "report/terminal.hpp"

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

TEST(Table, TerminalEscapesControlCharactersCsvAndJsonKeepThem) {
  // Set the window title, ring the bell, clear the screen; a C1 CSI; a stray byte.
  const std::string evil =
      "k\x1b]0;pwned\x07\x1b[2J\xc2\x9b"
      "1m\xff";
  Table t("evil \x1b[31mtitle", {"name", "n"});
  t.add_row({evil, int64_t{1}});
  t.add_note("note \x1b[2J");
  std::ostringstream term;
  t.print(term, OutputFormat::kTable, 0);
  EXPECT_EQ(term.str().find('\x1b'), std::string::npos) << term.str();
  EXPECT_EQ(term.str().find('\x07'), std::string::npos);
  EXPECT_NE(term.str().find("k\\x1b]0;pwned\\x07\\x1b[2J\\u009b1m\\xff"), std::string::npos) << term.str();
  std::ostringstream csv;
  t.print(csv, OutputFormat::kCsv);
  EXPECT_NE(csv.str().find(evil), std::string::npos);
  EXPECT_EQ(terminal_safe("tab\tkept, é kept"), "tab\tkept, é kept");
}

// A right-to-left override (or isolate, embedding, mark) in a name would
// reverse what follows it on the line: shown as an escape instead.
TEST(Table, TerminalEscapesBidirectionalControls) {
  EXPECT_EQ(terminal_safe("gemm\u202Elanrek\u202C ok"), "gemm\\u202elanrek\\u202c ok");
  EXPECT_EQ(terminal_safe("a\u2066b\u2069c\u200Fd\u061Ce"), "a\\u2066b\\u2069c\\u200fd\\u061ce");
  EXPECT_EQ(terminal_safe("\u05e9\u05dc\u05d5\u05dd"), "\u05e9\u05dc\u05d5\u05dd");  // Hebrew text itself is kept
  Table t("kernels", {"name", "n"});
  t.add_row({std::string("evil\u202Etxt.exe"), int64_t{1}});
  std::ostringstream term;
  t.print(term, OutputFormat::kTable, 0);
  EXPECT_EQ(term.str().find("\u202E"), std::string::npos) << term.str();
  EXPECT_NE(term.str().find("evil\\u202etxt.exe"), std::string::npos) << term.str();
}

TEST(Table, ScriptsOnlyColumnsAreInCsvAndJsonNotOnTheTerminal) {
  Table t("kernels", {Column("short_name", 0), Column("name", 0).scripts_only(), Column("total_ns", 0)});
  t.add_row({std::string("at::native::reduce_kernel"), std::string("void at::native::reduce_kernel<128, 4>(int)"),
             int64_t{1500}});
  t.add_note("a note");
  std::ostringstream term, csv, json;
  t.print(term, OutputFormat::kTable, 0);
  t.print(csv, OutputFormat::kCsv);
  t.print(json, OutputFormat::kJson);
  EXPECT_NE(term.str().find("at::native::reduce_kernel"), std::string::npos) << term.str();
  EXPECT_EQ(term.str().find("<128, 4>"), std::string::npos) << term.str();
  EXPECT_NE(term.str().find("1.500 us"), std::string::npos) << term.str();
  EXPECT_NE(term.str().find("a note"), std::string::npos) << term.str();
  EXPECT_NE(csv.str().find("short_name,name,total_ns"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("<128, 4>(int)"), std::string::npos) << csv.str();
  EXPECT_NE(json.str().find("\"name\":\"void at::native::reduce_kernel<128, 4>(int)\""), std::string::npos)
      << json.str();
}

TEST(Table, LongNamesAreAbbreviatedInTheMiddleAndStayDistinct) {
  // Kernel names that differ only in their template tail, and one only in the head.
  const std::string mid(200, 'x');
  Table t("kernels", {"name", "calls", "total_ns"});
  t.add_row({"void at::native::elementwise_kernel<" + mid + "<float>>", int64_t{1}, int64_t{1500}});
  t.add_row({"void at::native::elementwise_kernel<" + mid + "<half>>", int64_t{2}, int64_t{2'500'000}});
  t.add_row({"void at::native::reduce_kernel<" + mid + "<half>>", int64_t{3}, int64_t{3}});
  std::ostringstream out;
  t.print(out, OutputFormat::kTable, 80);
  std::istringstream lines(out.str());
  std::string line;
  std::set<std::string> names;
  while (std::getline(lines, line)) {
    EXPECT_LE(display_width(line), 80u) << line;
    if (line.starts_with("void")) names.insert(line.substr(0, line.find("  ")));
  }
  ASSERT_EQ(names.size(), 3u) << out.str();  // three rows, three different texts
  for (const auto& n : names) EXPECT_NE(n.find("..."), std::string::npos) << n;
  EXPECT_NE(out.str().find("float>>"), std::string::npos) << out.str();  // the template tail is kept
  EXPECT_NE(out.str().find("half>>"), std::string::npos);
  // Durations in readable units; the header loses its _ns.
  EXPECT_NE(out.str().find("2.500 ms"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("1.500 us"), std::string::npos);
  EXPECT_NE(out.str().find("total"), std::string::npos);
  EXPECT_EQ(out.str().find("total_ns"), std::string::npos);
  // No limit: whole names.
  std::ostringstream wide;
  t.print(wide, OutputFormat::kTable, 0);
  EXPECT_NE(wide.str().find(mid + "<float>>"), std::string::npos);
  // CSV keeps the names and the nanoseconds.
  std::ostringstream csv;
  t.print(csv, OutputFormat::kCsv);
  EXPECT_NE(csv.str().find(mid + "<half>>,2,2500000"), std::string::npos) << csv.str();
}

TEST(Table, ProseThatDoesNotFitIsPrintedAsBlocks) {
  Table t("Findings", {Column("rank_order", 0), Column("id"), Column::prose("evidence"), Column::prose("fix")});
  const std::string evidence(300, 'e');
  t.add_row({int64_t{1}, std::string("launch_bound"), evidence, std::string("use CUDA graphs")});
  std::ostringstream out;
  t.print(out, OutputFormat::kTable, 100);
  std::istringstream lines(out.str());
  std::string line;
  size_t evidence_chars = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(display_width(line), 100u) << line;
    evidence_chars += static_cast<size_t>(std::count(line.begin(), line.end(), 'e'));
  }
  EXPECT_GE(evidence_chars, 300u);  // wrapped, not cut
  EXPECT_NE(out.str().find("rank_order: 1 id: launch_bound"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("    fix: use CUDA graphs"), std::string::npos) << out.str();
}

TEST(Table, NarrowTerminalHidesDetailColumnsNotTheTable) {
  // wall_ns is followed by its share, so it is a detail; cv is marked one.
  Table t("Breakdown", columns({{"rank", 0}, {"compute_ns", 0}, {"compute_pct", 1}, {"cv", 3, 2}, {"verdict", 0}}));
  t.add_row({int64_t{0}, int64_t{123456789}, 28.0, 0.107, std::string("launch-bound")});
  std::ostringstream wide, narrow;
  t.print(wide, OutputFormat::kTable, 200);
  t.print(narrow, OutputFormat::kTable, 36);
  EXPECT_NE(wide.str().find("compute  compute_pct"), std::string::npos) << wide.str();
  EXPECT_EQ(wide.str().find("not shown"), std::string::npos) << wide.str();
  std::istringstream lines(narrow.str());
  std::string line;
  std::getline(lines, line);  // title
  std::getline(lines, line);
  EXPECT_EQ(line, "rank  compute_pct  verdict") << narrow.str();  // a table, not key: value blocks
  EXPECT_NE(narrow.str().find("not shown at 36 columns: compute, cv"), std::string::npos) << narrow.str();
  std::ostringstream csv;
  t.print(csv, OutputFormat::kCsv);
  EXPECT_EQ(csv.str().substr(0, csv.str().find('\n')), "rank,compute_ns,compute_pct,cv,verdict");
}

TEST(Table, EmptyTableWithAReasonIsOneLine) {
  Table t("Stragglers (lateness at matched collectives)", {"rank", "late_ns"});
  t.add_note("Stragglers: skipped: stragglers need at least two ranks");
  std::ostringstream out;
  t.print(out, OutputFormat::kTable, 120);
  EXPECT_EQ(out.str(), "Stragglers: skipped: stragglers need at least two ranks\n");
}

TEST(Table, JsonIsInTheEnvelopeWithStableIdsAndBooleans) {
  Table t("GPU kernel summary (rank 3, /tmp/x.sstrace)", {"name", "launch_bound"});
  t.add_row({std::string("k"), true});
  std::ostringstream out;
  print_tables(out, "stats", {t}, OutputFormat::kJson);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j, json_envelope("stats", {{"tables", nlohmann::json::array({t.json()})}}));
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_EQ(j["command"], "stats");
  EXPECT_EQ(j["tables"][0]["id"], "gpu_kernel_summary");
  EXPECT_EQ(j["tables"][0]["rows"][0]["launch_bound"], true);
  std::ostringstream one;
  t.print(one, OutputFormat::kJson);
  EXPECT_EQ(nlohmann::json::parse(one.str()), j["tables"][0]);  // one table alone: its object
  std::ostringstream csv;
  print_tables(csv, "test", {t, t}, OutputFormat::kCsv);
  EXPECT_EQ(csv.str(),
            "# gpu_kernel_summary: GPU kernel summary (rank 3, /tmp/x.sstrace)\nname,launch_bound\nk,true\n\n"
            "# gpu_kernel_summary: GPU kernel summary (rank 3, /tmp/x.sstrace)\nname,launch_bound\nk,true\n");
  std::ostringstream term;
  t.print(term, OutputFormat::kTable, 0);
  EXPECT_NE(term.str().find("k     yes"), std::string::npos) << term.str();
}

TEST(Format, NoNanPercent) {
  EXPECT_EQ(format_percent(std::nan("")), "n/a");
  EXPECT_EQ(format_duration_ns(std::nan("")), "n/a");
}

TEST(Format, HumanUnits) {
  EXPECT_EQ(format_duration_ns(1500), "1.500 us");
  EXPECT_EQ(format_bytes(1024.0 * 1024 * 3), "3.00 MiB");
  EXPECT_EQ(format_percent(0.125), "12.5%");
  EXPECT_EQ(parse_output_format("json"), OutputFormat::kJson);
  EXPECT_FALSE(parse_output_format("xml").has_value());
}

TEST(JsonEnvelope, AddsVersionAndCommandAndRefusesWhatIsNotAnObject) {
  const auto j = json_envelope("scaling", {{"scaling", 1}});
  EXPECT_EQ(j, nlohmann::json({{"schema_version", kJsonSchemaVersion}, {"command", "scaling"}, {"scaling", 1}}));
  EXPECT_THROW(json_envelope("x", nlohmann::json::array()), std::invalid_argument);
  EXPECT_THROW(json_envelope("x", {{"command", "y"}}), std::invalid_argument);
  EXPECT_EQ(json_text(nlohmann::json(std::string("a\xff"))), "\"a\xef\xbf\xbd\"");  // not UTF-8: U+FFFD
}

}  // namespace
}  // namespace scalescope::report
