// Fuzzes the NVTX payload decoder and the NCCL kernel join: both read what
// the traced job (through CUPTI) hands over. Input: a count of schema
// entries, 8 bytes per entry (type, flags, offset, array length, name), then
// the payload; the decoded call then drives the joiner. Nothing may crash,
// read outside the payload or grow without bound.
#include <cstddef>
#include <cstdint>
#include <span>

#include "collect/nccl_nvtx_joiner.hpp"
#include "collect/nccl_nvtx_payload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope;
  using namespace scalescope::collect;
  if (size < 1) return 0;
  static const char* kNames[] = {"NCCL communicator ID",
                                 "Message size [bytes]",
                                 "Reduction operation",
                                 "Root",
                                 "Peer rank",
                                 "No. of ranks",
                                 "Rank",
                                 "CUDA device",
                                 "",
                                 "x"};
  static const PayloadEnum kRedOps{kNvtxPayloadSchemaIdStaticStart + 20, 4, {{"Sum", 0}, {"Max", 2}}};
  const size_t n = data[0] % 16;
  size_t pos = 1;
  PayloadSchema schema;
  for (size_t i = 0; i < n && pos + 8 <= size; ++i, pos += 8) {
    const uint8_t* e = data + pos;
    PayloadEntry entry;
    entry.type = e[0] >= 200 ? kRedOps.id + (e[0] & 1) : e[0];
    entry.flags = e[1];
    entry.offset = uint64_t{e[2]} | uint64_t{e[3]} << 8;
    if (e[7] & 0x80) entry.offset <<= 40;  // also offsets far outside
    entry.array_length = uint64_t{e[4]} | uint64_t{e[5]} << 8;
    entry.name = kNames[e[6] % 10];
    schema.entries.push_back(entry);
  }
  std::span<const uint8_t> payload(data + pos, size - pos);
  auto fields = decode_payload(payload, schema, [](uint64_t id) { return id == kRedOps.id ? &kRedOps : nullptr; });
  auto call = nccl_call_from_payload(size > 2 && (data[1] & 1) ? "ncclAllReduce" : "ncclGroupEnd", fields);

  NcclNvtxJoiner joiner(1);
  trace::StringTable strings;
  trace::NcclTable out;
  for (size_t i = 0; i + 4 <= payload.size() && i < 256; i += 4) {
    const uint32_t thread = payload[i] % 3;
    const trace::Timestamp t = payload[i + 1] * 10;
    switch (payload[i + 2] % 4) {
      case 0: joiner.add_range(thread, t, t + payload[i + 3], payload[i + 3] & 1 ? call : std::nullopt); break;
      case 1: joiner.add_launch(thread, t + payload[i + 3] % 20, payload[i + 3] % 8); break;
      case 2: {
        trace::NcclRecord r;
        r.correlation = payload[i + 3] % 8;
        r.device = payload[i] % 2;
        r.datatype = strings.intern(payload[i + 3] & 1 ? "f32" : "bf16");
        joiner.add_kernel(r);
        break;
      }
      default: joiner.drain(out, strings, payload[i + 3] & 1); break;
    }
  }
  joiner.drain(out, strings, true);
  return 0;
}
