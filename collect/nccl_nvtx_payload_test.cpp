#include "collect/nccl_nvtx_payload.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace scalescope::collect {
namespace {

// Entry types and ids as NCCL 2.28 registers them (nvtx_payload_schemas.h:
// NVTX_PAYLOAD_ENTRY_TYPE_UINT64 = 18, _SIZE = 22, _INT = 5; the reduction op
// is an enum registered under static schema id 20 + (1 << 24)).
constexpr uint64_t kUint64 = 18, kSize = 22, kInt = 5, kUint8 = 12, kCstring = 75;
constexpr uint64_t kRedOpEnum = kNvtxPayloadSchemaIdStaticStart + 20;

struct AllReducePayload {  // NcclNvtxParamsAllReduce
  uint64_t comm;
  size_t bytes;
  int op;  // ncclRedOp_t
};
struct BroadcastPayload {  // NcclNvtxParamsBroadcast
  uint64_t comm;
  size_t bytes;
  int root;
};
struct CommInitPayload {  // NcclNvtxParamsCommInitRank
  uint64_t newcomm;
  int nranks, myrank, cudaDev;
};

PayloadSchema all_reduce_schema() {
  PayloadSchema s;
  s.id = kNvtxPayloadSchemaIdStaticStart + 5;
  s.static_size = sizeof(AllReducePayload);
  s.entries = {{0, kUint64, "NCCL communicator ID", 0, offsetof(AllReducePayload, comm)},
               {0, kSize, "Message size [bytes]", 0, offsetof(AllReducePayload, bytes)},
               {0, kRedOpEnum, "Reduction operation", 0, offsetof(AllReducePayload, op)}};
  return s;
}

PayloadEnum red_op_enum() { return {kRedOpEnum, 4, {{"Sum", 0}, {"Product", 1}, {"Max", 2}, {"Min", 3}, {"Avg", 4}}}; }

template <typename T>
std::vector<uint8_t> bytes_of(const T& v) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

TEST(NcclNvtxPayload, DecodesAllReduceBySchemaAndEnum) {
  AllReducePayload p{};
  p.comm = 0x1234abcd5678ef00ull;
  p.bytes = 4u << 20;
  p.op = 2;  // ncclMax
  const PayloadEnum e = red_op_enum();
  auto fields =
      decode_payload(bytes_of(p), all_reduce_schema(), [&e](uint64_t id) { return id == e.id ? &e : nullptr; });
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0].value, 0x1234abcd5678ef00ull);
  EXPECT_EQ(fields[1].value, 4u << 20);
  EXPECT_EQ(fields[2].text, "Max");
  auto call = nccl_call_from_payload("ncclAllReduce", fields);
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->op, trace::NcclOp::kAllReduce);
  EXPECT_EQ(call->communicator.value_or(0), 0x1234abcd5678ef00ull);
  EXPECT_EQ(call->bytes.value_or(0), 4u << 20);
  EXPECT_EQ(call->reduction, "Max");
}

TEST(NcclNvtxPayload, ReductionWithoutRegisteredEnumUsesNcclNumbering) {
  AllReducePayload p{7, 1000, 4};
  auto call = nccl_call_from_payload("ncclReduceScatter", decode_payload(bytes_of(p), all_reduce_schema(), nullptr));
  // Without the enum the entry size is unknown and has an explicit offset:
  // the op is skipped, the rest decodes.
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->op, trace::NcclOp::kReduceScatter);
  EXPECT_EQ(call->bytes.value_or(0), 1000u);
  EXPECT_EQ(call->reduction, "");
  PayloadEnum sized{kRedOpEnum, 4, {}};  // registered, but without names
  auto fields = decode_payload(bytes_of(p), all_reduce_schema(), [&](uint64_t) { return &sized; });
  EXPECT_EQ(nccl_call_from_payload("ncclAllReduce", fields)->reduction, "Avg");
}

TEST(NcclNvtxPayload, BroadcastRootAndSignedValues) {
  BroadcastPayload p{42, 96, -1};
  PayloadSchema s;
  s.entries = {
      {0, kUint64, "NCCL communicator ID", 0, 0}, {0, kSize, "Message size [bytes]", 0, 8}, {0, kInt, "Root", 0, 16}};
  auto call = nccl_call_from_payload("ncclBroadcast", decode_payload(bytes_of(p), s, nullptr));
  ASSERT_TRUE(call);
  EXPECT_EQ(call->op, trace::NcclOp::kBroadcast);
  EXPECT_EQ(call->root, -1);
  p.root = 3;
  EXPECT_EQ(nccl_call_from_payload("ncclBroadcast", decode_payload(bytes_of(p), s, nullptr))->root, 3);
  s.entries[2].name = "Peer rank";
  auto send = nccl_call_from_payload("ncclSend", decode_payload(bytes_of(p), s, nullptr));
  EXPECT_EQ(send->op, trace::NcclOp::kSend);
  EXPECT_EQ(send->peer, 3);
}

