// PLACEHOLDER: replaced by the owner of this command. Until then it says so and fails.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "trace/error.hpp"

namespace scalescope::cli {

void add_demo_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("demo", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    exit_code = 1;
    fail("'demo' is not built yet");
  });
}

}  // namespace scalescope::cli
