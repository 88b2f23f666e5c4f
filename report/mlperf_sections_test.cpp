// The MLPerf tables and the HTML page's MLPerf section, both drawn from
// mlperf::analyze: the page shows the numbers `scalescope mlperf analyze
// --format json` prints, and keeps the groups that it keeps apart.

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mlperf/mlperf.hpp"
#include "report/html_report.hpp"
#include "report/mlperf_tables.hpp"
#include "report/table.hpp"
#include "base/error.hpp"

namespace scalescope::report {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

// `runs` runs of `minutes` each of one system: a scored gpt3 folder (three runs needed).
void add_system(std::vector<mlperf::Run>& runs, const std::string& system, int accelerators, double minutes,
                const std::string& division = "closed", const std::string& accelerator = "NVIDIA H100-SXM5-80GB") {
  for (int i = 0; i < 3; ++i) {
    mlperf::Run r;
    r.submitter = "S";
    r.system = system;
    r.benchmark_folder = "gpt3";
    r.benchmark = "gpt3";
    r.division = division;
    r.accelerator = accelerator;
    r.nodes = std::max(1, accelerators / 8);
    r.accelerators_per_node = accelerators / r.nodes;
    r.accelerators = accelerators;
    r.minutes = minutes;
    r.converged = true;
    r.status = "success";
    runs.push_back(r);
  }
}

Json analyze_json(const std::vector<mlperf::Run>& runs, double threshold) {
  mlperf::AnalyzeOptions o;
  o.threshold = threshold;
  std::ostringstream out;
  print_tables(out, "mlperf analyze", mlperf_scaling_tables(mlperf::analyze(runs, o)), OutputFormat::kJson);
  return Json::parse(out.str());
}

Json page_json(const std::vector<mlperf::Run>& runs, double threshold) {
  HtmlReport r({.title = "t", .threshold = threshold, .quiet = true});
  r.add_mlperf_runs("runs", runs);
  return Json::parse(r.document_json());
}

std::vector<Json> page_blocks(const Json& doc, const std::string& type, const std::string& title_prefix) {
  std::vector<Json> out;
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == type && b.contains("title") && b["title"].get<std::string>().starts_with(title_prefix))
        out.push_back(b);
  return out;
}

const Json& summary_of(const Json& doc) {
  static Json found;
  const auto blocks = page_blocks(doc, "table", "Break-even per benchmark and accelerator");
  if (blocks.size() != 1) throw std::runtime_error("the page has no single break-even summary");
  found = blocks[0];
  return found;
}

// The rows of an analyze table on the curve (reference or fastest at N), ascending N.
std::vector<Json> curve_rows(const Json& table) {
  std::vector<Json> out;
  for (const auto& r : table["rows"])
    if (!r["role"].get<std::string>().empty()) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const Json& a, const Json& b) {
    return a["accelerators"].get<int>() < b["accelerators"].get<int>();
  });
  return out;
}

bool has_note(const Json& table, const std::string& part) {
  for (const auto& n : table["notes"])
    if (n.get<std::string>().find(part) != std::string::npos) return true;
  return false;
}
// The note that starts with `prefix`; "" when none.
std::string note_starting(const Json& table, const std::string& prefix) {
  for (const auto& n : table["notes"])
    if (n.get<std::string>().starts_with(prefix)) return n.get<std::string>();
  return "";
}

