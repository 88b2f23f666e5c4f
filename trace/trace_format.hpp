#pragma once
// Private to the trace file reader and writer: the byte layout of format 1.x
// (docs/trace-format.md is the normative description) and the column schema
// of every table. Column ids are never reused; new columns get new ids.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trace/trace.hpp"

namespace scalescope::trace::format {

inline constexpr char kMagic[8] = {'S', 'S', 'T', 'R', 'A', 'C', 'E', '\x1a'};
inline constexpr size_t kFileHeaderSize = 16;  // magic, u16 major, u16 minor, u32 flags
inline constexpr size_t kChunkHeaderSize = 40;
inline constexpr uint32_t kMaxRowsPerChunk = uint32_t{1} << 26;
inline constexpr uint64_t kMaxRowBytes = 256;  // encoded, any table (widest: ~15 columns x 9)
inline constexpr uint64_t kMaxMetadataBytes = uint64_t{16} << 20;
inline constexpr uint64_t kMaxProblemsBytes = uint64_t{64} << 10;

enum class ChunkType : uint16_t {
  kStrings = 1,
  kMetadata = 2,
  kProblems = 3,
  kEnd = 4,  // 1.1: written by close(), last; payload varint chunks before it, varint its offset
  kKernels = 16,
  kMemcpys = 17,
  kMemsets = 18,
  kApi = 19,
  kSyncs = 20,
  kNvtx = 21,
  kNccl = 22,
  kCounters = 23,
  kHostThreads = 24,       // 1.2
  kHostSamples = 25,       // 1.2
  kHostCallsites = 26,     // 1.3
  kHostStackSamples = 27,  // 1.3
  kHostModules = 28,       // 1.4
};

enum class Codec : uint16_t { kNone = 0, kZstd = 1 };

// The 40-byte chunk header, little-endian on disk.
struct ChunkHeader {
  uint16_t type = 0;
  uint16_t codec = 0;
  uint32_t record_count = 0;
  uint64_t stored_size = 0;       // payload bytes that follow the header
  uint64_t raw_size = 0;          // payload bytes after decompression
  uint64_t payload_checksum = 0;  // XXH64(seed 0) of the stored payload
  uint64_t header_checksum = 0;   // XXH64(seed 0) of header bytes [0, 32)
};

// Column value transforms, fixed per column id by the schema.
enum class Transform : uint8_t {
  kNone,        // value
  kDelta,       // value - previous value of the column (0 before the first row)
  kMinusStart,  // value - start of the same row (end columns: durations)
};

// Column encodings: the first byte of each column's bytes.
enum class Encoding : uint8_t {
  kConstant = 0,  // varint v: every row's stored value is v
  kPacked = 1,    // u8 width (1, 2, 4, 8), varint base, then n*width bytes byte-shuffled
};

// Little-endian helpers (this format is little-endian; so are all supported hosts).
inline void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t get_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// Visits every column of a table as f(id, column, transform, start_column),
// in id order; `start_column` is the row's start for kMinusStart, else null.
// `T` may be const (writer) or not (reader).
template <typename T, typename F>
void for_each_column(T& t, F&& f) {
  if constexpr (requires { t.build_id; }) {  // HostModuleTable (1.4): no time
    using Pid = decltype(&t.pid);
    f(1, t.pid, Transform::kNone, Pid{});
    f(3, t.path, Transform::kNone, Pid{});
    f(4, t.build_id, Transform::kNone, Pid{});
    f(5, t.map_start, Transform::kNone, Pid{});
    f(6, t.map_end, Transform::kNone, Pid{});
    f(7, t.map_offset, Transform::kNone, Pid{});
    return;
  } else if constexpr (requires { t.metric; }) {  // CounterTable: a time instead of start/end
    using Time = decltype(&t.time);
    f(1, t.time, Transform::kDelta, Time{});
    f(3, t.device, Transform::kNone, Time{});
    f(4, t.metric, Transform::kNone, Time{});
    f(5, t.value, Transform::kNone, Time{});
    return;
  } else if constexpr (requires { t.involuntary_switches; }) {  // HostSampleTable (1.2)
    using Time = decltype(&t.time);
    f(1, t.time, Transform::kDelta, Time{});
    f(3, t.pid, Transform::kNone, Time{});
    f(4, t.tid, Transform::kNone, Time{});
    f(5, t.state, Transform::kNone, Time{});
    f(6, t.cpu, Transform::kNone, Time{});
    f(7, t.cpu_ns, Transform::kNone, Time{});
    f(8, t.run_wait_ns, Transform::kNone, Time{});
    f(9, t.voluntary_switches, Transform::kNone, Time{});
    f(10, t.involuntary_switches, Transform::kNone, Time{});
    return;
  } else if constexpr (requires { t.callsite; }) {  // HostStackSampleTable (1.3)
    using Time = decltype(&t.time);
    f(1, t.time, Transform::kDelta, Time{});
    f(3, t.pid, Transform::kNone, Time{});
    f(4, t.tid, Transform::kNone, Time{});
    f(5, t.callsite, Transform::kNone, Time{});
    return;
  } else if constexpr (requires { t.address; }) {  // HostCallsiteTable (1.3): no time
    using Id = decltype(&t.id);
    f(1, t.id, Transform::kDelta, Id{});
    f(3, t.parent, Transform::kNone, Id{});
    f(4, t.function, Transform::kNone, Id{});
    f(5, t.module, Transform::kNone, Id{});
    f(6, t.address, Transform::kNone, Id{});
    f(7, t.status, Transform::kNone, Id{});  // 1.4
    return;
  } else {
    using Start = decltype(&t.start);
    f(1, t.start, Transform::kDelta, Start{});
    f(2, t.end, Transform::kMinusStart, &t.start);
    if constexpr (requires { t.grid_x; }) {  // KernelTable
      f(3, t.device, Transform::kNone, Start{});
      f(4, t.stream, Transform::kNone, Start{});
      f(5, t.name, Transform::kNone, Start{});
      f(6, t.grid_x, Transform::kNone, Start{});
      f(7, t.grid_y, Transform::kNone, Start{});
      f(8, t.grid_z, Transform::kNone, Start{});
      f(9, t.block_x, Transform::kNone, Start{});
      f(10, t.block_y, Transform::kNone, Start{});
      f(11, t.block_z, Transform::kNone, Start{});
      f(12, t.registers_per_thread, Transform::kNone, Start{});
      f(13, t.shared_memory_bytes, Transform::kNone, Start{});
      f(14, t.correlation, Transform::kDelta, Start{});
    } else if constexpr (requires { t.peer_device; }) {  // MemcpyTable
      f(3, t.device, Transform::kNone, Start{});
      f(4, t.stream, Transform::kNone, Start{});
      f(5, t.correlation, Transform::kDelta, Start{});
      f(6, t.bytes, Transform::kNone, Start{});
      f(7, t.kind, Transform::kNone, Start{});
      f(8, t.src_kind, Transform::kNone, Start{});
      f(9, t.dst_kind, Transform::kNone, Start{});
      f(10, t.is_async, Transform::kNone, Start{});
      f(11, t.peer_device, Transform::kNone, Start{});
    } else if constexpr (requires { t.dst_kind; }) {  // MemsetTable
      f(3, t.device, Transform::kNone, Start{});
      f(4, t.stream, Transform::kNone, Start{});
      f(5, t.correlation, Transform::kDelta, Start{});
      f(6, t.bytes, Transform::kNone, Start{});
      f(7, t.dst_kind, Transform::kNone, Start{});
      f(8, t.is_async, Transform::kNone, Start{});
    } else if constexpr (requires { t.callback_id; }) {  // ApiTable
      f(3, t.thread, Transform::kNone, Start{});
      f(4, t.domain, Transform::kNone, Start{});
      f(5, t.callback_id, Transform::kNone, Start{});
      f(6, t.name, Transform::kNone, Start{});
      f(7, t.correlation, Transform::kDelta, Start{});
      f(8, t.return_code, Transform::kNone, Start{});
    } else if constexpr (requires { t.event; }) {  // SyncTable
      f(3, t.kind, Transform::kNone, Start{});
      f(4, t.device, Transform::kNone, Start{});
      f(5, t.stream, Transform::kNone, Start{});
      f(6, t.event, Transform::kNone, Start{});
      f(7, t.thread, Transform::kNone, Start{});
      f(8, t.correlation, Transform::kDelta, Start{});
    } else if constexpr (requires { t.text; }) {  // NvtxTable
      f(3, t.kind, Transform::kNone, Start{});
      f(4, t.domain, Transform::kNone, Start{});
      f(5, t.text, Transform::kNone, Start{});
      f(6, t.thread, Transform::kNone, Start{});
      f(7, t.device, Transform::kNone, Start{});
      f(8, t.correlation, Transform::kNone, Start{});
      f(9, t.link, Transform::kNone, Start{});          // format 1.1
    } else if constexpr (requires { t.parent_pid; }) {  // HostThreadTable (1.2)
      f(3, t.pid, Transform::kNone, Start{});
      f(4, t.tid, Transform::kNone, Start{});
      f(5, t.parent_pid, Transform::kNone, Start{});
      f(6, t.name, Transform::kNone, Start{});
      f(7, t.is_main, Transform::kNone, Start{});
      f(8, t.role, Transform::kNone, Start{});
    } else if constexpr (requires { t.protocol; }) {  // NcclTable
      f(3, t.device, Transform::kNone, Start{});
      f(4, t.stream, Transform::kNone, Start{});
      f(5, t.op, Transform::kNone, Start{});
      f(6, t.bytes, Transform::kNone, Start{});
      f(7, t.count, Transform::kNone, Start{});
      f(8, t.datatype, Transform::kNone, Start{});
      f(9, t.algorithm, Transform::kNone, Start{});
      f(10, t.protocol, Transform::kNone, Start{});
      f(11, t.communicator, Transform::kNone, Start{});
      f(12, t.sequence, Transform::kDelta, Start{});
      f(13, t.group_size, Transform::kNone, Start{});
      f(14, t.correlation, Transform::kDelta, Start{});
    }
  }
}

// Which columns hold StringIds (checked and remapped by the reader).
template <typename T, typename F>
void for_each_string_column(T& t, F&& f) {
  if constexpr (requires { t.build_id; }) {
    f(t.path);
    f(t.build_id);
  } else if constexpr (requires { t.grid_x; }) {
    f(t.name);
  } else if constexpr (requires { t.callback_id; }) {
    f(t.name);
  } else if constexpr (requires { t.text; }) {
    f(t.domain);
    f(t.text);
  } else if constexpr (requires { t.parent_pid; }) {
    f(t.name);
  } else if constexpr (requires { t.address; }) {
    f(t.function);
    f(t.module);
  } else if constexpr (requires { t.protocol; }) {
    f(t.datatype);
    f(t.algorithm);
    f(t.protocol);
    f(t.communicator);
  }
}

}  // namespace scalescope::trace::format

