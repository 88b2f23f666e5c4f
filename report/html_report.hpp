#pragma once
// The self-contained HTML report: one file with the data as JSON, the page
// template and the chart library (Apache ECharts, embedded at build time), so
// that it opens anywhere, offline, and makes no network request.
//
//   report::HtmlReport r({.title = "resnet on 8xH200"});
//   r.add_input("run.ssrun");          // traces, sweep DBs, MLPerf CSVs, in any mix
//   r.add_input("sweep.db");
//   r.write("report.html");
//
// The report is a data model first: document_json() is what the page renders
// (sections of blocks: findings, tables, charts), built from the analyze,
// advise, scaling and mlperf libraries. Every string is data, never markup.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {
struct Trace;
struct ClockAlignment;
}  // namespace scalescope::trace

namespace scalescope::mlperf {
struct Run;
}

namespace scalescope::report {

class Progress;

// What an input is, found from its content by trace/import/input_detector.hpp (the
// one detector every command uses), grouped as the report handles them.
enum class InputKind {
  kTraceFile,
  kRunDirectory,
  kKinetoJson,
  kSweepDatabase,
  kMlperfCsv,
  kTraceDirectory,
  kNsysExport
};
std::string_view to_string(InputKind kind);
// Throws scalescope::Error naming the path when it does not exist or is of no
// known kind.
InputKind detect_input_kind(const std::filesystem::path& path);

struct ReportOptions {
  std::string title = "scalescope report";
  int top_kernels = 20;                 // rows of the top-kernel table (the chart shows up to 15)
  size_t max_timeline_events = 20'000;  // the timeline keeps the longest events of one iteration
  size_t max_counter_points = 600;      // per counter series (min/max decimation)
  double threshold = 0.8;               // E' threshold of break-even rule (a)
  // Sweeps' work per step, as `scalescope scaling --weak/--strong/
  // --samples-per-gpu-step` takes it (sweep/scaling_study.hpp).
  std::optional<bool> weak;
  std::optional<double> samples_per_gpu_step;
  std::string iteration_range;  // NVTX range marking one iteration; "" = automatic
  bool quiet = false;           // no progress output
};

class HtmlReport {
 public:
  explicit HtmlReport(ReportOptions options = {});
  ~HtmlReport();
  HtmlReport(const HtmlReport&) = delete;
  HtmlReport& operator=(const HtmlReport&) = delete;

  // Detects the input's kind, loads it and adds its sections. Throws
  // scalescope::Error naming the input when it cannot be read.
  InputKind add_input(const std::filesystem::path& path);

  // One run: one trace per rank. Adds findings and a section with breakdowns,
  // iteration times, a timeline of one steady-state iteration, top kernels,
  // copies, NCCL collectives and GPU counters; for several hosts a per-node
  // section (nodes, clocks, communicators). clocks: the alignment already
  // applied to `ranks` (trace::align_clocks), shown as the hosts' offsets;
  // null: estimated from the ranks' collectives.
  void add_run(const std::string& label, const std::vector<trace::Trace>& ranks,
               const trace::ClockAlignment* clocks = nullptr);
  // A sweep database (sweep/'s results.sqlite): scaling per configuration.
  void add_sweep_database(const std::filesystem::path& path);
  // MLPerf runs (from `mlperf ingest` CSV or the embedded v4.1 table).
  void add_mlperf_runs(const std::string& label, const std::vector<mlperf::Run>& runs);
  // A folder of study results laid out like examples/h200: each sweep
  // database (*.db; image-base, image-tuned, llm, accuracy first) with its
  // scaling and effect comparisons, and the run sections of one run directory
  // under traces/ or <part>/traces/ (the one with the most GPUs, a baseline
  // reference run first). Returns the inputs used; throws Error naming the folder when it
  // holds neither.
  std::vector<std::filesystem::path> add_study_folder(const std::filesystem::path& dir, const std::string& label);

  // The data model the page renders (JSON text).
  std::string document_json() const;
  // The whole page.
  std::string html() const;
  // Writes html() to a temporary file beside `path` and renames it, so a
  // failure never leaves half a report in place of an old one.
  void write(const std::filesystem::path& path) const;

  // A few lines for the terminal: top findings, break-even points.
  const std::vector<std::string>& highlights() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The bundled sample trace (examples/sample/kineto-sample.json.gz, a cut of a
// real PyTorch-profiler trace), embedded at build time; empty when the build
// had none.
std::string_view embedded_sample_trace();

// Of run directories under a study's traces/, the one the demo shows: the
// most GPUs (a "-gN-" in the name), then a baseline ("base"), then a
// reference configuration ("ref"), then the first by name.
std::filesystem::path pick_study_trace(std::vector<std::filesystem::path> run_dirs);

// JSON text made safe inside <script type="application/json">: '<', '>', '&',
// U+2028 and U+2029 become \u003c, \u003e, \u0026, \u2028, \u2029 (JSON-equivalent).
std::string escape_json_for_script(std::string_view json);
// Text made safe as HTML element content or attribute value.
std::string escape_html(std::string_view text);

}  // namespace scalescope::report
