#include "demo/demo_report.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace scalescope::demo {
namespace {

namespace fs = std::filesystem;

// What the demo found, for scripts: the findings, then the files.
TEST(DemoReport, FoundTableHasFindingsThenFiles) {
  const report::Table t = found_table({"rank 1 is late", "copies are pageable"}, {{"report", "/tmp/x/report.html"}});
  EXPECT_EQ(t.id(), "what_the_demo_found");
  const nlohmann::json j = t.json();
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["item"], "finding");
  EXPECT_EQ(j["rows"][1]["text"], "copies are pageable");
  EXPECT_EQ(j["rows"][2]["item"], "report");
  EXPECT_EQ(j["rows"][2]["text"], "/tmp/x/report.html");
}

// --format json: the findings and the page's path, typed.
TEST(DemoReport, FoundJsonIsTyped) {
  const nlohmann::json j = demo_json({.report = "/tmp/x/report.html", .highlights = {"rank 1 is late", "copies"}});
  EXPECT_EQ(j, nlohmann::json({{"findings", {"rank 1 is late", "copies"}}, {"report", "/tmp/x/report.html"}}));
  EXPECT_EQ(demo_json({.report = "rel/report.html", .highlights = {}})["report"],
            (fs::current_path() / "rel/report.html").string());
}

// The report is never written inside the study folder it reads: refused
// before anything is read or written, naming the file.
TEST(DemoReport, NeverWritesInsideTheStudyItReads) {
  const fs::path study = fs::temp_directory_path() / ("scalescope-demo-report-test-" + std::to_string(::getpid()));
  fs::remove_all(study);
  fs::create_directories(study);
  std::ofstream(study / "report.html") << "not a report";
  try {
    write_demo_report({.out_dir = study, .study = study});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("report.html"), std::string::npos) << e.what();
  }
  std::ifstream in(study / "report.html");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not a report");
  fs::remove_all(study);
}

}  // namespace
}  // namespace scalescope::demo
