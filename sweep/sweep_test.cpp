#include "sweep/sweep.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sweep/slurm_client.hpp"
#include "sweep/sweep_lock.hpp"
#include "sweep/sweep_store.hpp"
#include "base/error.hpp"
#include "mlperf/mllog_parser.hpp"
#include <fmt/format.h>

namespace scalescope::sweep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kJobs = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fake_jobs";

// A fresh temporary folder per test.
class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("scalescope_sweep_{}_{}_{}", info->test_suite_name(), info->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

SweepSpec law_spec() {
  SweepSpec s;
  s.gpus = {1, 2, 4};
  s.repeat = 2;
  s.command = {kJobs + "/law.sh", "{gpus}", "0.12", "0", "0.01"};
  return s;
}

// ---- plan -------------------------------------------------------------------

TEST(SweepPlan, InterleavesConfigurationsAcrossRepetitions) {
  SweepSpec s = law_spec();
  s.repeat = 3;
  s.vary = {Variable::parse("precision=fp32,bf16")};
  s.command.push_back("--precision={precision}");
  const auto plan = plan_runs(s);
  ASSERT_EQ(plan.size(), 18u);
  for (int rep = 0; rep < 3; ++rep) {
    std::set<std::pair<int, std::string>> cells;
    for (int i = 0; i < 6; ++i) {
      const auto& r = plan[static_cast<size_t>(rep * 6 + i)];
      EXPECT_EQ(r.rep, rep);
      EXPECT_EQ(r.index, rep * 6 + i);
      cells.insert({r.gpus, r.config_json()});
    }
    EXPECT_EQ(cells.size(), 6u) << "each configuration exactly once per repetition";
  }
  // Deterministic for a seed; another seed gives another order somewhere.
  const auto again = plan_runs(s);
  for (size_t i = 0; i < plan.size(); ++i) EXPECT_EQ(plan[i].dir_name(), again[i].dir_name());
  s.seed = 99;
  const auto other = plan_runs(s);
  bool differs = false;
  for (size_t i = 0; i < plan.size(); ++i) differs |= plan[i].dir_name() != other[i].dir_name();
  EXPECT_TRUE(differs);
  EXPECT_EQ(plan[0].config_label().substr(0, 10), "precision=");
}

TEST(SweepPlan, TemplateErrorsComeBeforeAnythingRuns) {
  SweepSpec s = law_spec();
  s.vary = {Variable::parse("pin=0,1")};
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("no {pin} placeholder"));
  s.vary.clear();
  s.command.push_back("{pni}");
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("{pni}"));
  s.command.back() = "{gpus";
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("unclosed"));
  s = law_spec();
  s.command = {kJobs + "/law.sh", "1"};
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("no {gpus} placeholder"));
  s.command.clear();
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("no command template"));
  s = law_spec();
  s.nodes = 2;
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("evenly"));
  s = law_spec();
  s.vary = {Variable::parse("a=1,2,3,4,5,6,7,8,9,10"), Variable::parse("b=1,2,3,4,5,6,7,8,9,10"),
            Variable::parse("c=1,2,3,4,5,6,7,8,9,10"), Variable::parse("d=1,2,3,4,5,6,7,8,9,10"),
            Variable::parse("e=1,2,3,4,5,6,7,8,9,10")};
  s.command.push_back("{a}{b}{c}{d}{e}");
  s.repeat = 4;  // 10^5 configurations x 3 GPU counts x 4
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("more than a million"));
  s = law_spec();
  s.metric = MetricSpec::parse("trace");
  EXPECT_THAT(error_of([&] { plan_runs(s); }), HasSubstr("--profile"));
}

TEST(SweepPlan, ParsersRejectBadText) {
  EXPECT_FALSE(parse_launcher("slurm").has_value());
  EXPECT_EQ(parse_launcher("mpirun"), LauncherKind::kMpirun);
  EXPECT_EQ(parse_gpu_list("1,2,8"), (std::vector<int>{1, 2, 8}));
  EXPECT_THROW(parse_gpu_list("1,x"), Error);
  EXPECT_THROW(parse_gpu_list("1,1"), Error);
  EXPECT_THROW(parse_gpu_list("0"), Error);
  EXPECT_THROW(Variable::parse("precision"), Error);
  EXPECT_THROW(Variable::parse("gpus=1,2"), Error);
  EXPECT_THROW(Variable::parse("a=1,,2"), Error);
  EXPECT_THROW(Variable::parse("a=1,1"), Error);
  EXPECT_THROW(Variable::parse("a-b=1"), Error);
  EXPECT_THROW(MetricSpec::parse("regex:no group"), Error);
  EXPECT_THROW(MetricSpec::parse("regex:(unclosed"), Error);
  EXPECT_THROW(MetricSpec::parse("speed"), Error);
  // Named after what the pattern captures, so the unit in the log's word travels with it.
  EXPECT_EQ(MetricSpec::parse("regex:tput ([0-9.]+)").name(), "tput");
  EXPECT_EQ(MetricSpec::parse("regex:epoch_time_s=([0-9.]+)").name(), "epoch_time_s");
  EXPECT_EQ(MetricSpec::parse("regex:^([0-9.]+) img/s").name(), "regex");
  EXPECT_EQ(MetricSpec::parse("regex:\\s([0-9.]+)").name(), "regex");
}

TEST(SweepPlan, ExpandsPlaceholdersAndLiteralBraces) {
  SweepSpec s;
  s.gpus = {4};
  s.nodes = 2;
  s.vary = {Variable::parse("precision=bf16")};
  s.command = {"job", "--n={gpus}/{nodes}/{gpus_per_node}", "{{literal}}", "{precision}-{rep}", "{run_dir}/x"};
  const auto plan = plan_runs(s);
  EXPECT_EQ(expand_template(s, plan[0], "/r"),
            (std::vector<std::string>{"job", "--n=4/2/2", "{literal}", "bf16-0", "/r/x"}));
}

// ---- launch lines -------------------------------------------------------------

