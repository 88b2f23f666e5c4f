// `scalescope profile`'s process handling with fake, non-CUDA commands. Each
// run_profile happens in a forked, single-threaded child, as in the real CLI,
// so that its signal mask holds for the whole process.
#include "collect/profile_runner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "trace/model/python_stacks.hpp"

namespace scalescope::collect {
namespace {

namespace fs = std::filesystem;

class CollectProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scalescope-profile-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fake_collector_ = (dir_ / "libfake-collector.so").string();
    std::ofstream(fake_collector_) << "not loaded: the fake job uses no CUDA";
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProfileOptions options(const std::string& name, const std::string& script) {
    ProfileOptions o;
    o.output = (dir_ / name).string();
    o.collector_path = fake_collector_;
    o.collector.nvml_hz = 0;
    o.command = {"/bin/sh", "-c", script};
    return o;
  }
  // Runs run_profile in a child; returns its exit code (the job's) and log.
  int run_in_child(const ProfileOptions& o, std::string* log = nullptr, pid_t* pid_out = nullptr,
                   const std::function<void(pid_t)>& while_running = nullptr) {
    fs::path log_path = dir_ / "profile.log";
    pid_t pid = fork();
    if (pid == 0) {
      std::ofstream out(log_path);
      try {
        auto r = run_profile(o, out);
        out.flush();
        _exit(r.exit_code);
      } catch (const Error& e) {
        out << "error: " << e.what() << "\n";
        out.flush();
        _exit(200);
      }
    }
    if (pid_out) *pid_out = pid;
    if (while_running) while_running(pid);
    int status = 0;
    waitpid(pid, &status, 0);
    if (log) {
      std::ifstream in(log_path);
      std::stringstream ss;
      ss << in.rdbuf();
      *log = ss.str();
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  nlohmann::json run_json(const std::string& name) {
    std::ifstream in(dir_ / (name + ".ssrun") / "run.json");
    return nlohmann::json::parse(in);
  }
  static bool wait_for(const fs::path& p) {
    for (int i = 0; i < 500 && !fs::exists(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return fs::exists(p);
  }

  fs::path dir_;
  std::string fake_collector_;
};

TEST_F(CollectProfile, ExitCodePassesThroughAndRunJsonIsWritten) {
  std::string log;
  EXPECT_EQ(run_in_child(options("a", "exit 3"), &log), 3);
  auto j = run_json("a");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["command"][0], "/bin/sh");
  EXPECT_FALSE(j["end"].is_null());
  EXPECT_EQ(j["options"]["api"], "default");
  EXPECT_EQ(j["options"]["activities"], "kernel,memcpy,memset,nvtx");
  EXPECT_TRUE(j["host"].contains("gpus"));
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  EXPECT_NE(log.find("no CUDA process was traced"), std::string::npos) << log;
  // No trace to analyze: no "next:" that would fail with "not a Kineto trace".
  EXPECT_EQ(log.find("next: scalescope analyze"), std::string::npos) << log;
  EXPECT_NE(log.find("nothing to analyze"), std::string::npos) << log;
}

TEST_F(CollectProfile, JobSeesTheCollectorEnvironment) {
  auto o = options("env", "env > \"$SCALESCOPE_RUN_DIR/env.txt\"");
  o.collector.api = ApiMode::kAll;
  o.collector.duration_s = 5;
  o.collector.activities = kActivityKernel | kActivityMemcpy;
  EXPECT_EQ(run_in_child(o), 0);
  std::ifstream in(dir_ / "env.ssrun" / "env.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string env = ss.str();
  EXPECT_NE(env.find("CUDA_INJECTION64_PATH=" + fake_collector_), std::string::npos);
  EXPECT_NE(env.find("NVTX_INJECTION64_PATH=" + fake_collector_), std::string::npos);
  EXPECT_NE(env.find("SCALESCOPE_API=all"), std::string::npos);
  EXPECT_NE(env.find("SCALESCOPE_DURATION=5"), std::string::npos);
  EXPECT_NE(env.find("SCALESCOPE_ACTIVITIES=kernel,memcpy\n"), std::string::npos);
  EXPECT_NE(env.find("SCALESCOPE_RUN_DIR=" + (dir_ / "env.ssrun").string()), std::string::npos);
}

// PyTorch's flight recorder dumps go into the run directory, unless the job
// named a place itself.
TEST_F(CollectProfile, FlightRecorderDumpsGoIntoTheRunDirUnlessTheJobChoseAPlace) {
  EXPECT_EQ(run_in_child(options("fr", "env > \"$SCALESCOPE_RUN_DIR/env.txt\"")), 0);
  const fs::path run = fs::absolute(dir_ / "fr.ssrun");
  std::ifstream in(run / "env.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string prefix = (run / "control" / "flight_recorder" / "rank_").string();
  EXPECT_NE(ss.str().find("\nTORCH_FR_DUMP_TEMP_FILE=" + prefix + "\n"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("\nTORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + prefix + "\n"), std::string::npos) << ss.str();
  EXPECT_TRUE(fs::is_directory(run / "control" / "flight_recorder"));

  setenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/somewhere/trace_", 1);
  EXPECT_EQ(run_in_child(options("fr_own", "env > \"$SCALESCOPE_RUN_DIR/env.txt\"")), 0);
  unsetenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  std::ifstream own_in(dir_ / "fr_own.ssrun" / "env.txt");
  std::stringstream own;
  own << own_in.rdbuf();
  EXPECT_NE(own.str().find("\nTORCH_NCCL_DEBUG_INFO_TEMP_FILE=/somewhere/trace_\n"), std::string::npos) << own.str();
  EXPECT_EQ(own.str().find("TORCH_FR_DUMP_TEMP_FILE="), std::string::npos) << own.str();
}

TEST_F(CollectProfile, SigtermIsForwardedToTheJobsProcessGroup) {
  fs::path ready = dir_ / "ready";
  // The job and a grandchild both trap TERM; the grandchild proves the whole group gets it.
  auto o = options("sig", "trap 'echo got >> \"" + (dir_ / "child-got").string() +
                              "\"; exit 0' TERM; (trap 'echo got >> \"" + (dir_ / "grandchild-got").string() +
                              "\"; exit 0' TERM; touch \"" + ready.string() +
                              "\"; while :; do sleep 0.05; done) & while :; do sleep 0.05; done");
  std::string log;
  int code = run_in_child(o, &log, nullptr, [&](pid_t profile) {
    ASSERT_TRUE(wait_for(ready));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(profile, SIGTERM);
  });
  EXPECT_EQ(code, 0) << log;  // the job's own exit code after its trap ran
  EXPECT_TRUE(wait_for(dir_ / "child-got"));
  EXPECT_TRUE(wait_for(dir_ / "grandchild-got"));
  auto j = run_json("sig");
  ASSERT_EQ(j["forwarded_signals"].size(), 1u);
  EXPECT_EQ(j["forwarded_signals"][0], SIGTERM);
}

TEST_F(CollectProfile, JobKilledBySignalGives128PlusSignal) {
  EXPECT_EQ(run_in_child(options("k", "kill -KILL $$")), 128 + SIGKILL);
  EXPECT_EQ(run_json("k")["signal"], SIGKILL);
}

TEST_F(CollectProfile, SummariesAndIncompleteTracesGoIntoRunJson) {
  // The job plays two collectors: one finished with a summary, one "killed".
  std::string script =
      "cd \"$SCALESCOPE_RUN_DIR\" && echo x > h-100.sstrace && echo y > h-200.sstrace && "
      "printf '{\"pid\":100,\"hostname\":\"h\",\"rank\":0,\"local_rank\":0,\"status\":\"ok\",\"trace_file\":\"h-100.sstrace\","
      "\"events_written\":1234,\"cupti_dropped_records\":5,\"events_lost_on_write\":1,\"bytes_written\":999,"
      "\"collector_cpu_ns\":777}' > h-100.json";
  std::string log;
  EXPECT_EQ(run_in_child(options("s", script), &log), 0);
  auto j = run_json("s");
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["events"], 1234);
  EXPECT_EQ(j["processes"][0]["dropped_records"], 6);
  EXPECT_EQ(j["events"], 1234);
  EXPECT_EQ(j["dropped_records"], 6);
  ASSERT_EQ(j["incomplete_traces"].size(), 1u);
  EXPECT_EQ(j["incomplete_traces"][0], "h-200.sstrace");
  EXPECT_NE(log.find("1 process traced, ranks 0-0 (1 distinct), 1234 events, 6 dropped"), std::string::npos) << log;
  EXPECT_NE(log.find("without a summary"), std::string::npos);
}

// The collectors' sampling facts: run.json carries them per process, and
// profile says what was sampled and measured, or that no marker was seen.
TEST_F(CollectProfile, SamplingFactsGoIntoRunJsonAndTheLog) {
  std::string script =
      "cd \"$SCALESCOPE_RUN_DIR\" && echo x > h-100.sstrace && echo y > h-200.sstrace && "
      "printf '{\"pid\":100,\"hostname\":\"h\",\"status\":\"ok\",\"trace_file\":\"h-100.sstrace\","
      "\"sampling\":{\"mode\":\"sampled\",\"iterations_seen\":300,\"iterations_inside\":20,"
      "\"perturbation_measured\":true,\"perturbation_pct\":12.5,"
      "\"perturbation_text\":\"iterations inside traced windows took 12.5 %% longer\"}}' > h-100.json && "
      "printf '{\"pid\":200,\"hostname\":\"h\",\"status\":\"ok\",\"trace_file\":\"h-200.sstrace\","
      "\"sampling\":{\"mode\":\"sampled\",\"iterations_seen\":0,\"note\":\"no iteration markers (x): traced "
      "from start to end\"}}' > h-200.json";
  std::string log;
  EXPECT_EQ(run_in_child(options("samp", script), &log), 0);
  auto j = run_json("samp");
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes"][0]["sampling"]["perturbation_pct"], 12.5);
  EXPECT_EQ(j["processes"][1]["sampling"]["iterations_seen"], 0);
  EXPECT_NE(log.find("pid 100: 20 of 300 iterations traced in sampled windows; iterations inside traced windows took "
                     "12.5 % longer"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("pid 200: no iteration markers (x): traced from start to end (--iteration-range"),
            std::string::npos)
      << log;
}

// The Python bootstrap goes first on the job's PYTHONPATH, the job's own
// entries after it; --no-python leaves PYTHONPATH as it was.
TEST_F(CollectProfile, PythonBootstrapGoesFirstOnPythonPath) {
  const fs::path boot = dir_ / "boot";
  fs::create_directories(boot);
  setenv("PYTHONPATH", "/job/own:/job/more", 1);
  auto o = options("py", "echo \"$PYTHONPATH\" > \"$SCALESCOPE_RUN_DIR/pythonpath.txt\"");
  o.python_bootstrap = boot.string();
  std::string log;
  EXPECT_EQ(run_in_child(o, &log), 0);
  auto off = options("nopy", "echo \"$PYTHONPATH\" > \"$SCALESCOPE_RUN_DIR/pythonpath.txt\"");
  off.python_bootstrap = boot.string();
  off.python = false;
  std::string off_log;
  EXPECT_EQ(run_in_child(off, &off_log), 0);
  unsetenv("PYTHONPATH");
  auto first_line = [&](const std::string& run) {
    std::ifstream in(dir_ / (run + ".ssrun") / "pythonpath.txt");
    std::string line;
    std::getline(in, line);
    return line;
  };
  EXPECT_EQ(first_line("py"), boot.string() + ":/job/own:/job/more");
  EXPECT_EQ(run_json("py")["python_bootstrap"], boot.string());
  EXPECT_EQ(first_line("nopy"), "/job/own:/job/more");
  EXPECT_EQ(run_json("nopy")["python_bootstrap"], "off (--no-python)");
  EXPECT_NE(off_log.find("Python bootstrap off (--no-python)"), std::string::npos) << off_log;
}

// The bootstrap's records go into run.json, beside their process's summary
// and as a list of their own; they are not process summaries. What a record
// says was missing, and a Python process without a record, are reported.
TEST_F(CollectProfile, PythonRecordsGoIntoRunJsonAndTheLog) {
  const fs::path boot = dir_ / "boot";
  fs::create_directories(boot);
  std::string script =
      "cd \"$SCALESCOPE_RUN_DIR\" && echo x > h-100.sstrace && echo y > h-200.sstrace && "
      "printf '{\"pid\":100,\"hostname\":\"h\",\"status\":\"ok\",\"trace_file\":\"h-100.sstrace\","
      "\"python_interpreter\":true}' > h-100.json && "
      "printf '{\"pid\":200,\"hostname\":\"h\",\"status\":\"ok\",\"trace_file\":\"h-200.sstrace\","
      "\"python_interpreter\":true}' > h-200.json && "
      "printf '{\"kind\":\"scalescope python bootstrap\",\"pid\":100,\"hostname\":\"h\",\"steps_marked\":42,"
      "\"torch\":\"2.11.0\",\"hooks\":{\"optimizer_steps\":\"on\",\"module_ranges\":\"failed: RuntimeError\"},"
      "\"distributed\":{\"rank\":3,\"local_rank\":1,\"world_size\":4}}' > python-h-100.json && "
      "printf '{\"kind\":\"scalescope python bootstrap\",\"pid\":300,\"hostname\":\"h\",\"torch\":\"not installed\","
      "\"hooks\":{}}' > python-h-300.json && echo '{torn' > python-h-400.json && "
      "echo '{\"kind\":\"scalescope python bootstrap\",\"pid\":\"five\"}' > python-h-500.json && "
      // The bootstrap's Python stacks: neither records nor process summaries.
      "printf '{\"kind\":\"scalescope python stacks\",\"format\":1,\"pid\":100,\"ppid\":1,\"hostname\":\"h\","
      "\"status\":\"ok\",\"trace_file\":\"h-100.sstrace\",\"stacks\":[]}' > python-stacks-h-100.json && "
      "printf '{\"kind\":\"scalescope python bootstrap\",\"pid\":600,\"hostname\":\"h\",\"hooks\":{}}' "
      "> python-stacks-h-600.json";
  auto o = options("rec", script);
  o.python_bootstrap = boot.string();
  std::string log;
  EXPECT_EQ(run_in_child(o, &log), 0);
  auto j = run_json("rec");
  ASSERT_EQ(j["processes"].size(), 2u) << j.dump();
  EXPECT_EQ(j["processes"][0]["python"]["steps_marked"], 42);
  // No rank in the launcher's environment: torch.distributed's.
  EXPECT_EQ(j["processes"][0]["rank"], 3);
  EXPECT_EQ(j["processes"][0]["local_rank"], 1);
  EXPECT_EQ(j["processes"][0]["rank_source"], "torch.distributed");
  EXPECT_FALSE(j["processes"][1].contains("rank_source"));
  EXPECT_FALSE(j["processes"][1].contains("python"));
  ASSERT_EQ(j["python"].size(), 2u) << j.dump();
  EXPECT_EQ(j["python"][1]["torch"], "not installed");
  EXPECT_NE(log.find("pid 100 (Python): module_ranges failed: RuntimeError"), std::string::npos) << log;
  EXPECT_NE(log.find("pid 200: a Python process without the bootstrap"), std::string::npos) << log;
  EXPECT_EQ(log.find("pid 100: a Python process without"), std::string::npos) << log;
  EXPECT_TRUE(j["incomplete_traces"].empty()) << j.dump();
}

// The Python stack sampler's rate reaches the job's environment and run.json.
TEST_F(CollectProfile, PythonSamplingRateGoesToTheJob) {
  const fs::path boot = dir_ / "boot";
  fs::create_directories(boot);
  auto o = options("hz", "echo \"$SCALESCOPE_PYTHON_SAMPLING_HZ\" > \"$SCALESCOPE_RUN_DIR/hz.txt\"");
  o.python_bootstrap = boot.string();
  o.python_sampling_hz = 250;
  o.python_stacks = PythonStacksWay::kInside;
  EXPECT_EQ(run_in_child(o), 0);
  std::ifstream in(dir_ / "hz.ssrun" / "hz.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "250");
  EXPECT_EQ(run_json("hz")["python_sampling_hz"], 250);
}

// Outside (the default): the bootstrap is told not to sample, and profile
// itself writes the stacks file of each Python process of the job's tree,
// here a shell whose Python child sleeps in a known line.
TEST_F(CollectProfile, PythonStacksFromOutsideAreWrittenByProfile) {
  const fs::path boot = dir_ / "boot";
  fs::create_directories(boot);
  std::ofstream(dir_ / "sleeper.py") << "import time\ndef nap():\n    time.sleep(0.6)\nnap()\n";
  auto o = options("out", "echo \"$SCALESCOPE_PYTHON_SAMPLING_HZ\" > \"$SCALESCOPE_RUN_DIR/hz.txt\"; /usr/bin/python3 " +
                              (dir_ / "sleeper.py").string());
  o.python_bootstrap = boot.string();
  ASSERT_EQ(o.python_stacks, PythonStacksWay::kOutside);
  std::string log;
  EXPECT_EQ(run_in_child(o, &log), 0) << log;
  std::ifstream in(dir_ / "out.ssrun" / "hz.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "0");
  const auto j = run_json("out");
  EXPECT_EQ(j["python_stacks"], "outside");
  EXPECT_EQ(j["python_sampling_hz"], 100);
  EXPECT_TRUE(j["python_stacks_notes"].empty()) << j.dump();
  std::vector<std::string> problems;
  const auto stacks = trace::read_python_stacks(dir_ / "out.ssrun", &problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(stacks.size(), 1u);  // the Python child; the shell is not Python
  ASSERT_FALSE(stacks[0].stacks.empty());
  const auto& leaf = stacks[0].stacks[0].frames[0];
  EXPECT_EQ(leaf.function, "nap");
  EXPECT_EQ(leaf.line, 3);
  EXPECT_EQ(leaf.file, (dir_ / "sleeper.py").string());
}

TEST_F(CollectProfile, RefusesANonEmptyRunDirUnlessForced) {
  EXPECT_EQ(run_in_child(options("f", "touch \"$SCALESCOPE_RUN_DIR/h-1.sstrace\"")), 0);
  std::string log;
  EXPECT_EQ(run_in_child(options("f", "exit 0"), &log), 200);
  EXPECT_NE(log.find("already exists and is not empty; use --force"), std::string::npos) << log;
  auto o = options("f", "exit 4");
  o.force = true;
  EXPECT_EQ(run_in_child(o), 4);
  EXPECT_FALSE(fs::exists(dir_ / "f.ssrun" / "h-1.sstrace"));  // the old run's trace is gone
  EXPECT_EQ(run_json("f")["exit_code"], 4);
}

// The per-node NVML marker a ranked collector writes (nvml-<host>.rank) lives
// only while the run does: a stale one would stop the next run's only sampler.
TEST_F(CollectProfile, SamplerMarkersAreRemovedAfterTheRun) {
  EXPECT_EQ(run_in_child(options(
                "n", "echo 1 > \"$SCALESCOPE_RUN_DIR/nvml-h.rank\"; test -s \"$SCALESCOPE_RUN_DIR/nvml-h.rank\"")),
            0);
  EXPECT_FALSE(fs::exists(dir_ / "n.ssrun" / "nvml-h.rank"));
  std::ofstream(dir_ / "n.ssrun" / "nvml-h.rank") << "1\n";  // left by a killed `profile`
  auto o = options("n", "test ! -e \"$SCALESCOPE_RUN_DIR/nvml-h.rank\"");
  o.force = true;
  EXPECT_EQ(run_in_child(o), 0);  // --force removed it before the job started
}

TEST_F(CollectProfile, MissingCommandIsAClearError) {
  auto o = options("m", "");
  o.command = {"/no/such/program-xyz"};
  std::string log;
  EXPECT_EQ(run_in_child(o, &log), 200);
  EXPECT_NE(log.find("cannot run '/no/such/program-xyz': No such file or directory"), std::string::npos) << log;
  EXPECT_EQ(run_json("m")["exit_code"], 127);
}

// The build tree (cli/scalescope beside collect/python) and the install
// prefix (bin/scalescope, share/scalescope/python); nothing found is "".
TEST(CollectProfileDir, FindsThePythonBootstrapBesideTheBinary) {
  unsetenv("SCALESCOPE_PYTHON_BOOTSTRAP");
  const fs::path root = fs::temp_directory_path() / ("scalescope-bootstrap-find-" + std::to_string(getpid()));
  fs::remove_all(root);
  for (const fs::path& boot :
       {root / "build" / "collect" / "python", root / "prefix" / "share" / "scalescope" / "python"}) {
    fs::create_directories(boot / "scalescope_bootstrap");
    std::ofstream(boot / "sitecustomize.py") << "\n";
  }
  // The binaries' folders exist, as a running binary's do ("cli/.." must resolve).
  for (const fs::path& bin : {root / "build" / "cli", root / "prefix" / "bin", root / "empty" / "bin"})
    fs::create_directories(bin);
  fs::create_directories(root / "prefix" / "share" / "other" / "scalescope_bootstrap");
  EXPECT_EQ(find_python_bootstrap(root / "build" / "cli" / "scalescope"),
            fs::weakly_canonical(root / "build" / "collect" / "python").string());
  EXPECT_EQ(find_python_bootstrap(root / "prefix" / "bin" / "scalescope"),
            fs::weakly_canonical(root / "prefix" / "share" / "scalescope" / "python").string());
  EXPECT_EQ(find_python_bootstrap(root / "empty" / "bin" / "scalescope"), "");
  fs::remove_all(root);
}

// A second `profile -o NAME` while the first one's job runs refuses before
// running its own job, even with --force; the first keeps its run.json and
// returns its job's code.
TEST_F(CollectProfile, SecondProfileIntoTheSameRunDirRefusesBeforeRunning) {
  const fs::path started = dir_ / "a-started", b_ran = dir_ / "b-ran";
  std::string log_b;
  int code_b = -1;
  const int code_a = run_in_child(
      options("same", fmt::format("touch {}; sleep 1; exit 5", started.string())), nullptr, nullptr, [&](pid_t) {
        ASSERT_TRUE(wait_for(started));
        auto o = options("same", fmt::format("touch {}; exit 6", b_ran.string()));
        o.force = true;
        const fs::path log_path = dir_ / "profile-b.log";
        const pid_t b = fork();
        if (b == 0) {
          std::ofstream out(log_path);
          try {
            _exit(run_profile(o, out).exit_code);
          } catch (const Error& e) {
            out << e.what() << "\n";
            out.flush();
            _exit(200);
          }
        }
        int status = 0;
        waitpid(b, &status, 0);
        code_b = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        std::ifstream in(log_path);
        std::getline(in, log_b);
      });
  EXPECT_EQ(code_a, 5);
  EXPECT_EQ(code_b, 200);
  EXPECT_NE(log_b.find("another `scalescope profile` (pid "), std::string::npos) << log_b;
  EXPECT_FALSE(fs::exists(b_ran)) << "the refused profile ran its job";
  EXPECT_EQ(run_json("same")["exit_code"], 5);
}

// Once the job has run, run.json or the manifest that cannot be written (here
// a folder stands where each file goes, as a full disk would refuse them) is a
// warning: `profile` still returns the job's own exit code, not 1.
TEST_F(CollectProfile, FilesThatCannotBeWrittenAfterTheJobAreWarningsAndTheJobsCodeIsReturned) {
  const fs::path run_dir = dir_ / "blocked.ssrun";
  const std::string script = fmt::format(
      "cd {} && rm -f run.json && mkdir -p run.json/x manifest-\"$(hostname)\".json/x && exit 7", run_dir.string());
  std::string log;
  EXPECT_EQ(run_in_child(options("blocked", script), &log), 7) << log;
  EXPECT_NE(log.find("scalescope: warning: "), std::string::npos) << log;
  EXPECT_NE(log.find("exit code 7"), std::string::npos) << log;
  EXPECT_TRUE(fs::is_directory(run_dir / "run.json")) << "the job's folder was replaced";
}

// Started at the same moment, of each pair exactly one runs its job.
TEST_F(CollectProfile, ConcurrentProfilesIntoOneNewRunDirRunOneJob) {
  for (int pair = 0; pair < 5; ++pair) {
    const std::string name = "race" + std::to_string(pair);
    const fs::path ran = dir_ / (name + ".ran");
    std::vector<pid_t> pids;
    for (int i = 0; i < 2; ++i) {
      const pid_t p = fork();
      if (p == 0) {
        std::ofstream out(dir_ / (name + std::to_string(i) + ".log"));
        try {
          _exit(run_profile(options(name, fmt::format("echo {} >> {}; sleep 0.3", i, ran.string())), out).exit_code);
        } catch (const Error&) {
          _exit(200);
        }
      }
      pids.push_back(p);
    }
    int refused = 0;
    for (pid_t p : pids) {
      int status = 0;
      waitpid(p, &status, 0);
      refused += WIFEXITED(status) && WEXITSTATUS(status) == 200;
    }
    std::ifstream in(ran);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    EXPECT_EQ(lines, 1) << name << ": jobs run";
    EXPECT_EQ(refused, 1) << name;
    EXPECT_EQ(run_json(name)["exit_code"], 0) << name;
  }
}

TEST(CollectProfileDir, Names) {
  auto base = fs::temp_directory_path() / ("scalescope-names-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  EXPECT_EQ(RunDirClaim((base / "x").string(), false).dir().filename(), "x.ssrun");
  EXPECT_EQ(RunDirClaim((base / "y.ssrun").string(), false).dir().filename(), "y.ssrun");
  std::ofstream(base / "file.ssrun") << "x";
  EXPECT_THROW(RunDirClaim((base / "file").string(), false), Error);
  EXPECT_THROW(RunDirClaim("", false), Error);
  // A claim released is no claim: the empty directory may be claimed again, and
  // its lock file alone does not make it "not empty".
  EXPECT_NO_THROW(RunDirClaim((base / "x").string(), false));
  {
    RunDirClaim held((base / "z").string(), false);
    EXPECT_THROW(RunDirClaim((base / "z").string(), true), Error);
  }
  fs::remove_all(base);
}

// One node's `profile --force` into a shared run directory removes that
// node's Python stacks files with its other files, and no other node's.
TEST(CollectProfileDir, ANodesPythonStacksAreItsOwnFiles) {
  auto base = fs::temp_directory_path() / ("scalescope-node-files-" + std::to_string(getpid()));
  fs::remove_all(base);
  const fs::path dir = base / "run.ssrun";
  fs::create_directories(dir);
  std::ofstream(dir / "python-stacks-n1-10.json") << "{}";
  std::ofstream(dir / "python-stacks-n2-20.json") << "{}";
  try {
    RunDirClaim refused(dir.string(), false, "n1");
    ADD_FAILURE() << "n1's stacks file did not count as n1's";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("python-stacks-n1-10.json"), std::string::npos) << e.what();
  }
  { RunDirClaim forced(dir.string(), true, "n1"); }
  EXPECT_FALSE(fs::exists(dir / "python-stacks-n1-10.json"));
  EXPECT_TRUE(fs::exists(dir / "python-stacks-n2-20.json"));
  fs::remove_all(base);
}

}  // namespace
}  // namespace scalescope::collect
