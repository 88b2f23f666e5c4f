#pragma once
// scalescope::sweep: run a job at several GPU counts and configurations,
// several times each, and keep every result in one SQLite file
// (docs/sweep-schema.md), written after every run so a killed sweep loses
// nothing finished and `--resume` redoes only what is missing.
//
//   sweep::SweepSpec spec;
//   spec.gpus = {1, 2};  spec.repeat = 3;  spec.command = {"python", "train.py", "--gpus", "{gpus}"};
//   auto plan = sweep::plan_runs(spec);          // validates placeholders first
//   sweep::run_sweep(spec, "sweep.db", {});      // or resume = true

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace scalescope::sweep {

enum class LauncherKind { kLocal, kTorchrun, kSrun, kMpirun };
std::optional<LauncherKind> parse_launcher(std::string_view name);  // "local", "torchrun", "srun", "mpirun"
const char* launcher_name(LauncherKind kind);

// kNone: the sweep starts each run itself, one after another. kSlurm: each run
// is an sbatch job (docs/slurm.md).
enum class SchedulerKind { kNone, kSlurm };
std::optional<SchedulerKind> parse_scheduler(std::string_view name);  // "none", "slurm"
const char* scheduler_name(SchedulerKind kind);

enum class MetricKind {
  kWall,    // wall seconds of the run
  kRegex,   // first capture group of the last output line matching a regex (RE2 syntax)
  kMlperf,  // seconds between the :::MLLOG run_start and run_stop events
  kTrace,   // with --profile: median steady-state iteration time from the trace
};

struct MetricSpec {
  MetricKind kind = MetricKind::kWall;
  std::string pattern;  // kRegex
  bool higher_is_better = false;
  // Parses "wall", "mlperf", "trace", "regex:PATTERN"; throws Error otherwise
  // (also for a regex that RE2 does not compile or that has no capture group).
  static MetricSpec parse(std::string_view text);
  std::string name() const;  // the key of the metric in runs.metrics_json
};

struct Variable {
  std::string key;
  std::vector<std::string> values;
  // Parses "KEY=V1,V2"; throws Error naming the text.
  static Variable parse(std::string_view text);
};

struct SweepSpec {
  std::vector<int> gpus = {1};
  int repeat = 1;
  std::vector<Variable> vary;
  LauncherKind launcher = LauncherKind::kLocal;
  int nodes = 1;  // nodes per run (gpus must divide evenly)
  SchedulerKind scheduler = SchedulerKind::kNone;
  bool cpu_only = false;     // the jobs use no GPU: the counts are tasks, and Slurm is asked for no GPUs
  bool profile = false;      // run under `scalescope profile` into the run dir
  double timeout_s = 0;      // 0: none
  double kill_grace_s = 10;  // SIGTERM to SIGKILL
  MetricSpec metric;
  uint64_t seed = 1;                 // run order shuffle within a repetition
  std::vector<std::string> command;  // the template, one argv token each
  std::string scalescope_exe;        // for --profile (default: this executable)

  // Canonical JSON of everything that shapes the plan (resume compares it).
  std::string to_json() const;
};

struct PlannedRun {
  int index = 0;  // position in the run order, 0-based; stable for a spec
  int gpus = 0;
  int nodes = 1;
  int rep = 0;                                              // 0-based repetition
  std::vector<std::pair<std::string, std::string>> config;  // the varied values, in --vary order
  std::string config_json() const;                          // {"precision":"bf16","pin":"1"}
  std::string config_label() const;                         // precision=bf16 pin=1 ("" when nothing varies)
  std::string dir_name() const;                             // 0007-g2-precision_bf16-r1
};

// GPUs a run asks for on each node: 0 with cpu_only, else gpus / nodes.
int gpus_per_node(const SweepSpec& spec, const PlannedRun& run);

// Parses "1,2,4,8" (positive, distinct). Throws Error naming the text.
std::vector<int> parse_gpu_list(std::string_view text);

// Checks the spec (placeholders present for every varied key, known
// placeholders only, nodes dividing GPU counts, ...) and returns the runs in
// order: repetition-major, and within a repetition every (configuration, GPU
// count) once, shuffled by a Fisher-Yates over mt19937_64(seed + rep).
std::vector<PlannedRun> plan_runs(const SweepSpec& spec);

// The template with placeholders replaced ({gpus}, {nodes}, {rep},
// {run_dir}, {gpus_per_node}, each varied key; {{ and }} are literal braces).
std::vector<std::string> expand_template(const SweepSpec& spec, const PlannedRun& run, const std::string& run_dir);

// The full argv that is executed (execvp, no shell): (with --profile) the
// profiler `scalescope profile -o RUN_DIR/trace.ssrun --`, then the launcher
// prefix, then the expanded template.
//   local:    CMD...
//   torchrun: torchrun --standalone --nproc_per_node=G [--no-python] CMD...
//             (nodes > 1: --nnodes=N --nproc_per_node=G/N --rdzv_backend=c10d
//              --rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT --rdzv_id=...)
//   srun:     srun --nodes=N --ntasks-per-node=G/N [--gpus-per-node=G/N] --kill-on-bad-exit=1 CMD...
//             (--gpus-per-node unless cpu_only)
//   mpirun:   mpirun -np G [--map-by ppr:G/N:node] CMD...
// `env` supplies MASTER_ADDR/MASTER_PORT (tests pass their own).
std::vector<std::string> launch_command(const SweepSpec& spec, const PlannedRun& run, const std::string& run_dir,
                                        const std::map<std::string, std::string>& env);

// Running one process.

enum class RunStatus { kRunning, kOk, kFailed, kTimeout, kCrashed, kError };
const char* status_name(RunStatus status);  // "running", "ok", "failed", "timeout", "crashed", "error"
std::optional<RunStatus> parse_status(std::string_view name);

struct ProcessResult {
  RunStatus status = RunStatus::kError;
  int exit_code = -1;  // when exited
  int signal = 0;      // when killed by a signal (including our timeout kill)
  double start_unix = 0, end_unix = 0, wall_s = 0;
  std::string note;                // e.g. "cannot execute 'torchrun': No such file or directory"
  uint64_t log_bytes_dropped = 0;  // output past the log cap (0: all of it is in log.txt)
  std::string log_note;            // "log.txt capped at ... bytes: ..." when a cap was hit
};

// log.txt keeps at most this much of a run's output: the first 63 MiB and the
// last 1 MiB, with a marker line where bytes were dropped (docs/data-safety.md).
inline constexpr uint64_t kDefaultMaxLogBytes = uint64_t{64} << 20;
// Metric extraction reads lines of at most this many bytes; longer ones are cut.
inline constexpr size_t kMaxLogLineBytes = size_t{64} << 10;

// Runs argv in its own process group with stdout and stderr appended to
// log_path (at most max_log_bytes of it); a watchdog process outside the
// caller's process group kills the job's group if the caller dies, even by
// SIGKILL of the caller's whole group; on timeout sends SIGTERM to the group,
// then SIGKILL after kill_grace_s. `extra_env` is added to the environment.
// `should_stop` is polled; when it returns true the group is killed and status
// is kError with note "interrupted". `on_output` sees every byte of output as it
// arrives, before the log's cap drops any.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_path, double timeout_s,
                          double kill_grace_s, const std::map<std::string, std::string>& extra_env,
                          const std::function<bool()>& should_stop = {}, uint64_t max_log_bytes = kDefaultMaxLogBytes,
                          const std::function<void(std::string_view)>& on_output = {});

