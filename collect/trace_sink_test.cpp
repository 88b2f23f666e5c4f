// The collector's write path: a full disk, an unwritable directory, and a
// writer killed with SIGKILL mid-run.
#include "collect/trace_sink.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "trace/model/trace_file.hpp"

namespace scalescope::collect {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const char* name) {
  fs::path dir = fs::temp_directory_path() / (std::string("scalescope-") + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A batch of `n` kernels named from the shared string table.
trace::Trace kernel_batch(trace::StringTable& strings, int n, int64_t t0) {
  trace::Trace batch;
  trace::StringId name = strings.intern("gemm_" + std::to_string(t0 % 7));
  for (int i = 0; i < n; ++i) {
    trace::KernelRecord k;
    k.start = t0 + 1 + i * 10;  // CUPTI's timestamps are never 0 (0 marks an unfinished record)
    k.end = k.start + 5;
    k.name = name;
    k.correlation = static_cast<uint32_t>(i);
    batch.kernels.push(k);
  }
  return batch;
}

TEST(CollectTraceSink, DiskFullDropsCountsWarnsOnceAndRecovers) {
  fs::path dir = temp_dir("sink-full");
  trace::Metadata meta;
  meta.source = "collector";
  meta.pid = 42;
  std::vector<std::string> warnings;
  std::string error;
  auto sink = TraceSink::open(
      dir / "h-42.sstrace", meta, [&](const std::string& w) { warnings.push_back(w); }, &error);
  ASSERT_NE(sink, nullptr) << error;
  trace::StringTable strings;
  ASSERT_TRUE(sink->append(kernel_batch(strings, 100, 0), strings));
  // The next write hits ENOSPC half-way, as a full disk would.
  sink->writer().inject_write_failure(0, ENOSPC);
  EXPECT_FALSE(sink->append(kernel_batch(strings, 50, 10000), strings));
  EXPECT_TRUE(sink->failing());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("h-42.sstrace"), std::string::npos);
  EXPECT_NE(warnings[0].find("dropped and counted"), std::string::npos);
  // Space is back: writing resumes, with one "works again" line.
  ASSERT_TRUE(sink->append(kernel_batch(strings, 30, 20000), strings));
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_EQ(sink->events_written(), 130u);
  EXPECT_EQ(sink->events_lost(), 50u);
  sink->finish(meta, {});
  trace::Trace back = trace::read_trace(dir / "h-42.sstrace");
  EXPECT_EQ(back.kernels.size(), 130u);  // nothing already written was lost
  EXPECT_EQ(back.problems.get(trace::Problem::kDroppedRecords), 50u);
  EXPECT_EQ(back.problems.get(trace::Problem::kTornTail), 0u);
  fs::remove_all(dir);
}

// The collector's last batch (after the host sampler stopped) may hold only
// thread rows, stack samples, callsites and modules, no counted event: it
// must be written all the same (it was dropped, and with it the threads'
// last rows and the last stack samples, when the sampler took no tick
// between the encoder's last flush and its stop: seen under heavy load).
TEST(CollectTraceSink, WritesABatchOfHostRowsWithoutEvents) {
  fs::path dir = temp_dir("sink-host");
  trace::Metadata meta;
  meta.source = "collector";
  meta.pid = 42;
  std::string error;
  auto sink = TraceSink::open(dir / "h-42.sstrace", meta, nullptr, &error);
  ASSERT_NE(sink, nullptr) << error;
  trace::StringTable strings;
  trace::Trace batch;
  trace::HostThreadRecord thread;
  thread.start = 10;
  thread.end = 20;
  thread.pid = thread.tid = 42;
  thread.name = strings.intern("python");
  batch.host_threads.push(thread);
  batch.host_callsites.push({1, 0, trace::kNoString, strings.intern("/usr/bin/python3"), 0x40, trace::FrameStatus::kUnnamed});
  batch.host_stack_samples.push({15, 42, 42, 1});
  batch.host_modules.push({42, strings.intern("/usr/bin/python3"), trace::kNoString, 0x1000, 0x2000, 0});
  ASSERT_EQ(batch.event_count(), 0u);
  EXPECT_TRUE(sink->append(batch, strings));
  sink->finish(meta, {});
  trace::Trace back = trace::read_trace(dir / "h-42.sstrace");
  EXPECT_EQ(back.host_threads.size(), 1u);
  EXPECT_EQ(back.host_callsites.size(), 1u);
  EXPECT_EQ(back.host_stack_samples.size(), 1u);
  EXPECT_EQ(back.host_modules.size(), 1u);
  fs::remove_all(dir);
}

TEST(CollectTraceSink, UnwritableDirectoryIsAnErrorNotACrash) {
  fs::path dir = temp_dir("sink-bad");
  fs::path file = dir / "not-a-dir";
  { std::ofstream(file) << "x"; }
  std::string error;
  auto sink = TraceSink::open(file / "h-1.sstrace", {}, nullptr, &error);
  EXPECT_EQ(sink, nullptr);
  EXPECT_FALSE(error.empty());
  fs::remove_all(dir);
}

TEST(CollectTraceSink, KilledWriterLeavesEveryCompleteChunk) {
  fs::path dir = temp_dir("sink-kill");
  fs::path path = dir / "h-7.sstrace";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child writes batches of 1000 kernels as fast as it can until killed.
    trace::Metadata meta;
    meta.pid = 7;
    std::string error;
    auto sink = TraceSink::open(path, meta, nullptr, &error);
    if (!sink) _exit(3);
    trace::StringTable strings;
    for (int64_t i = 0;; ++i) sink->append(kernel_batch(strings, 1000, i * 100000), strings);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::error_code ec;
  while (std::chrono::steady_clock::now() < deadline && (fs::file_size(path, ec) < (256u << 10) || ec))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  trace::Trace back = trace::read_trace(path);
  EXPECT_GT(back.kernels.size(), 0u);
  EXPECT_EQ(back.kernels.size() % 1000, 0u);  // whole batches only: a torn chunk is dropped, not half-read
  EXPECT_EQ(back.meta.pid, 7u);
  for (size_t i = 0; i < back.kernels.size(); ++i) ASSERT_FALSE(back.strings.view(back.kernels.name[i]).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace scalescope::collect
