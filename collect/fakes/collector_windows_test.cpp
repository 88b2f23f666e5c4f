// The real libscalescope-collector.so over the fake CUPTI (fake_cupti.hpp):
// what a trace holds after capture windows that close and reopen, CUPTI
// detached between windows and attached again, timed windows, and a stop
// with no start. On the GPU the same is checked by
// bench/collector_overhead/run.sh (window checks) and
// collect/gpu_test/run_detach_check.sh.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include "trace/trace_file.hpp"

namespace scalescope {
namespace {

namespace fs = std::filesystem;

struct HostRun {
  int exit_code = -1;
  std::string out, err;
  trace::Trace trace;  // the one process's trace
  nlohmann::json summary;  // the collector's sidecar
  bool traced = false;
};

class CollectWindows : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scalescope-windows-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  HostRun run(const char* mode, const std::vector<std::pair<std::string, std::string>>& env) {
    HostRun r;
    fs::path out = dir_ / "out.txt", err = dir_ / "err.txt";
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(98);
      setenv("LD_LIBRARY_PATH", SCALESCOPE_FAKE_CUPTI_DIR, 1);
      setenv("SCALESCOPE_RUN_DIR", dir_.c_str(), 1);
      setenv("SCALESCOPE_NVML_HZ", "0", 1);
      for (const char* v : {"SCALESCOPE_CAPTURE_RANGE", "SCALESCOPE_DURATION", "SCALESCOPE_DELAY", "SCALESCOPE_DETACH",
                            "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID",
                            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "HAND_OVER"})
        unsetenv(v);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      execl(SCALESCOPE_WINDOWS_HOST, SCALESCOPE_WINDOWS_HOST, SCALESCOPE_COLLECTOR_PATH, mode, nullptr);
      _exit(99);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    auto slurp = [](const fs::path& p) {
      std::ifstream in(p);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    r.out = slurp(out);
    r.err = slurp(err);
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == trace::kTraceFileExtension) {
        r.trace = trace::read_trace(e.path());
        r.traced = true;
      } else if (e.path().extension() == ".json") {
        std::ifstream in(e.path());
        r.summary = nlohmann::json::parse(in);
      }
    }
    return r;
  }
  static std::string extra(const trace::Trace& t, const std::string& key) {
    auto it = t.meta.extra.find(key);
    return it == t.meta.extra.end() ? "" : it->second;
  }
  static long number_after(const std::string& text, const std::string& key) {
    auto at = text.find(key + "=");
    return at == std::string::npos ? -999 : std::strtol(text.c_str() + at + key.size() + 1, nullptr, 10);
  }

  // What every window scenario is judged by: CUPTI attaches and detaches (from
  // the fake), kernels kept, and the collector's own window counts.
  static void expect_windows(const HostRun& r, int subscribes, int finalizes, size_t kernels, const char* windows,
                             const char* detaches) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(number_after(r.out, "subscribes"), subscribes) << r.out;
    EXPECT_EQ(number_after(r.out, "finalizes"), finalizes) << r.out;
    ASSERT_TRUE(r.traced);
    EXPECT_EQ(r.trace.kernels.size(), kernels);
    EXPECT_EQ(extra(r.trace, "windows_opened"), windows);
    EXPECT_EQ(extra(r.trace, "cupti_detaches"), detaches);
  }

  fs::path dir_;
};

// Two windows back to back share one attach; a window that stays closed for
// the grace time detaches CUPTI at the closing thread's next API exit; the
// encoder attaches it again and the next window is traced, with correlation
// ids kept apart from the first generation's although CUPTI restarted them.
TEST_F(CollectWindows, CaptureWindowsDetachAfterTheGraceAndAttachAgain) {
  auto r = run("repeat", {{"SCALESCOPE_CAPTURE_RANGE", "cudaProfilerApi"}});
  // Attached at start and once after the detach; 3 + 2 + 5 kernels, none of the 4 outside.
  expect_windows(r, 2, 1, 10, "3", "1");
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  long detach_ms = number_after(r.out, "detach_ms");
  EXPECT_GE(detach_ms, 450) << "detached before the grace time";
  EXPECT_LT(detach_ms, 1500);
  std::set<uint32_t> correlations(r.trace.kernels.correlation.begin(), r.trace.kernels.correlation.end());
  EXPECT_EQ(correlations.size(), 10u) << "the second generation reused the first's correlation ids";
  EXPECT_EQ(extra(r.trace, "detach"), "1");
  EXPECT_EQ(extra(r.trace, "capture_stops_without_window"), "");
  EXPECT_EQ(r.summary.value("cupti_detaches", -1), 1);
  EXPECT_EQ(r.summary.value("windows_opened", -1), 3);
}