// Metrics from a finished run.

struct RunMetrics {
  std::map<std::string, double> values;  // "wall_s", "regex", "mlperf_s", "iteration_s", "energy_j"
  std::vector<std::string> notes;        // why a metric is missing
};

// Scans the log for the regex / MLLOG events, and (profile) the traces in
// run_dir. Never throws for a bad log: missing metrics get a note (saying so
// when the log lost bytes to its cap). run_sweep reads the same metrics from
// the output stream instead, so its cap loses no metric line.
RunMetrics extract_metrics(const SweepSpec& spec, const ProcessResult& result, const std::filesystem::path& log_path,
                           const std::filesystem::path& run_dir);

// The sweep.

// Where and how `--scheduler slurm` submits. Not part of the plan: a resume
// may change them.
struct SlurmOptions {
  std::string partition, account, qos;  // passed to sbatch when set
  int max_queued = 4;                   // jobs of this sweep in Slurm's queue (pending or running) at once
  bool leave_queued = false;            // on SIGINT/SIGTERM, leave submitted jobs for a later --resume
  double poll_s = 10;                   // between looks at the queue (one scontrol call per job each)
};

struct SweepOptions {
  bool resume = false;
  SlurmOptions slurm;
  std::map<std::string, std::string> env;        // overrides of the environment for launch lines
  uint64_t max_log_bytes = kDefaultMaxLogBytes;  // per run's log.txt
};

