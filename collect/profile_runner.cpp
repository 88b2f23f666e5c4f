#include "collect/profile_runner.hpp"

#include "collect/node_facts.hpp"
#include "collect/python_outside.hpp"
#include "collect/sampler_common.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "scalescope_version.hpp"
#include "base/error.hpp"
#include "base/exec_args.hpp"
#include "base/json_fields.hpp"
#include "base/json_number.hpp"
#include "trace/model/hang_dump.hpp"
#include "trace/model/python_stacks.hpp"
#include "trace/model/trace_file.hpp"

extern char** environ;

namespace scalescope::collect {
namespace {

namespace fs = std::filesystem;

std::string iso_time(int64_t unix_ns) {
  time_t s = static_cast<time_t>(unix_ns / 1000000000);
  tm utc{};
  gmtime_r(&s, &utc);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>((unix_ns / 1000000) % 1000));
}

void write_text_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << text << '\n';
    if (!out) fail("cannot write {}: {}", tmp.string(), std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fail("cannot write {}: {}", path.string(), ec.message());
}

void write_json_atomically(const fs::path& path, const nlohmann::json& j) { write_text_atomically(path, j.dump(2)); }

const char* way_name(PythonStacksWay way) {
  for (const auto& [w, name] : kPythonStacksWays)
    if (w == way) return name;
  return "off";
}

nlohmann::json host_json(const NodeInfo& node) {
  nlohmann::json h = node_facts_json(node);
  h.erase("kind");  // run.json's host section, not a node facts file
  return h;
}

nlohmann::json options_json(const CollectorOptions& o) {
  return json_with(SCALESCOPE_JSON_FIELDS(o, delay_s, duration_s, nvml_hz, host_hz, buffer_mb, discard, detach),
                   {{"api", std::string(to_string(o.api))},
                    {"capture_range", format_capture_range(o)},
                    {"activities", format_activities(o.activities)}});
}

// CUPTI's directory when the collector cannot find libcupti by itself (its
// RUNPATH covers /usr/local/cuda). Only then is LD_LIBRARY_PATH touched:
// prepending a toolkit directory would change which CUDA libraries the job loads.
// The trial load happens in a short-lived child: loading the collector runs
// libcupti's static initialisers, whose allocations dlclose would orphan
// (LeakSanitizer reported 72 KiB in every ASan run of `profile`), and the
// collector's constructor registers a fork handler this process must not keep.
bool collector_loads(const std::string& collector) {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(dlopen(collector.c_str(), RTLD_LAZY | RTLD_LOCAL) ? 0 : 1);
  if (pid < 0) return true;  // cannot tell: leave LD_LIBRARY_PATH alone
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string cupti_dir_if_needed(const std::string& collector) {
  if (collector_loads(collector)) return {};
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  for (const auto& root : roots)
    for (const char* sub : {"/extras/CUPTI/lib64", "/lib64", "/targets/x86_64-linux/lib"}) {
      std::error_code ec;
      if (fs::exists(root + sub + "/libcupti.so.13", ec)) return root + sub;
    }
  return {};
}

using trace::kPythonRecordPrefix;
using trace::read_python_records;

// Files one node of a run writes: <host>-<pid>.{sstrace,json}, run-<host>.json,
// node-<host>.json, nvml-<host>.rank, python-<host>-<pid>.json,
// python-stacks-<host>-<pid>.json (and their .tmp while written).
bool written_by_host(const fs::path& p, const std::string& host) {
  const std::string name = p.filename().string();
  for (const std::string& prefix : {host + "-", "run-" + host + ".", "node-" + host + ".", "nvml-" + host + ".",
                                    "python-" + host + "-", std::string(trace::kPythonStacksPrefix) + host + "-"})
    if (name.starts_with(prefix)) return true;
  return false;
}

// Files of a run directory that are not the run's: the claims of `profile`s.
bool is_claim_file(const fs::path& p) { return p.filename().string().starts_with(".profile"); }

// Takes the flock of `dir`'s claim file for this process, or throws naming the holder.
int lock_run_dir(const fs::path& dir, const std::string& node_host) {
  const fs::path lock = dir / (node_host.empty() ? std::string(".profile.lock") : ".profile-" + node_host + ".lock");
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail("cannot write into {}: {}", dir.string(), std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char holder[64] = {};
    [[maybe_unused]] auto n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    if (e == EWOULDBLOCK)
      fail("{}: another `scalescope profile` (pid {}) is writing into it; wait for it to end or choose another -o",
           dir.string(), holder[0] ? holder : "unknown");
    fail("cannot lock {}: {}", lock.string(), std::strerror(e));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0) [[maybe_unused]] auto n = ::pwrite(fd, pid.data(), pid.size(), 0);
  return fd;
}

}  // namespace

RunDirClaim::RunDirClaim(const std::string& output, bool force, const std::string& node_host) {
  if (output.empty()) fail("profile: -o NAME is required");
  fs::path dir = output;
  if (dir.extension() != ".ssrun") dir += ".ssrun";
  std::error_code ec;
  // The directory is made first (mkdir of an existing one is no error here);
  // the lock inside it is the claim, taken before anything in it is judged.
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create {}: {}", dir.string(), std::strerror(errno));
  if (!fs::is_directory(dir, ec)) {
    if (node_host.empty()) fail("{} exists and is not a run directory", dir.string());
    fail("cannot create {}: {}", dir.string(), ec ? ec.message() : "not a directory");
  }
  if (access(dir.c_str(), W_OK) != 0) fail("cannot write into {}: {}", dir.string(), std::strerror(errno));
  lock_fd_ = lock_run_dir(dir, node_host);
  try {
    std::vector<fs::path> old;  // files this run would replace
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (!is_claim_file(e.path()) && (node_host.empty() || written_by_host(e.path(), node_host)))
        old.push_back(e.path());
    if (!old.empty() && !force) {
      if (!node_host.empty())
        fail("{} already holds files of this node ({}, e.g. {}); use --force to replace them or choose another -o",
             dir.string(), node_host, old.front().filename().string());
      fail("{} already exists and is not empty; use --force to write into it or choose another -o", dir.string());
    }
    // Old traces would mix with the new run's: remove what a run writes.
    for (const fs::path& p : old) {
      const auto ext = p.extension();
      if (!node_host.empty() || ext == ".sstrace" || ext == ".json" || ext == ".tmp" || ext == ".rank")
        fs::remove(p, ec);
    }
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
  dir_ = fs::absolute(dir);
}

RunDirClaim::~RunDirClaim() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string node_launch_host(const Environment& env) {
  const NodeInfo node = detect_node(env);
  if (node.node_count <= 1 || (trace::rank_from_environment(env).rank < 0 && node.node_rank < 0)) return {};
  return read_hostname();
}

std::string find_collector(const fs::path& self_exe) {
  if (const char* v = std::getenv("SCALESCOPE_COLLECTOR"); v && *v) {
    if (!fs::exists(v)) fail("SCALESCOPE_COLLECTOR={} does not exist", v);
    return fs::absolute(v).string();
  }
  fs::path dir = self_exe.parent_path();
  const char* name = "libscalescope-collector.so";
  for (const fs::path& candidate : {dir / ".." / "collect" / name, dir / ".." / "lib" / name, dir / name}) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  fail("cannot find {} beside {} (looked in ../collect, ../lib and the same folder); set SCALESCOPE_COLLECTOR", name,
       self_exe.string());
}

std::string find_python_bootstrap(const fs::path& self_exe) {
  auto holds_bootstrap = [](const fs::path& d) {
    std::error_code ec;
    return fs::exists(d / "sitecustomize.py", ec) && fs::exists(d / "scalescope_bootstrap", ec);
  };
  if (const char* v = std::getenv("SCALESCOPE_PYTHON_BOOTSTRAP"); v && *v) {
    if (!holds_bootstrap(v)) fail("SCALESCOPE_PYTHON_BOOTSTRAP={} holds no scalescope sitecustomize.py", v);
    return fs::absolute(v).string();
  }
  const fs::path dir = self_exe.parent_path();
  for (const fs::path& candidate :
       {dir / ".." / "collect" / "python", dir / ".." / "share" / "scalescope" / "python"}) {
    std::error_code ec;
    if (holds_bootstrap(candidate)) return fs::weakly_canonical(candidate, ec).string();
  }
  return {};
}

std::vector<ProcessSummary> read_process_summaries(const fs::path& run_dir, std::vector<std::string>* incomplete,
                                                   const std::string& only_host) {
  std::vector<ProcessSummary> out;
  std::set<std::string> summarised;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    if (p.extension() != ".json" || p.filename() == "run.json") continue;
    if (p.filename().string().starts_with(trace::kManifestPrefix)) continue;  // run manifests, not process summaries
    // The Python bootstrap's records and its stacks (python-stacks-*).
    if (p.filename().string().starts_with(kPythonRecordPrefix)) continue;
    if (!only_host.empty() && !p.filename().string().starts_with(only_host + "-")) continue;
    std::ifstream in(p);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;  // a torn summary: the trace still counts below
    // Node facts and per-node run files sit beside the summaries.
    if (is_node_facts(j) || j.contains("scalescope_version")) continue;
    const std::string where = p.string();
    ProcessSummary s;
    try {  // a field of the wrong type: a damaged summary, counted like a torn one
      s.pid = json_integer_or<uint32_t>(j, "pid", 0, where);
      s.hostname = j.value("hostname", "");
      s.status = j.value("status", "");
      s.trace_file = j.value("trace_file", "");
      s.rank = json_integer_or<int32_t>(j, "rank", -1, where);
      s.local_rank = json_integer_or<int32_t>(j, "local_rank", -1, where);
      s.events = json_integer_or<uint64_t>(j, "events_written", 0, where);
      s.dropped = json_integer_or<uint64_t>(j, "cupti_dropped_records", 0, where) +
                  json_integer_or<uint64_t>(j, "events_lost_on_write", 0, where);
      s.bytes = json_integer_or<uint64_t>(j, "bytes_written", 0, where);
      s.collector_cpu_ns = json_integer_or<uint64_t>(j, "collector_cpu_ns", 0, where);
      s.python_interpreter = j.value("python_interpreter", false);
      if (auto it = j.find("sampling"); it != j.end() && it->is_object()) {
        s.sampling_json = it->dump();
        const auto& sm = *it;
        if (sm.value("mode", "") == "sampled") {
          if (json_integer_or<uint64_t>(sm, "iterations_seen", 0, where) == 0)
            s.sampling_line = sm.value("note", "no iteration markers: traced from start to end") +
                              " (--iteration-range names another range)";
          else
            s.sampling_line = fmt::format("{} of {} iterations traced in sampled windows; {}",
                                          json_integer_or<uint64_t>(sm, "iterations_inside", 0, where),
                                          json_integer_or<uint64_t>(sm, "iterations_seen", 0, where),
                                          sm.value("perturbation_text", std::string("perturbation not measured")));
        }
      }
    } catch (const std::exception&) {
      continue;
    }
    summarised.insert(p.stem().string());
    out.push_back(std::move(s));
  }
  if (incomplete)
    for (const auto& p : files)
      if (p.extension() == ".sstrace" && !summarised.count(p.stem().string()) &&
          (only_host.empty() || p.filename().string().starts_with(only_host + "-")))
        incomplete->push_back(p.filename().string());
  return out;
}

namespace {

// What `profile` says about the Python bootstrap: off, not found, what a
// process's record says was missing or failed, a Python process without it.
void log_python(const ProfileOptions& options, const std::string& bootstrap, const ProfileResult& result,
                std::ostream& log) {
  if (!options.python) {
    log << "scalescope: Python bootstrap off (--no-python): no step marks, operator or module ranges\n";
    return;
  }
  if (bootstrap.empty()) {
    log << "scalescope: the Python bootstrap was not found beside this binary (set SCALESCOPE_PYTHON_BOOTSTRAP); "
           "Python jobs are traced without step marks\n";
    return;
  }
  for (const auto& py : result.python) {
    if (!py.problems.empty())
      log << fmt::format("scalescope: pid {} (Python): {}\n", py.pid, fmt::join(py.problems, "; "));
  }
  for (const auto& p : result.processes) {
    if (!p.python_interpreter) continue;
    bool recorded = false;
    for (const auto& py : result.python) recorded |= py.pid == p.pid && py.hostname == p.hostname;
    if (!recorded)
      log << fmt::format(
          "scalescope: pid {}: a Python process without the bootstrap (python -I or -S, or PYTHONPATH "
          "replaced): no step marks, operator or module ranges\n",
          p.pid);
  }
}

// `dir` first on the search path `name` (a colon-separated list).
void prepend_path(Environment& env, const std::string& name, const std::string& dir) {
  const std::string& old = env[name];
  env[name] = old.empty() ? dir : dir + ":" + old;
}

// The job's environment: ours plus the collector's, the Python bootstrap first
// on PYTHONPATH (its sitecustomize runs the job's own one, found further
// along), CUPTI's folder on LD_LIBRARY_PATH where the collector needs it.
Environment job_environment(const ProfileOptions& options, const CollectorOptions& co, const std::string& collector,
                            const std::string& bootstrap) {
  Environment env = current_environment();
  for (auto& [k, v] : to_environment(co)) env[k] = v;
  env["CUDA_INJECTION64_PATH"] = collector;
  env["NVTX_INJECTION64_PATH"] = collector;
  if (!bootstrap.empty()) {
    prepend_path(env, "PYTHONPATH", bootstrap);
    // The bootstrap samples only when asked to sample inside.
    env["SCALESCOPE_PYTHON_SAMPLING_HZ"] =
        fmt::format("{:g}", options.python_stacks == PythonStacksWay::kInside ? options.python_sampling_hz : 0.0);
  }
  // PyTorch's NCCL flight recorder writes its ring (on a watchdog timeout
  // with TORCH_NCCL_DUMP_ON_TIMEOUT, or when asked) to a prefix + the rank:
  // into the run directory, where `analyze` reads it, unless the job chose a
  // place. The prefix only says where; it turns nothing on.
  if (!env.count("TORCH_FR_DUMP_TEMP_FILE") && !env.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") &&
      !env.count("TORCH_FR_DUMP_DYNAMIC_FILE_NAME")) {
    const fs::path run_dir = fs::absolute(co.run_dir);
    std::error_code ec;
    fs::create_directories(trace::flight_recorder_dir(run_dir), ec);
    // Both names: PyTorch 2.5 reads only the older one.
    if (!ec)
      env["TORCH_FR_DUMP_TEMP_FILE"] = env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = trace::flight_recorder_prefix(run_dir);
  }
  if (std::string dir = cupti_dir_if_needed(collector); !dir.empty()) prepend_path(env, "LD_LIBRARY_PATH", dir);
  return env;
}

// Whether Python stacks are sampled from outside the job's processes.
bool samples_python_outside(const ProfileOptions& options) {
  return options.python_stacks == PythonStacksWay::kOutside && options.python_sampling_hz > 0;
}

// run.json as known before the job starts (end and exit code still null).
nlohmann::json run_json_at_start(const ProfileOptions& options, const CollectorOptions& co,
                                 const std::string& collector, const std::string& bootstrap,
                                 const Environment& own_env) {
  nlohmann::json run;
  run["scalescope_version"] = std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")";
  run["collector"] = collector;
  run["command"] = options.command;
  run["command_line"] = fmt::format("{}", fmt::join(options.command, " "));
  run["cwd"] = fs::current_path().string();
  int64_t start_ns = realtime_ns();
  run["start"] = iso_time(start_ns);
  run["start_unix_ns"] = start_ns;
  run["end"] = nullptr;
  run["exit_code"] = nullptr;
  run["options"] = options_json(co);
  run["python_bootstrap"] = !options.python ? "off (--no-python)" : bootstrap.empty() ? "not found" : bootstrap;
  run["python_stacks"] = way_name(options.python_stacks);
  if (samples_python_outside(options) ||
      (options.python_stacks == PythonStacksWay::kInside && options.python && !bootstrap.empty()))
    run["python_sampling_hz"] = options.python_sampling_hz;
  run["host"] = host_json(detect_node(own_env));
  return run;
}

// How the job's process ended.
struct JobEnd {
  int status = 0;              // waitpid's
  std::vector<int> forwarded;  // signals passed on to the job's process group
  bool exec_failed = false;
  int exec_errno = 0;
  double duration_s = 0;
};

// Runs the command in a process group of its own, passing SIGINT, SIGTERM
// and SIGHUP on to the group, until its leader exits. `started` is called
// with the leader's pid as soon as it is forked.
JobEnd run_job(const std::vector<std::string>& command, const Environment& env,
               const std::function<void(pid_t)>& started) {
  std::vector<std::string> env_strings;
  for (auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<std::string> args = command;
  std::vector<char*> envp = exec_array(env_strings), argv = exec_array(args);

  // Signals arrive through sigwaitinfo, so none is lost between fork and wait.
  sigset_t wanted, old;
  sigemptyset(&wanted);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&wanted, s);
  sigprocmask(SIG_BLOCK, &wanted, &old);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) fail("profile: pipe failed: {}", std::strerror(errno));
  auto t0 = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    fail("profile: cannot fork: {}", std::strerror(errno));
  }
  if (child == 0) {
    setpgid(0, 0);  // its own group: signals reach torchrun and every rank
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close(exec_pipe[0]);
    execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    [[maybe_unused]] auto w = write(exec_pipe[1], &e, sizeof(e));
    _exit(127);
  }
  setpgid(child, child);  // also here: whichever runs first
  close(exec_pipe[1]);
  started(child);
  JobEnd end;
  ssize_t got = read(exec_pipe[0], &end.exec_errno, sizeof(end.exec_errno));
  close(exec_pipe[0]);
  end.exec_failed = got == sizeof(end.exec_errno);

