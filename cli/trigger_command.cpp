// scalescope trigger: a window asked of a job that `scalescope profile` is
// running, through the run directory's control/ folder. Every process of
// the job (every node's, when the run directory is on a shared filesystem)
// opens it at the same iteration, a little ahead of the furthest process.
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/usage_error.hpp"
#include "collect/host_facts.hpp"
#include "collect/run_control.hpp"
#include "base/error.hpp"
#include "trace/model/hang_dump.hpp"

namespace scalescope::cli {
namespace {

// Far enough ahead that every process has looked at control/ (every half
// second) before the window's first iteration, with room for a slow node.
constexpr double kLeadSeconds = 2.0;

struct TriggerArgs {
  std::string run_dir;
  uint64_t iterations = 20;
  std::vector<int32_t> ranks;
  std::string note;
  int64_t start = -1;
  bool dump = false;
};

std::string who() {
  const passwd* pw = getpwuid(getuid());
  return fmt::format("{}@{}", pw && pw->pw_name ? pw->pw_name : std::to_string(getuid()), collect::read_hostname());
}

}  // namespace

void add_trigger_command(CLI::App& app, int& /*exit_code*/) {
  auto args = std::make_shared<TriggerArgs>();
  auto* cmd = app.add_subcommand("trigger", "trace a running profiled job now: a window on every process at one iteration");
  cmd->add_option("run", args->run_dir, "the run directory of a running `scalescope profile -o RUN ...`")->required();
  cmd->add_option("--iterations", args->iterations, "iterations to trace")->check(CLI::Range(uint64_t{1}, uint64_t{100000}));
  cmd->add_option("--ranks", args->ranks, "only these ranks (e.g. --ranks 0,3); default: every process")
      ->delimiter(',');
  cmd->add_option("--note", args->note, "why: kept with the window in run.json")->check([](const std::string& s) {
    return s.size() > 4096 ? std::string("at most 4096 characters") : std::string();
  });
  cmd->add_option("--start", args->start, "the iteration to start at (default: 2 s ahead of the furthest process)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--dump", args->dump,
                "instead of a window: every process writes its last collectives and iterations to RUN/control/hang/ "
                "(for a job that seems hung; read by `scalescope analyze RUN`)");
  cmd->footer(
      "Examples:\n"
      "  scalescope trigger run1 --iterations 20 --note \"slow after step 50k\"\n"
      "  scalescope trigger run1 --dump\n"
      "  scalescope trigger run1 --ranks 0,7\n"
      "The job must run under `scalescope profile` with iteration markers (optimizer steps, ProfilerStep#N\n"
      "ranges or cudaProfilerStart/Stop); each process reports its iteration in RUN/control/progress once a\n"
      "second and looks for requests every half second.");
  cmd->callback([args] {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(args->run_dir, ec))
      fail_usage("{}: {}", args->run_dir, fs::exists(args->run_dir, ec) ? "not a directory" : "no such directory");
    if (args->dump) {
      // The next free id, as for windows; every process writes its dump within a second.
      const std::string requested_by = who();
      uint64_t id = 1;
      while (!collect::create_dump_request(args->run_dir, std::to_string(id), requested_by)) ++id;
      std::cout << fmt::format("dump {}: every process writes its hang dump to {} within a second\n", id,
                               trace::hang_dump_dir(args->run_dir).string());
      return;
    }
    std::vector<std::string> skipped;
    auto progress = collect::read_progress(args->run_dir, &skipped);
    for (const auto& s : skipped) std::cerr << "scalescope: warning: skipped " << s << "\n";
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (progress.empty() && args->start < 0)
      fail("{}: no process of a running job reports progress in {} (is the job running under `scalescope profile`, "
           "with iteration markers?)",
           args->run_dir, (collect::control_dir(args->run_dir) / "progress").string());
    // Reports older than a minute are of processes that ended.
    std::erase_if(progress, [&](const collect::Progress& p) { return now - p.unix_ns > int64_t{60'000'000'000}; });
    if (progress.empty() && args->start < 0)
      fail("{}: no process has reported progress in the last minute: the job has ended or is stuck", args->run_dir);

    collect::WindowRequest r;
    r.start_iteration = args->start >= 0 ? static_cast<uint64_t>(args->start)
                                         : collect::aligned_start(progress, kLeadSeconds, now);
    r.iterations = args->iterations;
    r.ranks = args->ranks;
    r.reason = "trigger";
    r.note = args->note;
    r.requested_by = who();
    r.requested_unix_ns = now;
    // The next free id: 1, 2, ... (an id another trigger took at the same time is skipped).
    uint64_t id = 1;
    for (const auto& old : collect::read_window_requests(args->run_dir))
      if (old.reason == "trigger") id = std::max<uint64_t>(id, std::stoull(old.id) + 1);
    for (;; ++id) {
      r.id = std::to_string(id);
      if (collect::create_window_request(args->run_dir, r)) break;
    }
    size_t processes = 0;
    for (const auto& p : progress)
      processes += r.ranks.empty() || std::find(r.ranks.begin(), r.ranks.end(), p.rank) != r.ranks.end();
    std::cout << fmt::format("window {}: {} iteration{} from iteration {} on {} process{} ({})\n", r.id,
                             r.iterations, r.iterations == 1 ? "" : "s", r.start_iteration, processes,
                             processes == 1 ? "" : "es",
                             (collect::control_dir(args->run_dir) / ("window-" + r.id + ".json")).string());
  });
}

}  // namespace scalescope::cli