TEST(SweepLaunch, EveryLauncherBuildsItsLine) {
  SweepSpec s;
  s.gpus = {8};
  s.command = {"python", "train.py", "--bs={gpus}"};
  const auto run = plan_runs(s)[0];
  using V = std::vector<std::string>;
  EXPECT_EQ(launch_command(s, run, "/r", {}), (V{"python", "train.py", "--bs=8"}));
  s.launcher = LauncherKind::kTorchrun;
  EXPECT_EQ(launch_command(s, run, "/r", {}), (V{"torchrun", "--standalone", "--nnodes=1", "--nproc_per_node=8",
                                                 "--no-python", "python", "train.py", "--bs=8"}));
  s.command = {"train.py", "--bs={gpus}"};
  EXPECT_EQ(launch_command(s, run, "/r", {}),
            (V{"torchrun", "--standalone", "--nnodes=1", "--nproc_per_node=8", "train.py", "--bs=8"}));
  s.launcher = LauncherKind::kSrun;
  EXPECT_EQ(launch_command(s, run, "/r", {}), (V{"srun", "--nodes=1", "--ntasks-per-node=8", "--gpus-per-node=8",
                                                 "--kill-on-bad-exit=1", "train.py", "--bs=8"}));
  s.launcher = LauncherKind::kMpirun;
  EXPECT_EQ(launch_command(s, run, "/r", {}), (V{"mpirun", "-np", "8", "train.py", "--bs=8"}));

  s.nodes = 2;
  const auto run2 = plan_runs(s)[0];
  EXPECT_EQ(launch_command(s, run2, "/r", {}),
            (V{"mpirun", "-np", "8", "--map-by", "ppr:4:node", "train.py", "--bs=8"}));
  s.launcher = LauncherKind::kSrun;
  EXPECT_EQ(launch_command(s, run2, "/r", {}), (V{"srun", "--nodes=2", "--ntasks-per-node=4", "--gpus-per-node=4",
                                                  "--kill-on-bad-exit=1", "train.py", "--bs=8"}));
  s.launcher = LauncherKind::kTorchrun;
  EXPECT_THAT(error_of([&] { launch_command(s, run2, "/r", {}); }), HasSubstr("MASTER_ADDR"));
  EXPECT_EQ(launch_command(s, run2, "/r", {{"MASTER_ADDR", "node0"}}),
            (V{"torchrun", "--nnodes=2", "--rdzv_backend=c10d", "--rdzv_endpoint=node0:29500", "--rdzv_id=scalescope-0",
               "--nproc_per_node=4", "train.py", "--bs=8"}));
}

TEST(SweepLaunch, CpuOnlyRunsAskSrunForNoGpus) {
  SweepSpec s;
  s.gpus = {2};
  s.cpu_only = true;
  s.launcher = LauncherKind::kSrun;
  s.command = {"job"};
  using V = std::vector<std::string>;
  EXPECT_EQ(launch_command(s, plan_runs(s)[0], "/r", {}),
            (V{"srun", "--nodes=1", "--ntasks-per-node=2", "--kill-on-bad-exit=1", "job"}));
}

TEST(SweepSlurmPlan, DefaultSpecJsonIsUnchangedAndSlurmJsonDiffers) {
  SweepSpec s;
  s.command = {"job"};
  const std::string plain = s.to_json();
  EXPECT_EQ(plain.find("scheduler"), std::string::npos);  // a sweep planned before --scheduler resumes as it was
  EXPECT_EQ(plain.find("cpu_only"), std::string::npos);
  s.scheduler = SchedulerKind::kSlurm;
  EXPECT_THAT(s.to_json(), HasSubstr("\"scheduler\":\"slurm\""));
  s.cpu_only = true;
  EXPECT_THAT(s.to_json(), HasSubstr("\"cpu_only\":true"));
  EXPECT_EQ(parse_scheduler("slurm"), SchedulerKind::kSlurm);
  EXPECT_EQ(parse_scheduler("pbs"), std::nullopt);
}

TEST(SweepSlurmPlan, SbatchLinePassesWhatTheRunNeeds) {
  SweepSpec s;
  s.gpus = {8};
  s.nodes = 2;
  s.command = {"job"};
  s.timeout_s = 61;
  const auto run = plan_runs(s)[0];
  SlurmOptions o;
  using V = std::vector<std::string>;
  EXPECT_EQ(sbatch_command(s, run, o, "scalescope-db-0", "scalescope sweep /d/db run 0", "/r/log.txt", "/r/job.sh"),
            (V{"sbatch", "--parsable", "--job-name=scalescope-db-0", "--comment=scalescope sweep /d/db run 0",
               "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--gpus-per-node=4", "--time=2", "--output=/r/log.txt",
               "--open-mode=append", "/r/job.sh"}));
  s.cpu_only = true;
  s.timeout_s = 0;
  o.partition = "gpu";
  o.account = "proj1";
  o.qos = "high";
  EXPECT_EQ(sbatch_command(s, run, o, "n", "c", "/r/log.txt", "/r/job.sh"),
            (V{"sbatch", "--parsable", "--job-name=n", "--comment=c", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4",
               "--partition=gpu", "--account=proj1", "--qos=high", "--output=/r/log.txt", "--open-mode=append",
               "/r/job.sh"}));
}

TEST_F(SweepTest, BatchScriptExecsTheLineWithItsEnvironment) {
  const auto script = dir_ / "job.sh";
  std::ofstream(script) << batch_script({"sh", "-c", "printf '%s|%s|%s' \"$1\" \"$X\" \"$0\"", "it's $HOME", "a b"},
                                        {{"X", "x'y \"z\""}});
  const auto out = dir_ / "out.txt";
  ASSERT_EQ(std::system(fmt::format("sh {} > {}", script.string(), out.string()).c_str()), 0);
  EXPECT_EQ(read_file(out), "a b|x'y \"z\"|it's $HOME");
}

