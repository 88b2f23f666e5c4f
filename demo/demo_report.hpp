#pragma once
// `scalescope demo` without a GPU: the H200 study results and the MLPerf
// Training v4.1 table embedded in the binary (or a study folder given), the
// bundled sample trace and a generated 4-rank run, analysed and written as
// one HTML report; and what a demo found, as one table (CSV) or typed JSON
// for scripts.
//
//   const demo::DemoReport r = demo::write_demo_report({.out_dir = "/tmp/demo"});
//   report::print_tables(std::cout, "demo", {demo::found_table(r.highlights, {{"report", r.report.string()}})}, format);
//   std::cout << report::json_text(report::json_envelope("demo", demo::demo_json(r)), 2);  // --format json

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.hpp"

namespace scalescope::demo {

struct DemoReportOptions {
  std::filesystem::path out_dir = "scalescope-demo";
  // A folder laid out like examples/h200 (*.db, traces/*.ssrun) to use
  // instead of the embedded study; "" = the embedded one.
  std::filesystem::path study;
};

struct DemoReport {
  std::filesystem::path report;         // OUT_DIR/report.html, replaced when it exists
  std::vector<std::string> highlights;  // the report's highlights, one sentence each
};

// Writes the demo's report; progress on stderr. Never writes inside the
// study folder it reads (Error naming the file). The embedded study goes
// through a temporary folder that is removed before it returns.
DemoReport write_demo_report(const DemoReportOptions& options);

// What a demo found, for --format csv (demo_json is the JSON): one row per finding ("finding",
// its sentence), then one per file (its item, e.g. "report", and path).
report::Table found_table(const std::vector<std::string>& findings,
                          const std::vector<std::pair<std::string, std::string>>& files);

// What the embedded demo found, for --format json: {"findings": [sentence,
// ...], "report": the page's absolute path}.
nlohmann::json demo_json(const DemoReport& found);

}  // namespace scalescope::demo