TEST(NcclNvtxPayload, NaturalAlignmentWhenOffsetsAreZero) {
  struct {
    uint8_t a;
    uint64_t b;
    int c;
  } p{};
  p.a = 9;
  p.b = 0xdeadbeefcafeull;
  p.c = -5;
  PayloadSchema s;
  s.entries = {{0, kUint8, "a", 0, 0}, {0, kUint64, "b", 0, 0}, {0, kInt, "c", 0, 0}};
  auto f = decode_payload(bytes_of(p), s, nullptr);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].value, 9u);
  EXPECT_EQ(f[1].value, 0xdeadbeefcafeull);
  EXPECT_EQ(f[2].signed_value, -5);
}

TEST(NcclNvtxPayload, CommunicatorCreationPayloadGivesRanksButNoBytes) {
  CommInitPayload p{0xfeedull, 8, 3, 1};
  PayloadSchema s;
  s.entries = {{0, kUint64, "NCCL communicator ID", 0, 0},
               {0, kInt, "No. of ranks", 0, 8},
               {0, kInt, "Rank", 0, 12},
               {0, kInt, "CUDA device", 0, 16}};
  auto call = nccl_call_from_payload("ncclCommInitRankConfig", decode_payload(bytes_of(p), s, nullptr));
  ASSERT_TRUE(call);
  EXPECT_EQ(call->op, trace::NcclOp::kUnknown);
  EXPECT_FALSE(call->bytes.has_value());
  EXPECT_EQ(call->ranks, 8);
  EXPECT_EQ(call->rank, 3);
  EXPECT_EQ(call->cuda_device, 1);
}

TEST(NcclNvtxPayload, ShortOrOddPayloadsNeverReadOutside) {
  AllReducePayload p{1, 2, 0};
  auto all = bytes_of(p);
  for (size_t n = 0; n <= all.size(); ++n) {
    std::vector<uint8_t> cut(all.begin(), all.begin() + static_cast<long>(n));
    auto f = decode_payload(cut, all_reduce_schema(), nullptr);
    EXPECT_LE(f.size(), n / 8);  // only entries wholly inside
  }
  // An entry of unknown size without an offset hides the entries after it.
  PayloadSchema s;
  s.entries = {{0, 999, "weird", 0, 0}, {0, kUint64, "lost", 0, 0}, {0, kUint64, "placed", 0, 16}};
  std::vector<uint8_t> b(24, 1);
  auto f = decode_payload(b, s, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, "placed");
  // Huge offsets and array lengths are skipped, not wrapped around.
  s.entries = {{0, kUint64, "far", 0, ~uint64_t{0} - 3}, {(1 << 4), kUint64, "array", ~uint64_t{0}, 0}};
  EXPECT_TRUE(decode_payload(b, s, nullptr).empty());
  EXPECT_FALSE(nccl_call_from_payload("ncclAllReduce", {}).has_value());
}

TEST(NcclNvtxPayload, InlineFixedSizeString) {
  char p[16] = "hello";
  PayloadSchema s;
  s.entries = {{0, kCstring, "name", 8, 0}, {0, kUint64, "n", 0, 8}};
  std::vector<uint8_t> b(reinterpret_cast<uint8_t*>(p), reinterpret_cast<uint8_t*>(p) + 16);
  uint64_t n = 77;
  std::memcpy(b.data() + 8, &n, 8);
  auto f = decode_payload(b, s, nullptr);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].text, "hello");
  EXPECT_EQ(f[1].value, 77u);
}

TEST(NcclNvtxPayload, OpFromNcclSchemaId) {
  EXPECT_EQ(nccl_op_from_schema_id(kNvtxPayloadSchemaIdStaticStart + 5), trace::NcclOp::kAllReduce);
  EXPECT_EQ(nccl_op_from_schema_id(kNvtxPayloadSchemaIdStaticStart + 7), trace::NcclOp::kReduceScatter);
  EXPECT_EQ(nccl_op_from_schema_id(kNvtxPayloadSchemaIdStaticStart + 18), trace::NcclOp::kScatter);
  EXPECT_EQ(nccl_op_from_schema_id(kNvtxPayloadSchemaIdStaticStart + 0), trace::NcclOp::kUnknown);  // CommInitRank
  EXPECT_EQ(nccl_op_from_schema_id(5), trace::NcclOp::kUnknown);
}

TEST(NcclNvtxPayload, DatatypeSizes) {
  EXPECT_EQ(nccl_datatype_bytes("f32"), 4u);
  EXPECT_EQ(nccl_datatype_bytes("bf16"), 2u);
  EXPECT_EQ(nccl_datatype_bytes("f8e4m3"), 1u);
  EXPECT_EQ(nccl_datatype_bytes("i64"), 8u);
  EXPECT_EQ(nccl_datatype_bytes("half"), 2u);
  EXPECT_EQ(nccl_datatype_bytes(""), 0u);
  EXPECT_EQ(nccl_datatype_bytes("mystery"), 0u);
}

}  // namespace
}  // namespace scalescope::collect
