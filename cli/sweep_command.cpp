// scalescope sweep: run a job over GPU counts x configurations x repetitions
// and record every run in a SQLite file (sweep/sweep.hpp).
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "cli/usage_error.hpp"
#include "report/sweep_progress.hpp"
#include "report/terminal.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"
#include "base/number_check.hpp"

namespace scalescope::cli {

namespace {
struct SweepArgs {
  std::string gpus = "1";
  int repeat = 3;
  std::vector<std::string> vary;
  std::string launcher = "local";
  std::string scheduler = "none";
  bool cpu_only = false;
  std::string partition, account, qos;
  int max_queued = 4;
  bool leave_queued = false;
  std::string poll_interval = "10s";
  int nodes = 1;
  bool profile = false;
  std::string timeout;
  std::string kill_grace = "10s";
  std::string metric = "wall";
  std::string metric_better;
  uint64_t seed = 1;
  bool resume = false;
  std::string output;
  std::vector<std::string> command;
};

// The options of --scheduler slurm.
void add_slurm_options(CLI::App* cmd, const std::shared_ptr<SweepArgs>& args) {
  cmd->add_option("--partition", args->partition, "--scheduler slurm: the partition to submit to");
  cmd->add_option("--account", args->account, "--scheduler slurm: the account to charge");
  cmd->add_option("--qos", args->qos, "--scheduler slurm: the quality of service");
  cmd->add_option("--max-queued", args->max_queued,
                  "--scheduler slurm: jobs of this sweep in the queue (pending or running) at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--leave-queued", args->leave_queued,
                "--scheduler slurm: on Ctrl-C leave submitted jobs queued for --resume (default: scancel them)");
  cmd->add_option("--poll-interval", args->poll_interval,
                  "--scheduler slurm: time between looks at the sweep's jobs (each look is one scontrol call per job)")
      ->capture_default_str()
      ->check(duration_check());
}

// The sweep the options describe, and the command template after "--".
sweep::SweepSpec sweep_spec(SweepArgs& args) {
  sweep::SweepSpec spec;
  spec.gpus = sweep::parse_gpu_list(args.gpus);
  spec.repeat = args.repeat;
  for (const auto& v : args.vary) spec.vary.push_back(sweep::Variable::parse(v));
  auto launcher = sweep::parse_launcher(args.launcher);
  if (!launcher) fail_usage("--launcher '{}' is not one of local, torchrun, srun, mpirun", args.launcher);
  spec.launcher = *launcher;
  auto scheduler = sweep::parse_scheduler(args.scheduler);
  if (!scheduler) fail_usage("--scheduler '{}' is not one of none, slurm", args.scheduler);
  spec.scheduler = *scheduler;
  spec.cpu_only = args.cpu_only;
  spec.nodes = args.nodes;
  spec.profile = args.profile;
  if (!args.timeout.empty()) spec.timeout_s = trace::parse_duration(args.timeout, "--timeout");
  spec.kill_grace_s = trace::parse_duration(args.kill_grace, "--kill-grace");
  spec.metric = sweep::MetricSpec::parse(args.metric);
  if (args.metric_better == "higher") spec.metric.higher_is_better = true;
  else if (!args.metric_better.empty() && args.metric_better != "lower")
    fail_usage("--metric-better '{}' is not higher or lower", args.metric_better);
  spec.seed = args.seed;
  spec.command = args.command;
  if (auto after_separator = take_job_command(); !after_separator.empty()) {
    if (!spec.command.empty()) fail("sweep: give the command template once, after '--'");
    spec.command = std::move(after_separator);
  }
  std::error_code ec;
  spec.scalescope_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  return spec;
}

// Where and how the sweep runs: --resume, and the Slurm options (refused
// without --scheduler slurm).
sweep::SweepOptions sweep_options(const SweepArgs& args, const sweep::SweepSpec& spec, const CLI::App& cmd) {
  sweep::SweepOptions options;
  options.resume = args.resume;
  options.slurm.partition = args.partition;
  options.slurm.account = args.account;
  options.slurm.qos = args.qos;
  options.slurm.max_queued = args.max_queued;
  options.slurm.leave_queued = args.leave_queued;
  options.slurm.poll_s = trace::parse_duration(args.poll_interval, "--poll-interval");
  const bool slurm_only = !args.partition.empty() || !args.account.empty() || !args.qos.empty() ||
                          args.leave_queued || cmd.count("--max-queued") > 0 || cmd.count("--poll-interval") > 0;
  if (slurm_only && spec.scheduler != sweep::SchedulerKind::kSlurm)
    fail_usage(
        "--partition, --account, --qos, --max-queued, --leave-queued and --poll-interval need --scheduler slurm");
  return options;
}

// Runs the sweep, says on stderr what became of it and what to do next.
void run_sweep(const SweepArgs& args, const sweep::SweepSpec& spec, const sweep::SweepOptions& options,
               int& exit_code) {
  const auto sum = sweep::run_sweep(spec, args.output, options,
                                    report::sweep_progress_printer(stderr, ::isatty(STDERR_FILENO) != 0));
  fmt::print(stderr, "sweep: {} runs planned, {} already done, {} run now ({} ok, {} not ok); results in {}\n",
             sum.planned, sum.skipped, sum.ran, sum.ok, sum.failed, args.output);
  if (sum.interrupted) {
    exit_code = 1;
    fail("{}: sweep interrupted; finished runs are saved; continue with the same options and --resume", args.output);
  }
  if (sum.ran > 0 && sum.ok == 0)
    fail("{}: every run of this sweep failed; see the logs under {}.runs/*/log.txt", args.output, args.output);
  fmt::print(
      stderr, "next: scalescope scaling {}{}\n", report::terminal_safe(args.output),
      spec.profile ? "    (and scalescope report " + report::terminal_safe(args.output) + " -o report.html)" : "");
  exit_code = 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Run a job at several GPU counts and configurations, several times each, recording every run in a SQLite file");
  cmd->footer(
      "The command template follows '--'; placeholders {gpus} {nodes} {gpus_per_node} {rep} {run_dir} and each "
      "--vary key are replaced in each argument; the result is executed directly (no shell: write sh -c '...' for "
      "shell syntax).\nExample: scalescope sweep --gpus 1,2,4 --repeat 5 --vary precision=fp32,bf16 --launcher "
      "torchrun -o sweep.db -- train.py --precision {precision}");
  cmd->add_option("--gpus", args->gpus, "GPU counts, e.g. 1,2,4,8")->capture_default_str();
  cmd->add_option("--repeat", args->repeat, "Repetitions of every configuration")->capture_default_str();
  cmd->add_option("--vary", args->vary, "KEY=V1,V2,...: a varied setting, used as {KEY} in the template (repeatable)");
  cmd->add_option("--launcher", args->launcher, "local | torchrun | srun | mpirun")->capture_default_str();
  cmd->add_option("--scheduler", args->scheduler,
                  "none (run each job here, one after another) | slurm (each run is an sbatch job; docs/slurm.md)")
      ->capture_default_str();
  cmd->add_flag("--cpu-only", args->cpu_only,
                "The jobs use no GPU: --gpus counts tasks, and Slurm is asked for no GPUs");
  add_slurm_options(cmd, args);
  cmd->add_option("--nodes", args->nodes, "Nodes per run (GPU counts must divide evenly)")->capture_default_str();
  cmd->add_flag("--profile", args->profile, "Run each job under 'scalescope profile' into its run folder");
  cmd->add_option("--timeout", args->timeout,
                  "Per-run time limit, e.g. 30m, 90s (the job's process group is killed; with --scheduler slurm, "
                  "the job's --time, in whole minutes)")
      ->check(duration_check());
  cmd->add_option("--kill-grace", args->kill_grace, "Time between SIGTERM and SIGKILL at a timeout")
      ->capture_default_str()
      ->check(duration_check());
  cmd->add_option("--metric", args->metric,
                  "wall | regex:PATTERN (RE2 syntax; the number in its first capture group) | mlperf | trace")
      ->capture_default_str();
  cmd->add_option("--metric-better", args->metric_better, "higher | lower (default lower; e.g. higher for throughput)");
  cmd->add_option("--seed", args->seed, "Seed of the run order within each repetition")->capture_default_str();
  cmd->add_flag("--resume", args->resume, "Continue the interrupted sweep in -o without redoing finished runs");
  cmd->add_option("-o,--output", args->output, "Results file (SQLite); run folders go to <file>.runs/")->required();
  cmd->add_option("command", args->command, "-- CMD-TEMPLATE...")->expected(-1);
  cmd->callback([cmd, args, &exit_code] {
    const sweep::SweepSpec spec = sweep_spec(*args);
    run_sweep(*args, spec, sweep_options(*args, spec, *cmd), exit_code);
  });
}

}  // namespace scalescope::cli
