#include "collect/nccl_nvtx_joiner.hpp"

#include <gtest/gtest.h>

namespace scalescope::collect {
namespace {

using trace::NcclOp;

constexpr uint64_t kComm = 0xabcdef0123456789ull;

NcclNvtxCall call(uint64_t bytes, uint64_t comm = kComm, NcclOp op = NcclOp::kAllReduce) {
  NcclNvtxCall c;
  c.op = op;
  c.communicator = comm;
  c.bytes = bytes;
  return c;
}

class NcclNvtxJoinerTest : public ::testing::Test {
 protected:
  trace::NcclRecord kernel(uint32_t correlation, uint32_t device = 0) {
    trace::NcclRecord r;
    r.correlation = correlation;
    r.device = device;
    r.op = NcclOp::kAllReduce;
    r.datatype = strings_.intern("f32");
    r.start = 1000000 + correlation;
    r.end = r.start + 10;
    return r;
  }
  trace::NcclTable drain(bool force = false) {
    trace::NcclTable out;
    j_.drain(out, strings_, force);
    return out;
  }
  std::string comm(const trace::NcclTable& t, size_t i) { return std::string(strings_.view(t.communicator[i])); }

  trace::StringTable strings_;
  NcclNvtxJoiner j_{2};
};

TEST_F(NcclNvtxJoinerTest, KernelGetsBytesOfTheRangeAroundItsLaunch) {
  j_.add_range(7, 100, 200, call(4u << 20));
  j_.add_launch(7, 150, 42);
  j_.add_kernel(kernel(42));
  auto t = drain();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes[0], 4u << 20);
  EXPECT_EQ(t.count[0], 1u << 20);  // f32
  EXPECT_EQ(t.sequence[0], 0);
  EXPECT_EQ(comm(t, 0), "abcdef0123456789");
  EXPECT_EQ(j_.stats().joined, 1u);
}

TEST_F(NcclNvtxJoinerTest, SequenceCountsCallsPerCommunicatorAndDevice) {
  for (uint32_t i = 0; i < 3; ++i) {
    j_.add_range(1, 1000 * i, 1000 * i + 500, call(64));
    j_.add_launch(1, 1000 * i + 100, 10 + i);
    j_.add_kernel(kernel(10 + i));
  }
  j_.add_range(1, 5000, 5500, call(64, 99));  // another communicator
  j_.add_launch(1, 5100, 20);
  j_.add_kernel(kernel(20));
  auto t = drain();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.sequence[0], 0);
  EXPECT_EQ(t.sequence[1], 1);
  EXPECT_EQ(t.sequence[2], 2);
  EXPECT_EQ(t.sequence[3], 0);
  EXPECT_EQ(comm(t, 3), "0000000000000063");
}

TEST_F(NcclNvtxJoinerTest, WaitsForLateRecordsThenGivesUp) {
  j_.add_kernel(kernel(5));  // the kernel's record came first
  EXPECT_EQ(drain().size(), 0u);
  j_.add_launch(3, 50, 5);
  EXPECT_EQ(drain().size(), 0u);  // its range has not ended yet
  j_.add_range(3, 40, 60, call(128));
  auto t = drain();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes[0], 128u);

  j_.add_kernel(kernel(6));  // never launched on a traced thread
  EXPECT_EQ(drain().size(), 0u);
  EXPECT_EQ(drain().size(), 0u);
  auto late = drain();  // waited more than 2 drains
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late.bytes[0], 0u);
  EXPECT_EQ(late.sequence[0], -1);
  EXPECT_EQ(j_.stats().unjoined, 1u);
  j_.add_kernel(kernel(7));
  EXPECT_EQ(drain(/*force=*/true).size(), 1u);
}

TEST_F(NcclNvtxJoinerTest, RowsLeaveInArrivalOrder) {
  j_.add_kernel(kernel(1));  // not joinable yet
  j_.add_range(1, 100, 200, call(8));
  j_.add_launch(1, 150, 2);
  j_.add_kernel(kernel(2));       // joinable
  EXPECT_EQ(drain().size(), 0u);  // waits behind the first
  j_.add_range(1, 10, 20, call(16));
  j_.add_launch(1, 15, 1);
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.correlation[0], 1u);
  EXPECT_EQ(t.bytes[0], 16u);
  EXPECT_EQ(t.bytes[1], 8u);
}

// ground_truth.cu: one thread, ncclCommInitAll over 2 GPUs (one communicator
// hash), ncclGroupStart; an all-reduce per device; ncclGroupEnd launches one
// kernel per device.
TEST_F(NcclNvtxJoinerTest, GroupWithOneKernelPerCall) {
  for (uint32_t it = 0; it < 3; ++it) {
    const int64_t base = 1000 * it;
    j_.add_range(1, base + 10, base + 20, call(4u << 20));
    j_.add_range(1, base + 30, base + 40, call(4u << 20));
    j_.add_launch(1, base + 60, 100 + 2 * it);
    j_.add_launch(1, base + 70, 101 + 2 * it);
    j_.add_range(1, base + 50, base + 100, std::nullopt);  // ncclGroupEnd
    j_.add_kernel(kernel(100 + 2 * it, 0));
    j_.add_kernel(kernel(101 + 2 * it, 1));
  }
  auto t = drain();
  ASSERT_EQ(t.size(), 6u);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t.bytes[i], 4u << 20) << i;
    EXPECT_EQ(t.sequence[i], static_cast<int64_t>(i / 2)) << i;  // per device: 0, 1, 2
  }
  EXPECT_EQ(j_.stats().joined, 6u);
}

