// scalescope profile: traces any CUDA job without code changes. A thin layer
// over collect::run_profile (process handling, run.json) and the collector
// options that travel to every process as SCALESCOPE_* variables.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "collect/collector_options.hpp"
#include "collect/profile_runner.hpp"
#include "base/error.hpp"

namespace scalescope::cli {

namespace {

struct ProfileArgs {
  collect::ProfileOptions profile;
  std::string api = "default";
  std::string api_records = "callbacks";
  std::string capture;
  std::string activities = "kernel,memcpy,memset,nvtx";
  double nvml_hz = 10;
  double host_hz = 100;
  uint32_t buffer_mb = 64;
  bool no_detach = false;
  bool no_python = false;
  std::string windows_every;
  std::string hang_after;
};

// What to record: CUDA API calls, GPU activities, capture range, samplers,
// buffers, and how the collector attaches.
void add_tracing_options(CLI::App* cmd, const std::shared_ptr<ProfileArgs>& opts) {
  cmd->add_option("--api", opts->api,
                  "CUDA API calls to record: default (launches, copies, syncs, malloc/free, graphs), all, none")
      ->check(CLI::IsMember({"default", "all", "none"}));
  cmd->add_option("--api-records", opts->api_records,
                  "how --api default records its calls: callbacks (the collector's own timestamps in CUPTI's "
                  "callbacks; the default) or activity (CUPTI's API activity records, which did not arrive inside "
                  "windows on CUDA 13.0)")
      ->check(CLI::IsMember({"callbacks", "activity"}));
  cmd->add_option(
      "--activities", opts->activities,
      "GPU activity groups to record, comma-separated: kernel, memcpy, memset, sync, nvtx, or all (default: "
      "kernel,memcpy,memset,nvtx; synchronizing calls are still recorded as API calls by --api default, "
      "sync adds CUPTI's records with stream and event ids at about 20 % extra cost)");
  cmd->add_option("--delay", opts->profile.collector.delay_s, "start tracing this many seconds after CUDA starts")
      ->check(number_in(kSecondsRange));
  cmd->add_option("--duration", opts->profile.collector.duration_s,
                  "stop tracing after this many seconds (0: until exit)")
      ->check(number_in(kSecondsRange));
  cmd->add_option(
      "--capture-range", opts->capture,
      "trace only inside NVTX ranges named NAME (nvtx:NAME) or between cudaProfilerStart/Stop (cudaProfilerApi)");
  cmd->add_option("--nvml-hz", opts->nvml_hz, "GPU counter sampling rate, one sampler per node (0: off)")
      ->check(number_in(kSamplingHzRange));
  cmd->add_option("--host-hz", opts->host_hz,
                  "host thread sampling rate: state, CPU and context switches of every thread of each traced process "
                  "and its child processes, from /proc (0: off)")
      ->check(number_in(kSamplingHzRange));
  cmd->add_option("--buffer-mb", opts->buffer_mb,
                  "activity buffer pool per process; when full, records are dropped and counted")
      ->check(CLI::Range(2, 65536));
  cmd->add_flag("--force", opts->profile.force,
                "write into an existing non-empty NAME.ssrun (its old traces are removed)");
  cmd->add_flag("--discard", opts->profile.collector.discard,
                "enable the same CUPTI activity kinds but keep nothing (measures CUPTI's own overhead)");
  cmd->add_flag("--no-detach", opts->no_detach,
                "keep CUPTI attached between capture windows (by default it is detached when a window closes, so "
                "the job runs at full speed between windows)");
  cmd->add_flag("--no-python", opts->no_python,
                "do not load the Python bootstrap into the job's Python processes (by default it marks optimizer "
                "steps for the sampled windows, records operator and module ranges inside windows, and reads ranks "
                "and process groups from torch.distributed)");
}

// The Python bootstrap and Python stack sampling.
void add_python_options(CLI::App* cmd, const std::shared_ptr<ProfileArgs>& opts) {
  // A string checked against the names, then mapped: CLI11's CheckedTransformer
  // prints its internal map in the error ("Check bogus value in {inside->0...").
  std::vector<std::string> ways;
  for (const auto& [way, name] : collect::kPythonStacksWays) ways.emplace_back(name);
  cmd->add_option_function<std::string>(
         "--python-stacks",
         [opts](const std::string& chosen) {
           for (const auto& [way, name] : collect::kPythonStacksWays)
             if (chosen == name) opts->profile.python_stacks = way;
         },
         "how Python stacks are sampled: outside (read from this process, the whole run, every Python "
         "process of the job's tree), inside (by the bootstrap in each Python process, inside windows) "
         "or off")
      ->check(CLI::IsMember(ways))
      ->type_name("WAY")
      ->default_str("outside");
  cmd->add_option("--python-sampling-hz", opts->profile.python_sampling_hz,
                  "Python stack sampling rate, in every Python process of the job and its DataLoader workers: "
                  "where each thread's time went, file, line and function (0: off)")
      ->capture_default_str()
      ->check(number_in(kSamplingHzRange));
}

// Sampled windows by iteration: the default unless --full or the user's own
// windows; the hang watch.
void add_window_options(CLI::App* cmd, const std::shared_ptr<ProfileArgs>& opts) {
  auto& c = opts->profile.collector;
  auto* full = cmd->add_flag("--full", c.full,
                             "trace the whole run (by default only sampled iterations are traced: see --iterations)");
  auto* range = cmd->add_option("--iteration-range", c.iteration_range,
                                "NVTX range that marks one iteration: NAME or NAME#N (PyTorch's ProfilerStep#N)")
                    ->capture_default_str();
  auto* skip = cmd->add_option("--skip-iterations", c.skip_iterations, "warm-up iterations left untraced")
                   ->capture_default_str();
  auto* iterations = cmd->add_option("--iterations", c.iterations, "iterations traced in each sampled window")
                         ->capture_default_str()
                         ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  auto* repeat = cmd->add_option("--repeat-every", c.repeat_every,
                                 "open a sampled window again every this many iterations (0: one window)")
                     ->capture_default_str();
  auto* every = cmd->add_option("--windows-every", opts->windows_every,
                                "also open a window of --iterations about this often by the clock (e.g. 10m), at "
                                "the same iteration on every process; for long jobs")
                    ->check(duration_check());
  auto* hang = cmd->add_option("--hang-after", opts->hang_after,
                               "when no process has begun an iteration for this long (e.g. 10m), every process "
                               "writes its last collectives, iterations and Python stacks to RUN/control/hang/ (default: off; "
                               "docs/collector.md)")
                   ->check(duration_check());
  for (auto* o : {range, skip, iterations, repeat, every, hang}) full->excludes(o);
}

// The job after "--" and the options as the collector takes them; runs it
// and returns its exit code.
int run_job(ProfileArgs& o) {
  if (auto after_separator = take_job_command(); !after_separator.empty()) {
    if (!o.profile.command.empty()) fail("profile: give the job once, after '--'");
    o.profile.command = std::move(after_separator);
  }
  if (o.profile.command.empty()) fail("profile: no job to run: scalescope profile -o NAME -- CMD...");
  if (!o.windows_every.empty())
    o.profile.collector.windows_every_s = trace::parse_duration(o.windows_every, "--windows-every");
  if (!o.hang_after.empty()) o.profile.collector.hang_after_s = trace::parse_duration(o.hang_after, "--hang-after");
  o.profile.collector.api = collect::parse_api_mode(o.api);
  o.profile.collector.api_records = collect::parse_api_records(o.api_records);
  collect::parse_capture_range(o.capture, o.profile.collector);
  o.profile.collector.activities = collect::parse_activities(o.activities);
  o.profile.collector.nvml_hz = o.nvml_hz;
  o.profile.collector.host_hz = o.host_hz;
  o.profile.collector.buffer_mb = o.buffer_mb;
  o.profile.collector.detach = !o.no_detach;
  o.profile.python = !o.no_python;
  collect::validate_sampling(o.profile.collector);
  std::cout.flush();
  return collect::run_profile(o.profile, std::cerr).exit_code;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "trace a CUDA job (any process tree: torchrun, srun, plain programs)");
  cmd->footer("Example: scalescope profile -o myrun -- torchrun --nproc_per_node=2 train.py");
  cmd->add_option("-o,--output", opts->profile.output,
                  "run name: writes NAME.ssrun/ (one trace per process + run.json)")
      ->required();
  add_tracing_options(cmd, opts);
  add_python_options(cmd, opts);
  add_window_options(cmd, opts);
  cmd->add_option("command", opts->profile.command, "the job, after --")->expected(-1);
  cmd->callback([opts, &exit_code] { exit_code = run_job(*opts); });
}

}  // namespace scalescope::cli