struct SweepSummary {
  int planned = 0, skipped = 0, ran = 0, ok = 0, failed = 0;  // failed: failed, timeout, crashed, error
  bool interrupted = false;
  int64_t sweep_id = 0;
};

// What a sweep is doing, for whoever shows progress (report/sweep_progress.hpp
// draws it; the sweep itself prints nothing). Strings are as the user gave
// them: escaping for a terminal is the presenter's job.
struct SweepEvent {
  enum class Kind {
    kOrphanRerun,  // run_index was left "running" by a sweep that died; it runs again
    kRunStarted,
    kRunning,  // called while the run is in flight (about every poll of the child)
    kRunFinished,
    kSweepEnded,
    kQueue,  // --scheduler slurm: the queue changed; `queue` holds the counts
  };
  Kind kind = Kind::kRunStarted;
  int run_index = 0;                      // the plan index
  int done = 0, planned = 0, failed = 0;  // runs finished (this sweep and before), planned, not ok
  int gpus = 0, rep = 0;
  std::string config_label;  // "pin=1 amp=bf16", "" without varied keys
  double sweep_elapsed_s = 0, run_elapsed_s = 0;
  double eta_s = NAN;  // kRunFinished: of the runs left, from this sweep's mean run time
  // kRunFinished:
  RunStatus status = RunStatus::kOk;
  double wall_s = 0;
  std::string metric_name;
  std::optional<double> metric;  // the run's metric when it was ok and had it
  std::string note;
  // kQueue: per configuration and GPU count, in plan order.
  struct QueueCounts {
    std::string config_label;
    int gpus = 0;
    int queued = 0, running = 0, done = 0;
  };
  std::vector<QueueCounts> queue;
};
using SweepObserver = std::function<void(const SweepEvent&)>;

// Runs every planned run not yet finished in `db`, writing each result in its
// own transaction. Without resume, an existing db is an error; with resume,
// its sweep must have the same spec. SIGINT/SIGTERM stop after killing the
// run in flight (which stays "running" and is redone on resume).
// With --scheduler slurm: at most options.slurm.max_queued jobs are in the
// queue at once; each job id is recorded at submission, each job's final
// state when it ends. Resume follows jobs still queued or running by id and
// submits only runs without a job. SIGINT/SIGTERM scancel this sweep's jobs
// (their runs are redone on resume) unless leave_queued.
SweepSummary run_sweep(const SweepSpec& spec, const std::filesystem::path& db, const SweepOptions& options,
                       const SweepObserver& observe = {});

// Reading a results file (for `scalescope scaling` and reports).

struct StoredRun {
  int64_t id = 0;
  int plan_index = 0;
  std::string config_json;  // {"precision":"bf16"}
  std::vector<std::pair<std::string, std::string>> config;
  int gpus = 0, nodes = 1, rep = 0;
  RunStatus status = RunStatus::kError;
  std::optional<int> exit_code, signal;
  double start_unix = 0, end_unix = 0, wall_s = 0;
  std::map<std::string, double> metrics;
  std::string log_path, trace_path, run_dir, note;
  // --scheduler slurm: the run's job (the last one submitted for it).
  struct SlurmJob {
    std::string job_id;
    std::string state;  // as Slurm says: PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    std::optional<int> exit_code;
    std::string nodelist;
    std::optional<int> gpus;         // allocated
    std::optional<double> queued_s;  // submit to start
  };
  std::optional<SlurmJob> slurm;
};

struct StoredSweep {
  int64_t id = 0;
  std::string created;
  std::string spec_json;
  std::string metric;  // the sweep's metric name (key in metrics)
  bool higher_is_better = false;
  int planned_runs = 0;
  std::vector<StoredRun> runs;  // by plan index
};

// Reads the sweep in `db`. Throws Error for a missing file, a file that is
// not SQLite, a SQLite file of another application (application_id), a newer
// schema, or missing tables.
StoredSweep read_sweep(const std::filesystem::path& db);

// JSON of a stored sweep: its runs with their configuration, status, metrics
// and Slurm job ("slurm": null without one); times in seconds (wall_s,
// start_unix, end_unix, queued_s). The spec is parsed back into an object.
void to_json(nlohmann::json& j, const StoredRun& r);
void to_json(nlohmann::json& j, const StoredSweep& s);

}  // namespace scalescope::sweep