// Every group that `mlperf analyze` scales (two or more counts) is a row of
// the page's summary with the same systems, reference, largest count, E' and
// break-even, and its chart series hold the analyze rows' speedups and E'.
void expect_page_equals_analyze(const std::vector<mlperf::Run>& runs, double threshold) {
  const Json cli = analyze_json(runs, threshold);
  const Json doc = page_json(runs, threshold);
  const Json& summary = summary_of(doc);
  size_t scaled = 0;
  const Json* break_even = nullptr;
  for (const auto& t : cli["tables"]) {
    if (t["id"] == "break_even_per_benchmark_and_accelerator") break_even = &t;
    else if (curve_rows(t).size() >= 2) ++scaled;
  }
  ASSERT_EQ(summary["rows"].size(), scaled) << "every group with two or more counts is on the page";
  // The same break-even table in `mlperf analyze` (its rows keyed by column) as on the page.
  ASSERT_NE(break_even, nullptr);
  ASSERT_EQ((*break_even)["rows"].size(), scaled);
  for (size_t i = 0; i < scaled; ++i)
    for (size_t c = 0; c < summary["columns"].size(); ++c)
      EXPECT_EQ((*break_even)["rows"][i][summary["columns"][c].get<std::string>()], summary["rows"][i][c]);
  ASSERT_GT(scaled, 0u);
  for (const auto& row : summary["rows"]) {
    const std::string title = row[0].get<std::string>(), accelerator = row[1].get<std::string>();
    const std::string what = title + " on " + accelerator;
    const std::string table_title = fmt::format("MLPerf {} on {}: scaling across systems", title, accelerator);
    const Json* table = nullptr;
    for (const auto& t : cli["tables"])
      if (t["title"] == table_title) table = &t;
    ASSERT_NE(table, nullptr) << "no analyze table " << table_title;
    const auto curve = curve_rows(*table);
    EXPECT_EQ(row[2].get<size_t>(), (*table)["rows"].size()) << what;
    EXPECT_EQ(row[3].get<size_t>(), curve.size()) << what;
    const Json* ref = nullptr;
    for (const auto& r : curve)
      if (r["role"] == "reference") ref = &r;
    ASSERT_NE(ref, nullptr) << what;
    EXPECT_EQ(row[4], fmt::format("{} ({})", (*ref)["accelerators"].get<int>(), (*ref)["system"].get<std::string>()))
        << what;
    const Json& last = curve.back();
    EXPECT_EQ(row[5], fmt::format("{} ({})", last["accelerators"].get<int>(), last["system"].get<std::string>()))
        << what;
    EXPECT_DOUBLE_EQ(row[6].get<double>(), last["efficiency"].get<double>()) << what;
    const std::string rule_a =
        fmt::format("largest N with E' >= {:.2f} on the curve of the fastest system at each N: ", threshold);
    if (row[7].is_number())
      EXPECT_TRUE(has_note(*table, rule_a + fmt::format("N={} (", row[7].get<int>()))) << what << ": " << row[7];
    else EXPECT_TRUE(has_note(*table, rule_a + "none")) << what;
    const std::string knee = note_starting(*table, "break-even (b), ");
    if (row[8].is_number()) EXPECT_THAT(knee, HasSubstr(fmt::format(": N={} (", row[8].get<int>()))) << what;
    else EXPECT_TRUE(knee.ends_with(": none")) << what << ": " << knee;

    // The chart series of this accelerator: the analyze rows of the curve.
    for (const auto& [kind, column] : {std::pair{"speedup", "speedup"}, std::pair{"E'", "efficiency"}}) {
      const auto charts = page_blocks(doc, "chart", fmt::format("{}: {} against accelerators", title, kind));
      ASSERT_EQ(charts.size(), 1u) << what << " " << kind;
      const Json* series = nullptr;
      for (const auto& s : charts[0]["series"])
        if (s["name"] == accelerator) series = &s;
      ASSERT_NE(series, nullptr) << what << " " << kind;
      ASSERT_EQ((*series)["points"].size(), curve.size()) << what;
      for (size_t i = 0; i < curve.size(); ++i) {
        EXPECT_EQ((*series)["points"][i][0].get<int>(), curve[i]["accelerators"].get<int>()) << what;
        EXPECT_DOUBLE_EQ((*series)["points"][i][1].get<double>(), curve[i][column].get<double>())
            << what << " " << kind << " at " << curve[i]["accelerators"];
      }
    }
  }
}