namespace scalescope::trace::format {

// Visits every table of a trace with its chunk type: f(ChunkType, table).
template <typename TraceT, typename F>
void for_each_table(TraceT& t, F&& f) {
  f(ChunkType::kKernels, t.kernels);
  f(ChunkType::kMemcpys, t.memcpys);
  f(ChunkType::kMemsets, t.memsets);
  f(ChunkType::kApi, t.api);
  f(ChunkType::kSyncs, t.syncs);
  f(ChunkType::kNvtx, t.nvtx);
  f(ChunkType::kNccl, t.nccl);
  f(ChunkType::kCounters, t.counters);
  f(ChunkType::kHostThreads, t.host_threads);
  f(ChunkType::kHostSamples, t.host_samples);
  f(ChunkType::kHostCallsites, t.host_callsites);
  f(ChunkType::kHostStackSamples, t.host_stack_samples);
  f(ChunkType::kHostModules, t.host_modules);
}

// A column value as the 64 bits the encodings work on, and back. Signed
// values sign-extend, so narrowing back restores them exactly.
template <typename V>
inline uint64_t to_bits(V v) {
  if constexpr (std::is_enum_v<V>) {
    return static_cast<uint64_t>(static_cast<std::underlying_type_t<V>>(v));
  } else if constexpr (std::is_same_v<V, double>) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return u;
  } else if constexpr (std::is_signed_v<V>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <typename V>
inline V from_bits(uint64_t u) {
  if constexpr (std::is_enum_v<V>) {
    return static_cast<V>(static_cast<std::underlying_type_t<V>>(u));
  } else if constexpr (std::is_same_v<V, double>) {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  } else {
    return static_cast<V>(u);
  }
}

// Metadata as JSON (the metadata chunk's payload).
std::string metadata_to_json(const Metadata& meta);
// Throws std::exception (nlohmann) on malformed JSON or wrong types.
Metadata metadata_from_json(std::string_view json);

}  // namespace scalescope::trace::format