TEST_F(NcclNvtxJoinerTest, GroupWithOneKernelForAllCalls) {
  j_.add_range(1, 10, 20, call(100));
  j_.add_range(1, 30, 40, call(200));
  j_.add_range(1, 45, 48, call(300));
  j_.add_launch(1, 60, 9);
  j_.add_range(1, 50, 100, std::nullopt);
  j_.add_kernel(kernel(9));
  // The next call after the group counts on from 3.
  j_.add_range(1, 200, 300, call(50));
  j_.add_launch(1, 250, 10);
  j_.add_kernel(kernel(10));
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes[0], 600u);
  EXPECT_EQ(t.sequence[0], 0);
  EXPECT_EQ(t.bytes[1], 50u);
  EXPECT_EQ(t.sequence[1], 3);
}

TEST_F(NcclNvtxJoinerTest, GroupWithOneKernelPerCommunicator) {
  j_.add_range(1, 10, 20, call(100, 1));
  j_.add_range(1, 30, 40, call(200, 1));
  j_.add_range(1, 41, 44, call(300, 2));
  j_.add_launch(1, 60, 1);
  j_.add_launch(1, 70, 2);
  j_.add_range(1, 50, 100, std::nullopt);
  j_.add_kernel(kernel(1, 0));
  j_.add_kernel(kernel(2, 0));
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes[0], 300u);
  EXPECT_EQ(comm(t, 0), "0000000000000001");
  EXPECT_EQ(t.bytes[1], 300u);
  EXPECT_EQ(comm(t, 1), "0000000000000002");
}

TEST_F(NcclNvtxJoinerTest, CallsThatLaunchedTheirOwnKernelAreNotGrouped) {
  j_.add_range(1, 10, 20, call(111));  // launched its own kernel
  j_.add_launch(1, 15, 1);
  j_.add_kernel(kernel(1));
  j_.add_range(1, 30, 40, call(222));  // grouped
  j_.add_launch(1, 60, 2);
  j_.add_range(1, 50, 100, std::nullopt);
  j_.add_kernel(kernel(2));
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes[0], 111u);
  EXPECT_EQ(t.bytes[1], 222u);
  EXPECT_EQ(t.sequence[1], 1);
}

TEST_F(NcclNvtxJoinerTest, SecondKernelOfOneCallHasNoBytesButTheSameSequence) {
  j_.add_range(1, 10, 100, call(1000));
  j_.add_launch(1, 20, 1);
  j_.add_launch(1, 30, 2);
  j_.add_kernel(kernel(1));
  j_.add_kernel(kernel(2));
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes[0], 1000u);
  EXPECT_EQ(t.bytes[1], 0u);
  EXPECT_EQ(t.sequence[1], t.sequence[0]);
}

TEST_F(NcclNvtxJoinerTest, GroupSizeFromCreationPayloadOrUnknown) {
  j_.add_range(1, 10, 100, call(8, 5));
  j_.add_launch(1, 20, 1);
  j_.add_kernel(kernel(1));
  NcclNvtxCall init;
  init.communicator = 6;
  init.ranks = 2;
  j_.add_range(1, 200, 210, init);
  j_.add_range(1, 300, 400, call(8, 6));
  j_.add_launch(1, 310, 2);
  j_.add_kernel(kernel(2));
  auto t = drain();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.group_size[0], -1);
  EXPECT_EQ(t.group_size[1], 2);
}

TEST_F(NcclNvtxJoinerTest, ManyComputeLaunchesDoNotPushOutTheNcclLaunch) {
  // More compute launches than any bound, before and after the call, all on
  // the thread that calls NCCL (PyTorch's main thread).
  const uint32_t n = static_cast<uint32_t>(NcclNvtxJoiner::kMaxLaunches) + 1000;
  for (uint32_t i = 0; i < n; ++i) j_.add_launch(1, i, 1000000 + i);
  j_.add_launch(1, n + 10, 7);  // NCCL's, before its range's end record
  j_.add_range(1, n + 5, n + 20, call(4096));
  for (uint32_t i = 0; i < n; ++i) j_.add_launch(1, n + 100 + i, 2000000 + i);
  j_.add_kernel(kernel(7));
  auto t = drain();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes[0], 4096u);
}

TEST_F(NcclNvtxJoinerTest, MemoryStaysBounded) {
  for (uint32_t i = 0; i < NcclNvtxJoiner::kMaxRanges + 100; ++i) {
    j_.add_range(1, i * 10, i * 10 + 5, call(1));
    j_.add_launch(2, i * 10, i);  // a thread without NCCL ranges (compute kernels)
  }
  drain();
  EXPECT_GE(j_.stats().ranges_dropped, 100u);
  // Far later: everything older than the horizon is pruned.
  j_.add_range(1, NcclNvtxJoiner::kHorizonNs * 3, NcclNvtxJoiner::kHorizonNs * 3 + 1, call(1));
  drain();
  j_.add_kernel(kernel(5));  // its launch was pruned
  EXPECT_EQ(drain(true).bytes[0], 0u);
}

}  // namespace
}  // namespace scalescope::collect
