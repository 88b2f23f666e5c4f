// A folder of study results (examples/h200, or the same files written out of
// the binary by the demo): the sweeps' scaling and effect sections, and the
// run sections of one trace.

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "report/embedded_assets.hpp"
#include "report/html_report.hpp"
#include "report/report_document.hpp"
#include "base/error.hpp"
#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::report {

namespace fs = std::filesystem;

namespace {

// Removes ANSI escape sequences (CSI "ESC [ ... final", OSC "ESC ] ... BEL or
// ESC \\", and two-byte ESC x) and the other C0 controls but tab and newline.
std::string strip_ansi(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i++];
    if (c == '\x1b') {
      if (i < text.size() && text[i] == '[') {  // CSI: parameters, then one final byte in @..~
        ++i;
        while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7E)) ++i;
        if (i < text.size()) ++i;
      } else if (i < text.size() && text[i] == ']') {  // OSC: up to BEL or ESC backslash
        const size_t bel = text.find('\x07', i), st = text.find("\x1b\\", i);
        const size_t end = std::min(bel == std::string_view::npos ? text.size() : bel + 1,
                                    st == std::string_view::npos ? text.size() : st + 2);
        i = end;
      } else if (i < text.size()) {
        ++i;  // ESC and one more byte
      }
      continue;
    }
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == '\x7f') continue;
    out += c;
  }
  return out;
}

// The parts of the H200 study (bench/study/run_study.sh), in the order a reader wants them.
constexpr const char* kStudyOrder[] = {"image-base.db", "image-tuned.db", "llm.db", "accuracy.db"};

int gpus_in_name(const std::string& name) {
  static const std::regex kGpus("(^|[-_])g([0-9]{1,4})([-_.]|$)");
  std::smatch m;
  return std::regex_search(name, m, kGpus) ? std::stoi(m[2].str()) : 0;
}

}  // namespace

fs::path pick_study_trace(std::vector<fs::path> run_dirs) {
  if (run_dirs.empty()) return {};
  std::sort(run_dirs.begin(), run_dirs.end());
  auto score = [](const fs::path& p) {
    const std::string name = p.filename().string();
    return gpus_in_name(name) * 4 + (name.find("base") != std::string::npos ? 2 : 0) +
           (name.find("ref") != std::string::npos ? 1 : 0);
  };
  // The first of the best: stable over the sorted names.
  return *std::max_element(run_dirs.begin(), run_dirs.end(),
                           [&](const fs::path& a, const fs::path& b) { return score(a) < score(b); });
}

namespace detail {

std::vector<fs::path> add_study_sections(Document& doc, const fs::path& dir, const std::string& label) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: not a folder of study results", dir.string());
  std::vector<fs::path> dbs, others, runs;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".db") others.push_back(entry.path());
  std::sort(others.begin(), others.end());
  for (const char* name : kStudyOrder) {
    const auto it = std::find(others.begin(), others.end(), dir / name);
    if (it == others.end()) continue;
    dbs.push_back(*it);
    others.erase(it);
  }
  dbs.insert(dbs.end(), others.begin(), others.end());
  // Run directories under traces/ and under each part's folder, <part>/traces/.
  std::vector<fs::path> trace_dirs = {dir / "traces"};
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() && entry.path().filename() != "traces") trace_dirs.push_back(entry.path() / "traces");
  for (const auto& td : trace_dirs)
    if (fs::is_directory(td, ec))
      for (const auto& entry : fs::directory_iterator(td, ec))
        if (entry.is_directory() && entry.path().extension() == ".ssrun") runs.push_back(entry.path());
  const fs::path run = pick_study_trace(runs);
  if (dbs.empty() && run.empty())
    fail("{}: no sweep database (*.db) and no run directory under traces/ (expected the layout of examples/h200)",
         dir.string());

  Json blocks = Json::array();
  std::string files;
  for (const auto& db : dbs) files += (files.empty() ? "" : ", ") + db.filename().string();
  blocks.push_back(paragraph(fmt::format(
      "{}: {} sweep database(s){}{}{}. Each sweep's section below gives its scaling per configuration and the effect "
      "of each change against the reference configuration at each GPU count.",
      label, dbs.size(), files.empty() ? "" : " (", files, files.empty() ? "" : ")")));
  if (!run.empty())
    blocks.push_back(
        paragraph(fmt::format("Trace shown: {} (of {} run director{} in the folder).",
                              fs::relative(run, dir, ec).string(), runs.size(), runs.size() == 1 ? "y" : "ies")));
  // env.txt: the machine and software the study ran on, as recorded there.
  if (fs::is_regular_file(dir / "env.txt", ec)) {
    std::FILE* f = std::fopen((dir / "env.txt").c_str(), "rb");
    if (f != nullptr) {
      std::string text(8192, '\0');
      text.resize(std::fread(text.data(), 1, text.size(), f));
      std::fclose(f);
      // Preformatted, as written; terminal colour codes a tool left in it are
      // taken out rather than shown as "[0;32m".
      blocks.push_back({{"type", "pre"}, {"title", "Environment (env.txt)"}, {"text", strip_ansi(text)}});
    }
  }
  doc.sections.push_back(
      section(label, "Measured results, not generated: the files as the study wrote them.", std::move(blocks)));
  std::vector<fs::path> used;
  for (const auto& db : dbs) {
    doc.inputs.push_back({{"path", db.string()}, {"kind", to_string(InputKind::kSweepDatabase)}});
    add_sweep_sections(doc, db);
    used.push_back(db);
  }
  if (!run.empty()) {
    doc.inputs.push_back({{"path", run.string()}, {"kind", to_string(InputKind::kRunDirectory)}});
    add_run_path_sections(doc, fmt::format("{}: {}", label, run.filename().string()), run);
    used.push_back(run);
  }
  return used;
}

}  // namespace detail

}  // namespace scalescope::report
