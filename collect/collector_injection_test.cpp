// The real libscalescope-collector.so in processes without CUDA (this
// machine has no GPU and no libcuda): loading it has no effect, a missing run
// directory or a failing CUPTI gives one warning line, and a forked child
// never starts a collector.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace {

namespace fs = std::filesystem;
using InitFn = int (*)();

class CollectInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(SCALESCOPE_COLLECTOR_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    init_ = reinterpret_cast<InitFn>(dlsym(handle_, "InitializeInjection"));
    ASSERT_NE(init_, nullptr);
  }
  void* handle_ = nullptr;
  InitFn init_ = nullptr;
};

// Runs the helper (a fresh process: a forked one would be untraced by
// design) with extra environment; returns {exit code, stderr}.
std::pair<int, std::string> run_host(const char* mode, const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, ""};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    unsetenv("SCALESCOPE_RUN_DIR");
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl(SCALESCOPE_INJECTION_HOST, SCALESCOPE_INJECTION_HOST, SCALESCOPE_COLLECTOR_PATH, mode, nullptr);
    _exit(99);
  }
  close(fds[1]);
  std::string err;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err};
}

TEST_F(CollectInjection, ExportsOnlyTheEntryPoints) {
  EXPECT_NE(dlsym(handle_, "InitializeInjectionNvtx2"), nullptr);
  // fmt, zstd and our own symbols stay inside: no clash with the job's copies.
  EXPECT_EQ(dlsym(handle_, "ZSTD_compress"), nullptr);
  EXPECT_EQ(dlsym(handle_, "_ZN3fmt2v96detail10locale_ref3getISt6localeEET_v"), nullptr);
}

TEST_F(CollectInjection, WithoutRunDirItWarnsOnceAndDoesNothing) {
  auto [code, err] = run_host("init", {});
  EXPECT_EQ(code, 7);
  EXPECT_EQ(err,
            "scalescope: warning: SCALESCOPE_RUN_DIR is not set (run the job under `scalescope profile`); "
            "the job runs untraced\n");
}

TEST_F(CollectInjection, BadOptionIsOneWarningLine) {
  auto [code, err] = run_host("init", {{"SCALESCOPE_RUN_DIR", "/tmp"}, {"SCALESCOPE_BUFFER_MB", "lots"}});
  EXPECT_EQ(code, 7);
  EXPECT_NE(err.find("scalescope: warning: SCALESCOPE_BUFFER_MB='lots'"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

TEST_F(CollectInjection, NoGpuMeansUntracedAndTheProcessCarriesOn) {
  fs::path dir = fs::temp_directory_path() / ("scalescope-inject-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto [code, err] = run_host("init", {{"SCALESCOPE_RUN_DIR", dir.string()}, {"SCALESCOPE_NVML_HZ", "0"}});
  EXPECT_EQ(code, 7);  // the "job" goes on and exits with its own code
  // CUPTI cannot start without a driver: one warning, the job untraced.
  EXPECT_NE(err.find("scalescope: warning: "), std::string::npos);
  EXPECT_NE(err.find("untraced"), std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  fs::remove_all(dir);
}

TEST_F(CollectInjection, ForkedChildNeverStartsACollector) {
  fs::path dir = fs::temp_directory_path() / ("scalescope-fork-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The library is loaded before the fork, as in a DataLoader worker forked
  // from a rank: the child's InitializeInjection must do nothing at all.
  auto [code, err] = run_host("fork", {{"SCALESCOPE_RUN_DIR", dir.string()}});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(err, "");              // not even a warning
  EXPECT_TRUE(fs::is_empty(dir));  // no trace file, no sidecar
  fs::remove_all(dir);
}

}  // namespace