TEST(MlperfSections, PageAndAnalyzeShowTheSameGroups) {
  // All of MLPerf Training v4.1 (the embedded table), at two thresholds.
  const auto runs = mlperf::read_runs_csv(mlperf::default_runs_csv(), "embedded");
  expect_page_equals_analyze(runs, 0.8);
  expect_page_equals_analyze(runs, 0.6);
}

// Closed and open division results are not comparable: `mlperf analyze` keeps
// them apart, and so does the page (it used to put the open division's faster
// systems on the closed division's curve).
TEST(MlperfSections, OpenAndClosedDivisionsStayApart) {
  std::vector<mlperf::Run> runs;
  add_system(runs, "c8", 8, 10);
  add_system(runs, "c16", 16, 6);
  add_system(runs, "o16", 16, 2, "open");
  add_system(runs, "o32", 32, 1.5, "open");
  expect_page_equals_analyze(runs, 0.8);
  const Json& summary = summary_of(page_json(runs, 0.8));
  ASSERT_EQ(summary["rows"].size(), 2u);
  const Json& closed = summary["rows"][0];
  const Json& open = summary["rows"][1];
  EXPECT_EQ(closed[0], "gpt3");
  EXPECT_EQ(closed[2].get<int>(), 2);  // systems
  EXPECT_EQ(closed[5], "16 (c16)");
  EXPECT_DOUBLE_EQ(closed[6].get<double>(), 8.0 * 10 / (16 * 6));
  EXPECT_EQ(open[0], "gpt3 (open division)");
  EXPECT_EQ(open[4], "16 (o16)");
  EXPECT_EQ(open[5], "32 (o32)");
  EXPECT_DOUBLE_EQ(open[6].get<double>(), 16.0 * 2 / (32 * 1.5));
  EXPECT_EQ(page_blocks(page_json(runs, 0.8), "chart", "gpt3 (open division): E'").size(), 1u);
}

TEST(MlperfSections, NothingScoredIsSaidNotHidden) {
  std::vector<mlperf::Run> runs;
  add_system(runs, "x", 8, 10);
  for (auto& r : runs) r.accelerators = 0;  // scored, but no count to scale by
  const Json doc = page_json(runs, 0.8);
  EXPECT_THAT(doc.dump(), HasSubstr("3 runs, 1 result folders, 0 scored."));
  EXPECT_TRUE(summary_of(doc)["rows"].empty());
  HtmlReport r({.threshold = 1.5, .quiet = true});
  EXPECT_THROW(r.add_mlperf_runs("runs", runs), Error);
}

