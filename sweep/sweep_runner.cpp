// Running a sweep: one process group per run, its output in a log file, a
// timeout that kills the whole group, metrics from the log, and one committed
// SQLite write before and after each run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scalescope_version.hpp"
#include "sweep/metric_scanner.hpp"
#include "sweep/profile_metrics.hpp"
#include "sweep/slurm_client.hpp"
#include "sweep/sweep.hpp"
#include "sweep/sweep_lock.hpp"
#include "sweep/sweep_store.hpp"
#include "base/error.hpp"
#include "base/exec_args.hpp"

extern char** environ;

namespace scalescope::sweep {
namespace {

double now_unix() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

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

// Copies the job's output from `fd` to the log, keeping at most `cap` bytes:
// the first cap - kTailBytes as they come, then the last kTailBytes (where an
// MLPerf run_stop line is), with one marker line where bytes were dropped.
class CappedLog {
 public:
  CappedLog(int log_fd, uint64_t cap)
      : fd_(log_fd), cap_(cap), head_cap_(cap > kTailBytes * 2 ? cap - kTailBytes : cap / 2) {}
  void add(const char* p, size_t n) {
    while (n > 0 && written_ < head_cap_) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, head_cap_ - written_));
      write_all(p, k);
      p += k;
      n -= k;
    }
    if (n == 0) return;
    // Past the head: keep a ring of the last tail bytes.
    const size_t tail_cap = static_cast<size_t>(cap_ - head_cap_);
    tail_.append(p, n);
    if (tail_.size() > 2 * tail_cap + (size_t{1} << 20)) trim(tail_cap);
  }
  // Writes the kept tail; returns the bytes dropped.
  uint64_t finish() {
    const size_t tail_cap = static_cast<size_t>(cap_ - head_cap_);
    trim(tail_cap);
    if (dropped_ > 0) {
      const std::string mark = fmt::format(
          "\n[scalescope: {} bytes of output dropped here: log.txt is capped at {} bytes]\n", dropped_, cap_);
      write_all(mark.data(), mark.size());
    }
    write_all(tail_.data(), tail_.size());
    tail_.clear();
    return dropped_;
  }

 private:
  static constexpr uint64_t kTailBytes = uint64_t{1} << 20;
  void trim(size_t keep) {
    if (tail_.size() <= keep) return;
    dropped_ += tail_.size() - keep;
    tail_.erase(0, tail_.size() - keep);
  }
  void write_all(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {  // disk full: the rest is dropped, counted
        dropped_ += n;
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
      written_ += static_cast<uint64_t>(w);
    }
  }
  int fd_;
  uint64_t cap_, head_cap_, written_ = 0, dropped_ = 0;
  std::string tail_;
};

// A process that outlives the sweep to kill the job's process group when the
// sweep dies, however it dies: it waits for EOF on a pipe whose only writer is
// the sweep. It runs in a session of its own, so a SIGKILL of the sweep's
// whole process group (`timeout -s KILL`, `kill -9 -PGID`, a terminal hangup)
// does not reach it. PR_SET_PDEATHSIG on the job's leader alone would leave
// the leader's children (sh -c '...; sleep', torchrun workers).
// Started before the job; arm() then tells it the job's group.
class GroupWatchdog {
 public:
  GroupWatchdog() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    const pid_t w = ::fork();
    if (w == 0) watch(p[0]);
    ::close(p[0]);
    if (w < 0) {
      ::close(p[1]);
      return;
    }
    pid_ = w;
    fd_ = p[1];
  }
  ~GroupWatchdog() { release(); }
  GroupWatchdog(const GroupWatchdog&) = delete;
  GroupWatchdog& operator=(const GroupWatchdog&) = delete;

  void arm(pid_t group) {
    if (fd_ >= 0) [[maybe_unused]] auto n = ::write(fd_, &group, sizeof group);
  }
  // The job is over: EOF makes the watchdog kill the (dead) group and exit.
  void release() {
    if (fd_ < 0) return;
    ::close(fd_);
    fd_ = -1;
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
  }

 private:
  [[noreturn]] static void watch(int read_end) {
    ::setsid();
    // Hold nothing of the sweep's (pipes whose EOF someone waits for, the log).
    for (int fd = 3; fd < 4096; ++fd)
      if (fd != read_end) ::close(fd);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
    pid_t group = 0;
    ssize_t n;
    while ((n = ::read(read_end, &group, sizeof group)) < 0 && errno == EINTR) {}
    if (n != static_cast<ssize_t>(sizeof group) || group <= 1) ::_exit(0);  // no job was started
    char c;
    while (::read(read_end, &c, 1) < 0 && errno == EINTR) {}
    ::kill(-group, SIGKILL);
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int fd_ = -1;
};

