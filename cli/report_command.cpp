// scalescope report INPUT... -o report.html: one self-contained HTML page from
// traces, run directories, Kineto JSON, sweep databases and MLPerf CSVs.
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "cli/usage_error.hpp"
#include "report/html_report.hpp"
#include "report/progress.hpp"
#include "base/error.hpp"
#include "base/safe_output.hpp"

namespace scalescope::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string output = "report.html";
  report::ReportOptions options;
  bool weak = false, strong = false;
  double samples_per_gpu_step = 0;
};

}  // namespace

void add_report_command(CLI::App& app, int& /*exit_code*/) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd =
      app.add_subcommand("report", "Write one self-contained HTML report (charts, findings) from any mix of inputs");
  cmd->add_option("inputs", args->inputs,
                  "Trace files (.sstrace), run directories (.ssrun/), Kineto JSON (.json[.gz]), Nsight Systems SQLite "
                  "exports, sweep databases (.db), MLPerf runs CSVs (from `mlperf ingest`); the kind is found from "
                  "the content")
      ->required();
  cmd->add_option("-o,--output", args->output, "The HTML file to write")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  scalescope report run.ssrun -o run.html     one run: timeline, findings\n"
      "  scalescope report sweep.db -o scaling.html  a sweep: speedup, break-even\n"
      "  scalescope report base.ssrun tuned.ssrun sweep.db -o all.html");
  cmd->add_option("--title", args->options.title, "Title of the page")->capture_default_str();
  cmd->add_option("--threshold", args->options.threshold, "E' threshold of the break-even rule")
      ->capture_default_str()
      ->check(number_in(kEfficiencyRange));
  cmd->add_option("--iteration-range", args->options.iteration_range,
                  "NVTX range name marking one iteration (default: found automatically)");
  cmd->add_option("--timeline-events", args->options.max_timeline_events,
                  "Most events drawn in the timeline of one iteration (the longest are kept)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{100}, size_t{1'000'000}));
  // The same work-per-step options as `scalescope scaling`, for sweeps.
  auto* weak = cmd->add_flag("--weak", args->weak,
                             "Sweeps: weak scaling (fixed work per GPU per step); times become time per unit of "
                             "work = time / N, as in `scalescope scaling --weak`");
  auto* strong = cmd->add_flag("--strong", args->strong, "Sweeps: strong scaling (the same work per step at every N)");
  weak->excludes(strong);
  cmd->add_option("--samples-per-gpu-step", args->samples_per_gpu_step,
                  "Sweeps: weak scaling with B samples per GPU per step: times become seconds per sample")
      ->default_str("")  // unset: times as measured
      ->check(number_in(kSamplesPerStepRange))
      ->excludes(strong);
  cmd->add_flag("-q,--quiet", args->options.quiet, "No progress or summary on the terminal");
  cmd->callback([args] {
    if (args->weak) args->options.weak = true;
    if (args->strong) args->options.weak = false;
    if (args->samples_per_gpu_step != 0) args->options.samples_per_gpu_step = args->samples_per_gpu_step;
    // Checked before any input is read: a folder is not a page to write.
    std::error_code ec;
    if (args->output.ends_with('/') || std::filesystem::is_directory(args->output, ec))
      fail_usage("{}: -o names a folder; give the HTML file to write, e.g. -o {}/report.html", args->output,
                 args->output.ends_with('/') ? args->output.substr(0, args->output.size() - 1) : args->output);
    // The HTML file is replaced when it exists (documented); an input never is.
    trace::check_output(args->output, {args->inputs.begin(), args->inputs.end()}, true);
    report::HtmlReport r(args->options);
    report::Progress::Options po;
    if (args->options.quiet) po.mode = report::Progress::Mode::kQuiet;
    {
      report::Progress progress("report", args->inputs.size(), po);
      for (const auto& in : args->inputs) {
        progress.set_detail(std::filesystem::path(in).filename().string());
        r.add_input(in);
        progress.advance();
      }
      progress.set_detail("");
    }
    r.write(args->output);
    if (!args->options.quiet) {
      for (const auto& h : r.highlights()) fmt::print("  {}\n", h);
      fmt::print("wrote {} ({:.1f} MB)\n", args->output,
                 static_cast<double>(std::filesystem::file_size(args->output)) / 1e6);
    }
  });
}

}  // namespace scalescope::cli
