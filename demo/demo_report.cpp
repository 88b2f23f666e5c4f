#include "demo/demo_report.hpp"

#include <unistd.h>

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/safe_output.hpp"
#include "demo/embedded_study.hpp"
#include "report/html_report.hpp"
#include "report/progress.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "mlperf/mlperf.hpp"

namespace scalescope::demo {
namespace {

namespace fs = std::filesystem;

// A sample 4-rank DDP run from the synthetic generator (trace/model/synthetic_trace.hpp):
// realistic kernel names, NCCL all-reduces, copies and counters, deterministic.
std::vector<trace::Trace> sample_run() {
  std::vector<trace::Trace> run;
  for (int r = 0; r < 4; ++r) {
    trace::SyntheticOptions o;
    o.events = 60'000;
    o.seed = 11 + static_cast<uint64_t>(r);
    o.rank = r;
    o.world_size = 4;
    o.device = static_cast<uint32_t>(r);
    run.push_back(trace::make_synthetic_trace(o));
  }
  return run;
}

// A folder removed when it goes out of scope ("" = none).
struct RemovedAtEnd {
  fs::path dir;
  RemovedAtEnd() = default;
  RemovedAtEnd(const RemovedAtEnd&) = delete;
  RemovedAtEnd& operator=(const RemovedAtEnd&) = delete;
  ~RemovedAtEnd() {
    std::error_code e;
    if (!dir.empty()) fs::remove_all(dir, e);
  }
};

// The H200 study: the folder given, else the embedded results written to
// `embedded_copy` (the report reads files); "" when the build embeds none.
fs::path study_folder(const DemoReportOptions& options, RemovedAtEnd& embedded_copy) {
  if (!options.study.empty()) return options.study;
  embedded_copy.dir = fs::temp_directory_path() / fmt::format("scalescope-demo-study-{}", ::getpid());
  return write_embedded_study(embedded_copy.dir / "h200").empty() ? fs::path() : embedded_copy.dir / "h200";
}

// The bundled sample trace, read through a temporary file (the importer
// reads files and detects gzip); no ranks when the build has none.
std::vector<trace::Trace> sample_trace() {
  std::vector<trace::Trace> ranks;
  const std::string_view sample = report::embedded_sample_trace();
  if (sample.empty()) return ranks;
  const fs::path tmp = fs::temp_directory_path() / fmt::format("scalescope-demo-sample-{}.json.gz", ::getpid());
  std::error_code ec;
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool written = f != nullptr && std::fwrite(sample.data(), 1, sample.size(), f) == sample.size();
  if (f != nullptr && std::fclose(f) != 0) written = false;
  if (!written) {
    fs::remove(tmp, ec);
    fail("{}: cannot write the sample trace", tmp.string());
  }
  try {
    ranks.push_back(trace::import_kineto_file(tmp));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::remove(tmp, ec);
  return ranks;
}

// Adds the study, the sample trace, the generated run and the MLPerf
// results to `r`, saying on stderr what is being read.
void add_demo_data(report::HtmlReport& r, const fs::path& study, const std::string& study_label) {
  report::Progress progress("demo", study.empty() ? 3 : 4);
  if (!study.empty()) {
    progress.set_detail("H200 study");
    r.add_study_folder(study, study_label);
    progress.advance();
  } else {
    progress.note("demo: this build embeds no H200 study results (examples/h200 had none when it was configured)");
  }
  progress.set_detail("sample trace");
  if (std::vector<trace::Trace> sample = sample_trace(); !sample.empty())
    r.add_run("sample: MobileNetV2 DDP on 2xH200, rank 0 (real PyTorch-profiler trace, cut)", std::move(sample));
  else
    progress.note("demo: this build has no bundled sample trace (examples/sample/kineto-sample.json.gz)");
  progress.advance();
  progress.set_detail("synthetic run");
  r.add_run("synthetic 4-rank run (generated)", sample_run());
  progress.advance();
  progress.set_detail("MLPerf Training v4.1");
  r.add_mlperf_runs("v4.1 (embedded)", mlperf::read_runs_csv(mlperf::default_runs_csv(), "embedded MLPerf v4.1 table"));
  progress.advance();
  progress.set_detail("");
}

}  // namespace

DemoReport write_demo_report(const DemoReportOptions& options) {
  const fs::path out = options.out_dir / "report.html";
  // The report is replaced when it exists (documented); never inside the study folder it reads.
  if (!options.study.empty()) trace::check_output(out, {options.study}, true);
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) fail("{}: cannot create the folder ({})", options.out_dir.string(), ec.message());
  report::HtmlReport r({.title = "scalescope demo"});
  // The embedded study's temporary copy is removed once the report is
  // written: the demo leaves only its report behind (the same files are in
  // the clone's examples/h200/).
  RemovedAtEnd embedded_copy;
  const fs::path study = study_folder(options, embedded_copy);
  add_demo_data(r, study,
                options.study.empty() ? "H200 study (embedded)" : "Study results in " + options.study.string());
  r.write(out);
  return {out, r.highlights()};
}

report::Table found_table(const std::vector<std::string>& findings,
                          const std::vector<std::pair<std::string, std::string>>& files) {
  report::Table t("What the demo found", {"item", "text"});
  for (const auto& f : findings) t.add_row({std::string("finding"), f});
  for (const auto& [item, path] : files) t.add_row({item, path});
  return t;
}

nlohmann::json demo_json(const DemoReport& found) {
  return {{"findings", found.highlights}, {"report", std::filesystem::absolute(found.report).string()}};
}

}  // namespace scalescope::demo