TEST(SweepSlurmState, ScontrolLineGivesStateExitNodesGpusAndTimes) {
  const std::string line =
      "JobId=17 JobName=scalescope-db-3 UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 "
      "RunTime=00:00:01 SubmitTime=2026-12-06T09:05:11 StartTime=2026-12-06T09:05:14 EndTime=2026-12-06T09:05:20 "
      "NodeList=node[01-02] TRES=cpu=2,node=1,billing=2,gres/gpu=8 Comment=scalescope sweep /d/x.db run 3 "
      "WorkDir=/w";
  const auto j = parse_scontrol_job(line);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->job_id, "17");
  EXPECT_EQ(j->state, "FAILED");
  EXPECT_TRUE(j->finished());
  EXPECT_EQ(j->exit_code, 3);
  EXPECT_EQ(j->nodelist, "node[01-02]");
  EXPECT_EQ(j->gpus, 8);
  ASSERT_TRUE(j->submit_unix && j->start_unix && j->end_unix);
  EXPECT_DOUBLE_EQ(*j->start_unix - *j->submit_unix, 3);
  EXPECT_DOUBLE_EQ(*j->end_unix - *j->start_unix, 6);
  const auto r = slurm_result(*j);
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_DOUBLE_EQ(r.wall_s, 6);
  EXPECT_THAT(r.note, HasSubstr("Slurm job 17 FAILED: exit code 3"));

  const auto pending = parse_scontrol_job(
      "JobId=18 JobState=PENDING ExitCode=0:0 SubmitTime=2026-12-06T09:05:11 StartTime=2026-12-06T10:00:00 "
      "EndTime=Unknown NodeList=(null) TRES=cpu=1,node=1");
  ASSERT_TRUE(pending);
  EXPECT_FALSE(pending->finished());
  EXPECT_FALSE(pending->start_unix);  // the scheduler's estimate is no start
  EXPECT_EQ(pending->nodelist, "");
  EXPECT_FALSE(pending->gpus);
  EXPECT_FALSE(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified"));
}

TEST(SweepSlurmState, SacctLineAndEveryFinalState) {
  const auto j = parse_sacct_line(
      "42|CANCELLED by 0|0:15|gpu07|2026-12-06T09:00:00|2026-12-06T09:00:30|2026-12-06T09:01:00|"
      "billing=4,cpu=4,gres/gpu=4,node=1");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, "CANCELLED");
  EXPECT_EQ(j->signal, 15);
  EXPECT_EQ(j->nodelist, "gpu07");
  EXPECT_EQ(j->gpus, 4);
  EXPECT_FALSE(parse_sacct_line(""));
  const std::map<std::string, RunStatus> expected = {
      {"COMPLETED", RunStatus::kOk},        {"FAILED", RunStatus::kFailed},   {"TIMEOUT", RunStatus::kTimeout},
      {"CANCELLED", RunStatus::kError},     {"PREEMPTED", RunStatus::kError}, {"NODE_FAIL", RunStatus::kError},
      {"OUT_OF_MEMORY", RunStatus::kFailed}};
  for (const auto& [state, status] : expected) {
    SlurmJobState s;
    s.job_id = "9";
    s.state = state;
    EXPECT_TRUE(s.finished()) << state;
    EXPECT_EQ(slurm_result(s).status, status) << state;
    if (status != RunStatus::kOk) {
      EXPECT_THAT(slurm_result(s).note, HasSubstr("Slurm job 9 " + state)) << state;
    }
  }
  SlurmJobState killed;
  killed.state = "FAILED";
  killed.signal = 9;
  EXPECT_EQ(slurm_result(killed).status, RunStatus::kCrashed);
}

TEST_F(SweepTest, StoreKeepsEachRunsSlurmJob) {
  SweepSpec spec;
  spec.gpus = {1, 2};
  spec.command = {"job", "{gpus}"};
  const auto plan = plan_runs(spec);
  const auto db = dir_ / "s.db";
  {
    auto store = SweepStore::create(db, spec.to_json(), "wall_s", false, 2, "test");
    store.begin_run(plan[0], "[]", "/r0", "/r0/log.txt", 1.0);
    store.begin_run(plan[1], "[]", "/r1", "/r1/log.txt", 1.0);
    store.set_slurm_job(plan[0].index, {"101", "PENDING", std::nullopt, "", std::nullopt, std::nullopt}, 5.0);
    store.set_slurm_job(plan[1].index, {"102", "PENDING", std::nullopt, "", std::nullopt, std::nullopt}, 5.0);
    EXPECT_EQ(store.submitted_jobs(), (std::map<int, std::string>{{0, "101"}, {1, "102"}}));
    store.set_slurm_job(plan[0].index, {"101", "COMPLETED", 0, "n1", 2, 4.5});
    ProcessResult ok;
    ok.status = RunStatus::kOk;
    ok.exit_code = 0;
    store.finish_run(plan[0], ok, {}, "wall_s", "");
    store.forget_slurm_job(plan[1].index);
    EXPECT_EQ(store.submitted_jobs(), (std::map<int, std::string>{}));  // finished, or forgotten
  }
  const auto s = read_sweep(db);
  ASSERT_EQ(s.runs.size(), 2u);
  ASSERT_TRUE(s.runs[0].slurm);
  EXPECT_EQ(s.runs[0].slurm->job_id, "101");
  EXPECT_EQ(s.runs[0].slurm->state, "COMPLETED");
  EXPECT_EQ(s.runs[0].slurm->nodelist, "n1");
  EXPECT_EQ(s.runs[0].slurm->gpus, 2);
  EXPECT_EQ(s.runs[0].slurm->queued_s, 4.5);
  EXPECT_FALSE(s.runs[1].slurm);
}

TEST(SweepLaunch, ProfileWrapsTheLauncher) {
  SweepSpec s;
  s.gpus = {2};
  s.profile = true;
  s.scalescope_exe = "/bin/scalescope";
  s.command = {"./job"};
  s.launcher = LauncherKind::kTorchrun;
  const auto run = plan_runs(s)[0];
  using V = std::vector<std::string>;
  EXPECT_EQ(launch_command(s, run, "/r", {}),
            (V{"/bin/scalescope", "profile", "-o", "/r/trace.ssrun", "--", "torchrun", "--standalone", "--nnodes=1",
               "--nproc_per_node=2", "--no-python", "./job"}));
  s.launcher = LauncherKind::kMpirun;
  EXPECT_EQ(launch_command(s, run, "/r", {}),
            (V{"/bin/scalescope", "profile", "-o", "/r/trace.ssrun", "--", "mpirun", "-np", "2", "./job"}));
}

