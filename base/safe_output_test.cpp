#include "base/safe_output.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

class SafeOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scalescope_safe_output_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "in.sstrace") << "input";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string error_of(const fs::path& out, const std::vector<fs::path>& inputs, bool replace) {
    try {
      check_output(out, inputs, replace);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

// The input is recognised however the output names it: the same text, another
// spelling, a symlink, a hard link (same device and inode).
TEST_F(SafeOutputTest, NeverWritesOverAnInput) {
  const fs::path in = dir_ / "in.sstrace";
  EXPECT_NE(error_of(in, {in}, true).find("the output is the input"), std::string::npos);
  EXPECT_NE(error_of(dir_ / "." / "in.sstrace", {in}, true).find("the output is the input"), std::string::npos);
  fs::create_symlink(in, dir_ / "link.sstrace");
  EXPECT_NE(error_of(dir_ / "link.sstrace", {in}, true).find("the output is the input"), std::string::npos);
  fs::create_hard_link(in, dir_ / "hard.sstrace");
  EXPECT_NE(error_of(dir_ / "hard.sstrace", {in}, true).find("the output is the input"), std::string::npos);
  // A directory output replaced as a whole must not hold an input.
  EXPECT_NE(error_of(dir_, {in}, true).find("holds the input"), std::string::npos);
  // Another file: allowed when replacing is, refused (with the way out) when not.
  std::ofstream(dir_ / "old.html") << "x";
  EXPECT_EQ(error_of(dir_ / "old.html", {in}, true), "");
  EXPECT_NE(error_of(dir_ / "old.html", {in}, false).find("already exists; pass --force"), std::string::npos);
  EXPECT_EQ(error_of(dir_ / "new.html", {in}, false), "");
  EXPECT_TRUE(same_file(in, dir_ / "hard.sstrace"));
  EXPECT_FALSE(same_file(in, dir_ / "old.html"));
  EXPECT_FALSE(same_file(in, dir_ / "missing"));
}

// Nothing is written inside an input folder, however deep and however the
// output names it (relative, through a symlink to the folder or to a folder
// inside it, a file that does not exist yet under a folder that does not either).
TEST_F(SafeOutputTest, NeverWritesInsideAnInputFolder) {
  const fs::path run = dir_ / "run.ssrun";
  fs::create_directories(run / "sub");
  std::ofstream(run / "rank0.json.gz") << "trace";
  const std::string inside = "is inside the input folder";
  EXPECT_NE(error_of(run / "rank0.json.gz", {run}, true).find(inside), std::string::npos);
  EXPECT_NE(error_of(run / "new.html", {run}, true).find(inside), std::string::npos);
  EXPECT_NE(error_of(run / "sub" / "deeper" / "new.html", {run}, true).find(inside), std::string::npos);
  EXPECT_NE(error_of(run / "sub" / ".." / "x.csv", {dir_ / "in.sstrace", run}, true).find(inside), std::string::npos);
  fs::create_directory_symlink(run / "sub", dir_ / "alias");
  EXPECT_NE(error_of(dir_ / "alias" / "r.html", {run}, true).find(inside), std::string::npos);
  fs::create_directory_symlink(run, dir_ / "run-link");
  EXPECT_NE(error_of(run / "r.html", {dir_ / "run-link"}, true).find(inside), std::string::npos);
  const fs::path cwd = fs::current_path();
  fs::current_path(run);
  EXPECT_NE(error_of("report.html", {run}, true).find(inside), std::string::npos);
  EXPECT_NE(error_of("not-yet/report.html", {"."}, true).find(inside), std::string::npos);
  fs::current_path(cwd);
  // Beside the folder is fine; so is inside a folder that is not an input.
  EXPECT_EQ(error_of(dir_ / "run.html", {run}, true), "");
  EXPECT_EQ(error_of(dir_ / "run.ssrun.html", {run}, true), "");
  EXPECT_EQ(error_of(run / "x.html", {dir_ / "in.sstrace"}, true), "");
}

TEST_F(SafeOutputTest, TempPathIsRemovedUnlessCommitted) {
  const fs::path out = dir_ / "out.csv";
  {
    TempPath tmp(temp_path_for(out));
    std::ofstream(tmp.path()) << "partial";
    EXPECT_TRUE(fs::exists(tmp.path()));
  }
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
  {
    TempPath tmp(temp_path_for(out));
    std::ofstream(tmp.path()) << "whole";
    tmp.commit_to(out);
  }
  std::ifstream in(out);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "whole");
}

// A command killed by SIGINT/SIGTERM/SIGHUP leaves no temporary file behind.
TEST_F(SafeOutputTest, CatchableSignalsRemoveRegisteredTemporaries) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path tmp = temp_path_for(dir_ / ("out-" + std::to_string(sig)));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, SIG_DFL);
      TempPath t(tmp);
      std::ofstream(t.path()) << "partial output";
      ::pause();
      ::_exit(0);
    }
    for (int i = 0; i < 500 && !fs::exists(tmp); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(tmp)) << sig;
    ::kill(child, sig);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << sig;
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), sig);  // still dies of the signal
    }
    EXPECT_FALSE(fs::exists(tmp)) << "signal " << sig << " left " << tmp;
  }
}

}  // namespace
}  // namespace scalescope::trace
