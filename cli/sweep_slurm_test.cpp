// `scalescope sweep --scheduler slurm` against a real slurmctld and slurmd
// (the two-node cluster of scripts/slurm-test-cluster.sh, started by ctest as
// a fixture): CPU-only fake jobs (tests/fake_jobs/slurm_job.sh) over 1 and 2
// tasks, launched inside each job by the real srun, three jobs at a time
// (--max-queued 3, so the others wait); one configuration overruns its
// one-minute time limit and Slurm ends it, one fails with exit 3 and one
// cancels its own job with scancel. The sweep is SIGKILLed midway and
// resumed, and Ctrl-C cancels what it queued. Runs spanning both nodes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sweep/sweep.hpp"

namespace scalescope {
namespace {

namespace fs = std::filesystem;

const std::string kJob = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fake_jobs/slurm_job.sh";

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class SweepSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    // The test cluster's, never a real cluster a developer may have configured.
    ::setenv("SLURM_CONF", SCALESCOPE_SLURM_CONF, 1);
    if (!fs::exists(SCALESCOPE_SLURM_CONF) || std::system("command -v sbatch >/dev/null 2>&1") != 0 ||
        std::system("sinfo -h >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "no Slurm cluster answers at SLURM_CONF=" << SCALESCOPE_SLURM_CONF
                   << ": scripts/slurm-test-cluster.sh start runs one (as root; ctest starts it for these tests)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("scalescope-sweep-slurm-{}-{}", info->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = dir_ / fmt::format("slurm{}.db", ::getpid());
  }
  void TearDown() override {
    // No job of this test outlives it.
    if (!db_.empty()) [[maybe_unused]]
      int rc = std::system(fmt::format("for i in $(seq 0 15); do scancel --name=scalescope-{}-$i; done >/dev/null 2>&1",
                                       db_.stem().string())
                               .c_str());
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The sweep's argv: kinds x {1,2} tasks, srun inside each job.
  std::vector<std::string> sweep_argv(const std::string& kinds, const std::string& seconds,
                                      const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {SCALESCOPE_BIN,  "sweep",  "--scheduler", "slurm",           "--launcher", "srun",
                                  "--cpu-only",    "--gpus", "1,2",         "--repeat",        "1",          "--vary",
                                  "kind=" + kinds, "-o",     db_.string(),  "--poll-interval", "0.5s"};
    a.insert(a.end(), extra.begin(), extra.end());
    for (const char* t : {"--", "sh"}) a.emplace_back(t);
    a.push_back(kJob);
    a.push_back("{kind}");
    a.push_back(seconds);
    return a;
  }

  pid_t start(const std::vector<std::string>& argv, const std::string& log) const {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string path = (dir_ / log).string();
      std::freopen(path.c_str(), "a", stderr);
      std::freopen(path.c_str(), "a", stdout);
      std::vector<char*> args;
      for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return pid;
  }

  static int wait_exit(pid_t pid, double timeout_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  // Polls the database until `done` holds (or the timeout passes).
  bool wait_for(const std::function<bool(const sweep::StoredSweep&)>& done, double timeout_s) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < until) {
      try {
        if (fs::exists(db_) && done(sweep::read_sweep(db_))) return true;
      } catch (const std::exception&) {
        // Not created yet, or busy: look again.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // Lines of the cluster's job completion file for this test's jobs.
  std::vector<std::string> completed_jobs() const {
    const auto jobcomp = fs::path(SCALESCOPE_SLURM_CONF).parent_path() / "jobcomp.txt";
    std::vector<std::string> out;
    std::istringstream in(read_file(jobcomp));
    const std::string name = fmt::format("Name=scalescope-{}-", db_.stem().string());
    for (std::string line; std::getline(in, line);)
      if (line.find(name) != std::string::npos) out.push_back(line);
    return out;
  }

  fs::path dir_, db_;
};

int finished(const sweep::StoredSweep& s) {
  int n = 0;
  for (const auto& r : s.runs) n += r.status != sweep::RunStatus::kRunning;
  return n;
}

TEST_F(SweepSlurm, KilledSweepResumesItsQueuedJobsAndRecordsEveryRunOnce) {
  // Eight runs, at most three jobs in the queue. "overrun" sleeps far past
  // --timeout 1m, the jobs' --time=1: Slurm itself ends both of its jobs,
  // 60 to 90 s after they start, while the other runs go through the
  // remaining slot.
  const auto argv = sweep_argv("overrun,ok,fail3,cancel", "2", {"--max-queued", "3", "--timeout", "1m"});
  const pid_t first = start(argv, "first.log");
  // Two runs done and a job queued or running: then the sweep dies without a word.
  ASSERT_TRUE(wait_for(
      [](const sweep::StoredSweep& s) {
        int submitted_open = 0;
        for (const auto& r : s.runs) submitted_open += r.status == sweep::RunStatus::kRunning && r.slurm.has_value();
        return finished(s) >= 2 && submitted_open >= 1;
      },
      90))
      << read_file(dir_ / "first.log");
  ::kill(first, SIGKILL);
  wait_exit(first, 10);
  const auto at_kill = sweep::read_sweep(db_);
  std::set<std::string> open_jobs_at_kill;
  for (const auto& r : at_kill.runs)
    if (r.status == sweep::RunStatus::kRunning && r.slurm) open_jobs_at_kill.insert(r.slurm->job_id);
  ASSERT_FALSE(open_jobs_at_kill.empty());

  auto resume = argv;
  resume.insert(resume.begin() + 2, "--resume");
  const pid_t second = start(resume, "second.log");
  const int rc = wait_exit(second, 240);
  const std::string log = read_file(dir_ / "first.log") + read_file(dir_ / "second.log");
  ASSERT_EQ(rc, 0) << log;
  // The progress line: queued, running and done per configuration. (Whether
  // a poll catches a job still pending is up to Slurm's scheduler: an "ok"
  // job runs 2 s, so one is seen running, and each ends done.)
  EXPECT_TRUE(std::regex_search(log, std::regex("queue: .*g1 kind=ok 0 queued 0 running 1 done"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("queue: .*g[12] kind=ok 0 queued 1 running 0 done"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("queue: .*g[12] kind=overrun 0 queued 1 running"))) << log;
  // --max-queued 3: never more than three jobs submitted and not yet ended,
  // and at some point the queue was full while runs waited.
  const std::regex open_jobs("(\\d+) queued (\\d+) running");
  bool full = false;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("queue: ")) continue;
    int open = 0;
    for (std::sregex_iterator m(line.begin(), line.end(), open_jobs), end; m != end; ++m)
      open += std::stoi((*m)[1]) + std::stoi((*m)[2]);
    EXPECT_LE(open, 3) << line;
    full = full || open == 3;
  }
  EXPECT_TRUE(full) << log;

  const auto s = sweep::read_sweep(db_);
  ASSERT_EQ(s.runs.size(), 8u);
  std::set<std::string> job_ids;
  std::map<std::string, int> states;
  for (const auto& r : s.runs) {
    ASSERT_TRUE(r.slurm) << "run " << r.plan_index << " has no Slurm job";
    job_ids.insert(r.slurm->job_id);
    const std::string kind = r.config.at(0).second;
    ++states[kind + ":" + r.slurm->state];
    EXPECT_EQ(r.slurm->nodelist.empty(), false) << r.plan_index;
    EXPECT_TRUE(r.slurm->queued_s.has_value()) << r.plan_index;
    if (kind == "ok") {
      EXPECT_EQ(r.status, sweep::RunStatus::kOk) << r.note;
      EXPECT_GE(r.wall_s, 1.0);
      // Each of the run's tasks ran, started by srun inside the job.
      const std::string out = read_file(r.log_path);
      for (int t = 0; t < r.gpus; ++t)
        EXPECT_NE(out.find(fmt::format("task={} of {} job={}", t, r.gpus, r.slurm->job_id)), std::string::npos) << out;
    } else if (kind == "overrun") {
      // Ended by Slurm at its limit (one minute, no OverTimeLimit), well
      // before its sleep of 600 s.
      EXPECT_EQ(r.status, sweep::RunStatus::kTimeout) << r.note;
      EXPECT_EQ(r.note, fmt::format("Slurm job {} TIMEOUT: killed at its time limit", r.slurm->job_id));
      EXPECT_GE(r.wall_s, 60.0) << r.note;
      EXPECT_LT(r.wall_s, 200.0) << r.note;
    } else if (kind == "fail3") {
      EXPECT_EQ(r.status, sweep::RunStatus::kFailed) << r.note;
      EXPECT_EQ(r.exit_code, 3) << r.note;
    } else {
      EXPECT_EQ(r.status, sweep::RunStatus::kError) << r.note;
      EXPECT_NE(r.note.find("CANCELLED"), std::string::npos) << r.note;
    }
  }
  EXPECT_EQ(job_ids.size(), 8u);
  EXPECT_EQ(states, (std::map<std::string, int>{
                        {"ok:COMPLETED", 2}, {"overrun:TIMEOUT", 2}, {"fail3:FAILED", 2}, {"cancel:CANCELLED", 2}}));
  // The jobs open at the kill were followed by id, not submitted again:
  // Slurm saw exactly one job per run.
  for (const auto& id : open_jobs_at_kill) EXPECT_TRUE(job_ids.count(id)) << id;
  EXPECT_EQ(completed_jobs().size(), 8u) << fmt::format("{}", fmt::join(completed_jobs(), "\n"));
}

TEST_F(SweepSlurm, CtrlCCancelsTheSweepsJobsAndLeavesItsRunsForResume) {
  const auto argv = sweep_argv("ok", "60", {"--max-queued", "2"});
  const pid_t pid = start(argv, "sweep.log");
  std::vector<std::string> ids;
  ASSERT_TRUE(wait_for(
      [&](const sweep::StoredSweep& s) {
        ids.clear();
        for (const auto& r : s.runs)
          if (r.slurm) ids.push_back(r.slurm->job_id);
        return ids.size() == 2;
      },
      60))
      << read_file(dir_ / "sweep.log");
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 30), 1) << read_file(dir_ / "sweep.log");
  // Both jobs were cancelled (one ran, one may still have been pending).
  for (const auto& id : ids) {
    std::string state;
    for (int i = 0; i < 50 && state != "CANCELLED"; ++i) {
      FILE* p = ::popen(fmt::format("scontrol show job -o {} 2>/dev/null", id).c_str(), "r");
      char buf[8192] = {};
      const size_t n = std::fread(buf, 1, sizeof buf - 1, p);
      ::pclose(p);
      std::smatch m;
      const std::string line(buf, n);
      if (std::regex_search(line, m, std::regex("JobState=(\\S+)"))) state = m[1];
      if (state != "CANCELLED") std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(state, "CANCELLED") << "job " << id;
  }
  // Their runs wait for a resume, without a job.
  const auto s = sweep::read_sweep(db_);
  for (const auto& r : s.runs) {
    EXPECT_EQ(r.status, sweep::RunStatus::kRunning);
    EXPECT_FALSE(r.slurm.has_value());
    EXPECT_NE(r.note.find("interrupted by signal 2"), std::string::npos) << r.note;
  }
}

TEST_F(SweepSlurm, LeaveQueuedKeepsTheJobsAndResumeFollowsThemById) {
  const auto argv = sweep_argv("ok", "4", {"--max-queued", "2", "--leave-queued"});
  const pid_t pid = start(argv, "first.log");
  std::map<int, std::string> ids;
  ASSERT_TRUE(wait_for(
      [&](const sweep::StoredSweep& s) {
        ids.clear();
        for (const auto& r : s.runs)
          if (r.slurm) ids[r.plan_index] = r.slurm->job_id;
        return ids.size() == 2;
      },
      60))
      << read_file(dir_ / "first.log");
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 30), 1) << read_file(dir_ / "first.log");
  auto resume = argv;
  resume.insert(resume.begin() + 2, "--resume");
  ASSERT_EQ(wait_exit(start(resume, "second.log"), 60), 0) << read_file(dir_ / "second.log");
  const auto s = sweep::read_sweep(db_);
  ASSERT_EQ(s.runs.size(), 2u);
  for (const auto& r : s.runs) {
    EXPECT_EQ(r.status, sweep::RunStatus::kOk) << r.note;
    ASSERT_TRUE(r.slurm);
    EXPECT_EQ(r.slurm->job_id, ids[r.plan_index]);  // the same job, never submitted again
    EXPECT_EQ(r.slurm->state, "COMPLETED");
  }
  EXPECT_EQ(completed_jobs().size(), 2u) << fmt::format("{}", fmt::join(completed_jobs(), "\n"));
}

TEST_F(SweepSlurm, TwoNodeRunsSpreadTheirTasksEvenlyOverBothNodes) {
  const pid_t pid = start(
      {SCALESCOPE_BIN, "sweep", "--scheduler", "slurm", "--launcher", "srun",       "--cpu-only",      "--nodes", "2",
       "--gpus",       "2,4",   "--repeat",    "1",     "-o",         db_.string(), "--poll-interval", "0.5s",    "--",
       "sh",           kJob,    "ok",          "1"},
      "sweep.log");
  ASSERT_EQ(wait_exit(pid, 60), 0) << read_file(dir_ / "sweep.log");
  const auto s = sweep::read_sweep(db_);
  ASSERT_EQ(s.runs.size(), 2u);
  for (const auto& r : s.runs) {
    EXPECT_EQ(r.status, sweep::RunStatus::kOk) << r.note;
    EXPECT_EQ(r.nodes, 2);
    ASSERT_TRUE(r.slurm);
    EXPECT_EQ(r.slurm->nodelist, "sscope[1-2]");
    // gpus/2 tasks on each node, every rank once.
    const std::string out = read_file(r.log_path);
    std::map<std::string, int> per_node;
    std::set<int> ranks;
    const std::regex task("task=(\\d+) of (\\d+) job=\\S+ node=(\\S+)");
    for (std::sregex_iterator m(out.begin(), out.end(), task), end; m != end; ++m) {
      EXPECT_EQ(std::stoi((*m)[2]), r.gpus) << out;
      ranks.insert(std::stoi((*m)[1]));
      ++per_node[(*m)[3]];
    }
    EXPECT_EQ(ranks.size(), static_cast<size_t>(r.gpus)) << out;
    EXPECT_EQ(per_node, (std::map<std::string, int>{{"sscope1", r.gpus / 2}, {"sscope2", r.gpus / 2}})) << out;
  }
}

// Runs `line` (a shell line) to its end; its output.
std::string output_of(const std::string& line) {
  std::string out;
  FILE* p = ::popen(line.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST_F(SweepSlurm, MpirunInsideEachJobStartsItsRanksAndTheJobsAreReported) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);  // CI runs as root; sbatch passes the environment on
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const pid_t pid = start({SCALESCOPE_BIN, "sweep", "--scheduler", "slurm", "--launcher", "mpirun", "--cpu-only",
                           "--gpus", "1,2", "--repeat", "1", "-o", db_.string(), "--poll-interval", "0.5s", "--", "sh",
                           "-c", "echo rank=$OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"},
                          "sweep.log");
  ASSERT_EQ(wait_exit(pid, 60), 0) << read_file(dir_ / "sweep.log");
  const auto s = sweep::read_sweep(db_);
  ASSERT_EQ(s.runs.size(), 2u);
  for (const auto& r : s.runs) {
    EXPECT_EQ(r.status, sweep::RunStatus::kOk) << r.note;
    const std::string out = read_file(r.log_path);
    for (int rank = 0; rank < r.gpus; ++rank)
      EXPECT_NE(out.find(fmt::format("rank={} of {}", rank, r.gpus)), std::string::npos) << out;
  }
  // `scaling` and the report show each run's job.
  const auto json =
      nlohmann::json::parse(output_of(fmt::format("{} scaling {} --format json", SCALESCOPE_BIN, db_.string())));
  const auto& runs = json["sweep"]["runs"];
  ASSERT_EQ(runs.size(), s.runs.size()) << json.dump();
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i]["slurm"]["job_id"], s.runs[i].slurm->job_id) << runs[i].dump();
    EXPECT_EQ(runs[i]["slurm"]["state"], "COMPLETED") << runs[i].dump();
  }
  const auto html = dir_ / "report.html";
  const std::string said =
      output_of(fmt::format("{} report {} -o {} 2>&1", SCALESCOPE_BIN, db_.string(), html.string()));
  const std::string page = read_file(html);
  const size_t skipped = page.find("No scaling analysis");
  EXPECT_NE(page.find("Slurm jobs"), std::string::npos)
      << said << (skipped == std::string::npos ? std::string() : page.substr(skipped, 300));
}

}  // namespace
}  // namespace scalescope