// ---- one process --------------------------------------------------------------

TEST_F(SweepTest, ProcessStatusesAndLogs) {
  const auto log = dir_ / "log.txt";
  auto r = run_process({kJobs + "/law.sh", "2", "0.02", "0", "0"}, log, 0, 1, {{"SCALESCOPE_SWEEP_REP", "7"}});
  EXPECT_EQ(r.status, RunStatus::kOk);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.wall_s, 0.005);
  EXPECT_THAT(read_file(log), HasSubstr("throughput:"));
  EXPECT_THAT(read_file(log), HasSubstr("progress to stderr"));

  r = run_process({kJobs + "/fail.sh", "5"}, dir_ / "fail.txt", 0, 1, {});
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_THAT(read_file(dir_ / "fail.txt"), HasSubstr("CUDA out of memory"));

  r = run_process({kJobs + "/crash.sh"}, dir_ / "crash.txt", 0, 1, {});
  EXPECT_EQ(r.status, RunStatus::kCrashed);
  EXPECT_EQ(r.signal, SIGSEGV);

  r = run_process({"/nonexistent/job"}, dir_ / "none.txt", 0, 1, {});
  EXPECT_EQ(r.status, RunStatus::kError);
  EXPECT_THAT(r.note, HasSubstr("cannot execute '/nonexistent/job'"));
  EXPECT_THAT(read_file(dir_ / "none.txt"), HasSubstr("cannot execute"));
}

// A zombie (killed, not yet reaped by its new parent) counts as dead.
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

pid_t read_pid(const fs::path& p) {
  std::ifstream in(p);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

TEST_F(SweepTest, TimeoutKillsTheWholeGroup) {
  auto r = run_process({kJobs + "/hang.sh", (dir_ / "child.pid").string()}, dir_ / "hang.txt", 0.4, 2, {});
  EXPECT_EQ(r.status, RunStatus::kTimeout);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_LT(r.wall_s, 2.5);
  const pid_t child = read_pid(dir_ / "child.pid");
  ASSERT_GT(child, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(child)) << "the job's background child survived";
}

TEST_F(SweepTest, TimeoutEscalatesToSigkill) {
  auto r =
      run_process({kJobs + "/hang.sh", (dir_ / "child.pid").string(), "ignore-term"}, dir_ / "hang.txt", 0.3, 0.3, {});
  EXPECT_EQ(r.status, RunStatus::kTimeout);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.wall_s, 2.0);
}

// ---- metrics ------------------------------------------------------------------

TEST_F(SweepTest, MetricsFromRegexAndMllog) {
  SweepSpec s;
  s.metric = MetricSpec::parse("regex:throughput: ([0-9.]+)");
  auto r = run_process({kJobs + "/law.sh", "1", "0.02", "0", "0"}, dir_ / "a.txt", 0, 1, {});
  auto m = extract_metrics(s, r, dir_ / "a.txt", dir_);
  ASSERT_TRUE(m.values.count("throughput"));
  EXPECT_NEAR(m.values["throughput"], 5000, 1e-6);  // 100 / 0.02
  EXPECT_DOUBLE_EQ(m.values["wall_s"], r.wall_s);
  s.metric = MetricSpec::parse("regex:never (\\d+)");
  m = extract_metrics(s, r, dir_ / "a.txt", dir_);
  EXPECT_FALSE(m.values.count("never"));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_THAT(m.notes[0], HasSubstr("no output line matched"));

  s.metric = MetricSpec::parse("mlperf");
  r = run_process({kJobs + "/mllog.sh", "2500"}, dir_ / "b.txt", 0, 1, {});
  m = extract_metrics(s, r, dir_ / "b.txt", dir_);
  EXPECT_DOUBLE_EQ(m.values["mlperf_s"], 2.5);
  EXPECT_DOUBLE_EQ(m.values["mlperf_success"], 1);
  r = run_process({kJobs + "/mllog.sh", "100", "aborted"}, dir_ / "c.txt", 0, 1, {});
  m = extract_metrics(s, r, dir_ / "c.txt", dir_);
  EXPECT_DOUBLE_EQ(m.values["mlperf_success"], 0);
  EXPECT_THAT(m.notes.at(0), HasSubstr("aborted"));
  r = run_process({kJobs + "/fail.sh"}, dir_ / "d.txt", 0, 1, {});
  m = extract_metrics(s, r, dir_ / "d.txt", dir_);
  EXPECT_FALSE(m.values.count("mlperf_s"));
  EXPECT_THAT(m.notes.at(0), HasSubstr("run_start"));
}

// One MLLOG reader and one run_stop rule: a log with two run_stops
// (a restarted script appending to its log) is timed to the first, as `mlperf
// ingest` (trace::parse_mllog, mlperf::parse_mllog) and MLPerf's reference
// summarizer time it. The sweep used to keep the last.
TEST_F(SweepTest, MllogMetricKeepsTheFirstRunStopAsMlperfIngestDoes) {
  const std::string log =
      ":::MLLOG {\"time_ms\": 1000, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null}\n"
      "0: :::MLLOG {\"time_ms\": 1300, \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"aborted\"}}\n"
      ":::MLLOG {\"time_ms\": 1400, \"key\": \"run_start\", \"value\": null}\n"
      ":::MLLOG {\"time_ms\": 3500, \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"success\"}}\n";
  std::ofstream(dir_ / "twice.txt") << log;
  SweepSpec s;
  s.metric = MetricSpec::parse("mlperf");
  const RunMetrics m = extract_metrics(s, ProcessResult{}, dir_ / "twice.txt", dir_);
  const trace::LogSummary ingest = trace::parse_mllog(log);
  ASSERT_TRUE(ingest.run_start_ms && ingest.run_stop_ms);
  ASSERT_TRUE(m.values.count("mlperf_s"));
  EXPECT_DOUBLE_EQ(m.values.at("mlperf_s"), static_cast<double>(*ingest.run_stop_ms - *ingest.run_start_ms) / 1000.0);
  EXPECT_DOUBLE_EQ(m.values.at("mlperf_s"), 0.3);
  EXPECT_EQ(ingest.stop_status, "aborted");
  EXPECT_DOUBLE_EQ(m.values.at("mlperf_success"), 0);
}

