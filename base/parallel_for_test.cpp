// The one thread pool's contract (base/parallel_for.hpp): every item once,
// results by index whatever the threads, and the lowest failing index's error.
#include "base/parallel_for.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

TEST(ParallelFor, EveryItemOnceAndResultsByIndex) {
  for (unsigned threads : {1u, 2u, 8u}) {
    std::vector<int> seen(1000, 0);
    std::vector<size_t> out(1000);
    std::atomic<unsigned> max_worker{0};
    size_t last_done = 0;
    parallel_for(
        seen.size(), threads,
        [&](size_t i, unsigned worker) {
          ++seen[i];
          out[i] = i * i;
          unsigned m = max_worker;
          while (worker > m && !max_worker.compare_exchange_weak(m, worker)) {}
        },
        [&](size_t done, size_t count) {
          EXPECT_EQ(done, last_done + 1);  // one call at a time, counting up
          EXPECT_EQ(count, 1000u);
          last_done = done;
        });
    EXPECT_EQ(last_done, 1000u);
    for (size_t i = 0; i < seen.size(); ++i) {
      ASSERT_EQ(seen[i], 1) << i;
      ASSERT_EQ(out[i], i * i);
    }
    EXPECT_LT(max_worker.load(), threads);
  }
  parallel_for(0, 4, [](size_t, unsigned) { FAIL() << "no items"; });
}

// Item 3 fails slowly, item 7 at once: the error of item 3 is the one thrown,
// whichever thread saw its failure first (the old loops of analyze_path and
// the C API threw item 7's).
TEST(ParallelFor, TheLowestFailingIndexWinsNotTheFirstInTime) {
  for (int round = 0; round < 3; ++round) {
    try {
      parallel_for(16, 4, [](size_t i, unsigned) {
        if (i == 3) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw std::runtime_error("file-3: bad");
        }
        if (i == 7) throw std::runtime_error("file-7: bad");
      });
      FAIL() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "file-3: bad");
    }
  }
}

TEST(ParallelFor, NoNewItemStartsAfterAnError) {
  std::atomic<size_t> started{0};
  EXPECT_THROW(parallel_for(100'000, 2,
                            [&](size_t i, unsigned) {
                              ++started;
                              if (i == 0) throw std::runtime_error("first");
                            }),
               std::runtime_error);
  EXPECT_LT(started.load(), 100'000u);
}

TEST(ParallelFor, WorkerCount) {
  EXPECT_EQ(worker_count(3, 10), 3u);
  EXPECT_EQ(worker_count(8, 2), 2u);
  EXPECT_EQ(worker_count(0, 1), 1u);
  EXPECT_EQ(worker_count(5, 0), 1u);
  EXPECT_LE(worker_count(0, 100, 4), 4u);
  EXPECT_GE(worker_count(0, 100, 4), 1u);
}

}  // namespace
}  // namespace scalescope::trace
