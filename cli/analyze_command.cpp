// scalescope analyze: one screen on where each rank's time went, iterations,
// stragglers, launch/copy/sync/precision/layout/input/NUMA facts and the
// advisor's ranked findings. A thin layer over analyze/ and advise/.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "advise/advise.hpp"
#include "report/json_envelope.hpp"
#include "analyze/analyze.hpp"
#include "cli/commands.hpp"
#include "cli/usage_error.hpp"
#include "cli/load_progress.hpp"
#include "cli/output_format_option.hpp"
#include "report/run_tables.hpp"
#include "report/table.hpp"
#include "report/terminal.hpp"
#include "base/error.hpp"

namespace scalescope::cli {

void add_analyze_command(CLI::App& app, int& /*exit_code*/) {
  struct Args {
    std::string input, window, iteration_range, classes, flight_recorder;
    report::OutputFormat format = report::OutputFormat::kTable;
    bool json = false;
    bool no_align_clocks = false;
    bool no_attribution = false;
    bool summary = false;
    int top = 10;
    unsigned threads = 0;
    uint64_t stream_above = analyze::Options{}.stream_above_rows;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("analyze", "Where each rank's time went, iterations, stragglers, and ranked findings");
  cmd->add_option("trace", args->input,
                  "a .sstrace file, a .ssrun run directory, a Kineto .json/.json.gz, an Nsight Systems SQLite "
                  "export (nsys export --type sqlite), or a folder of them")
      ->required();
  cmd->footer(
      "Examples:\n"
      "  scalescope analyze run.ssrun                    every rank, then the findings\n"
      "  scalescope analyze run.ssrun --summary          the headline only\n"
      "  scalescope analyze trace.json.gz --window it5:it50\n"
      "  scalescope analyze report.sqlite --window 5s:10s\n"
      "  scalescope analyze traces/ --format csv > tables.csv");
  cmd->add_option(
      "--window", args->window,
      "START:END: 10%:90% (of the trace), 5s:10s (after its first event; units ns, us, ms, s; a bare number is "
      "ns) or it5:it50 (iterations)");
  cmd->add_option(
      "--iteration-range", args->iteration_range,
      "NVTX/annotation range marking one iteration, e.g. Optimizer.step#SGD.step (default: ProfilerStep#N, else detected)");
  cmd->add_option("--classes", args->classes,
                  "kernel class rules file: lines '<class> <substring>' (docs/kernel-classes.md)");
  auto* json_flag = cmd->add_flag("--json", args->json, "print the full analysis and findings as one JSON object");
  add_output_format(cmd, args->format, "how to print the tables")->excludes(json_flag);
  cmd->add_flag("--no-align-clocks", args->no_align_clocks,
                "do not align the hosts' clocks from matched collectives (estimate and report only)");
  cmd->add_flag(
      "--no-attribution", args->no_attribution,
      "skip GPU time by operator and range (docs/attribution.md): faster on traces with many operator ranges");
  cmd->add_flag("--summary", args->summary,
                "print only the headline: ranks, step time, where the GPU time went, the top findings")
      ->excludes(json_flag);
  cmd->add_option("--flight-recorder", args->flight_recorder,
                  "PyTorch NCCL flight recorder dumps to read for the hang report: a dump, a directory of them, or "
                  "their prefix (TORCH_FR_DUMP_TEMP_FILE); default: RUN/control/flight_recorder/");
  cmd->add_option("--top", args->top, "kernels in the top-kernel table")->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", args->threads, "ranks analysed at once (0: automatic, at most 4)");
  cmd->add_option("--stream-above", args->stream_above,
                  "read .sstrace ranks of more rows than this chunk by chunk (bounded memory, same figures); 0: all")
      ->capture_default_str();
  cmd->callback([args] {
    if (args->summary && args->format != report::OutputFormat::kTable)
      throw UsageError("--summary prints the headline as text; it does not go with --format csv or json");
    analyze::Options options;
    options.stream_above_rows = args->stream_above;
    if (!args->window.empty()) options.window = analyze::WindowSpec::parse(args->window);
    options.iteration_range = args->iteration_range;
    options.align_clocks = !args->no_align_clocks;
    options.attribution = !args->no_attribution;
    if (!args->classes.empty()) options.classifier = analyze::KernelClassifier::from_file(args->classes);
    LoadProgress progress("load");
    analyze::RunAnalysis run = analyze::analyze_path(args->input, options, args->threads, progress.callback());
    progress.finish();
    if (!args->flight_recorder.empty())
      run.hang.flight_recorder =
          analyze::find_flight_recorder_hang(analyze::read_flight_recorder_dumps(args->flight_recorder));
    const std::vector<advise::Finding> findings = advise::advise(run);
    if (args->json) {
      std::cout << report::json_text(
                       report::json_envelope("analyze",
                                             {{"input", args->input}, {"analysis", run}, {"findings", findings}}),
                       2)
                << "\n";
    } else {
      const auto format = args->format;
      if (format == report::OutputFormat::kTable) {
        const std::string name = std::filesystem::path(args->input).filename().string();
        const size_t width = report::output_width(STDOUT_FILENO);
        for (const auto& line : report::run_headline(run, findings, name))
          std::cout << (line.starts_with("  ") ? report::wrap(report::terminal_safe(line.substr(2)), width, "  ")
                                               : report::wrap(report::terminal_safe(line), width))
                    << "\n";
        if (args->summary) {
          std::cout << fmt::format("full tables: scalescope analyze {0}; HTML: scalescope report {0} -o report.html\n",
                                   args->input);
          return;
        }
        std::cout << "\n";
      }
      report::print_tables(std::cout, "analyze",
                           report::run_tables(run, findings, args->top, format != report::OutputFormat::kTable), format);
    }
  });
}

}  // namespace scalescope::cli
