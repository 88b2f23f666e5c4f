#include "report/html_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "report/embedded_assets.hpp"
#include "report/report_document.hpp"
#include "report/table.hpp"
#include "scalescope_version.hpp"
#include "trace/import/clock_alignment.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/launcher.hpp"
#include "base/safe_output.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/trace_source.hpp"

namespace scalescope::report {

namespace fs = std::filesystem;
using detail::Json;

std::string_view to_string(InputKind kind) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"trace", "run directory", "Kineto JSON trace", "sweep database",
                                       "MLPerf runs CSV", "directory of traces", "Nsight Systems export"});
  return name_by_value<InputKind::kNsysExport>(kNames, kind, "unknown");
}

InputKind detect_input_kind(const fs::path& path) {
  const trace::DetectedInput in = trace::detect_input(path);
  switch (in.kind) {
    case trace::InputKind::kTraceFile: return InputKind::kTraceFile;
    case trace::InputKind::kRunDirectory: return InputKind::kRunDirectory;
    case trace::InputKind::kKinetoJson: return InputKind::kKinetoJson;
    case trace::InputKind::kKinetoDirectory: return InputKind::kTraceDirectory;
    case trace::InputKind::kNsysSqlite:
    case trace::InputKind::kNsysDirectory: return InputKind::kNsysExport;
    case trace::InputKind::kSweepDatabase: return InputKind::kSweepDatabase;
    case trace::InputKind::kMlperfRunsCsv: return InputKind::kMlperfCsv;
    default:
      fail(
          "{}: {}; the report takes a trace, a run directory, a PyTorch-profiler JSON trace, an Nsight Systems "
          "export, a directory of traces, a sweep database or an MLPerf runs CSV",
          path.string(), in.what);
  }
}

namespace detail {

Json paragraph(std::string text, std::string_view style) {
  Json j = {{"type", "paragraph"}, {"text", std::move(text)}};
  if (!style.empty()) j["style"] = style;
  return j;
}

Json table_block(const Table& table, std::vector<int> name_columns) {
  Json cols = Json::array();
  for (const auto& c : table.columns()) cols.push_back(c.name);
  Json rows = Json::array();
  for (const auto& r : table.rows()) {
    Json row = Json::array();
    for (const auto& cell : r) {
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) row.push_back(nullptr);
            else if constexpr (std::is_same_v<T, bool>) row.push_back(v ? "yes" : "no");
            else if constexpr (std::is_same_v<T, double>) {
              if (std::isfinite(v)) row.push_back(v);
              else row.push_back(nullptr);
            } else row.push_back(v);
          },
          cell);
    }
    rows.push_back(std::move(row));
  }
  Json j = {{"type", "table"}, {"title", table.title()}, {"columns", std::move(cols)}, {"rows", std::move(rows)}};
  if (!name_columns.empty()) j["name_columns"] = name_columns;
  // Columns for scripts only: the page hides them and shows each as the
  // tooltip of the cell before it (a kernel's full signature).
  Json hidden = Json::array();
  for (size_t i = 0; i < table.columns().size(); ++i)
    if (table.columns()[i].for_scripts_only) hidden.push_back(i);
  if (!hidden.empty()) j["hidden"] = std::move(hidden);
  if (!table.notes().empty()) j["notes"] = table.notes();
  return j;
}

Json section(std::string title, std::string subtitle, Json blocks) {
  Json j = {{"title", std::move(title)}, {"blocks", std::move(blocks)}};
  if (!subtitle.empty()) j["subtitle"] = std::move(subtitle);
  return j;
}

}  // namespace detail

std::string escape_json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
             (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else out += c;
  }
  return out;
}

std::string_view embedded_sample_trace() { return assets::sample_kineto_gz(); }

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

struct HtmlReport::Impl {
  detail::Document doc;
};

HtmlReport::HtmlReport(ReportOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->doc.options = std::move(options);
}

HtmlReport::~HtmlReport() = default;

InputKind HtmlReport::add_input(const fs::path& path) {
  const InputKind kind = detect_input_kind(path);
  const std::string label = path.filename().empty() ? path.parent_path().filename().string() : path.filename().string();
  impl_->doc.inputs.push_back({{"path", path.string()}, {"kind", to_string(kind)}});
  switch (kind) {
    case InputKind::kTraceFile:
    case InputKind::kRunDirectory:
    case InputKind::kKinetoJson:
    case InputKind::kTraceDirectory:
    case InputKind::kNsysExport: detail::add_run_path_sections(impl_->doc, label, path); break;
    case InputKind::kSweepDatabase: add_sweep_database(path); break;
    case InputKind::kMlperfCsv: detail::add_mlperf_csv_sections(impl_->doc, label, path); break;
  }
  return kind;
}