// ---- store --------------------------------------------------------------------

TEST_F(SweepTest, StoreRejectsFilesOfOtherKinds) {
  const auto random = dir_ / "random.db";
  {
    std::ofstream out(random, std::ios::binary);
    for (int i = 0; i < 5000; ++i) out.put(static_cast<char>((i * 7919 + 13) % 251));
  }
  EXPECT_THAT(error_of([&] { read_sweep(random); }), HasSubstr("not a scalescope sweep database"));
  EXPECT_THAT(error_of([&] { read_sweep(dir_ / "missing.db"); }), HasSubstr("no such sweep database"));
  const auto empty = dir_ / "empty.db";
  std::ofstream(empty).close();
  EXPECT_THAT(error_of([&] { read_sweep(empty); }), HasSubstr("not a scalescope sweep database"));
  // A real SQLite file of another application.
  const auto other = dir_ / "other.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE runs (x); CREATE TABLE sweeps (y);", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_THAT(error_of([&] { read_sweep(other); }), HasSubstr("application_id"));
  // Ours, but with a table dropped.
  const auto damaged = dir_ / "damaged.db";
  SweepStore::create(damaged, "{}", "wall_s", false, 1, "test");
  ASSERT_EQ(sqlite3_open(damaged.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "DROP TABLE runs", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_THAT(error_of([&] { read_sweep(damaged); }), HasSubstr("'runs' is missing"));
  // Existing file without --resume.
  EXPECT_THAT(error_of([&] { SweepStore::create(damaged, "{}", "wall_s", false, 1, "test"); }), HasSubstr("--resume"));
}

// ---- whole sweeps ---------------------------------------------------------------

TEST_F(SweepTest, SweepRecordsEveryRunAndGoesOnAfterFailures) {
  SweepSpec s;
  s.gpus = {1, 2};
  s.repeat = 2;
  s.timeout_s = 0.5;
  s.kill_grace_s = 0.2;
  s.vary = {Variable::parse("job=law,fail,hang")};
  s.metric = MetricSpec::parse("regex:throughput: ([0-9.]+)");
  s.metric.higher_is_better = true;
  s.command = {kJobs + "/{job}.sh", "{gpus}", "0.02", "0", "0.01"};
  const auto db = dir_ / "sweep.db";
  std::vector<SweepEvent> events;
  const auto sum = run_sweep(s, db, {}, [&](const SweepEvent& e) {
    if (e.kind != SweepEvent::Kind::kRunning) events.push_back(e);
  });
  // The sweep reports each run's start and end, then its own end; progress is drawn by report/.
  ASSERT_EQ(events.size(), 25u);
  for (size_t k = 0; k < 24; k += 2) {
    EXPECT_EQ(events[k].kind, SweepEvent::Kind::kRunStarted);
    EXPECT_EQ(events[k + 1].kind, SweepEvent::Kind::kRunFinished);
    EXPECT_EQ(events[k + 1].done, static_cast<int>(k / 2 + 1));
    EXPECT_EQ(events[k + 1].planned, 12);
  }
  EXPECT_EQ(events.back().kind, SweepEvent::Kind::kSweepEnded);
  EXPECT_EQ(events.back().failed, sum.failed);
  for (const auto& e : events)
    if (e.kind == SweepEvent::Kind::kRunFinished) {
      EXPECT_EQ(e.metric.has_value(), e.status == RunStatus::kOk && e.config_label == "job=law") << e.config_label;
      EXPECT_EQ(e.metric_name, "throughput");
    }
  EXPECT_EQ(sum.planned, 12);
  EXPECT_EQ(sum.ran, 12);
  EXPECT_EQ(sum.ok, 4);
  EXPECT_EQ(sum.failed, 8);
  const auto stored = read_sweep(db);
  EXPECT_EQ(stored.metric, "throughput");
  EXPECT_TRUE(stored.higher_is_better);
  EXPECT_EQ(stored.planned_runs, 12);
  ASSERT_EQ(stored.runs.size(), 12u);
  std::map<std::string, int> by_status;
  for (const auto& r : stored.runs) {
    ++by_status[status_name(r.status)];
    ASSERT_EQ(r.config.size(), 1u);
    const auto job = r.config[0].second;
    EXPECT_TRUE(fs::exists(r.log_path)) << r.log_path;
    if (job == "law") {
      EXPECT_EQ(r.status, RunStatus::kOk);
      EXPECT_NEAR(r.metrics.at("throughput"), 100.0 / (0.02 / r.gpus + 0.01), 0.01);
    } else if (job == "fail") {
      EXPECT_EQ(r.status, RunStatus::kFailed);
      EXPECT_EQ(r.exit_code, r.gpus);  // fail.sh exits with its first argument
      EXPECT_THAT(read_file(r.log_path), HasSubstr("out of memory"));
      EXPECT_FALSE(r.metrics.count("throughput"));
    } else {
      EXPECT_EQ(r.status, RunStatus::kTimeout);
      EXPECT_THAT(r.note, HasSubstr("timeout"));
    }
    EXPECT_GE(r.end_unix, r.start_unix);
  }
  EXPECT_EQ(by_status["ok"], 4);
  EXPECT_EQ(by_status["failed"], 4);
  EXPECT_EQ(by_status["timeout"], 4);
  // The same file again without --resume: refused, nothing lost.
  EXPECT_THAT(error_of([&] { run_sweep(s, db, {}, nullptr); }), HasSubstr("already exists"));
  EXPECT_EQ(read_sweep(db).runs.size(), 12u);
  // Resume of a complete sweep runs nothing; with other options it is refused.
  SweepOptions resume;
  resume.resume = true;
  EXPECT_EQ(run_sweep(s, db, resume, nullptr).ran, 0);
  s.repeat = 3;
  EXPECT_THAT(error_of([&] { run_sweep(s, db, resume, nullptr); }), HasSubstr("different options"));
}

TEST_F(SweepTest, FakeLaunchersReceiveTheirLines) {
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (kJobs + "/bin:" + old_path).c_str(), 1);
  for (auto launcher : {LauncherKind::kTorchrun, LauncherKind::kSrun, LauncherKind::kMpirun}) {
    SweepSpec s;
    s.gpus = {2};
    s.launcher = launcher;
    s.command = {kJobs + "/law.sh", "{gpus}", "0.01", "0", "0"};
    const auto db = dir_ / fmt::format("{}.db", launcher_name(launcher));
    const auto sum = run_sweep(s, db, {}, nullptr);
    EXPECT_EQ(sum.ok, 1) << launcher_name(launcher);
    const auto stored = read_sweep(db);
    ASSERT_EQ(stored.runs.size(), 1u);
    const auto recorded = read_file(fs::path(stored.runs[0].run_dir) / "launcher.txt");
    const auto line = launch_command(s, plan_runs(s)[0], stored.runs[0].run_dir, {});
    std::string expected;
    for (const auto& a : line) expected += (expected.empty() ? "" : " ") + a;
    EXPECT_EQ(recorded, expected + "\n");
    EXPECT_THAT(read_file(stored.runs[0].log_path), HasSubstr("throughput:"));
  }
  ::setenv("PATH", old_path.c_str(), 1);
}

// Counts "start"/"end" lines per run folder in the record file.
std::map<std::string, std::pair<int, int>> record_counts(const fs::path& p) {
  std::map<std::string, std::pair<int, int>> out;
  std::ifstream in(p);
  std::string word, gpus, rep, dir;
  while (in >> word >> gpus >> rep >> dir) {
    if (word == "start") ++out[dir].first;
    if (word == "end") ++out[dir].second;
  }
  return out;
}

TEST_F(SweepTest, ResumeAfterKillRedoesOnlyUnfinishedRuns) {
  SweepSpec s;
  s.gpus = {1, 2, 4};
  s.repeat = 3;
  const auto record = dir_ / "record.txt";
  s.command = {kJobs + "/law.sh", "{gpus}", "0.15", "0", "0.05", record.string()};
  const auto db = dir_ / "sweep.db";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      run_sweep(s, db, {}, nullptr);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  // Kill scalescope (hard) once a few runs have finished.
  size_t finished_before = 0;
  for (int i = 0; i < 400 && finished_before < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      const auto st = read_sweep(db);
      finished_before = 0;
      for (const auto& r : st.runs) finished_before += r.status != RunStatus::kRunning;
    } catch (const Error&) {}
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  const auto before = read_sweep(db);
  std::set<std::string> done_dirs;
  for (const auto& r : before.runs)
    if (r.status == RunStatus::kOk) done_dirs.insert(fs::path(r.run_dir).filename().string());
  ASSERT_GE(done_dirs.size(), 3u);
  ASSERT_LT(done_dirs.size(), 9u) << "the sweep finished before the kill";

  SweepOptions resume;
  resume.resume = true;
  const auto sum = run_sweep(s, db, resume, nullptr);
  EXPECT_EQ(sum.skipped, static_cast<int>(done_dirs.size()));
  const auto after = read_sweep(db);
  ASSERT_EQ(after.runs.size(), 9u);
  for (const auto& r : after.runs) EXPECT_EQ(r.status, RunStatus::kOk) << r.run_dir;
  const auto counts = record_counts(record);
  ASSERT_EQ(counts.size(), 9u);
  for (const auto& [dir, c] : counts) {
    if (done_dirs.count(dir)) {
      EXPECT_EQ(c.first, 1) << dir << " finished before the kill but was started again";
    }
    EXPECT_GE(c.second, 1) << dir << " never finished";
  }
  // Finished rows kept their original timestamps.
  for (const auto& r : before.runs) {
    if (r.status == RunStatus::kOk) {
      EXPECT_DOUBLE_EQ(after.runs[static_cast<size_t>(r.plan_index)].end_unix, r.end_unix);
    }
  }
}

TEST_F(SweepTest, SigtermStopsCleanlyAndLeavesTheRunForResume) {
  SweepSpec s;
  s.gpus = {1};
  s.repeat = 2;
  s.kill_grace_s = 0.3;
  s.command = {kJobs + "/hang.sh", (dir_ / "child.pid").string()};
  const auto db = dir_ / "sweep.db";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int rc = 3;
    try {
      rc = run_sweep(s, db, {}, nullptr).interrupted ? 0 : 4;
    } catch (...) {}
    ::_exit(rc);
  }
  for (int i = 0; i < 200 && read_pid(dir_ / "child.pid") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const pid_t job_child = read_pid(dir_ / "child.pid");
  ASSERT_GT(job_child, 0);
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(job_child));
  const auto st = read_sweep(db);
  ASSERT_EQ(st.runs.size(), 1u);
  EXPECT_EQ(st.runs[0].status, RunStatus::kRunning);
}

