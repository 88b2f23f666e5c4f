// scalescope: the command-line front. Every subcommand lives in its own
// *_command.cpp as a thin layer over the part libraries.

#include <cstdio>
#include <exception>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "scalescope_version.hpp"
#include "trace/error.hpp"

namespace scalescope::cli {
std::vector<std::string>& job_command() {
  static std::vector<std::string> command;
  return command;
}
std::vector<std::string> take_job_command() {
  auto command = std::move(job_command());
  job_command().clear();
  return command;
}
}  // namespace scalescope::cli

int main(int argc, char** argv) {
  bool has_job_separator = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      scalescope::cli::job_command().assign(argv + i + 1, argv + argc);
      argc = i;
      has_job_separator = true;
      break;
    }
  }
  CLI::App app{"scalescope: profiler and scaling advisor for multi-GPU training jobs"};
  app.set_version_flag("--version", std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")");
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_code = 0;
  namespace c = scalescope::cli;
  c::add_profile_command(app, exit_code);
  c::add_import_command(app, exit_code);
  c::add_stats_command(app, exit_code);
  c::add_export_command(app, exit_code);
  c::add_analyze_command(app, exit_code);
  c::add_diff_command(app, exit_code);
  c::add_sweep_command(app, exit_code);
  c::add_scaling_command(app, exit_code);
  c::add_mlperf_command(app, exit_code);
  c::add_report_command(app, exit_code);
  c::add_topo_command(app, exit_code);
  c::add_demo_command(app, exit_code);
  try {
    if (has_job_separator) {
      // Only the commands that run a job take one; say so before any other work.
      std::string_view command = argc > 1 ? argv[1] : "scalescope";
      if (command != "profile" && command != "sweep")
        throw scalescope::Error(fmt::format("{}: takes no command after '--'", command));
    }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const scalescope::Error& e) {
    std::fprintf(stderr, "scalescope: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "scalescope: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalescope: internal error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
