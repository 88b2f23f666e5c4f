#include "base/file_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace scalescope::trace {
namespace {

TEST(FilePool, RunsEveryIndexOnce) {
  for (unsigned threads : {1u, 2u, 4u, 16u}) {
    std::vector<std::atomic<int>> seen(100);
    for_each_file(seen.size(), threads, [&](size_t i) { ++seen[i]; });
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].load(), 1) << "index " << i << ", threads " << threads;
  }
}

TEST(FilePool, NoFilesNoCalls) {
  int calls = 0;
  for_each_file(0, 4, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(FilePool, UsesSeveralThreads) {
  // Two tasks that each wait for the other to start can only finish on two threads.
  std::atomic<int> started{0};
  for_each_file(2, 2, [&](size_t) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

// The error of the first file in list order wins, even when a later file fails first.
TEST(FilePool, RethrowsTheSmallestFailingIndex) {
  std::atomic<bool> later_failed{false};
  try {
    for_each_file(2, 2, [&](size_t i) {
      if (i == 1) {
        later_failed = true;
        throw std::runtime_error("file 1");
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!later_failed.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      throw std::runtime_error("file 0");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "file 0");
  }
  EXPECT_TRUE(later_failed.load());
}

TEST(FilePool, EarlierFilesFinishLaterOnesStop) {
  // One thread: a plain loop. Index 3 fails; 0-2 ran, 4.. were never started.
  std::vector<int> ran(10, 0);
  EXPECT_THROW(for_each_file(ran.size(), 1,
                             [&](size_t i) {
                               ran[i] = 1;
                               if (i == 3) throw std::runtime_error("3");
                             }),
               std::runtime_error);
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(FilePool, ThreadsBoundedByFilesAndMemory) {
  EXPECT_EQ(threads_for_files(1, 0), 1u);
  EXPECT_EQ(threads_for_files(0, 0), 1u);
  EXPECT_LE(threads_for_files(1000, 0), std::max(1u, std::thread::hardware_concurrency()));
  // More memory per file than any machine has: one thread, never zero.
  EXPECT_EQ(threads_for_files(8, uint64_t{1} << 62), 1u);
}

}  // namespace
}  // namespace scalescope::trace