// ---- data safety -------------------------------------------------

// Forks a child running a sweep; returns its pid. The child exits 0 / 3 (error).
pid_t fork_sweep(const SweepSpec& s, const fs::path& db, bool resume = false) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      SweepOptions o;
      o.resume = resume;
      run_sweep(s, db, o, nullptr);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sweep child: %s\n", e.what());
      ::_exit(3);
    }
    ::_exit(0);
  }
  return child;
}

template <typename F>
bool wait_for(F&& ok, int ms = 5000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok();
}

// kill -9 of the sweep takes the job's whole group with it (the watchdog), and
// --resume recognises the orphaned "running" row, reruns it and says so.
TEST_F(SweepTest, KillNineTakesTheJobsChildrenAndResumeRerunsTheOrphan) {
  SweepSpec s;
  s.gpus = {1};
  const auto flag = dir_ / "second-time";
  // First attempt: a grandchild that outlives its shell (sh -c 'sleep; echo').
  // Second attempt (after resume): finish at once.
  const std::string script =
      fmt::format("if [ -e {0} ]; then echo resumed; exit 0; fi; touch {0}; sleep 37 & echo $! > {1}; wait",
                  flag.string(), (dir_ / "grandchild.pid").string());
  s.command = {"sh", "-c", script};
  const auto db = dir_ / "sweep.db";
  const pid_t sweep = fork_sweep(s, db);
  ASSERT_GT(sweep, 0);
  ASSERT_TRUE(wait_for([&] { return read_pid(dir_ / "grandchild.pid") > 0; }));
  const pid_t grandchild = read_pid(dir_ / "grandchild.pid");
  ASSERT_TRUE(alive(grandchild));
  ASSERT_EQ(::kill(sweep, SIGKILL), 0);
  int status = 0;
  ::waitpid(sweep, &status, 0);
  EXPECT_TRUE(wait_for([&] { return !alive(grandchild); }, 3000)) << "the job's child survived kill -9 of the sweep";

  const auto before = read_sweep(db);
  ASSERT_EQ(before.runs.size(), 1u);
  EXPECT_EQ(before.runs[0].status, RunStatus::kRunning);
  EXPECT_THAT(before.runs[0].note, HasSubstr(fmt::format("pid={}", sweep)));

  SweepOptions resume;
  resume.resume = true;
  const auto sum = run_sweep(s, db, resume, nullptr);
  EXPECT_EQ(sum.ran, 1);
  const auto after = read_sweep(db);
  ASSERT_EQ(after.runs.size(), 1u);
  EXPECT_EQ(after.runs[0].status, RunStatus::kOk);
  EXPECT_THAT(after.runs[0].note, HasSubstr("orphaned"));
  EXPECT_THAT(after.runs[0].note, HasSubstr(fmt::format("pid {}", sweep)));
}

