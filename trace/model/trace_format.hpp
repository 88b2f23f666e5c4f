#pragma once
// Private to the trace file reader and writer: the byte layout of format 1.x
// (docs/trace-format.md is the normative description) and the column schema
// of every table. Column ids are never reused; new columns get new ids.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trace/model/table_columns.hpp"
#include "trace/model/trace.hpp"

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

// Column value transforms, fixed per column id by the column lists (table_columns.hpp).
using Transform = ColumnTransform;

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
  using Table = std::remove_const_t<T>;
  for_each_column_of<Table>([&](const auto& c) {
    const std::vector<Timestamp>* start = nullptr;
    if constexpr (requires { t.start; })
      if (c.transform == Transform::kMinusStart) start = &t.start;
    f(c.id, t.*c.values, c.transform, start);
  });
}

// Which columns hold StringIds (checked and remapped by the reader).
template <typename T, typename F>
void for_each_string_column(T& t, F&& f) {
  using Table = std::remove_const_t<T>;
  for_each_column_of<Table>([&](const auto& c) {
    if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(c)>::value_type, StringId>)
      if (c.kind == ColumnKind::kString) f(t.*c.values);
  });
}

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
    return std::bit_cast<uint64_t>(v);
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
    return std::bit_cast<double>(u);
  } else {
    return static_cast<V>(u);
  }
}

// Metadata as JSON (the metadata chunk's payload).
std::string metadata_to_json(const Metadata& meta);
// Throws std::exception (nlohmann) on malformed JSON or wrong types.
Metadata metadata_from_json(std::string_view json);

}  // namespace scalescope::trace::format
