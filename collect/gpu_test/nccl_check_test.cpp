#include "collect/gpu_test/nccl_check.hpp"

#include <gtest/gtest.h>

#include "collect/gpu_test/ground_truth_spec.hpp"
#include "base/error.hpp"

namespace scalescope::collect {
namespace {

namespace gt = ground_truth;

bool all_pass(const std::vector<GpuCheck>& checks) {
  bool ok = true;
  for (const auto& c : checks) {
    if (!c.pass) ADD_FAILURE() << c.name << ": " << c.detail;
    ok = ok && c.pass;
  }
  return ok;
}
bool any_fails(const std::vector<GpuCheck>& checks) {
  for (const auto& c : checks)
    if (!c.pass) return true;
  return false;
}

trace::Trace ground_truth_nccl() {
  trace::Trace t;
  const auto comm = t.strings.intern("0123456789abcdef");
  for (int r = 0; r < gt::kAllReduces; ++r)
    for (uint32_t d = 0; d < gt::kNcclDevices; ++d)
      t.nccl.push({.start = r * 100 + d,
                   .device = d,
                   .op = trace::NcclOp::kAllReduce,
                   .bytes = gt::kAllReduceFloats * 4,
                   .communicator = comm,
                   .sequence = r});
  t.meta.extra["nccl_kernels_joined"] = "20";
  t.meta.extra["nccl_kernels_unjoined"] = "0";
  return t;
}

TEST(CollectNcclCheck, GroundTruthBytesAndSequence) {
  EXPECT_TRUE(all_pass(check_ground_truth_nccl({ground_truth_nccl()})));
  auto t = ground_truth_nccl();
  t.nccl.bytes[3] = 0;  // one kernel without its call's bytes
  EXPECT_TRUE(any_fails(check_ground_truth_nccl({t})));
  t = ground_truth_nccl();
  std::swap(t.nccl.sequence[0], t.nccl.sequence[2]);  // out of order on device 0
  EXPECT_TRUE(any_fails(check_ground_truth_nccl({t})));
  t = ground_truth_nccl();
  t.meta.extra["nccl_kernels_unjoined"] = "1";
  EXPECT_TRUE(any_fails(check_ground_truth_nccl({t})));
  EXPECT_TRUE(any_fails(check_ground_truth_nccl({})));
}

std::vector<trace::Trace> sized_job(int calls) {
  std::vector<trace::Trace> out;
  for (int rank = 0; rank < 2; ++rank) {
    trace::Trace t;
    t.meta.rank = rank;
    const auto comm = t.strings.intern("00000000cafe0001");
    int64_t seq = 0;
    for (int i = 0; i < calls; ++i) {
      t.nccl.push({.start = 10 * seq,
                   .device = uint32_t(rank),
                   .op = trace::NcclOp::kAllReduce,
                   .bytes = 4194332,
                   .communicator = comm,
                   .sequence = seq});
      ++seq;
      t.nccl.push({.start = 10 * seq,
                   .device = uint32_t(rank),
                   .op = trace::NcclOp::kAllGather,
                   .bytes = 262148,
                   .communicator = comm,
                   .sequence = seq});
      ++seq;
    }
    t.nccl.push({.start = 10 * seq, .op = trace::NcclOp::kAllReduce, .bytes = 4});  // barrier: not expected, ignored
    out.push_back(std::move(t));
  }
  return out;
}

TEST(CollectNcclCheck, SizedJobAgreesAcrossRanks) {
  std::vector<ExpectedNcclCalls> want = {parse_expected_nccl_calls("AllReduce:4194332:5"),
                                         parse_expected_nccl_calls("AllGather:262148:5")};
  EXPECT_TRUE(all_pass(check_nccl_sizes(sized_job(5), 2, want)));
  EXPECT_TRUE(any_fails(check_nccl_sizes(sized_job(4), 2, want)));  // a call missing
  EXPECT_TRUE(any_fails(check_nccl_sizes(sized_job(5), 3, want)));  // a rank missing
  auto job = sized_job(5);
  job[1].nccl.sequence[0] = 7;  // rank 1 numbers its first call differently
  EXPECT_TRUE(any_fails(check_nccl_sizes(job, 2, want)));
}

TEST(CollectNcclCheck, ExpectedCallsText) {
  auto e = parse_expected_nccl_calls("ReduceScatter:32772:5");
  EXPECT_EQ(e.op, trace::NcclOp::kReduceScatter);
  EXPECT_EQ(e.bytes, 32772u);
  EXPECT_EQ(e.calls, 5u);
  EXPECT_THROW(parse_expected_nccl_calls("AllReduce:12"), Error);
  EXPECT_THROW(parse_expected_nccl_calls("Teleport:1:2"), Error);
  EXPECT_THROW(parse_expected_nccl_calls("AllReduce:x:2"), Error);
  EXPECT_THROW(parse_expected_nccl_calls("AllReduce:1:2:3"), Error);
}

}  // namespace
}  // namespace scalescope::collect
