// Running a sweep: one process group per run, its output in a log file, a
// timeout that kills the whole group, metrics from the log, and one committed
// SQLite write before and after each run.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/terminal.hpp"
#include "scalescope_version.hpp"
#include "sweep/profile_metrics.hpp"
#include "sweep/sweep.hpp"
#include "sweep/sweep_store.hpp"
#include "trace/error.hpp"

extern char** environ;

namespace scalescope::sweep {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::atomic<int> g_stop_signal{0};
void on_stop_signal(int sig) { g_stop_signal.store(sig); }

// Installs SIGINT/SIGTERM/SIGHUP handlers for the sweep's lifetime.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~StopSignals() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = std::llround(s);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_path,
                          double timeout_s, double kill_grace_s, const std::map<std::string, std::string>& extra_env,
                          const std::function<bool()>& should_stop) {
  ProcessResult r;
  if (argv.empty()) fail("empty command line");
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) fail("{}: cannot create the run's log file ({})", log_path.string(), std::strerror(errno));
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    fail("cannot create a pipe ({})", std::strerror(errno));
  }
  // Everything the child needs is prepared before fork (no allocation after).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    const auto key = kv.substr(0, kv.find('='));
    if (!extra_env.count(std::string(key))) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  r.start_unix = now_unix();
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (devnull >= 0) ::close(devnull);
    fail("cannot start a run (fork failed: {})", std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // If scalescope dies (even SIGKILL), the job's leader goes too.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::environ = envp.data();
    ::execvp(args[0], args.data());
    const int e = errno;
    [[maybe_unused]] auto n = ::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  ::close(err_pipe[1]);
  ::close(log_fd);
  if (devnull >= 0) ::close(devnull);
  int exec_errno = 0;
  const bool exec_failed = ::read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(err_pipe[0]);

  bool timed_out = false, interrupted = false;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (!kill_at) {
      if (timeout_s > 0 && elapsed >= timeout_s) timed_out = true;
      if (should_stop && should_stop()) interrupted = true;
      if (timed_out || interrupted) {
        ::kill(-pid, SIGTERM);
        kill_at = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(kill_grace_s));
      }
    } else if (now >= *kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = now + std::chrono::hours(24 * 365);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Stray members of the job's group (backgrounded children) must not outlive the run.
  ::kill(-pid, SIGKILL);
  r.end_unix = now_unix();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (exec_failed) {
    r.status = RunStatus::kError;
    r.note = fmt::format("cannot execute '{}': {}", argv[0], std::strerror(exec_errno));
    std::ofstream(log_path, std::ios::app) << "scalescope: " << r.note << "\n";
    return r;
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (interrupted) {
    r.status = RunStatus::kError;
    r.note = "interrupted";
  } else if (timed_out) {
    r.status = RunStatus::kTimeout;
    r.note = fmt::format("killed after the {:.0f} s timeout", timeout_s);
  } else if (WIFSIGNALED(status)) {
    r.status = RunStatus::kCrashed;
    r.note = fmt::format("killed by signal {} ({})", r.signal, strsignal(r.signal));
  } else if (r.exit_code == 0) {
    r.status = RunStatus::kOk;
  } else {
    r.status = RunStatus::kFailed;
    r.note = fmt::format("exit code {}", r.exit_code);
  }
  return r;
}

RunMetrics extract_metrics(const SweepSpec& spec, const ProcessResult& result, const std::filesystem::path& log_path,
                           const std::filesystem::path& run_dir) {
  RunMetrics m;
  m.values["wall_s"] = result.wall_s;
  const bool want_regex = spec.metric.kind == MetricKind::kRegex;
  const bool want_mlperf = spec.metric.kind == MetricKind::kMlperf;
  if (want_regex || want_mlperf) {
    std::ifstream in(log_path);
    std::optional<std::regex> re;
    if (want_regex) re.emplace(spec.metric.pattern, std::regex::ECMAScript);
    std::optional<double> value, run_start, run_stop;
    std::string stop_status;
    std::string line;
    constexpr size_t kMaxLine = 64 * 1024;  // longer lines are cut: bounded regex work
    while (std::getline(in, line)) {
      if (line.size() > kMaxLine) line.resize(kMaxLine);
      if (re) {
        std::smatch match;
        if (std::regex_search(line, match, *re) && match.size() > 1 && match[1].matched) {
          const std::string text = match[1].str();
          char* end = nullptr;
          const double v = std::strtod(text.c_str(), &end);
          if (end != text.c_str() && std::isfinite(v)) value = v;
        }
      }
      if (want_mlperf) {
        const auto pos = line.find(":::MLLOG");
        if (pos == std::string::npos) continue;
        auto j = nlohmann::json::parse(line.substr(pos + 8), nullptr, false);
        if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("time_ms") ||
            !j["time_ms"].is_number())
          continue;
        const auto key = j["key"].get<std::string>();
        const double t = j["time_ms"].get<double>();
        if (key == "run_start" && !run_start) run_start = t;
        if (key == "run_stop") {
          run_stop = t;
          if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("status") &&
              j["metadata"]["status"].is_string())
            stop_status = j["metadata"]["status"].get<std::string>();
        }
      }
    }
    if (want_regex) {
      if (value)
        m.values[spec.metric.name()] = *value;
      else
        m.notes.push_back(fmt::format("no output line matched the metric regex /{}/ with a number", spec.metric.pattern));
    }
    if (want_mlperf) {
      if (run_start && run_stop && *run_stop >= *run_start) {
        m.values["mlperf_s"] = (*run_stop - *run_start) / 1000.0;
        m.values["mlperf_success"] = stop_status.empty() || stop_status == "success" ? 1.0 : 0.0;
        if (!stop_status.empty() && stop_status != "success")
          m.notes.push_back(fmt::format("MLLOG run_stop status is '{}'", stop_status));
      } else {
        m.notes.push_back(!run_start ? "no :::MLLOG run_start line in the output"
                                     : (!run_stop ? "no :::MLLOG run_stop line in the output"
                                                  : "MLLOG run_stop is before run_start"));
      }
    }
  }
  if (spec.profile) add_profile_metrics(run_dir / "trace.ssrun", m);
  return m;
}