  while (true) {
    pid_t done = waitpid(child, &end.status, WNOHANG);
    if (done == child) break;
    siginfo_t info{};
    timespec tick{0, 200000000};  // re-check the child even if SIGCHLD was coalesced
    int sig = sigtimedwait(&wanted, &info, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      end.forwarded.push_back(sig);
      if (kill(-child, sig) != 0) kill(child, sig);
    }
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  end.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return end;
}

// Runs `write`; an error it throws is said as a warning.
void warn_on_error(std::ostream& log, const std::function<void()>& write) {
  try {
    write();
  } catch (const Error& e) {
    log << fmt::format("scalescope: warning: {}\n", e.what());
  }
}

// Writes the stacks sampled from outside; a file that cannot be written is a warning.
void write_outside_python_stacks(const OutsidePythonSampler& sampler, const fs::path& run_dir, std::ostream& log) {
  for (const trace::PythonStacks& p : sampler.results())
    warn_on_error(log, [&] { write_text_atomically(run_dir / p.file_name, trace::python_stacks_json(p)); });
}

// The collectors' per-node sampler markers (nvml-<host>.rank) served the run
// only; with one `profile` per node, each removes its own node's.
void remove_sampler_markers(const fs::path& run_dir, const std::string& node_host) {
  std::error_code marker_ec;
  for (const auto& e : fs::directory_iterator(run_dir, marker_ec))
    if (e.path().extension() == ".rank" && (node_host.empty() || written_by_host(e.path(), node_host)))
      fs::remove(e.path(), marker_ec);
}

// Sums over the traced processes.
struct ProcessTotals {
  uint64_t events = 0, dropped = 0, bytes = 0;
  std::set<int32_t> ranks;
};

// run.json's processes and python entries; a process without a rank from the
// launcher's environment takes the one torch.distributed gave.
ProcessTotals add_processes(ProfileResult& result, nlohmann::json& run) {
  nlohmann::json procs = nlohmann::json::array();
  ProcessTotals totals;
  for (auto& p : result.processes) {
    const char* rank_source = p.rank >= 0 ? "environment" : "";
    for (const auto& py : result.python)
      if (py.pid == p.pid && py.hostname == p.hostname && p.rank < 0 && py.rank >= 0) {
        p.rank = py.rank;
        p.local_rank = py.local_rank;
        rank_source = "torch.distributed";
      }
    procs.push_back(json_with(
        SCALESCOPE_JSON_FIELDS(p, pid, hostname, rank, local_rank, status, trace_file, events, collector_cpu_ns),
        {{"dropped_records", p.dropped}, {"bytes_written", p.bytes}}));
    if (*rank_source) procs.back()["rank_source"] = rank_source;
    if (!p.sampling_json.empty()) procs.back()["sampling"] = nlohmann::json::parse(p.sampling_json, nullptr, false);
    for (const auto& py : result.python)
      if (py.pid == p.pid && py.hostname == p.hostname) procs.back()["python"] = nlohmann::json::parse(py.json);
    totals.events += p.events;
    totals.dropped += p.dropped;
    totals.bytes += p.bytes;
    if (p.rank >= 0) totals.ranks.insert(p.rank);
  }
  run["processes"] = procs;
  nlohmann::json python = nlohmann::json::array();
  for (const auto& py : result.python) python.push_back(nlohmann::json::parse(py.json));
  run["python"] = python;
  run["incomplete_traces"] = result.incomplete;
  run["events"] = totals.events;
  run["dropped_records"] = totals.dropped;
  run["trace_bytes"] = totals.bytes;
  return totals;
}

// Last: the manifest says this host's part of the run directory is complete
// (one manifest per host, so nodes sharing a folder never race).
void write_host_manifest(const ProfileResult& result) {
  const std::string host = read_hostname();
  std::set<std::string> mine(result.incomplete.begin(), result.incomplete.end());
  for (const auto& p : result.processes)
    if (!p.trace_file.empty() && (p.hostname.empty() || p.hostname == host))
      mine.insert(fs::path(p.trace_file).filename().string());
  std::vector<std::string> names;
  for (const auto& n : mine)
    if (fs::exists(result.run_dir / n)) names.push_back(n);
  trace::write_run_manifest(result.run_dir, names, host);
}

// What `profile` says once the job has ended, and what to run next.
void log_profile_summary(const ProfileOptions& options, const std::string& bootstrap, const ProfileResult& result,
                         const ProcessTotals& totals, std::ostream& log) {
  size_t traced = 0;
  for (const auto& p : result.processes) traced += p.trace_file.empty() ? 0 : 1;
  std::string rank_text;
  const auto& ranks = totals.ranks;
  if (!ranks.empty())
    rank_text = fmt::format(", ranks {}-{} ({} distinct)", *ranks.begin(), *ranks.rbegin(), ranks.size());
  log << fmt::format("scalescope: {} process{} traced{}, {} events, {} dropped, {:.1f} s, exit code {}\n", traced,
                     traced == 1 ? "" : "es", rank_text, totals.events, totals.dropped, result.duration_s,
                     result.exit_code);
  for (const auto& p : result.processes)
    if (p.status != "ok") log << fmt::format("scalescope: pid {} on {}: {}\n", p.pid, p.hostname, p.status);
  for (const auto& p : result.processes)
    if (!p.sampling_line.empty()) log << fmt::format("scalescope: pid {}: {}\n", p.pid, p.sampling_line);
  log_python(options, bootstrap, result, log);
  for (const auto& note : result.python_stacks_notes) log << fmt::format("scalescope: {}\n", note);
  if (!result.incomplete.empty())
    log << fmt::format("scalescope: {} trace(s) without a summary (process killed?): complete chunks are kept\n",
                       result.incomplete.size());
  fs::path shown = options.output;  // as the user named it, not the absolute path
  if (shown.extension() != ".ssrun") shown += ".ssrun";
  if (traced == 0 && result.incomplete.empty()) {
    // No trace to read: suggesting `analyze` would only lead to another error.
    log << fmt::format(
        "scalescope: no CUDA process was traced (did the command use the GPU?); {} holds no trace of "
        "GPU work (run.json, and Python stacks where sampled), nothing to analyze\n",
        shown.string());
  } else {
    log << fmt::format("next: scalescope analyze {}\n", shown.string());
  }
}

}  // namespace