// The tables of `mlperf analyze`: one row per system with its role, the
// reference and the break-even points as notes, left-out systems named.
TEST(MlperfTables, ScalingTablesRenderTheTypedGroups) {
  std::vector<mlperf::Run> runs;
  add_system(runs, "n8", 8, 100);
  add_system(runs, "n8b", 8, 125);
  add_system(runs, "n16", 16, 52);
  add_system(runs, "n32", 32, 28);
  add_system(runs, "n64", 64, 18);
  add_system(runs, "unknown", 8, 50);
  for (auto& r : runs)
    if (r.system == "unknown") r.accelerators = 0;
  const auto tables = mlperf_scaling_tables(mlperf::analyze(runs, {}));
  ASSERT_EQ(tables.size(), 2u);  // the group's, then the break-even of every group that scales
  const Table& be = tables[1];
  EXPECT_EQ(be.title(), "Break-even per benchmark and accelerator");
  ASSERT_EQ(be.rows().size(), 1u);
  EXPECT_EQ(std::get<std::string>(be.rows()[0][0]), "gpt3");
  EXPECT_EQ(std::get<int64_t>(be.rows()[0][3]), 4);  // counts 8, 16, 32, 64
  EXPECT_EQ(std::get<std::string>(be.rows()[0][4]), "8 (n8)");
  EXPECT_EQ(std::get<int64_t>(be.rows()[0][7]), 32);
  const Table& t = tables[0];
  EXPECT_EQ(t.title(), "MLPerf gpt3 on H100-SXM5-80GB: scaling across systems");
  ASSERT_EQ(t.rows().size(), 5u);
  EXPECT_EQ(std::get<std::string>(t.rows()[0][0]), "n8");
  EXPECT_EQ(std::get<std::string>(t.rows()[0][9]), "reference");
  EXPECT_EQ(std::get<std::string>(t.rows()[1][9]), "");
  EXPECT_EQ(std::get<std::string>(t.rows()[2][9]), "fastest at N");
  EXPECT_EQ(std::get<std::string>(t.rows()[0][8]), "yes");
  EXPECT_EQ(std::get<std::string>(t.rows()[1][8]), "");  // n8b is dominated by n8
  EXPECT_NEAR(std::get<double>(t.rows()[1][7]), 0.8, 1e-12);
  EXPECT_NEAR(std::get<double>(t.rows()[2][6]), 100.0 / 52, 1e-12);
  EXPECT_NEAR(std::get<double>(t.rows()[4][4]), 18, 1e-12);
  EXPECT_NEAR(std::get<double>(t.rows()[4][5]), 64 * 18 / 60.0, 1e-12);
  EXPECT_EQ(std::get<int64_t>(t.rows()[4][3]), 8);
  const std::string json = t.to_json();
  EXPECT_THAT(json, HasSubstr("reference: n8 (8 accelerators, 100.000 min), the fewest accelerators"));
  EXPECT_THAT(json, HasSubstr("largest N with E' >= 0.80 on the curve of the fastest system at each N: N=32 (n32)"));
  EXPECT_THAT(json, HasSubstr("left out (accelerator count unknown): S/unknown/gpt3"));
  const auto chosen = mlperf_scaling_tables(mlperf::analyze(runs, {.ref_system = "n16"}));
  EXPECT_THAT(chosen[0].to_json(), HasSubstr("reference: n16 (16 accelerators, 52.000 min), chosen with --ref"));
}

TEST(MlperfTables, RunsAndScoresTables) {
  std::vector<mlperf::Run> runs;
  add_system(runs, "a", 8, 10);
  runs[0].global_batch_size = 2048;
  const Table rt = mlperf_runs_table(runs);
  ASSERT_EQ(rt.columns().size(), mlperf::runs_csv_columns().size());
  for (size_t i = 0; i < rt.columns().size(); ++i) EXPECT_EQ(rt.columns()[i].name, mlperf::runs_csv_columns()[i]);
  ASSERT_EQ(rt.rows().size(), 3u);
  EXPECT_EQ(std::get<int64_t>(rt.rows()[0][11]), 2048);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(rt.rows()[1][11]));
  const Table st = mlperf_scores_table(mlperf::score_folders(runs));
  ASSERT_EQ(st.rows().size(), 1u);
  EXPECT_NEAR(std::get<double>(st.rows()[0][10]), 10, 1e-12);
  EXPECT_EQ(std::get<std::string>(st.rows()[0][4]), "H100-SXM5-80GB");
  EXPECT_THAT(st.to_json(), HasSubstr("1 folders: 1 scored, 0 not scored (reason given)"));

  // What ingest prints: the scores (or the runs) with the counts read and the notes.
  mlperf::IngestResult ingest;
  ingest.runs = runs;
  ingest.logs = 3;
  ingest.bytes = 2'500'000;
  ingest.notes = {"no system description for a"};
  const Table scores = mlperf_ingest_table(ingest, false);
  EXPECT_EQ(scores.title(), st.title());
  EXPECT_EQ(scores.rows().size(), 1u);
  ASSERT_EQ(scores.notes().size(), 3u);
  EXPECT_THAT(scores.notes()[1], HasSubstr("3 run logs (2.5 MB), 0 result folders"));
  EXPECT_EQ(scores.notes()[2], "no system description for a");
  EXPECT_EQ(mlperf_ingest_table(ingest, true).rows().size(), 3u);
}

}  // namespace
}  // namespace scalescope::report
