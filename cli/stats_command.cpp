// scalescope stats: the nsys-stats-like summaries of a trace, a run directory
// or a Kineto JSON trace, per rank and combined across ranks.
#include <iostream>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/load_progress.hpp"
#include "cli/output_format_option.hpp"
#include "report/json_envelope.hpp"
#include "report/stats_tables.hpp"
#include "report/table.hpp"
#include "base/error.hpp"
#include "trace/model/launcher.hpp"
#include "trace/stats/stats.hpp"
#include "trace/import/trace_source.hpp"

namespace scalescope::cli {
namespace {

const std::vector<std::string> kReports = {"api", "kernels", "memtime", "memsize", "nvtx", "nccl", "problems"};

}  // namespace

void add_stats_command(CLI::App& app, int& /*exit_code*/) {
  struct Options {
    std::string input;
    report::OutputFormat format = report::OutputFormat::kTable;
    std::vector<std::string> reports;
    int rank = -1;
    bool has_rank = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("stats", "Summaries of a trace (CUDA API, kernels, memory, NVTX, NCCL, problems)");
  cmd->add_option("trace", opts->input, "a .sstrace file, a .ssrun run directory, or a Kineto .json/.json.gz")
      ->required();
  add_output_format(cmd, opts->format, "how to print the summaries");
  cmd->add_option("--report", opts->reports,
                  "reports to print (comma-separated): api,kernels,memtime,memsize,nvtx,nccl,problems")
      ->delimiter(',')
      ->check(CLI::IsMember(kReports));
  auto* rank_opt = cmd->add_option("--rank", opts->rank, "only this rank");
  cmd->callback([opts, rank_opt] {
    const auto format = opts->format;
    std::set<std::string> want(opts->reports.begin(), opts->reports.end());
    if (want.empty()) want.insert(kReports.begin(), kReports.end());
    LoadProgress progress("load");
    trace::TraceLoadOptions load;
    load.on_file_loaded = progress.callback();
    load.name_frames = false;  // no table of stats shows native frames: no symbol tables read
    std::vector<trace::Trace> traces = trace::load_traces(opts->input, nullptr, load);
    progress.finish();
    const std::vector<std::string> left_out = trace::drop_launchers(traces);
    std::optional<int> rank;
    if (rank_opt->count()) rank = opts->rank;
    std::vector<const trace::Trace*> pointers;
    for (const auto& t : traces) pointers.push_back(&t);
    if (format == report::OutputFormat::kJson)  // typed: the summaries themselves, per rank and combined
      std::cout << report::json_text(
                       report::json_envelope("stats", report::stats_json(opts->input, pointers, rank, want, left_out)),
                       2)
                << "\n";
    else
      report::print_tables(std::cout, "stats", report::stats_scope_tables(opts->input, pointers, rank, want, left_out),
                           format);
  });
}

}  // namespace scalescope::cli