void HtmlReport::add_run(const std::string& label, const std::vector<trace::Trace>& ranks,
                         const trace::ClockAlignment* clocks) {
  detail::add_run_sections(impl_->doc, label, ranks, clocks);
}

void HtmlReport::add_sweep_database(const fs::path& path) { detail::add_sweep_sections(impl_->doc, path); }

void HtmlReport::add_mlperf_runs(const std::string& label, const std::vector<mlperf::Run>& runs) {
  detail::add_mlperf_sections(impl_->doc, label, runs);
}

std::vector<fs::path> HtmlReport::add_study_folder(const fs::path& dir, const std::string& label) {
  return detail::add_study_sections(impl_->doc, dir, label);
}

const std::vector<std::string>& HtmlReport::highlights() const { return impl_->doc.highlights; }

std::string HtmlReport::document_json() const {
  const auto& d = impl_->doc;
  Json sections = Json::array();
  // The advisor's findings come first: they are what to do.
  if (d.analysed_runs || !d.findings.empty()) {
    Json findings = d.findings;
    std::stable_sort(findings.begin(), findings.end(), [](const Json& a, const Json& b) {
      return a.value("saving_fraction", 0.0) > b.value("saving_fraction", 0.0);
    });
    Json block = {{"type", "findings"},
                  {"items", std::move(findings)},
                  {"empty_text", "No rule fired: no finding had evidence above its threshold."}};
    sections.push_back(detail::section("Advisor findings",
                                       "Ranked by estimated saving (an upper bound, share of step time).",
                                       Json::array({std::move(block)})));
  }
  for (const auto& s : d.sections) sections.push_back(s);
  const auto now = std::chrono::system_clock::now();
  Json j = {{"title", d.options.title},
            {"generator", fmt::format("scalescope {} ({})", SCALESCOPE_VERSION, SCALESCOPE_GIT_DESCRIBE)},
            {"created", fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(std::chrono::system_clock::to_time_t(now)))},
            {"chart_library", fmt::format("Apache ECharts {}", assets::echarts_version())},
            {"inputs", d.inputs},
            {"sections", std::move(sections)}};
  // Invalid UTF-8 in trace names is replaced, never allowed to break the page.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string HtmlReport::html() const {
  const std::string data = escape_json_for_script(document_json());
  const std::string_view tpl = assets::template_html();
  struct Part {
    std::string_view marker;
    std::string_view text;
  };
  const std::string title = escape_html(impl_->doc.options.title);
  const Part parts[] = {{"@TITLE@", title},
                        {"@STYLE@", assets::report_css()},
                        {"@DATA@", data},
                        {"@LIBRARY@", assets::echarts_js()},
                        {"@SCRIPT@", assets::report_js()}};
  std::string out;
  out.reserve(tpl.size() + data.size() + assets::echarts_js().size() + assets::report_js().size() + 4096);
  // Markers are replaced in template order, each once; the inserted text is
  // never searched again (so data cannot smuggle a marker in).
  size_t pos = 0;
  for (const auto& part : parts) {
    const size_t at = tpl.find(part.marker, pos);
    if (at == std::string_view::npos) throw std::logic_error(fmt::format("report template lacks {}", part.marker));
    out.append(tpl.substr(pos, at - pos));
    out.append(part.text);
    pos = at + part.marker.size();
  }
  out.append(tpl.substr(pos));
  return out;
}

void HtmlReport::write(const fs::path& path) const {
  const std::string page = html();
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: the folder {} does not exist", path.string(), dir.string());
  const fs::path tmp = dir / fmt::format(".{}.tmp-{}", path.filename().string(), ::getpid());
  trace::TempPath guard(tmp);  // removed on an error or a SIGINT/SIGTERM/SIGHUP
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail("{}: cannot write ({})", path.string(), std::strerror(errno));
    const size_t written = std::fwrite(page.data(), 1, page.size(), f);
    int err = written == page.size() ? 0 : errno;
    if (std::fclose(f) != 0 && err == 0) err = errno;  // taken now: the removal below may change errno
    if (err != 0) {
      fs::remove(tmp, ec);
      fail("{}: write failed ({})", path.string(), std::strerror(err));
    }
  }
  guard.commit_to(path);
}

}  // namespace scalescope::report
