// scalescope diff A B: what changed between two runs, per steady iteration
// (mean over ranks): a verdict, iteration time, time breakdown, kernel classes
// and precision, named changes, top kernels, kernels on one side only, copies.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"
#include "cli/commands.hpp"
#include "cli/load_progress.hpp"
#include "cli/output_format_option.hpp"
#include "report/run_tables.hpp"
#include "report/json_envelope.hpp"
#include "report/table.hpp"
#include "base/error.hpp"

namespace scalescope::cli {
void add_diff_command(CLI::App& app, int& /*exit_code*/) {
  struct Args {
    std::string a, b, window, iteration_range, classes;
    report::OutputFormat format = report::OutputFormat::kTable;
    bool json = false;
    bool no_align_clocks = false;
    int top = 15;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("diff", "What changed between two runs (e.g. pinned against pageable input)");
  cmd->add_option("a", args->a, "the first run: trace, run directory or Kineto JSON")->required();
  cmd->add_option("b", args->b, "the second run")->required();
  cmd->add_option("--window", args->window, "START:END applied to both runs (see analyze --help)");
  cmd->add_option("--iteration-range", args->iteration_range, "range marking one iteration, for both runs");
  cmd->add_option("--classes", args->classes, "kernel class rules file (docs/kernel-classes.md)");
  auto* json_flag = cmd->add_flag("--json", args->json, "print the diff as one JSON object");
  add_output_format(cmd, args->format, "how to print the diff (json: as --json prints it)")->excludes(json_flag);
  cmd->add_flag("--no-align-clocks", args->no_align_clocks,
                "do not align the hosts' clocks from matched collectives (both runs)");
  cmd->add_option("--top", args->top, "kernels with the largest change")->check(CLI::Range(1, 1000));
  cmd->callback([args] {
    analyze::Options options;
    if (!args->window.empty()) options.window = analyze::WindowSpec::parse(args->window);
    options.iteration_range = args->iteration_range;
    options.align_clocks = !args->no_align_clocks;
    if (!args->classes.empty()) options.classifier = analyze::KernelClassifier::from_file(args->classes);
    LoadProgress progress_a("load A"), progress_b("load B");
    const analyze::RunAnalysis a = analyze::analyze_path(args->a, options, 0, progress_a.callback());
    progress_a.finish();
    const analyze::RunAnalysis b = analyze::analyze_path(args->b, options, 0, progress_b.callback());
    progress_b.finish();
    const analyze::RunDiff d = analyze::diff(a, b, args->top);
    const auto format = args->format;
    if (args->json || format == report::OutputFormat::kJson) {  // typed: the diff itself
      std::cout << report::json_text(report::json_envelope("diff", {{"a", args->a}, {"b", args->b}, {"diff", d}}), 2)
                << "\n";
      return;
    }
    report::print_tables(std::cout, "diff", report::diff_tables(d, args->top, args->a, a, args->b, b), format);
  });
}

}  // namespace scalescope::cli
