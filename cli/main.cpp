// scalescope: the command-line front. Every subcommand lives in its own
// *_command.cpp as a thin layer over the part libraries.

#include <algorithm>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#ifdef SCALESCOPE_MIMALLOC
#include <mimalloc.h>
#endif

#include "cli/allocator.hpp"
#include "cli/commands.hpp"
#include "cli/usage_error.hpp"
#include "report/terminal.hpp"
#include "scalescope_version.hpp"
#include "base/error.hpp"
#include "base/memory_budget.hpp"

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

namespace {

// Exit codes (README, "Exit codes"): one per kind of outcome, whatever the
// command. CLI11's own codes (105, 106, ...) never leak out.
constexpr int kExitError = 1;     // bad input, a file that cannot be read or written
constexpr int kExitUsage = 2;     // wrong options or arguments
constexpr int kExitInternal = 3;  // a bug in scalescope

int usage_error(const std::string& message, const std::string& command) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  line = scalescope::report::terminal_safe(line);  // names from the command line may hold escapes
  std::fprintf(stderr, "scalescope: error: %s (see: scalescope %s--help)\n", line.c_str(),
               command.empty() ? "" : (command + " ").c_str());
  return kExitUsage;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown command 'analyse'; did you mean 'analyze'?" (the suggestion only
// when one name is close: at most 2 edits, or a prefix).
std::string unknown_command(const CLI::App& parent, std::string_view word) {
  std::string best;
  size_t best_distance = 3;
  for (const CLI::App* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
    const std::string& name = sub->get_name();
    size_t d = edit_distance(word, name);
    if (name.starts_with(word) && word.size() >= 2) d = std::min<size_t>(d, 1);
    if (d < best_distance) best_distance = d, best = name;
  }
  std::string prefix = parent.get_parent() ? parent.get_name() + " " : "";
  return best.empty() ? fmt::format("unknown command '{}{}'", prefix, word)
                      : fmt::format("unknown command '{}{}'; did you mean '{}{}'?", prefix, word, prefix, best);
}

// The deepest subcommand named on the command line.
CLI::App* deepest_command(CLI::App& app) {
  CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

// The nearest long option of `command` (or of the commands above it) to
// `word`: at most 2 edits, or a prefix; empty when none is near.
std::string nearest_option(const CLI::App& command, std::string_view word) {
  std::string best;
  size_t best_distance = 3;
  for (const CLI::App* at = &command; at != nullptr; at = at->get_parent())
    for (const CLI::Option* opt : at->get_options())
      for (const std::string& name : opt->get_lnames()) {
        const std::string option = "--" + name;
        size_t d = edit_distance(word, option);
        if (option.starts_with(word) && word.size() >= 4) d = std::min<size_t>(d, 1);
        if (d < best_distance) best_distance = d, best = option;
      }
  return best;
}

// What to add to CLI11's "The following arguments were not expected: ...":
// where the job goes for the commands that run one, else the option meant.
std::string unexpected_arguments_hint(CLI::App& app, const std::vector<std::string>& words, bool has_job_separator) {
  CLI::App* command = deepest_command(app);
  const std::string& name = command->get_name();
  // A job given without '--': its own options reach CLI11 as ours.
  const CLI::Option* job = command->get_option_no_throw("command");
  if ((name == "profile" || name == "sweep") && !has_job_separator && job != nullptr && job->count() > 0)
    return name == "profile" ? "; put the job after '--': scalescope profile -o NAME -- python train.py ..."
                             : "; put the command template after '--': scalescope sweep ... -- python train.py ...";
  for (const std::string& word : words) {
    if (!word.starts_with("--") || word == "--") continue;
    const std::string option = word.substr(0, word.find('='));
    bool known = false;
    for (const CLI::App* at = command; at != nullptr && !known; at = at->get_parent())
      known = at->get_option_no_throw(option) != nullptr;
    if (known) continue;
    const std::string best = nearest_option(*command, option);
    if (!best.empty()) return fmt::format("; did you mean '{}'?", best);
  }
  return {};
}

// The deepest subcommand named on the command line, for the pointer to its help.
std::string command_path(CLI::App& app) {
  std::string path;
  CLI::App* at = &app;
  for (;;) {
    auto parsed = at->get_subcommands();
    if (parsed.empty()) break;
    at = parsed.front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
  return path;
}

}  // namespace

#ifdef SCALESCOPE_MIMALLOC
namespace {
// mimalloc with 2 MiB pages (transparent huge pages where the kernel has no
// reserved ones): the first touch of a fresh 4 KiB page is what large traces
// pay for most (docs/performance.md). Set from .preinit_array, which runs
// before every library's initializer: libstdc++ allocates before main, and
// mimalloc's first segment, taken then, would otherwise hold the small and
// mid-size blocks of the whole command on 4 KiB pages. Not through the
// environment (MIMALLOC_LARGE_OS_PAGES), which the jobs `profile` runs would inherit.
void use_large_os_pages(int, char**, char**) { mi_option_enable(mi_option_large_os_pages); }
}  // namespace
__attribute__((section(".preinit_array"),
               used)) void (*const scalescope_preinit_allocator)(int, char**, char**) = use_large_os_pages;
#endif

namespace {

// Everything after "--" is the job `profile` or `sweep` runs: kept aside, and
// argc cut before it. True when there was one.
bool set_job_command_aside(int& argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      scalescope::cli::job_command().assign(argv + i + 1, argv + argc);
      argc = i;
      return true;
    }
  }
  return false;
}

// Every command; `profile` and `sweep` set `exit_code`, the others leave it 0.
void add_commands(CLI::App& app, int& exit_code) {
  app.formatter(scalescope::cli::make_help_formatter());
  app.set_version_flag("--version", std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")");
  app.require_subcommand(1);
  app.fallthrough(false);
  // Every option's default is shown in --help (subcommands copy this setting).
  app.option_defaults()->always_capture_default();
  app.footer(
      "Run 'scalescope help COMMAND' or 'scalescope COMMAND --help' for a command's options.\n"
      "Exit codes: 0 success, 1 error (input or output), 2 wrong usage, 3 internal error; "
      "'profile' returns the job's own code.");
  namespace c = scalescope::cli;
  // In the order of --help.
  for (auto* add : {c::add_profile_command, c::add_trigger_command, c::add_import_command, c::add_stats_command,
                    c::add_export_command, c::add_analyze_command, c::add_diff_command, c::add_sweep_command,
                    c::add_scaling_command, c::add_mlperf_command, c::add_report_command, c::add_topo_command,
                    c::add_demo_command})
    add(app, exit_code);
}

// Names of commands are checked before CLI11 sees them: it would say "A
// subcommand is required" for a misspelt one. The usage error's exit code
// for an unknown one.
std::optional<int> check_command_names(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* at = &app;
  for (const std::string& word : args) {
    if (word.empty() || word[0] == '-') break;
    if (at->get_subcommands([](CLI::App*) { return true; }).empty()) break;
    CLI::App* next = nullptr;
    try {
      next = at->get_subcommand(word);
    } catch (const CLI::OptionNotFound&) {
      return usage_error(unknown_command(*at, word), at == &app ? "" : command_path(app));
    }
    at = next;
  }
  return std::nullopt;
}

// Parses the arguments and runs the command they name; every failure becomes
// its message on stderr and its exit code (README, "Exit codes").
int parse_and_run(CLI::App& app, std::vector<std::string> args, bool has_job_separator, const int& exit_code) {
  std::vector<std::string> words;  // the arguments in order, for hints
  try {
    if (has_job_separator) {
      // Only the commands that run a job take one; say so before any other work.
      std::string_view command = !args.empty() ? std::string_view(args[0]) : "scalescope";
      if (command != "profile" && command != "sweep")
        throw scalescope::UsageError(fmt::format("{}: takes no command after '--'", command));
    }
    words = args;
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    app.parse(args);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (message.empty() || message.starts_with("A subcommand is required"))
      message =
          "no command given; one of profile, import, stats, export, analyze, diff, sweep, scaling, mlperf, "
          "report, topo, demo";
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      message += unexpected_arguments_hint(app, words, has_job_separator);
    return usage_error(message, command_path(app));
  } catch (const scalescope::UsageError& e) {
    return usage_error(e.what(), command_path(app));
  } catch (const scalescope::Error& e) {
    std::fprintf(stderr, "scalescope: error: %s\n", scalescope::report::terminal_safe(e.what()).c_str());
    return kExitError;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "scalescope: error: out of memory\n");
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalescope: internal error: %s\n", scalescope::report::terminal_safe(e.what()).c_str());
    return kExitInternal;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef SCALESCOPE_MIMALLOC
  scalescope::cli::allocator_entered_main();
#else
  scalescope::trace::tune_allocator();  // glibc: keep freed memory for reuse
#endif
  const bool has_job_separator = set_job_command_aside(argc, argv);
  // Named, so that each command's usage line starts "Usage: scalescope COMMAND".
  CLI::App app{"scalescope: profiler and scaling advisor for multi-GPU training jobs", "scalescope"};
  int exit_code = 0;
  add_commands(app, exit_code);
  // `help [COMMAND [SUBCOMMAND]]` prints the help of what it names.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.push_back("--help");
  }
  if (const std::optional<int> refused = check_command_names(app, args)) return *refused;
  return parse_and_run(app, std::move(args), has_job_separator, exit_code);
}
