#pragma once
// Private: the report's data model while it is being built, and the helpers
// the section builders share. The page (report/web/report.js) renders it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/html_report.hpp"

namespace scalescope::report {
class Table;
}
namespace scalescope::analyze {
struct RankAnalysis;
struct RunAnalysis;
}
namespace scalescope::trace {
struct ClockAlignment;
}

namespace scalescope::report::detail {

using Json = nlohmann::json;

struct Document {
  ReportOptions options;
  Json inputs = Json::array();    // [{path, kind}]
  Json findings = Json::array();  // advisor findings of every run, ranked by saving
  Json sections = Json::array();  // [{title, subtitle, blocks}]
  bool analysed_runs = false;     // a run was analysed (so "no findings" is a result)
  std::vector<std::string> highlights;
  // Highlights per kind, so that many sweeps cannot crowd out the findings.
  int finding_highlights = 0;
  int mlperf_highlights = 0;
};

Json paragraph(std::string text, std::string_view style = {});
// A report::Table as a table block; name_columns are shown in a monospace, wrapping style.
Json table_block(const Table& table, std::vector<int> name_columns = {});
Json section(std::string title, std::string subtitle, Json blocks);
inline double ms(double ns) { return ns / 1e6; }

// GPU time by operator and module of the first rank (attribution_sections.cpp).
Json attribution_blocks(const analyze::RunAnalysis& run);

// Builders, one per kind of input (run_sections.cpp, sweep_sections.cpp, mlperf_sections.cpp).
// clocks: the estimate already applied to the traces (trace::align_clocks;
// shown in the per-node view); null: combine() estimates it from the ranks.
void add_run_sections(Document& doc, const std::string& label, const std::vector<trace::Trace>& ranks,
                      const trace::ClockAlignment* clocks = nullptr);
// A trace, run directory or folder of traces, read by analyze::analyze_path
// (the pipeline of `scalescope analyze`, so the page shows what it prints).
void add_run_path_sections(Document& doc, const std::string& label, const std::filesystem::path& path);
void add_sweep_sections(Document& doc, const std::filesystem::path& path);
void add_mlperf_sections(Document& doc, const std::string& label, const std::vector<mlperf::Run>& runs);
void add_mlperf_csv_sections(Document& doc, const std::string& label, const std::filesystem::path& csv);
// study_sections.cpp: a folder laid out like examples/h200 (HtmlReport::add_study_folder).
std::vector<std::filesystem::path> add_study_sections(Document& doc, const std::filesystem::path& dir,
                                                      const std::string& label);

}  // namespace scalescope::report::detail
