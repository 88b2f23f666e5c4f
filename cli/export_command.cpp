// scalescope export: a trace, run directory or Kineto JSON trace to Chrome
// trace JSON (Perfetto UI), SQLite, or a directory of CSV files.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/load_progress.hpp"
#include "trace/safe_output.hpp"
#include "trace/error.hpp"
#include "trace/exporters.hpp"
#include "trace/launcher.hpp"
#include "trace/trace_source.hpp"

namespace scalescope::cli {

void add_export_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string input, output, format;
    bool force = false;
    bool no_align_clocks = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("export", "Export a trace to Chrome trace JSON (Perfetto), SQLite or CSV");
  cmd->add_option("trace", opts->input, "a .sstrace file, a .ssrun run directory, or a Kineto .json/.json.gz")
      ->required();
  cmd->add_option("--format", opts->format, "chrome, sqlite or csv")
      ->required()
      ->check(CLI::IsMember({"chrome", "sqlite", "csv"}));
  cmd->add_option("-o,--output", opts->output, "output file (chrome, sqlite) or new directory (csv)")->required();
  cmd->add_flag("--force", opts->force,
                "replace an existing output (files are replaced anyway; a csv directory only with --force)");
  cmd->add_flag("--no-align-clocks", opts->no_align_clocks,
                "keep each host's own clock (default: hosts aligned from matched collectives)");
  cmd->callback([opts, &exit_code] {
    // Chrome and SQLite outputs are files the command replaces (documented);
    // a csv directory is replaced only with --force. Never an input.
    trace::check_output(opts->output, {opts->input}, opts->force || opts->format != "csv");
    LoadProgress progress("load");
    trace::TraceLoadOptions load;
    load.on_file_loaded = progress.callback();
    load.align_clocks = !opts->no_align_clocks;
    std::vector<trace::Trace> traces = trace::load_traces(opts->input, nullptr, load);
    progress.finish();
    const std::vector<std::string> left_out = trace::drop_launchers(traces);
    if (opts->format == "chrome") trace::export_chrome(traces, opts->output);
    else if (opts->format == "sqlite") trace::export_sqlite(traces, opts->output);
    else trace::export_csv(traces, opts->output);
    size_t events = 0;
    for (const auto& t : traces) events += t.event_count();
    std::cout << fmt::format("wrote {} ({} trace(s), {} events)\n", opts->output, traces.size(), events);
    for (const auto& label : left_out)
      std::cout << fmt::format(
          "left out {}: a process without a rank or GPU activity (a launcher such as the "
          "torchrun agent)\n",
          label);
    exit_code = 0;
  });
}

}  // namespace scalescope::cli