// A sweep killed hard while a job it had just forked still shares the lock's
// descriptor: the lock outlives the sweep by that child's life. A resume waits
// for it (the writer is dead) instead of refusing; a live holder is refused.
TEST_F(SweepTest, LockLeftByADeadSweepsChildIsWaitedFor) {
  const auto db = dir_ / "sweep.db";
  auto lock_path = db;
  lock_path += ".lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t dead_sweep = ::fork();
  ASSERT_GE(dead_sweep, 0);
  if (dead_sweep == 0) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(3);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const auto text = fmt::format("pid {} on {}, started 2026-12-01T00:00:00Z\n", ::getpid(), host);
    if (::pwrite(fd, text.data(), text.size(), 0) < 0) ::_exit(3);
    if (::fork() == 0) {  // the job, holding the descriptor 400 ms more
      if (::write(ready[1], "x", 1) != 1) ::_exit(3);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      ::_exit(0);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  int status = 0;
  ::waitpid(dead_sweep, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  {  // the lock is still held, by the orphan
    const int probe = ::open(lock_path.c_str(), O_RDWR);
    ASSERT_GE(probe, 0);
    EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0);
    ::close(probe);
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(SweepLock lock(db));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));

  // A holder that is alive (this process, by its text) is refused at once.
  const int fd = ::open(lock_path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const auto text = fmt::format("pid {} on {}, started 2026-12-01T00:00:00Z\n", ::getpid(), host);
  ASSERT_EQ(::ftruncate(fd, 0), 0);
  ASSERT_EQ(::pwrite(fd, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([&] { SweepLock lock(db); }), HasSubstr("another sweep is running"));
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(2));
  ::close(fd);
}

// Two sweeps on one database: the second says who holds it and does not run.
TEST_F(SweepTest, SecondSweepOnTheSameDatabaseIsRefused) {
  SweepSpec s;
  s.gpus = {1, 2};
  const auto record = dir_ / "record.txt";
  s.command = {"sh", "-c", fmt::format("echo start >> {}; sleep 0.6", record.string()), "sh", "{gpus}"};
  const auto db = dir_ / "sweep.db";
  const pid_t first = fork_sweep(s, db);
  ASSERT_TRUE(wait_for([&] { return fs::exists(record); }));
  // Both a new sweep and a resume are refused while the first one runs.
  const std::string e1 = error_of([&] { run_sweep(s, db, {}, nullptr); });
  EXPECT_THAT(e1, HasSubstr("another sweep is running"));
  EXPECT_THAT(e1, HasSubstr(fmt::format("pid {}", first)));
  SweepOptions resume;
  resume.resume = true;
  EXPECT_THAT(error_of([&] { run_sweep(s, db, resume, nullptr); }), HasSubstr("another sweep is running"));
  int status = 0;
  ::waitpid(first, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Every run ran exactly once.
  std::ifstream in(record);
  int starts = 0;
  for (std::string w; in >> w;) starts += w == "start";
  EXPECT_EQ(starts, 2);
  // The lock dies with its holder: now a resume may run (nothing left to do).
  EXPECT_EQ(run_sweep(s, db, resume, nullptr).skipped, 2);
}

// A 0-byte database (a creation killed by an older build) is replaced; a new
// one appears whole (no temporary left beside it).
TEST_F(SweepTest, EmptyDatabaseFromAKilledCreationIsReplaced) {
  SweepSpec s;
  s.gpus = {1};
  s.command = {"true"};
  const auto db = dir_ / "sweep.db";
  std::ofstream(db).close();
  ASSERT_EQ(fs::file_size(db), 0u);
  const auto sum = run_sweep(s, db, {}, nullptr);
  EXPECT_EQ(sum.ok, 1);
  EXPECT_EQ(read_sweep(db).runs.size(), 1u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // A non-empty file that is not ours is never replaced.
  const auto other = dir_ / "other.db";
  std::ofstream(other) << "precious";
  EXPECT_THAT(error_of([&] { run_sweep(s, other, {}, nullptr); }), HasSubstr("already exists"));
  EXPECT_EQ(read_file(other), "precious");
}

// A job printing a huge line without a newline: log.txt stays within its cap
// (head and tail kept, a marker between) and metric extraction reads a cut line.
TEST_F(SweepTest, LogAndLineCapsBoundAJobsOutput) {
  const auto log = dir_ / "log.txt";
  // 6 MiB with no newline, then a metric line at the very end.
  const std::string script = "head -c 6291456 /dev/zero | tr '\\0' x; echo; echo 'metric: 42.5'";
  const auto r = run_process({"sh", "-c", script}, log, 30, 1, {}, {}, uint64_t{2} << 20);
  EXPECT_EQ(r.status, RunStatus::kOk);
  EXPECT_GT(r.log_bytes_dropped, uint64_t{3} << 20);
  EXPECT_THAT(r.log_note, HasSubstr("log.txt capped"));
  EXPECT_LE(fs::file_size(log), (uint64_t{2} << 20) + 200);
  const std::string text = read_file(log);
  EXPECT_THAT(text, HasSubstr("bytes of output dropped here"));
  EXPECT_THAT(text, HasSubstr("metric: 42.5"));  // the tail is kept
  SweepSpec spec;
  spec.metric = MetricSpec::parse("regex:metric: ([0-9.]+)");
  const auto m = extract_metrics(spec, r, log, dir_);
  ASSERT_TRUE(m.values.count(spec.metric.name()));
  EXPECT_DOUBLE_EQ(m.values.at(spec.metric.name()), 42.5);
  bool cut_noted = false;
  for (const auto& n : m.notes) cut_noted = cut_noted || n.find("were cut") != std::string::npos;
  EXPECT_TRUE(cut_noted);
}

// A metric regex with a repeated group over a 60,000-character line: std::regex
// recursed once per character and overflowed the stack (the sweep crashed and
// its run stayed "running"). RE2 matches it, and the run is recorded.
TEST_F(SweepTest, RegexMetricOnAVeryLongLineIsRecorded) {
  SweepSpec s;
  s.gpus = {1};
  s.metric = MetricSpec::parse("regex:v=([0-9.]+)(?:x|y)*");
  s.command = {"sh", "-c", "printf 'v=5'; head -c 60000 /dev/zero | tr '\\0' x; echo"};
  const auto db = dir_ / "sweep.db";
  const auto sum = run_sweep(s, db, {}, nullptr);
  EXPECT_EQ(sum.ok, 1);
  const auto stored = read_sweep(db);
  ASSERT_EQ(stored.runs.size(), 1u);
  EXPECT_EQ(stored.runs[0].status, RunStatus::kOk);
  ASSERT_TRUE(stored.runs[0].metrics.count(s.metric.name())) << stored.runs[0].note;
  EXPECT_DOUBLE_EQ(stored.runs[0].metrics.at(s.metric.name()), 5);
  SweepOptions resume;
  resume.resume = true;
  EXPECT_EQ(run_sweep(s, db, resume, nullptr).skipped, 1);
}

// The documented syntax is RE2's: what RE2 cannot compile (a backreference) is
// refused with one line when the sweep starts, not when a run ends.
TEST(SweepPlan, MetricRegexIsRe2Syntax) {
  EXPECT_EQ(MetricSpec::parse("regex:time=(\\d+(?:\\.\\d+)?)\\s*s").name(), "time");
  const std::string e = error_of([] { MetricSpec::parse("regex:(a)\\1=([0-9]+)"); });
  EXPECT_THAT(e, HasSubstr("does not compile in RE2 syntax"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_THAT(error_of([] { MetricSpec::parse("regex:[0-9]+"); }), HasSubstr("needs a capture group"));
}

// A metric line in the middle of a log larger than its cap is dropped from
// log.txt but still read: the sweep scans the output before the cap.
TEST_F(SweepTest, MetricLineDroppedByTheLogCapStillCounts) {
  SweepSpec s;
  s.gpus = {1};
  s.metric = MetricSpec::parse("regex:metric: ([0-9.]+)");
  // 1.5 MiB of lines, the metric, 3 MiB of lines: with a 2 MiB cap the log
  // keeps the first and the last MiB only.
  s.command = {"sh", "-c",
               "yes filler-line-of-output | head -c 1572864; echo 'metric: 42.5'; "
               "yes filler-line-of-output | head -c 3145728"};
  const auto db = dir_ / "sweep.db";
  SweepOptions o;
  o.max_log_bytes = uint64_t{2} << 20;
  EXPECT_EQ(run_sweep(s, db, o, nullptr).ok, 1);
  const auto run = read_sweep(db).runs.at(0);
  EXPECT_THAT(read_file(run.log_path), ::testing::Not(HasSubstr("metric: 42.5")));
  ASSERT_TRUE(run.metrics.count("metric")) << run.note;
  EXPECT_DOUBLE_EQ(run.metrics.at("metric"), 42.5);
  // Read back from the capped log alone, the miss says where the match may be.
  ProcessResult capped;
  capped.log_bytes_dropped = 1;
  const auto m = extract_metrics(s, capped, run.log_path, dir_);
  EXPECT_FALSE(m.values.count("metric"));
  bool said = false;
  for (const auto& n : m.notes) said = said || n.find("the metric may have been in them") != std::string::npos;
  EXPECT_TRUE(said);
}

// SIGKILL of the sweep's whole process group (`timeout -s KILL`, `kill -9
// -PGID`) must still take the job's children: the watchdog is outside that group.
TEST_F(SweepTest, KillNineOfTheSweepsWholeGroupTakesTheJobsChildren) {
  SweepSpec s;
  s.gpus = {1};
  s.command = {"sh", "-c", fmt::format("sleep 37 & echo $! > {}; wait", (dir_ / "grandchild.pid").string())};
  const auto db = dir_ / "sweep.db";
  const pid_t sweep = ::fork();
  if (sweep == 0) {
    ::setpgid(0, 0);  // the sweep leads a group of its own, as under `timeout`
    try {
      run_sweep(s, db, {}, nullptr);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  ASSERT_GT(sweep, 0);
  ::setpgid(sweep, sweep);
  ASSERT_TRUE(wait_for([&] { return read_pid(dir_ / "grandchild.pid") > 0; }));
  const pid_t grandchild = read_pid(dir_ / "grandchild.pid");
  ASSERT_TRUE(alive(grandchild));
  ASSERT_EQ(::kill(-sweep, SIGKILL), 0);
  int status = 0;
  ::waitpid(sweep, &status, 0);
  EXPECT_TRUE(wait_for([&] { return !alive(grandchild); }, 3000))
      << "the job's child survived kill -9 of the sweep's process group";
  if (alive(grandchild)) ::kill(grandchild, SIGKILL);
}

}  // namespace
}  // namespace scalescope::sweep
