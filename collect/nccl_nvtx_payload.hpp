#pragma once
// NCCL's NVTX ranges and their extended payloads (nvToolsExtPayload.h).
// NCCL (2.18+) pushes one range per API call in domain "NCCL", named after the
// call ("ncclAllReduce"), carrying a binary payload whose layout NCCL
// registers at run time as a schema: {communicator hash, message size in
// bytes, reduction op} for an all-reduce, {hash, bytes, root} for a
// broadcast, {hash, bytes, peer} for send/recv. CUPTI copies the payload into
// MARKER_DATA records and hands out the registered schema, so the collector
// decodes by the schema's entries (names, types, offsets), not by a layout
// hard-coded for one NCCL version.
//
// Pure code over bytes and schemas, no CUDA header: fuzzed and unit-tested.
//
//   PayloadSchema s = ...;  // from CUPTI, or built by a test as NCCL would
//   auto fields = decode_payload(bytes, s, enums);
//   auto call = nccl_call_from_payload("ncclAllReduce", fields);  // bytes, comm, reduction

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::collect {

// NVTX payload constants used here (values from nvToolsExtPayload.h, which
// this pure code does not include).
inline constexpr uint64_t kNvtxPayloadSchemaIdStaticStart = uint64_t{1} << 24;
inline constexpr uint64_t kNvtxPayloadFlagPointer = 1 << 1;
inline constexpr uint64_t kNvtxPayloadFlagArrayMask = 7 << 4;  // fixed, zero-terminated, length index, ...
inline constexpr uint64_t kNvtxPayloadFlagArrayFixedSize = 1 << 4;
inline constexpr uint64_t kNvtxSchemaTypeStatic = 1;

// One entry of a registered schema (nvtxPayloadSchemaEntry_t).
struct PayloadEntry {
  uint64_t flags = 0;
  uint64_t type = 0;  // NVTX_PAYLOAD_ENTRY_TYPE_*, or the id of a registered enum or schema
  std::string name;
  uint64_t array_length = 0;  // arrayOrUnionDetail: fixed array or string length
  uint64_t offset = 0;        // 0 on an entry after the first: natural alignment decides
};

struct PayloadSchema {
  uint64_t id = 0;
  uint64_t schema_type = kNvtxSchemaTypeStatic;
  uint64_t static_size = 0;  // 0 when not given
  std::vector<PayloadEntry> entries;
};

// A registered enumeration (nvtxPayloadEnumAttr_t), e.g. NCCL's reduction ops.
struct PayloadEnum {
  uint64_t id = 0;
  uint64_t size = 4;  // bytes of one value
  std::vector<std::pair<std::string, uint64_t>> values;
};

// Enums by id; nullptr when none is registered under that id.
using PayloadEnumLookup = std::function<const PayloadEnum*(uint64_t id)>;

// One decoded scalar of a payload. Pointers, arrays and nested schemas are
// not followed (the payload is a copy: pointers into the job mean nothing).
struct PayloadField {
  std::string name;
  uint64_t type = 0;
  bool is_integer = false;   // value / signed_value are meaningful
  uint64_t value = 0;        // zero-extended
  int64_t signed_value = 0;  // sign-extended for signed types
  double real = 0;           // floating-point entries
  std::string text;          // enum name or inline fixed-size string
  uint64_t offset = 0;       // where it lies in the payload
  uint32_t size = 0;         // bytes (integers and reals)
};

// Size and alignment of a predefined entry type on this (LP64) platform;
// {0, 0} for types of no fixed size (pointers to strings excepted: 8).
std::pair<uint32_t, uint32_t> payload_type_layout(uint64_t type);

// Decodes the scalar entries of `bytes` laid out by `schema`. Entries that lie
// (partly) outside `bytes`, or that follow an entry of unknown size without an
// explicit offset, are skipped; never reads outside `bytes`.
std::vector<PayloadField> decode_payload(std::span<const uint8_t> bytes, const PayloadSchema& schema,
                                         const PayloadEnumLookup& enums);

// What one of NCCL's NVTX ranges says about its call.
struct NcclNvtxCall {
  trace::NcclOp op = trace::NcclOp::kUnknown;  // from the range name
  std::optional<uint64_t> communicator;        // NCCL's commHash, equal on every rank of the communicator
  std::optional<uint64_t> bytes;               // "Message size [bytes]": count x type size of the call
  std::string reduction;                       // "Sum", "Max", ... ; empty when none
  int32_t root = -1, peer = -1;
  int32_t ranks = -1, rank = -1, cuda_device = -1;  // communicator creation payloads
};

// Reads NCCL's fields by their names ("NCCL communicator ID", "Message size
// [bytes]", "Reduction operation", "Root", "Peer rank", "No. of ranks",
// "Rank", "CUDA device"); the op comes from the range name ("ncclAllReduce").
// nullopt when the payload has neither a communicator nor a message size.
std::optional<NcclNvtxCall> nccl_call_from_payload(std::string_view range_name,
                                                   const std::vector<PayloadField>& fields);

// Where a schema of NCCL's puts the communicator and the message size, for
// a reader that may not decode field by field (the collector's collective
// ring, which reads each call's payload without allocating). nullopt when
// the schema has neither as a plain integer of 1 to 8 bytes.
struct NcclPayloadLayout {
  uint64_t communicator_offset = 0, bytes_offset = 0;
  uint32_t communicator_size = 0, bytes_size = 0;  // 0: the schema has no such field
};
std::optional<NcclPayloadLayout> nccl_payload_layout(const PayloadSchema& schema);
// The two fields of one payload by the layout; 0 where the schema has none
// or the payload is too short.
uint64_t nccl_payload_communicator(const NcclPayloadLayout& l, std::span<const uint8_t> payload);
uint64_t nccl_payload_bytes(const NcclPayloadLayout& l, std::span<const uint8_t> payload);
// The op of an NCCL range's name ("ncclAllReduce", "ncclBcast").
trace::NcclOp nccl_op_from_range_name(std::string_view range_name);

// The op of NCCL's static payload schema id (NVTX_SID_AllReduce = 5 above
// NVTX_PAYLOAD_SCHEMA_ID_STATIC_START, ...; the same ids in NCCL's source from
// 2.18 to 2.30). Used only when the range's name gives no op (CUPTI did not
// resolve the registered string); kUnknown for other ids.
trace::NcclOp nccl_op_from_schema_id(uint64_t schema_id);

// Bytes of one element of an NCCL datatype as kernel names spell it ("f32",
// "bf16", "i8", "f8e4m3"); 0 when unknown.
uint32_t nccl_datatype_bytes(std::string_view datatype);

}  // namespace scalescope::collect