SweepSummary run_sweep(const SweepSpec& spec, const std::filesystem::path& db, const SweepOptions& options,
                       std::FILE* progress) {
  const auto plan = plan_runs(spec);
  std::map<std::string, std::string> env = options.env;
  for (const char* k : {"MASTER_ADDR", "MASTER_PORT"})
    if (!env.count(k))
      if (const char* v = std::getenv(k)) env[k] = v;
  // Build every launch line first: a bad template or launcher setup fails before anything runs.
  const std::filesystem::path runs_dir = db.string() + ".runs";
  std::vector<std::vector<std::string>> lines;
  for (const auto& run : plan) lines.push_back(launch_command(spec, run, (runs_dir / run.dir_name()).string(), env));

  const std::string version = std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")";
  SweepStore store = options.resume
                         ? SweepStore::open_for_resume(db, spec.to_json())
                         : SweepStore::create(db, spec.to_json(), spec.metric.name(), spec.metric.higher_is_better,
                                              static_cast<int>(plan.size()), version);
  SweepSummary sum;
  sum.sweep_id = store.sweep_id();
  sum.planned = static_cast<int>(plan.size());
  const auto finished = store.finished_indices();
  std::error_code ec;
  std::filesystem::create_directories(runs_dir, ec);
  if (ec) fail("{}: cannot create the runs folder ({})", runs_dir.string(), ec.message());

  StopSignals signals;
  const int todo = static_cast<int>(plan.size() - finished.size());
  double spent = 0;
  int done_now = 0;
  // Progress names the run going on and the time since the sweep started, so
  // a long first run does not look like a hang. Config values come from the
  // command line and are escaped before they reach the terminal.
  const auto sweep_start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count();
  };
  auto bar = [&](int total_done) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * total_done / std::max(1, sum.planned));
    return std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
  };
  for (const auto& run : plan) {
    if (finished.count(run.index)) {
      ++sum.skipped;
      continue;
    }
    if (g_stop_signal.load()) {
      sum.interrupted = true;
      break;
    }
    const auto run_dir = runs_dir / run.dir_name();
    std::filesystem::remove_all(run_dir, ec);  // a run redone after an interruption starts clean
    std::filesystem::create_directories(run_dir, ec);
    if (ec) fail("{}: cannot create the run folder ({})", run_dir.string(), ec.message());
    const auto log_path = run_dir / "log.txt";
    const auto& argv = lines[static_cast<size_t>(run.index)];
    store.begin_run(run, nlohmann::json(argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), run_dir.string(), log_path.string(), now_unix());
    // SCALESCOPE_SWEEP_*: not SCALESCOPE_RUN_DIR, which `scalescope profile` sets to its trace folder.
    std::map<std::string, std::string> run_env = {{"SCALESCOPE_SWEEP_RUN_DIR", run_dir.string()},
                                                  {"SCALESCOPE_SWEEP_GPUS", std::to_string(run.gpus)},
                                                  {"SCALESCOPE_SWEEP_REP", std::to_string(run.rep)}};
    const std::string label = report::terminal_safe(run.config_label());
    const auto run_start = std::chrono::steady_clock::now();
    auto draw_running = [&] {
      const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
      fmt::print(progress, "\r\033[K[{}] {}/{} runs, {} failed, elapsed {}  (running: g{}{}{} r{}, {})", bar(sum.skipped + sum.ran),
                 sum.skipped + sum.ran, sum.planned, sum.failed, format_eta(elapsed_s()), run.gpus,
                 label.empty() ? "" : " ", label, run.rep, format_eta(run_s));
      std::fflush(progress);
    };
    if (progress) {
      if (options.progress_bar) {
        draw_running();
      } else {
        fmt::print(progress, "run {}/{} gpus={}{}{} rep={}: running (elapsed {})\n", sum.skipped + sum.ran + 1,
                   sum.planned, run.gpus, label.empty() ? "" : " ", label, run.rep, format_eta(elapsed_s()));
        std::fflush(progress);
      }
    }
    auto last_draw = run_start;
    const auto result = run_process(argv, log_path, spec.timeout_s, spec.kill_grace_s, run_env, [&] {
      if (progress && options.progress_bar && std::chrono::steady_clock::now() - last_draw >= std::chrono::seconds(1)) {
        last_draw = std::chrono::steady_clock::now();
        draw_running();
      }
      return g_stop_signal.load() != 0;
    });
    if (result.note == "interrupted" && g_stop_signal.load()) {
      // Left as "running": redone on resume.
      sum.interrupted = true;
      break;
    }
    const auto metrics = extract_metrics(spec, result, log_path, run_dir);
    const bool traced = spec.profile && std::filesystem::exists(run_dir / "trace.ssrun", ec);
    store.finish_run(run, result, metrics, spec.metric.name(), traced ? (run_dir / "trace.ssrun").string() : "");
    ++sum.ran;
    ++done_now;
    spent += result.wall_s;
    if (result.status == RunStatus::kOk)
      ++sum.ok;
    else
      ++sum.failed;
    if (progress) {
      const int total_done = sum.skipped + sum.ran;
      const double eta = spent / done_now * (todo - done_now);
      auto mv = metrics.values.find(spec.metric.name());
      const std::string metric_text =
          result.status == RunStatus::kOk && mv != metrics.values.end() ? fmt::format("{:.6g}", mv->second) : "-";
      if (options.progress_bar) {
        fmt::print(progress, "\r\033[K[{}] {}/{} runs, {} failed, elapsed {}, ETA {}  (last: g{} {} r{} {} {})",
                   bar(total_done), total_done, sum.planned, sum.failed, format_eta(elapsed_s()), format_eta(eta),
                   run.gpus, label, run.rep, status_name(result.status), metric_text);
      } else {
        fmt::print(progress, "run {}/{} gpus={}{}{} rep={}: {} in {:.2f} s, {}={}{}{} (elapsed {}, ETA {})\n",
                   total_done, sum.planned, run.gpus, label.empty() ? "" : " ", label, run.rep,
                   status_name(result.status), result.wall_s, spec.metric.name(), metric_text,
                   result.note.empty() ? "" : "; ", report::terminal_safe(result.note), format_eta(elapsed_s()),
                   format_eta(eta));
      }
      std::fflush(progress);
    }
  }
  if (progress && options.progress_bar) fmt::print(progress, "\n");
  if (g_stop_signal.load()) sum.interrupted = true;
  return sum;
}

}  // namespace scalescope::sweep
