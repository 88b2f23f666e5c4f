// scalescope export: a trace, run directory or Kineto JSON trace to Chrome
// trace JSON or Perfetto's binary format (Perfetto UI), SQLite, or a
// directory of CSV files.
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/load_progress.hpp"
#include "cli/usage_error.hpp"
#include "base/safe_output.hpp"
#include "base/error.hpp"
#include "trace/export/exporters.hpp"
#include "trace/model/launcher.hpp"
#include "trace/import/trace_source.hpp"

namespace scalescope::cli {

void add_export_command(CLI::App& app, int& /*exit_code*/) {
  struct Options {
    std::string input, output, format;
    bool force = false;
    bool no_align_clocks = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "export", "Export a trace to Perfetto (binary or Chrome trace JSON), SQLite or CSV");
  cmd->add_option("trace", opts->input,
                  "a .sstrace file, a .ssrun run directory, a Kineto .json/.json.gz or an Nsight Systems .sqlite")
      ->required();
  cmd->add_option("--format", opts->format,
                  "perfetto (binary), chrome (JSON), sqlite or csv; default: from the output's name")
      ->check(CLI::IsMember({"chrome", "perfetto", "sqlite", "csv"}));
  cmd->add_option("-o,--output", opts->output,
                  "output file: .pftrace (perfetto), .json (chrome), .sqlite or .db; a name ending in .gz is "
                  "compressed; a new directory for csv")
      ->required();
  cmd->add_flag("--force", opts->force,
                "replace an existing output (files are replaced anyway; a csv directory only with --force)");
  cmd->add_flag("--no-align-clocks", opts->no_align_clocks,
                "keep each host's own clock (default: hosts aligned from matched collectives)");
  cmd->footer(
      "Examples:\n"
      "  scalescope export run.ssrun -o run.pftrace   open in ui.perfetto.dev\n"
      "  scalescope export trace.json -o out.json.gz  Chrome JSON, gzip\n"
      "  scalescope export run.ssrun -o run.sqlite    docs/export-sqlite.md\n"
      "  scalescope export run.ssrun -o run-csv/      one CSV per table");
  cmd->callback([opts] {
    std::optional<trace::ExportFormat> format =
        opts->format.empty() ? trace::export_format_of(opts->output) : trace::parse_export_format(opts->format);
    if (!format)
      fail_usage(
          "--format not given and '{}' does not say it: name the output .pftrace (perfetto), .json or .json.gz "
          "(chrome), .sqlite or .db, or give --format perfetto|chrome|sqlite|csv",
          opts->output);
    if ((*format == trace::ExportFormat::kSqlite || *format == trace::ExportFormat::kCsv) &&
        opts->output.ends_with(".gz"))
      fail_usage("--format {} is not written compressed: drop '.gz' from '{}'", trace::to_string(*format),
                 opts->output);
    // "run-csv/" names the directory "run-csv".
    while (*format == trace::ExportFormat::kCsv && opts->output.size() > 1 && opts->output.ends_with('/'))
      opts->output.pop_back();
    // File outputs are replaced (documented); a csv directory is replaced
    // only with --force. Never an input.
    trace::check_output(opts->output, {opts->input}, opts->force || *format != trace::ExportFormat::kCsv);
    LoadProgress progress("load");
    trace::TraceLoadOptions load;
    load.on_file_loaded = progress.callback();
    load.align_clocks = !opts->no_align_clocks;
    std::vector<trace::Trace> traces = trace::load_traces(opts->input, nullptr, load);
    progress.finish();
    const std::vector<std::string> left_out = trace::drop_launchers(traces);
    trace::export_traces(traces, *format, opts->output);
    size_t events = 0;
    for (const auto& t : traces) events += t.event_count();
    std::cout << fmt::format("wrote {} ({} trace(s), {} events, {})\n", opts->output, traces.size(), events,
                             trace::to_string(*format));
    for (const auto& label : left_out)
      std::cout << fmt::format(
          "left out {}: a process without a rank or GPU activity (a launcher such as the "
          "torchrun agent)\n",
          label);
  });
}

}  // namespace scalescope::cli
