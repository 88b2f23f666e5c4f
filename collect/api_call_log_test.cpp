#include "collect/api_call_log.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace scalescope::collect {
namespace {

LoggedApiCall call(uint32_t correlation, uint32_t generation = 0) {
  LoggedApiCall c;
  c.call.correlation = correlation;
  c.call.start = correlation * 10;
  c.call.end = correlation * 10 + 5;
  c.generation = generation;
  return c;
}

TEST(ApiCallLog, DrainsEveryThreadsCallsInOrderOnce) {
  ApiCallLog log;
  constexpr uint32_t kThreads = 4, kCalls = 1000;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&log, t] {
      for (uint32_t i = 0; i < kCalls; ++i) log.add(call(t * kCalls + i));
    });
  for (auto& t : threads) t.join();  // the threads have ended: their calls are still there
  std::vector<LoggedApiCall> out;
  log.drain(out);
  ASSERT_EQ(out.size(), size_t{kThreads} * kCalls);
  // Each thread's calls stay in their order, and every call comes exactly once.
  std::vector<int> seen(kThreads * kCalls, 0);
  std::vector<int64_t> last(kThreads, -1);
  for (const auto& c : out) {
    ++seen[c.call.correlation];
    const uint32_t t = c.call.correlation / kCalls;
    EXPECT_GT(int64_t(c.call.correlation), last[t]);
    last[t] = c.call.correlation;
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  out.clear();
  log.drain(out);
  EXPECT_TRUE(out.empty());
  log.add(call(7, 3));
  log.drain(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].generation, 3u);
  EXPECT_EQ(log.dropped(), 0u);
}

TEST(ApiCallLog, ALaterLogDoesNotReuseAnEarlierLogsBuffer) {
  std::vector<LoggedApiCall> out;
  {
    ApiCallLog first;
    first.add(call(1));
  }
  ApiCallLog second;  // may live at the first one's address
  second.add(call(2));
  second.drain(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].call.correlation, 2u);
}

TEST(ApiCallLog, BoundsWhatOneThreadHolds) {
  ApiCallLog log;
  for (size_t i = 0; i < ApiCallLog::kMaxPerThread + 3; ++i) log.add(call(1));
  EXPECT_EQ(log.dropped(), 3u);
  std::vector<LoggedApiCall> out;
  log.drain(out);
  EXPECT_EQ(out.size(), ApiCallLog::kMaxPerThread);
}

}  // namespace
}  // namespace scalescope::collect