std::string exit_status(int exit_code, bool signaled, bool hang_dumped) {
  if (exit_code == 0 && !signaled) return "ok";
  if (hang_dumped) return "hung";
  return signaled ? "crashed" : "failed";
}

bool hang_dumped(const fs::path& run_dir) {
  std::error_code ec;
  for (fs::directory_iterator it(trace::hang_dump_dir(run_dir), ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto d = trace::parse_hang_dump(text, nullptr);
    if (d && d->stalled) return true;
  }
  return false;
}

ProfileResult run_profile(const ProfileOptions& options, std::ostream& log) {
  if (options.command.empty()) fail("profile: no command given (usage: scalescope profile -o NAME -- CMD ...)");
  std::string collector =
      options.collector_path.empty() ? find_collector(fs::read_symlink("/proc/self/exe")) : options.collector_path;
  if (!fs::exists(collector)) fail("collector library {} does not exist", collector);
  ProfileResult result;
  const Environment own_env = current_environment();
  const std::string node_host = node_launch_host(own_env);
  // Held until the run's files are written: a second `profile -o NAME` refuses meanwhile.
  const RunDirClaim claim(options.output, options.force, node_host);
  result.run_dir = claim.dir();
  CollectorOptions co = options.collector;
  co.run_dir = result.run_dir.string();
  std::string bootstrap;
  if (options.python)
    bootstrap = options.python_bootstrap.empty() ? find_python_bootstrap(fs::read_symlink("/proc/self/exe"))
                                                 : options.python_bootstrap;
  const Environment env = job_environment(options, co, collector, bootstrap);

  nlohmann::json run = run_json_at_start(options, co, collector, bootstrap, own_env);
  // One `profile` per node (srun -N4 scalescope profile ...): a run file per
  // node, so that none overwrites another's.
  fs::path run_json = result.run_dir / (node_host.empty() ? std::string("run.json") : "run-" + node_host + ".json");
  write_json_atomically(run_json, run);  // a killed `profile` still leaves what was known

  std::optional<OutsidePythonSampler> python_outside;
  const JobEnd job = run_job(options.command, env, [&](pid_t child) {
    if (!samples_python_outside(options)) return;
    python_outside.emplace(OutsidePythonOptions{
        .root_pid = static_cast<uint32_t>(child), .hz = options.python_sampling_hz, .hostname = read_hostname()});
    python_outside->start();
  });
  result.duration_s = job.duration_s;
  if (python_outside) {
    python_outside->stop();
    write_outside_python_stacks(*python_outside, result.run_dir, log);
    result.python_stacks_notes = python_outside->notes();
    run["python_stacks_notes"] = result.python_stacks_notes;
  }
  if (job.exec_failed) {
    run["end"] = iso_time(realtime_ns());
    run["exit_code"] = 127;
    run["error"] = fmt::format("cannot run '{}': {}", options.command[0], std::strerror(job.exec_errno));
    write_json_atomically(run_json, run);
    fail("cannot run '{}': {}", options.command[0], std::strerror(job.exec_errno));
  }
  const int status = job.status;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  result.processes = read_process_summaries(result.run_dir, &result.incomplete, node_host);
  result.python = read_python_records(result.run_dir, node_host);
  remove_sampler_markers(result.run_dir, node_host);
  int64_t end_ns = realtime_ns();
  run["end"] = iso_time(end_ns);
  run["end_unix_ns"] = end_ns;
  run["duration_s"] = result.duration_s;
  run["exit_code"] = result.exit_code;
  if (WIFSIGNALED(status)) run["signal"] = WTERMSIG(status);
  run["exit_status"] = exit_status(result.exit_code, WIFSIGNALED(status), hang_dumped(result.run_dir));
  run["forwarded_signals"] = job.forwarded;
  const ProcessTotals totals = add_processes(result, run);
  // The job has run: a file that cannot be written now is said, and the
  // job's own exit code is still what `profile` returns.
  warn_on_error(log, [&] { write_json_atomically(run_json, run); });
  warn_on_error(log, [&] { write_host_manifest(result); });
  log_profile_summary(options, bootstrap, result, totals, log);
  return result;
}

}  // namespace scalescope::collect
