#include "collect/nccl_nvtx_payload.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/text_input.hpp"

namespace scalescope::collect {
namespace {

// NVTX_PAYLOAD_ENTRY_TYPE_* values (nvToolsExtPayload.h, payload extension 1.3/1.4).
enum : uint64_t {
  kChar = 1,
  kUchar,
  kShort,
  kUshort,
  kInt,
  kUint,
  kLong,
  kUlong,
  kLongLong,
  kUlongLong,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat,
  kDouble,
  kLongDouble,
  kSize,
  kAddress,
  kWchar,
  kChar8,
  kChar16,
  kChar32,
  kByte = 32,
  kInt128,
  kUint128,
  kFloat16 = 42,
  kFloat32,
  kFloat64,
  kFloat128,
  kBf16 = 50,
  kTf32 = 52,
  kCategory = 68,
  kColorArgb,
  kScopeId,
  kPidUint32,
  kPidUint64,
  kTidUint32,
  kTidUint64,
  kCstring,
  kCstringUtf8,
  kCstringUtf16,
  kCstringUtf32,
  kRegisteredStringHandle = 80,
};

// Entries beyond this are ignored: a schema is outside input.
constexpr size_t kMaxEntries = 1024;

bool is_signed_type(uint64_t t) {
  switch (t) {
    case kChar:
    case kShort:
    case kInt:
    case kLong:
    case kLongLong:
    case kInt8:
    case kInt16:
    case kInt32:
    case kInt64:
    case kInt128: return true;
    default: return false;
  }
}

bool is_float_type(uint64_t t) { return t == kFloat || t == kDouble || t == kFloat32 || t == kFloat64; }

bool is_cstring(uint64_t t) { return t >= kCstring && t <= kCstringUtf32; }

uint64_t read_le(const uint8_t* p, uint32_t n) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n && i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

int64_t sign_extend(uint64_t v, uint32_t bytes) {
  if (bytes >= 8) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (8 * bytes - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

uint64_t align_up(uint64_t x, uint64_t a) { return a <= 1 ? x : (x + a - 1) / a * a; }

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// NCCL's field names, lower case: the one test of each, for the decoder and the layout.
bool is_communicator_field(std::string_view name) {
  return contains(name, "communicator") && !contains(name, "parent");  // ncclCommSplit's parent is not the call's
}
bool is_bytes_field(std::string_view name) { return contains(name, "message size") || name == "bytes"; }

}  // namespace

std::pair<uint32_t, uint32_t> payload_type_layout(uint64_t type) {
  switch (type) {
    case kChar:
    case kUchar:
    case kInt8:
    case kUint8:
    case kChar8:
    case kByte: return {1, 1};
    case kShort:
    case kUshort:
    case kInt16:
    case kUint16:
    case kChar16:
    case kFloat16:
    case kBf16: return {2, 2};
    case kInt:
    case kUint:
    case kInt32:
    case kUint32:
    case kFloat:
    case kFloat32:
    case kWchar:
    case kChar32:
    case kTf32:
    case kCategory:
    case kColorArgb:
    case kPidUint32:
    case kTidUint32: return {4, 4};
    case kLong:
    case kUlong:
    case kLongLong:
    case kUlongLong:
    case kInt64:
    case kUint64:
    case kDouble:
    case kFloat64:
    case kSize:
    case kAddress:
    case kScopeId:
    case kPidUint64:
    case kTidUint64:
    case kRegisteredStringHandle: return {8, 8};
    case kLongDouble:
    case kInt128:
    case kUint128:
    case kFloat128: return {16, 16};
    default: return is_cstring(type) ? std::pair<uint32_t, uint32_t>{8, 8} : std::pair<uint32_t, uint32_t>{0, 0};
  }
}

std::vector<PayloadField> decode_payload(std::span<const uint8_t> bytes, const PayloadSchema& schema,
                                         const PayloadEnumLookup& enums) {
  std::vector<PayloadField> out;
  uint64_t cursor = 0;       // end of the previous entry, for natural alignment
  bool cursor_known = true;  // false after an entry of unknown size
  const size_t n = std::min(schema.entries.size(), kMaxEntries);
  for (size_t i = 0; i < n; ++i) {
    const PayloadEntry& e = schema.entries[i];
    const PayloadEnum* en = nullptr;
    uint32_t size = 0, align = 0;
    const bool pointer = (e.flags & kNvtxPayloadFlagPointer) != 0;
    const uint64_t array = e.flags & kNvtxPayloadFlagArrayMask;
    bool inline_string = false;
    if (pointer) {
      size = align = 8;
    } else if (e.type >= kNvtxPayloadSchemaIdStaticStart) {
      if (enums) en = enums(e.type);
      if (en && (en->size == 1 || en->size == 2 || en->size == 4 || en->size == 8))
        size = align = static_cast<uint32_t>(en->size);
    } else if (is_cstring(e.type) && e.array_length > 0 && (array == 0 || array == kNvtxPayloadFlagArrayFixedSize)) {
      // A fixed-size string lies inline; one of unknown length is a char*.
      inline_string = true;
      align = 1;
      size = static_cast<uint32_t>(std::min<uint64_t>(e.array_length, 4096));
    } else {
      auto [s, a] = payload_type_layout(e.type);
      size = s;
      align = a;
    }
    uint64_t total = size;
    if (!pointer && !inline_string && array != 0) {
      // Only fixed-size arrays have a size known from the schema; their
      // values are not decoded, but later offsets still follow them.
      total = array == kNvtxPayloadFlagArrayFixedSize && e.array_length > 0 && size > 0
                  ? uint64_t{size} * std::min<uint64_t>(e.array_length, uint64_t{1} << 20)
                  : 0;
    }
    uint64_t offset = 0;
    if (i == 0 || e.offset != 0) {
      offset = e.offset;
    } else if (cursor_known && align > 0) {
      offset = align_up(cursor, align);
    } else {
      cursor_known = false;  // cannot place this entry, nor any later one without an explicit offset
      continue;
    }
    if (total == 0 || offset > (uint64_t{1} << 40)) {  // unknown size, or an offset no payload has
      cursor_known = false;
      continue;
    }
    cursor = offset + total;
    cursor_known = true;
    if (offset > bytes.size() || total > bytes.size() - offset) continue;  // outside the payload: skip
    if (array != 0 && !inline_string) continue;                            // arrays: not decoded
    const uint8_t* p = bytes.data() + offset;
    PayloadField f;
    f.name = e.name;
    f.type = e.type;
    f.offset = offset;
    f.size = size;
    if (inline_string) {
      const char* c = reinterpret_cast<const char*>(p);
      f.text.assign(c, strnlen(c, size));
      out.push_back(std::move(f));
      continue;
    }
    if (pointer || size > 8 || is_cstring(e.type)) continue;  // addresses and 128-bit values: not meaningful here
    uint64_t v = read_le(p, size);
    if (is_float_type(e.type)) {
      if (size == 4) {
        float x;
        uint32_t u = static_cast<uint32_t>(v);
        std::memcpy(&x, &u, 4);
        f.real = x;
      } else {
        std::memcpy(&f.real, &v, 8);
      }
      out.push_back(std::move(f));
      continue;
    }
    if (size == 2 && (e.type == kFloat16 || e.type == kBf16)) continue;  // no half-precision payloads here
    f.is_integer = true;
    f.value = v;
    f.signed_value = is_signed_type(e.type) || en ? sign_extend(v, size) : static_cast<int64_t>(v);
    if (en) {
      for (const auto& [name, value] : en->values)
        if (value == v) {
          f.text = name;
          break;
        }
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::optional<NcclNvtxCall> nccl_call_from_payload(std::string_view range_name,
                                                   const std::vector<PayloadField>& fields) {
  NcclNvtxCall call;
  bool any = false;
  for (const auto& f : fields) {
    if (!f.is_integer) continue;
    const std::string name = trace::lowercase(f.name);
    auto as_int = [&f] { return static_cast<int32_t>(std::clamp<int64_t>(f.signed_value, -1, INT32_MAX)); };
    if (contains(name, "communicator")) {
      if (!is_communicator_field(name)) continue;
      call.communicator = f.value;
      any = true;
    } else if (is_bytes_field(name)) {
      call.bytes = f.value;
      any = true;
    } else if (contains(name, "reduction")) {
      static constexpr const char* kOps[] = {"Sum", "Prod", "Max", "Min", "Avg"};  // ncclRedOp_t
      call.reduction = !f.text.empty() ? f.text : f.value < 5 ? kOps[f.value] : "PreMulSum";
    } else if (name == "root") {
      call.root = as_int();
    } else if (contains(name, "peer")) {
      call.peer = as_int();
    } else if (contains(name, "no. of ranks") || name == "nranks") {
      call.ranks = as_int();
    } else if (name == "rank") {
      call.rank = as_int();
    } else if (contains(name, "cuda device")) {
      call.cuda_device = as_int();
    }
  }
  if (!any) return std::nullopt;
  call.op = nccl_op_from_range_name(range_name);
  return call;
}

trace::NcclOp nccl_op_from_range_name(std::string_view range_name) {
  std::string_view op = range_name;
  if (op.starts_with("nccl")) op.remove_prefix(4);
  const trace::NcclOp out = trace::nccl_op_from_name(op);
  return out == trace::NcclOp::kUnknown && op == "Bcast" ? trace::NcclOp::kBroadcast : out;
}

std::optional<NcclPayloadLayout> nccl_payload_layout(const PayloadSchema& schema) {
  // The decoder's own placement of every entry, over a payload of zeros.
  const std::vector<uint8_t> zeros(std::max<uint64_t>(schema.static_size, 4096), 0);
  NcclPayloadLayout l;
  for (const auto& f : decode_payload(zeros, schema, nullptr)) {
    if (!f.is_integer || f.size == 0 || f.size > 8) continue;
    const std::string name = trace::lowercase(f.name);
    if (is_communicator_field(name) && l.communicator_size == 0) l.communicator_offset = f.offset, l.communicator_size = f.size;
    else if (is_bytes_field(name) && l.bytes_size == 0) l.bytes_offset = f.offset, l.bytes_size = f.size;
  }
  if (l.communicator_size == 0 && l.bytes_size == 0) return std::nullopt;
  return l;
}

namespace {
uint64_t read_field(uint64_t offset, uint32_t size, std::span<const uint8_t> payload) {
  if (size == 0 || offset > payload.size() || size > payload.size() - offset) return 0;
  return read_le(payload.data() + offset, size);
}
}  // namespace

uint64_t nccl_payload_communicator(const NcclPayloadLayout& l, std::span<const uint8_t> payload) {
  return read_field(l.communicator_offset, l.communicator_size, payload);
}
uint64_t nccl_payload_bytes(const NcclPayloadLayout& l, std::span<const uint8_t> payload) {
  return read_field(l.bytes_offset, l.bytes_size, payload);
}

trace::NcclOp nccl_op_from_schema_id(uint64_t schema_id) {
  using trace::NcclOp;
  if (schema_id < kNvtxPayloadSchemaIdStaticStart) return NcclOp::kUnknown;
  switch (schema_id - kNvtxPayloadSchemaIdStaticStart) {
    case 4: return NcclOp::kAllGather;
    case 5: return NcclOp::kAllReduce;
    case 6: return NcclOp::kBroadcast;
    case 7: return NcclOp::kReduceScatter;
    case 8: return NcclOp::kReduce;
    case 9: return NcclOp::kSend;
    case 10: return NcclOp::kRecv;
    case 16: return NcclOp::kAllToAll;
    case 17: return NcclOp::kGather;
    case 18: return NcclOp::kScatter;
    default: return NcclOp::kUnknown;
  }
}

uint32_t nccl_datatype_bytes(std::string_view t) {
  // Kernel names spell them f32/bf16/i8 (NCCL 2.19+) or float/half/int8_t (older).
  if (t == "i8" || t == "u8" || t == "int8_t" || t == "uint8_t" || t.starts_with("f8")) return 1;
  if (t == "f16" || t == "bf16" || t == "half" || t == "__nv_bfloat16") return 2;
  if (t == "f32" || t == "i32" || t == "u32" || t == "float" || t == "int32_t" || t == "uint32_t") return 4;
  if (t == "f64" || t == "i64" || t == "u64" || t == "double" || t == "int64_t" || t == "uint64_t") return 8;
  return 0;
}

}  // namespace scalescope::collect