TEST_F(CollectWindows, NoDetachKeepsCuptiAttached) {
  auto r = run("repeat", {{"SCALESCOPE_CAPTURE_RANGE", "cudaProfilerApi"}, {"SCALESCOPE_DETACH", "0"}});
  expect_windows(r, 1, 0, 10, "3", "0");
}

// --duration: the timer closes the window, any thread's next API exit
// detaches, nothing attaches again and later kernels are not recorded.
TEST_F(CollectWindows, TimedWindowDetachesAtAnyThreadsApiExit) {
  auto r = run("timed", {{"SCALESCOPE_DURATION", "0.3"}});
  expect_windows(r, 1, 1, 2, "1", "1");  // 2 flushed before the detach; the 3 after it are not traced
  EXPECT_GE(number_after(r.out, "detach_ms"), 250);
}

// NVTX capture ranges detach the same way (no context synchronisation), and
// the NVTX callbacks that open the next window come back with the new attach.
TEST_F(CollectWindows, NvtxCaptureRangeDetachesAndOpensAgain) {
  auto r = run("nvtx", {{"SCALESCOPE_CAPTURE_RANGE", "nvtx:capture"}});
  expect_windows(r, 2, 1, 8, "2", "1");  // 3 + 5 kernels
  EXPECT_GE(number_after(r.out, "detach_ms"), 450);
}

std::string marker_name() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string("nvml-") + host + ".rank";
}

// One NVML sampler per node: local rank 0 samples and says so in the run
// directory; a process without a rank (the torchrun agent) samples until then.
TEST_F(CollectWindows, RankedLocalRankZeroSamplesAndLeavesItsMarker) {
  auto r = run("sampler", {{"SCALESCOPE_NVML_HZ", "20"}, {"RANK", "0"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.traced);
  EXPECT_GT(r.trace.counters.size(), 0u);
  EXPECT_TRUE(fs::exists(dir_ / marker_name()));  // `scalescope profile` removes it after the job
  EXPECT_EQ(extra(r.trace, "nvml_handed_over"), "");
}

TEST_F(CollectWindows, RanklessSamplerHandsOverToLocalRankZero) {
  auto alone = run("sampler", {{"SCALESCOPE_NVML_HZ", "20"}});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_TRUE(alone.traced);
  EXPECT_GT(alone.trace.counters.size(), 0u);  // a plain job keeps its sampler
  EXPECT_EQ(extra(alone.trace, "nvml_handed_over"), "");
  EXPECT_FALSE(fs::exists(dir_ / marker_name()));
  for (const auto& e : fs::directory_iterator(dir_)) fs::remove(e.path());

  auto agent = run("sampler", {{"SCALESCOPE_NVML_HZ", "20"}, {"HAND_OVER", "1"}});
  ASSERT_EQ(agent.exit_code, 0) << agent.err;
  ASSERT_TRUE(agent.traced);
  EXPECT_EQ(extra(agent.trace, "nvml_handed_over"), "1");
  EXPECT_LT(agent.trace.counters.size(), alone.trace.counters.size());  // it stopped early
}

// The collector's count of nested profiler calls must not stay off by one
// when CUPTI is detached inside a call (its outer exit never comes back):
// the next window opens.
TEST_F(CollectWindows, DetachInsideAStrayStopKeepsLaterWindows) {
  auto r = run("stray-detach", {{"SCALESCOPE_CAPTURE_RANGE", "cudaProfilerApi"}});
  expect_windows(r, 2, 1, 8, "2", "1");  // 3 + 5 kernels
  EXPECT_EQ(extra(r.trace, "capture_stops_without_window"), "1");
}

// A stop with no window open (a start missed, or a stray stop) is counted,
// once per call: cudaProfilerStop's nested cuProfilerStop is the same stop.
TEST_F(CollectWindows, StopWithoutWindowIsCountedOncePerCall) {
  auto r = run("missed", {{"SCALESCOPE_CAPTURE_RANGE", "cudaProfilerApi"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.traced);
  EXPECT_EQ(extra(r.trace, "capture_stops_without_window"), "2");  // one runtime stop, one driver-only stop
  EXPECT_EQ(extra(r.trace, "windows_opened"), "0");
  EXPECT_EQ(r.trace.kernels.size(), 0u);
}

}  // namespace
}  // namespace scalescope
