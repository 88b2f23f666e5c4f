#include "sweep/slurm_client.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/exec_args.hpp"
#include "base/text_input.hpp"

extern char** environ;

namespace scalescope::sweep {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a Slurm client command to its end and keeps what it printed.
CommandResult run_command(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) fail("cannot create a pipe ({})", std::strerror(errno));
  std::vector<std::string> copy = argv;
  std::vector<char*> args = exec_array(copy);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    fail("cannot start {} (fork failed: {})", argv[0], std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execvp(args[0], args.data());
    const std::string msg = fmt::format("cannot execute '{}': {}\n", argv[0], std::strerror(errno));
    [[maybe_unused]] auto n = ::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(out[1]);
  CommandResult r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n > 0) r.output.append(buf, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  ::close(out[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// The value of "Key=" in a one-line scontrol record (the values read here hold no spaces).
std::string field(std::string_view line, std::string_view key) {
  const std::string padded = " " + std::string(line);
  const std::string needle = " " + std::string(key) + "=";
  size_t pos = padded.find(needle);
  if (pos == std::string::npos) return "";
  pos += needle.size();
  return padded.substr(pos, padded.find(' ', pos) - pos);
}

// "3:0" -> exit code 3, signal 0.
void parse_exit(std::string_view text, SlurmJobState& job) {
  const size_t colon = text.find(':');
  auto num = [](std::string_view t) {
    int v = 0;
    std::from_chars(t.data(), t.data() + t.size(), v);
    return v;
  };
  job.exit_code = num(text.substr(0, colon));
  if (colon != std::string_view::npos) job.signal = num(text.substr(colon + 1));
}

// "cpu=2,mem=1M,node=1,billing=2,gres/gpu=4" -> 4.
std::optional<int> gpus_in_tres(std::string_view tres) {
  for (std::string_view key : {"gres/gpu=", "gpu="}) {
    size_t pos = tres.find(key);
    while (pos != std::string_view::npos && pos > 0 && tres[pos - 1] != ',') pos = tres.find(key, pos + 1);
    if (pos == std::string_view::npos) continue;
    int v = 0;
    const auto* b = tres.data() + pos + key.size();
    if (std::from_chars(b, tres.data() + tres.size(), v).ec == std::errc()) return v;
  }
  return std::nullopt;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool SlurmJobState::finished() const {
  static const char* const kActive[] = {"PENDING",   "RUNNING",  "CONFIGURING",  "COMPLETING",   "SUSPENDED",
                                        "REQUEUED",  "RESIZING", "REQUEUE_FED",  "REQUEUE_HOLD", "SIGNALING",
                                        "STAGE_OUT", "STOPPED",  "RESV_DEL_HOLD"};
  for (const char* s : kActive)
    if (state == s) return false;
  return !state.empty();
}

std::optional<double> parse_slurm_time(std::string_view text) {
  std::tm tm{};
  const std::string t(text);
  if (t.empty() || t == "Unknown" || t == "None" || t == "N/A") return std::nullopt;
  const char* end = ::strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;  // Slurm prints the controller's local time
  return static_cast<double>(std::mktime(&tm));
}

std::optional<SlurmJobState> parse_scontrol_job(std::string_view line) {
  SlurmJobState job;
  job.job_id = field(line, "JobId");
  job.state = field(line, "JobState");
  if (job.job_id.empty() || job.state.empty()) return std::nullopt;
  parse_exit(field(line, "ExitCode"), job);
  job.nodelist = field(line, "NodeList");
  if (job.nodelist == "(null)") job.nodelist.clear();
  job.gpus = gpus_in_tres(field(line, "TRES"));
  job.submit_unix = parse_slurm_time(field(line, "SubmitTime"));
  job.start_unix = parse_slurm_time(field(line, "StartTime"));
  job.end_unix = parse_slurm_time(field(line, "EndTime"));
  // A pending job's StartTime is the scheduler's estimate, not a start.
  if (job.state == "PENDING") job.start_unix.reset(), job.end_unix.reset();
  return job;
}

std::optional<SlurmJobState> parse_sacct_line(std::string_view line) {
  std::vector<std::string> f;
  for (std::string_view piece : trace::split(line, '|')) f.emplace_back(trace::trim(piece));
  if (f.size() < 8 || f[0].empty() || f[1].empty()) return std::nullopt;
  SlurmJobState job;
  job.job_id = f[0];
  job.state = f[1].substr(0, f[1].find(' '));  // "CANCELLED by 0"
  parse_exit(f[2], job);
  job.nodelist = f[3] == "None assigned" ? "" : f[3];
  job.submit_unix = parse_slurm_time(f[4]);
  job.start_unix = parse_slurm_time(f[5]);
  job.end_unix = parse_slurm_time(f[6]);
  job.gpus = gpus_in_tres(f[7]);
  return job;
}

ProcessResult slurm_result(const SlurmJobState& job) {
  ProcessResult r;
  r.start_unix = job.start_unix.value_or(job.end_unix.value_or(0));
  r.end_unix = job.end_unix.value_or(r.start_unix);
  r.wall_s = std::max(0.0, r.end_unix - r.start_unix);
  r.exit_code = job.exit_code;
  r.signal = job.signal;
  const std::string who = fmt::format("Slurm job {} {}", job.job_id, job.state);
  if (job.state == "COMPLETED") {
    r.status = RunStatus::kOk;
  } else if (job.state == "FAILED" || job.state == "OUT_OF_MEMORY") {
    r.status = job.signal != 0 ? RunStatus::kCrashed : RunStatus::kFailed;
    r.note = job.signal != 0 ? fmt::format("{}: killed by signal {} ({})", who, job.signal, strsignal(job.signal))
                             : fmt::format("{}: exit code {}", who, job.exit_code);
  } else if (job.state == "TIMEOUT" || job.state == "DEADLINE") {
    r.status = RunStatus::kTimeout;
    r.note = who + ": killed at its time limit";
  } else {
    r.status = RunStatus::kError;
    r.note = who;
  }
  return r;
}

std::string batch_script(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  std::string s = "#!/bin/sh\n# Written by scalescope sweep: one run of the sweep.\n";
  for (const auto& [k, v] : env) s += fmt::format("export {}={}\n", k, shell_quote(v));
  s += "exec";
  for (const auto& a : argv) s += " " + shell_quote(a);
  return s + "\n";
}

std::vector<std::string> sbatch_command(const SweepSpec& spec, const PlannedRun& run, const SlurmOptions& slurm,
                                        const std::string& job_name, const std::string& comment,
                                        const std::filesystem::path& log_path, const std::filesystem::path& script) {
  std::vector<std::string> a = {"sbatch",
                                "--parsable",
                                "--job-name=" + job_name,
                                "--comment=" + comment,
                                fmt::format("--nodes={}", run.nodes),
                                fmt::format("--ntasks={}", run.gpus),
                                fmt::format("--ntasks-per-node={}", run.gpus / run.nodes)};
  if (const int g = gpus_per_node(spec, run); g > 0) a.push_back(fmt::format("--gpus-per-node={}", g));
  // Slurm counts time limits in whole minutes (at least one).
  if (spec.timeout_s > 0)
    a.push_back(fmt::format("--time={}", std::max(1, static_cast<int>(std::ceil(spec.timeout_s / 60)))));
  if (!slurm.partition.empty()) a.push_back("--partition=" + slurm.partition);
  if (!slurm.account.empty()) a.push_back("--account=" + slurm.account);
  if (!slurm.qos.empty()) a.push_back("--qos=" + slurm.qos);
  a.push_back("--output=" + log_path.string());
  a.push_back("--open-mode=append");
  a.push_back(script.string());
  return a;
}

std::string slurm_submit(const std::vector<std::string>& sbatch_argv) {
  const auto r = run_command(sbatch_argv);
  const std::string out(trace::trim(r.output));
  // --parsable prints "ID" or "ID;CLUSTER".
  const std::string id = out.substr(0, out.find(';'));
  const bool numeric = !id.empty() && id.find_first_not_of("0123456789_") == std::string::npos;
  if (r.exit_code != 0 || !numeric) fail("sbatch refused the job: {}", out.empty() ? "no output" : out);
  return id;
}

std::optional<SlurmJobState> slurm_query(const std::string& job_id) {
  const auto sc = run_command({"scontrol", "show", "job", "-o", job_id});
  if (sc.exit_code == 0)
    if (auto job = parse_scontrol_job(trace::trim(sc.output))) return job;
  // Forgotten by slurmctld (MinJobAge): the accounting database may know it.
  const auto sa = run_command(
      {"sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,State,ExitCode,NodeList,Submit,Start,End,AllocTRES"});
  if (sa.exit_code == 0) {
    const std::string first = sa.output.substr(0, sa.output.find('\n'));
    if (auto job = parse_sacct_line(first); job && job->job_id == job_id) return job;
  }
  return std::nullopt;
}

void slurm_cancel(const std::vector<std::string>& job_ids) {
  if (job_ids.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), job_ids.begin(), job_ids.end());
  const auto r = run_command(argv);
  if (r.exit_code != 0) fail("scancel failed: {}", trace::trim(r.output));
}

}  // namespace scalescope::sweep