// The job's environment: ours, with extra_env's keys replaced or added.
std::vector<std::string> job_environment(const std::map<std::string, std::string>& extra_env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    const auto key = kv.substr(0, kv.find('='));
    if (!extra_env.count(std::string(key))) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// How the wait for a job's leader ended.
struct JobWait {
  int status = 0;  // waitpid's
  bool timed_out = false, interrupted = false;
};

// Waits for the job's leader. At the timeout, or when should_stop says so,
// the group gets SIGTERM, and SIGKILL kill_grace_s later. `drain` moves the
// job's output on every poll of out_fd.
JobWait wait_for_job(pid_t pid, std::chrono::steady_clock::time_point t0, double timeout_s, double kill_grace_s,
                     const std::function<bool()>& should_stop, int out_fd, const std::function<void()>& drain) {
  JobWait w;
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  while (true) {
    const pid_t done = ::waitpid(pid, &w.status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (!kill_at) {
      if (timeout_s > 0 && elapsed >= timeout_s) w.timed_out = true;
      if (should_stop && should_stop()) w.interrupted = true;
      if (w.timed_out || w.interrupted) {
        ::kill(-pid, SIGTERM);
        kill_at = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(kill_grace_s));
      }
    } else if (now >= *kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = now + std::chrono::hours(24 * 365);
    }
    struct pollfd pfd {
      out_fd, POLLIN, 0
    };
    ::poll(&pfd, 1, 10);
    drain();
  }
  return w;
}

// Stray members of the job's group (backgrounded children) must not outlive the run.
void kill_and_reap_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  // With the sweep as subreaper, orphaned members of the group are our
  // children now: reap them so they do not stay zombies.
  for (int i = 0; i < 100; ++i) {
    int st = 0;
    const pid_t z = ::waitpid(-pid, &st, WNOHANG);
    if (z < 0) break;  // none left in the group
    if (z == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The run's status and note from how its leader ended.
void set_run_status(ProcessResult& r, const JobWait& w, double timeout_s) {
  if (WIFEXITED(w.status)) r.exit_code = WEXITSTATUS(w.status);
  if (WIFSIGNALED(w.status)) r.signal = WTERMSIG(w.status);
  if (w.interrupted) {
    r.status = RunStatus::kError;
    r.note = "interrupted";
  } else if (w.timed_out) {
    r.status = RunStatus::kTimeout;
    r.note = fmt::format("killed after the {:.0f} s timeout", timeout_s);
  } else if (WIFSIGNALED(w.status)) {
    r.status = RunStatus::kCrashed;
    r.note = fmt::format("killed by signal {} ({})", r.signal, strsignal(r.signal));
  } else if (r.exit_code == 0) {
    r.status = RunStatus::kOk;
  } else {
    r.status = RunStatus::kFailed;
    r.note = fmt::format("exit code {}", r.exit_code);
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_path, double timeout_s,
                          double kill_grace_s, const std::map<std::string, std::string>& extra_env,
                          const std::function<bool()>& should_stop, uint64_t max_log_bytes,
                          const std::function<void(std::string_view)>& on_output) {
  ProcessResult r;
  if (argv.empty()) fail("empty command line");
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) fail("{}: cannot create the run's log file ({})", log_path.string(), std::strerror(errno));
  int err_pipe[2], out_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    fail("cannot create a pipe ({})", std::strerror(errno));
  }
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    fail("cannot create a pipe ({})", std::strerror(errno));
  }
  // Everything the child needs is prepared before fork (no allocation after).
  std::vector<std::string> env_strings = job_environment(extra_env);
  std::vector<std::string> argv_copy = argv;
  std::vector<char*> envp = exec_array(env_strings), args = exec_array(argv_copy);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  GroupWatchdog watchdog;
  r.start_unix = now_unix();
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {log_fd, err_pipe[0], err_pipe[1], out_pipe[0], out_pipe[1], devnull})
      if (fd >= 0) ::close(fd);
    fail("cannot start a run (fork failed: {})", std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // If scalescope dies (even SIGKILL), the job's leader goes too; the
    // watchdog below takes the rest of the group.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    ::environ = envp.data();
    ::execvp(args[0], args.data());
    const int e = errno;
    [[maybe_unused]] auto n = ::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  watchdog.arm(pid);
  ::close(err_pipe[1]);
  ::close(out_pipe[1]);
  if (devnull >= 0) ::close(devnull);
  int exec_errno = 0;
  const bool exec_failed = ::read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(err_pipe[0]);
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  CappedLog log(log_fd, max_log_bytes);
  std::vector<char> buf(size_t{64} << 10);
  auto drain = [&] {
    for (;;) {
      const ssize_t n = ::read(out_pipe[0], buf.data(), buf.size());
      if (n > 0) {
        if (on_output) on_output(std::string_view(buf.data(), static_cast<size_t>(n)));
        log.add(buf.data(), static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return;
    }
  };

  const JobWait wait = wait_for_job(pid, t0, timeout_s, kill_grace_s, should_stop, out_pipe[0], drain);
  drain();
  kill_and_reap_group(pid);
  drain();
  ::close(out_pipe[0]);
  r.log_bytes_dropped = log.finish();
  ::close(log_fd);
  watchdog.release();
  r.end_unix = now_unix();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.log_bytes_dropped > 0)
    r.log_note =
        fmt::format("log.txt capped at {} bytes: {} bytes of output dropped", max_log_bytes, r.log_bytes_dropped);

  if (exec_failed) {
    r.status = RunStatus::kError;
    r.note = fmt::format("cannot execute '{}': {}", argv[0], std::strerror(exec_errno));
    std::ofstream(log_path, std::ios::app) << "scalescope: " << r.note << "\n";
    return r;
  }
  set_run_status(r, wait, timeout_s);
  return r;
}

namespace {

// The run's metrics once its output has gone through `scanner`.
RunMetrics finish_metrics(const SweepSpec& spec, const ProcessResult& result, MetricScanner& scanner,
                          const std::filesystem::path& run_dir) {
  RunMetrics m;
  m.values["wall_s"] = result.wall_s;
  scanner.finish(m);
  if (spec.profile) add_profile_metrics(run_dir / "trace.ssrun", m);
  return m;
}

}  // namespace

RunMetrics extract_metrics(const SweepSpec& spec, const ProcessResult& result, const std::filesystem::path& log_path,
                           const std::filesystem::path& run_dir) {
  MetricScanner scanner(spec.metric);
  if (spec.metric.kind == MetricKind::kRegex || spec.metric.kind == MetricKind::kMlperf) {
    std::ifstream in(log_path, std::ios::binary);
    std::vector<char> buf(size_t{64} << 10);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      scanner.feed(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
    }
  }
  RunMetrics m = finish_metrics(spec, result, scanner, run_dir);
  const bool missing = (spec.metric.kind == MetricKind::kRegex || spec.metric.kind == MetricKind::kMlperf) &&
                       !m.values.count(spec.metric.name());
  if (missing && result.log_bytes_dropped > 0)
    m.notes.push_back(fmt::format("the log lost {} bytes of output to its cap: the metric may have been in them",
                                  result.log_bytes_dropped));
  return m;
}

namespace {

std::string argv_json(const std::vector<std::string>& argv) {
  return nlohmann::json(argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// SCALESCOPE_SWEEP_*: not SCALESCOPE_RUN_DIR, which `scalescope profile` sets to its trace folder.
std::map<std::string, std::string> run_environment(const PlannedRun& run, const std::filesystem::path& run_dir) {
  return {{"SCALESCOPE_SWEEP_RUN_DIR", run_dir.string()},
          {"SCALESCOPE_SWEEP_GPUS", std::to_string(run.gpus)},
          {"SCALESCOPE_SWEEP_REP", std::to_string(run.rep)}};
}

// A clean folder for a run about to start (a run redone after an interruption starts clean).
std::filesystem::path fresh_run_dir(const std::filesystem::path& runs_dir, const PlannedRun& run) {
  std::error_code ec;
  const auto run_dir = runs_dir / run.dir_name();
  std::filesystem::remove_all(run_dir, ec);
  std::filesystem::create_directories(run_dir, ec);
  if (ec) fail("{}: cannot create the run folder ({})", run_dir.string(), ec.message());
  return run_dir;
}

// An event with the sweep's counts so far.
SweepEvent sweep_event(SweepEvent::Kind kind, int done, const SweepSummary& sum, double sweep_elapsed_s) {
  SweepEvent e;
  e.kind = kind;
  e.done = done;
  e.planned = sum.planned;
  e.failed = sum.failed;
  e.sweep_elapsed_s = sweep_elapsed_s;
  return e;
}

// An event about one run, with the sweep's counts so far.
SweepEvent run_event(SweepEvent::Kind kind, const PlannedRun& run, int done, const SweepSummary& sum,
                     double sweep_elapsed_s) {
  SweepEvent e = sweep_event(kind, done, sum, sweep_elapsed_s);
  e.run_index = run.index;
  e.gpus = run.gpus;
  e.rep = run.rep;
  e.config_label = run.config_label();
  return e;
}

// kRunFinished's part: how the run ended, and its metric when it was ok and had it.
void add_run_outcome(SweepEvent& e, const SweepSpec& spec, const ProcessResult& result, const RunMetrics& metrics) {
  e.status = result.status;
  e.wall_s = result.wall_s;
  e.metric_name = spec.metric.name();
  if (auto mv = metrics.values.find(spec.metric.name()); result.status == RunStatus::kOk && mv != metrics.values.end())
    e.metric = mv->second;
  e.note = result.note;
}

// A run that ended before it started (its job could not be submitted, or was lost).
ProcessResult error_result(std::string note) {
  ProcessResult r;
  r.status = RunStatus::kError;
  r.start_unix = r.end_unix = now_unix();
  r.note = std::move(note);
  return r;
}

// The run's metrics from `read`; the run is recorded whatever its metrics do
// (a row left "running" would be rerun forever), so a failure is a note.
template <class Read>
RunMetrics metrics_or_note(const ProcessResult& result, Read&& read) {
  try {
    return read();
  } catch (const std::exception& e) {
    RunMetrics metrics;
    metrics.values["wall_s"] = result.wall_s;
    metrics.notes.push_back(fmt::format("metrics not read: {}", e.what()));
    return metrics;
  }
}

// Records the ended run (with its trace under --profile) and counts it.
void record_run_end(SweepStore& store, const SweepSpec& spec, const PlannedRun& run,
                    const std::filesystem::path& run_dir, const ProcessResult& result, const RunMetrics& metrics,
                    SweepSummary& sum) {
  std::error_code ec;
  const bool traced = spec.profile && std::filesystem::exists(run_dir / "trace.ssrun", ec);
  store.finish_run(run, result, metrics, spec.metric.name(), traced ? (run_dir / "trace.ssrun").string() : "");
  ++sum.ran;
  if (result.status == RunStatus::kOk) ++sum.ok;
  else ++sum.failed;
}

// What one sweep needs to run its plan, whoever starts the jobs.
struct SweepContext {
  const SweepSpec& spec;
  const std::vector<PlannedRun>& plan;
  const std::vector<std::vector<std::string>>& lines;
  const std::filesystem::path& db;
  const std::filesystem::path& runs_dir;
  SweepStore& store;
  const std::set<int>& finished;
  const std::map<int, std::string>& orphaned;
  const Runner& me;
  const SweepOptions& options;
  const SweepObserver& observe;
  std::function<double()> elapsed_s;
};

// --scheduler slurm: keeps up to max_queued jobs of the sweep in Slurm's
// queue, follows each by id, and records each run when its job ends.
class SlurmSweep {
 public:
  SlurmSweep(const SweepContext& c, SweepSummary& sum)
      : c_(c),
        sum_(sum),
        done_(c.finished.begin(), c.finished.end()),
        db_abs_(std::filesystem::absolute(c.db).lexically_normal()) {
    for (const auto& [index, job_id] : c.store.submitted_jobs()) active_[index] = {job_id, "", 0};
    for (const auto& run : c.plan)
      if (!c.finished.count(run.index) && !active_.count(run.index)) todo_.push_back(&run);
  }

  void run() {
    size_t next = 0;
    while (!g_stop_signal.load()) {
      while (next < todo_.size() && static_cast<int>(active_.size()) < std::max(1, c_.options.slurm.max_queued))
        submit(*todo_[next++]);
      follow_active_jobs();
      report_queue();
      if (next >= todo_.size() && active_.empty()) break;
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(c_.options.slurm.poll_s));
      while (!g_stop_signal.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (const int sig = g_stop_signal.load(); sig != 0 && !active_.empty()) {
      sum_.interrupted = true;
      if (!c_.options.slurm.leave_queued) cancel_active_jobs(sig);  // else resume follows them by id
    }
  }

 private:
  struct Active {
    std::string job_id;
    std::string state;  // "" until first seen
    double submit_unix = 0;
  };

  SweepEvent event(SweepEvent::Kind kind, const PlannedRun& run) const {
    return run_event(kind, run, static_cast<int>(done_.size()), sum_, c_.elapsed_s());
  }

  // The run ends with `result`; job facts go to slurm_jobs.
  void record(const PlannedRun& run, const ProcessResult& result, const StoredRun::SlurmJob& job) {
    const SweepSpec& spec = c_.spec;
    const auto run_dir = c_.runs_dir / run.dir_name();
    RunMetrics metrics =
        metrics_or_note(result, [&] { return extract_metrics(spec, result, run_dir / "log.txt", run_dir); });
    if (auto it = c_.orphaned.find(run.index); it != c_.orphaned.end()) metrics.notes.push_back(it->second);
    c_.store.set_slurm_job(run.index, job);
    done_.insert(run.index);
    record_run_end(c_.store, spec, run, run_dir, result, metrics, sum_);
    if (c_.observe) {
      SweepEvent e = event(SweepEvent::Kind::kRunFinished, run);
      add_run_outcome(e, spec, result, metrics);
      c_.observe(e);
    }
  }

  void submit(const PlannedRun& run) {
    const SweepSpec& spec = c_.spec;
    const auto run_dir = fresh_run_dir(c_.runs_dir, run);
    const auto log_path = run_dir / "log.txt";
    const auto& argv = c_.lines[static_cast<size_t>(run.index)];
    const auto script = run_dir / "job.sh";
    {
      std::ofstream out(script);
      out << batch_script(argv, run_environment(run, run_dir));
      if (!out) fail("{}: cannot write the batch script", script.string());
    }
    const auto sbatch =
        sbatch_command(spec, run, c_.options.slurm, fmt::format("scalescope-{}-{}", c_.db.stem().string(), run.index),
                       fmt::format("scalescope sweep {} run {}", db_abs_.string(), run.index), log_path, script);
    c_.store.begin_run(run, argv_json(argv), run_dir.string(), log_path.string(), now_unix(), c_.me.to_text());
    try {
      const std::string id = slurm_submit(sbatch);
      const double at = now_unix();
      c_.store.set_slurm_job(run.index, {id, "PENDING", std::nullopt, "", std::nullopt, std::nullopt}, at);
      active_[run.index] = {id, "PENDING", at};
      if (c_.observe) {
        SweepEvent e = event(SweepEvent::Kind::kRunStarted, run);
        e.note = "submitted as Slurm job " + id;
        c_.observe(e);
      }
    } catch (const Error& e) {
      RunMetrics none;
      none.values["wall_s"] = 0;
      done_.insert(run.index);
      record_run_end(c_.store, spec, run, run_dir, error_result(e.what()), none, sum_);  // counted as failed
    }
  }

  // Asks Slurm about each job in the queue: records those that ended, notes new states.
  void follow_active_jobs() {
    for (auto it = active_.begin(); it != active_.end();) {
      const PlannedRun& run = c_.plan[static_cast<size_t>(it->first)];
      const auto job = slurm_query(it->second.job_id);
      if (!job) {
        // Neither slurmctld nor accounting knows it: nothing more will be learned.
        const ProcessResult r = error_result(fmt::format(
            "Slurm job {} is no longer known to Slurm (scontrol, sacct): its outcome is unknown", it->second.job_id));
        record(run, r, {it->second.job_id, "UNKNOWN", std::nullopt, "", std::nullopt, std::nullopt});
        it = active_.erase(it);
        continue;
      }
      StoredRun::SlurmJob facts{job->job_id, job->state, std::nullopt, job->nodelist, job->gpus, std::nullopt};
      if (job->submit_unix && job->start_unix) facts.queued_s = std::max(0.0, *job->start_unix - *job->submit_unix);
      if (job->finished()) {
        facts.exit_code = job->exit_code;
        record(run, slurm_result(*job), facts);
        it = active_.erase(it);
        continue;
      }
      if (job->state != it->second.state) {
        c_.store.set_slurm_job(run.index, facts);
        it->second.state = job->state;
      }
      ++it;
    }
  }

  // Queued, running and done runs per configuration and GPU count, when they changed.
  void report_queue() {
    if (!c_.observe) return;
    std::vector<SweepEvent::QueueCounts> counts;
    std::map<std::pair<std::string, int>, size_t> slot;
    for (const auto& run : c_.plan) {
      auto [it, added] = slot.try_emplace({run.config_label(), run.gpus}, counts.size());
      if (added) counts.push_back({run.config_label(), run.gpus, 0, 0, 0});
      auto& n = counts[it->second];
      if (done_.count(run.index)) ++n.done;
      else if (auto a = active_.find(run.index); a != active_.end())
        ++(a->second.state == "PENDING" ? n.queued : n.running);
    }
    auto same = [](const SweepEvent::QueueCounts& a, const SweepEvent::QueueCounts& b) {
      return a.queued == b.queued && a.running == b.running && a.done == b.done;
    };
    if (counts.size() == last_counts_.size() && std::equal(counts.begin(), counts.end(), last_counts_.begin(), same))
      return;
    last_counts_ = counts;
    SweepEvent e = sweep_event(SweepEvent::Kind::kQueue, static_cast<int>(done_.size()), sum_, c_.elapsed_s());
    e.queue = std::move(counts);
    c_.observe(e);
  }

  void cancel_active_jobs(int sig) {
    std::vector<std::string> ids;
    for (const auto& [index, a] : active_) ids.push_back(a.job_id);
    slurm_cancel(ids);
    for (const auto& [index, a] : active_) {
      const PlannedRun& run = c_.plan[static_cast<size_t>(index)];
      // Left "running" without a job: resume submits it again.
      c_.store.forget_slurm_job(index);
      c_.store.set_running_note(
          run, fmt::format("interrupted by signal {} ({}): Slurm job {} cancelled", sig, strsignal(sig), a.job_id));
    }
  }

  const SweepContext& c_;
  SweepSummary& sum_;
  std::map<int, Active> active_;  // plan index -> its job
  std::vector<const PlannedRun*> todo_;
  std::set<int> done_;
  const std::filesystem::path db_abs_;
  std::vector<SweepEvent::QueueCounts> last_counts_;
};

// Rows left "running": their sweep died (we hold the lock, so no live sweep
// on a shared lock runs them). Each runs again, with a note why in its record.
// Error when a live sweep on this host still runs one.
std::map<int, std::string> orphaned_runs(SweepStore& store, const std::filesystem::path& db, const Runner& me,
                                         const SweepObserver& observe) {
  std::map<int, std::string> orphaned;
  const auto submitted = store.submitted_jobs();
  for (const auto& [index, note] : store.running_rows()) {
    const Runner was = Runner::parse(note);
    if (was.pid > 0 && was.alive_here() && was.pid != me.pid)
      fail("{}: run {} is still being run by sweep pid {} on {}; wait for it to end", db.string(), index, was.pid,
           was.host);
    if (submitted.count(index)) continue;  // its Slurm job is followed by id
    if (note.starts_with("interrupted")) {
      orphaned[index] = "rerun: the previous attempt was " + note;
      continue;
    }
    orphaned[index] = was.pid > 0 ? fmt::format(
                                        "rerun: the previous attempt was orphaned (its sweep, pid {} on {}, "
                                        "died)",
                                        was.pid, was.host)
                                  : std::string("rerun: the previous attempt was orphaned (its sweep died)");
    if (observe) {
      SweepEvent e;
      e.kind = SweepEvent::Kind::kOrphanRerun;
      e.run_index = index;
      observe(e);
    }
  }
  return orphaned;
}

// Runs the plan here, one run after another.
void run_local_sweep(const SweepContext& c, SweepSummary& sum) {
  const SweepSpec& spec = c.spec;
  const SweepObserver& observe = c.observe;
  const int todo = static_cast<int>(c.plan.size() - c.finished.size());
  double spent = 0;
  int done_now = 0;
  for (const auto& run : c.plan) {
    if (c.finished.count(run.index)) {
      ++sum.skipped;
      continue;
    }
    if (g_stop_signal.load()) {
      sum.interrupted = true;
      break;
    }
    const auto run_dir = fresh_run_dir(c.runs_dir, run);
    const auto log_path = run_dir / "log.txt";
    const auto& argv = c.lines[static_cast<size_t>(run.index)];
    c.store.begin_run(run, argv_json(argv), run_dir.string(), log_path.string(), now_unix(), c.me.to_text());
    const auto run_env = run_environment(run, run_dir);
    const auto run_start = std::chrono::steady_clock::now();
    auto event = [&](SweepEvent::Kind kind) {
      SweepEvent e = run_event(kind, run, sum.skipped + sum.ran, sum, c.elapsed_s());
      e.run_elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
      return e;
    };
    if (observe) observe(event(SweepEvent::Kind::kRunStarted));
    // Metrics are read from the output as it comes, before log.txt's cap drops any of it.
    MetricScanner scanner(spec.metric);
    const auto result = run_process(
        argv, log_path, spec.timeout_s, spec.kill_grace_s, run_env,
        [&] {
          if (observe) observe(event(SweepEvent::Kind::kRunning));
          return g_stop_signal.load() != 0;
        },
        c.options.max_log_bytes, [&](std::string_view bytes) { scanner.feed(bytes); });
    if (result.note == "interrupted" && g_stop_signal.load()) {
      // Left as "running": redone on resume; the note says why.
      c.store.set_running_note(
          run, fmt::format("interrupted by signal {} ({})", g_stop_signal.load(), strsignal(g_stop_signal.load())));
      sum.interrupted = true;
      break;
    }
    RunMetrics metrics = metrics_or_note(result, [&] { return finish_metrics(spec, result, scanner, run_dir); });
    if (!result.log_note.empty()) metrics.notes.push_back(result.log_note);
    if (auto it = c.orphaned.find(run.index); it != c.orphaned.end()) metrics.notes.push_back(it->second);
    record_run_end(c.store, spec, run, run_dir, result, metrics, sum);
    ++done_now;
    spent += result.wall_s;
    if (observe) {
      SweepEvent e = event(SweepEvent::Kind::kRunFinished);
      e.eta_s = spent / done_now * (todo - done_now);
      add_run_outcome(e, spec, result, metrics);
      observe(e);
    }
  }
}

}  // namespace

SweepSummary run_sweep(const SweepSpec& spec, const std::filesystem::path& db, const SweepOptions& options,
                       const SweepObserver& observe) {
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
  // One sweep per database for its whole life: a second one would run every
  // unfinished run again. Taken before the file is created or opened.
  SweepLock lock(db);
  // Children of a job whose leader died re-parent to the sweep (not to init)
  // while it lives, so the group kill and the reaping below reach them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const Runner me = Runner::self();
  SweepStore store = options.resume
                         ? SweepStore::open_for_resume(db, spec.to_json())
                         : SweepStore::create(db, spec.to_json(), spec.metric.name(), spec.metric.higher_is_better,
                                              static_cast<int>(plan.size()), version);
  SweepSummary sum;
  sum.sweep_id = store.sweep_id();
  sum.planned = static_cast<int>(plan.size());
  const auto finished = store.finished_indices();
  const std::map<int, std::string> orphaned = orphaned_runs(store, db, me, observe);
  std::error_code ec;
  std::filesystem::create_directories(runs_dir, ec);
  if (ec) fail("{}: cannot create the runs folder ({})", runs_dir.string(), ec.message());

  StopSignals signals;
  const auto sweep_start = std::chrono::steady_clock::now();
  SweepContext context{spec, plan, lines, db, runs_dir, store, finished, orphaned, me, options, observe, [sweep_start] {
                         return std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count();
                       }};
  if (spec.scheduler == SchedulerKind::kSlurm) {
    sum.skipped = static_cast<int>(finished.size());
    SlurmSweep(context, sum).run();
  } else {
    run_local_sweep(context, sum);
  }
  if (observe) observe(sweep_event(SweepEvent::Kind::kSweepEnded, sum.skipped + sum.ran, sum, context.elapsed_s()));
  if (g_stop_signal.load()) sum.interrupted = true;
  return sum;
}

}  // namespace scalescope::sweep
