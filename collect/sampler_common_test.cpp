#include "collect/sampler_common.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace scalescope::collect {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(SamplerCommon, ThreadCpuTimeCountsWorkNotSleep) {
  const uint64_t t0 = thread_cpu_now();
  std::this_thread::sleep_for(milliseconds(50));
  const uint64_t t1 = thread_cpu_now();
  volatile uint64_t v = 1;
  const auto until = Clock::now() + milliseconds(30);
  while (Clock::now() < until) v = v * 6364136223846793005ull + 1;
  const uint64_t t2 = thread_cpu_now();
  EXPECT_LT(t1 - t0, uint64_t{20'000'000});  // asleep: far less than the 50 ms
  EXPECT_GT(t2 - t1, uint64_t{1'000'000});   // busy: some of the 30 ms at least
}

TEST(SamplerCommon, TicksUntilStopped) {
  std::atomic<bool> stop{false};
  int ticks = 0;
  run_every(milliseconds(1), stop, [&] {
    if (++ticks == 5) stop = true;
  });
  EXPECT_EQ(ticks, 5);
}

TEST(SamplerCommon, StopEndsALongWaitPromptly) {
  std::atomic<bool> stop{false};
  int ticks = 0;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    stop = true;
  });
  const auto t0 = Clock::now();
  run_every(std::chrono::seconds(60), stop, [&] { ++ticks; });
  stopper.join();
  EXPECT_EQ(ticks, 1);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));  // not the minute of the period
}

TEST(SamplerCommon, ALateTickSkipsInsteadOfBursting) {
  std::atomic<bool> stop{false};
  std::vector<Clock::time_point> starts;
  run_every(milliseconds(20), stop, [&] {
    starts.push_back(Clock::now());
    if (starts.size() == 1) std::this_thread::sleep_for(milliseconds(200));  // ten periods late
    if (starts.size() == 3) stop = true;
  });
  ASSERT_EQ(starts.size(), 3u);
  // The second tick comes at once; the third a whole period after it, not
  // right behind it to make up for the ticks missed.
  EXPECT_GE(starts[2] - starts[1], milliseconds(15));
}

TEST(SamplerCommon, MoveRowsToEndAppendsEveryColumnInOrderAndEmptiesTheSource) {
  trace::HostStackSampleTable to, from;
  to.push({.time = 1, .pid = 10, .tid = 11, .callsite = 5});
  from.push({.time = 2, .pid = 10, .tid = 12, .callsite = 6});
  from.push({.time = 3, .pid = 20, .tid = 21, .callsite = 7});
  move_rows_to_end(to, from);
  ASSERT_EQ(to.size(), 3u);
  EXPECT_EQ(to.time, (std::vector<trace::Timestamp>{1, 2, 3}));
  EXPECT_EQ(to.pid, (std::vector<uint32_t>{10, 10, 20}));
  EXPECT_EQ(to.tid, (std::vector<uint32_t>{11, 12, 21}));
  EXPECT_EQ(to.callsite, (std::vector<uint32_t>{5, 6, 7}));
  EXPECT_EQ(from.size(), 0u);
  EXPECT_TRUE(from.callsite.empty());
  move_rows_to_end(to, from);  // nothing pending: nothing changes
  EXPECT_EQ(to.size(), 3u);
}

}  // namespace
}  // namespace scalescope::collect
