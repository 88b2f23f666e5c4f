// TraceReader: walks the chunks of a trace file, checks every length against
// what is left and against caps before allocating, verifies checksums, and
// decodes columns straight into the Trace's vectors. Damage inside the data
// is counted (ProblemCounts) and skipped; only a file that is not a trace at
// all, of an unreadable version, or that would need absurd memory is an Error.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include <xxhash.h>
#include <zstd.h>

#include "trace/model/chunk_reader.hpp"
#include "base/error.hpp"
#include "base/file_bytes.hpp"
#include "base/memory_budget.hpp"
#include "base/text_input.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/model/trace_format.hpp"

namespace scalescope::trace {

using format::ChunkType;
using format::Encoding;
using format::Transform;

namespace {

// A zstd chunk may inflate to at most kMaxZstdRatio times its stored size
// (or kZstdRatioFloor bytes, whichever is more): docs/data-safety.md.
constexpr uint64_t kMaxZstdRatio = 4096;
constexpr uint64_t kZstdRatioFloor = uint64_t{64} << 20;

// Thrown inside chunk decoding; caught per chunk and counted, never escapes.
struct CorruptChunk {};
// A codec or column encoding of a newer minor version: the chunk is skipped.
struct UnknownFeature {};

// The chunk header at h (its checksum already checked), refused when it
// claims more bytes than max_chunk_bytes: the file is corrupt.
format::ChunkHeader chunk_header(const uint8_t* h, std::string_view name, uint64_t pos, uint64_t max_chunk_bytes) {
  format::ChunkHeader ch;
  ch.type = format::get_u16(h);
  ch.codec = format::get_u16(h + 2);
  ch.record_count = format::get_u32(h + 4);
  ch.stored_size = format::get_u64(h + 8);
  ch.raw_size = format::get_u64(h + 16);
  ch.payload_checksum = format::get_u64(h + 24);
  if (ch.stored_size > max_chunk_bytes || ch.raw_size > max_chunk_bytes) {
    fail(
        "{}: chunk at offset {} claims {} bytes ({} decompressed), more than the limit of {}; the file is "
        "corrupt",
        name, pos, ch.stored_size, ch.raw_size, max_chunk_bytes);
  }
  return ch;
}

class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw CorruptChunk{};
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    throw CorruptChunk{};
  }
  uint8_t byte() {
    if (p_ == end_) throw CorruptChunk{};
    return *p_++;
  }
  const uint8_t* take(uint64_t n) {
    if (n > remaining()) throw CorruptChunk{};
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

template <int W>
inline uint64_t gather(const uint8_t* planes, size_t n, size_t i) {
  uint64_t v = planes[i];
  if constexpr (W >= 2) v |= static_cast<uint64_t>(planes[n + i]) << 8;
  if constexpr (W >= 4) {
    v |= static_cast<uint64_t>(planes[2 * n + i]) << 16;
    v |= static_cast<uint64_t>(planes[3 * n + i]) << 24;
  }
  if constexpr (W == 8) {
    v |= static_cast<uint64_t>(planes[4 * n + i]) << 32;
    v |= static_cast<uint64_t>(planes[5 * n + i]) << 40;
    v |= static_cast<uint64_t>(planes[6 * n + i]) << 48;
    v |= static_cast<uint64_t>(planes[7 * n + i]) << 56;
  }
  return v;
}

// Decodes n stored values (stored(i) gives the i-th) through `transform`.
template <typename V, typename S, typename Stored>
inline void apply(V* out, size_t n, Transform transform, const S* start, Stored&& stored) {
  switch (transform) {
    case Transform::kNone:
      for (size_t i = 0; i < n; ++i) out[i] = format::from_bits<V>(stored(i));
      return;
    case Transform::kDelta: {
      uint64_t acc = 0;
      for (size_t i = 0; i < n; ++i) {
        acc += stored(i);
        out[i] = format::from_bits<V>(acc);
      }
      return;
    }
    case Transform::kMinusStart:
      for (size_t i = 0; i < n; ++i) out[i] = format::from_bits<V>(format::to_bits(start[i]) + stored(i));
      return;
  }
}

template <typename V, typename S>
void decode_column(V* out, size_t n, Transform transform, const S* start, Cursor c) {
  const auto encoding = static_cast<Encoding>(c.byte());
  if (encoding == Encoding::kConstant) {
    const uint64_t v = c.varint();
    if (c.remaining() != 0) throw CorruptChunk{};
    apply(out, n, transform, start, [v](size_t) { return v; });
    return;
  }
  if (encoding != Encoding::kPacked) throw UnknownFeature{};
  const int width = c.byte();
  const uint64_t base = c.varint();
  if (c.remaining() != n * static_cast<uint64_t>(width)) throw CorruptChunk{};
  const uint8_t* p = c.take(c.remaining());
  switch (width) {
    case 1: apply(out, n, transform, start, [=](size_t i) { return base + gather<1>(p, n, i); }); return;
    case 2: apply(out, n, transform, start, [=](size_t i) { return base + gather<2>(p, n, i); }); return;
    case 4: apply(out, n, transform, start, [=](size_t i) { return base + gather<4>(p, n, i); }); return;
    case 8: apply(out, n, transform, start, [=](size_t i) { return base + gather<8>(p, n, i); }); return;
    default: throw CorruptChunk{};
  }
}

// Bytes of memory one row of a table takes in the Trace.
template <typename Table>
uint64_t row_bytes(const Table& t) {
  uint64_t bytes = 0;
  format::for_each_column(t, [&](int, const auto& col, Transform, const auto*) {
    bytes += sizeof(typename std::remove_cvref_t<decltype(col)>::value_type);
  });
  return bytes;
}

// A table holding one default record: the values of columns a chunk lacks.
template <typename Table>
const Table& defaults() {
  static const Table table = [] {
    Table t;
    t.push(decltype(t.row(0)){});
    return t;
  }();
  return table;
}

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, std::string_view name, const ReadOptions& options)
      : data_(reinterpret_cast<const uint8_t*>(bytes.data())), size_(bytes.size()), name_(name), options_(options) {
    limit_ = options.max_memory_bytes;
    if (limit_ == 0) limit_ = std::max<uint64_t>(uint64_t{1} << 30, 512 * static_cast<uint64_t>(size_));
    cap_to_available_memory();
    dctx_ = ZSTD_createDCtx();
    if (!dctx_) fail("{}: cannot create a zstd decompressor (out of memory)", name_);
  }
  ~Reader() { ZSTD_freeDCtx(dctx_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  Trace read() {
    check_file_header(data_, size_);
    reserve_tables();
    walk(
        [&](size_t n, uint64_t offset, size_t* got) {
          *got = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
          return data_ + offset;
        },
        [&](const format::ChunkHeader& ch, const uint8_t* payload, size_t offset) { read_chunk(ch, payload, offset); });
    finish();
    return std::move(trace_);
  }

  // Walks the chunks after the file header, checksums verified and damage
  // counted (a bad header resyncs at the next good one; a cut ends the walk),
  // and calls on_chunk(header, payload, offset) for every sound chunk but the
  // end record. fill(n, offset, &got) gives the file's bytes at offset (fewer
  // at its end, or where it shrank while read).
  template <typename Fill, typename OnChunk>
  void walk(Fill&& fill, OnChunk&& on_chunk) {
    uint64_t pos = format::kFileHeaderSize;
    bool torn = false;
    size_t got = 0;
    while (pos < size_) {
      const uint8_t* h = fill(format::kChunkHeaderSize, pos, &got);
      if (got < format::kChunkHeaderSize) {
        problems_.add(Problem::kTornTail);
        torn = true;
        break;
      }
      if (options_.verify_checksums && XXH64(h, 32, 0) != format::get_u64(h + 32)) {
        // The length cannot be trusted: look for the next valid chunk header.
        problems_.add(Problem::kChecksumMismatch);
        pos = resync(pos + 1, fill);
        continue;
      }
      const format::ChunkHeader ch = chunk_header(h, name_, pos, options_.max_chunk_bytes);
      const uint64_t at = pos, body = pos + format::kChunkHeaderSize;
      const bool whole = ch.stored_size <= size_ - body;
      const uint8_t* payload = whole ? fill(static_cast<size_t>(ch.stored_size), body, &got) : nullptr;
      if (!whole || got < ch.stored_size) {
        problems_.add(Problem::kTornTail);
        torn = true;
        break;
      }
      pos = body + ch.stored_size;
      if (options_.verify_checksums && XXH64(payload, ch.stored_size, 0) != ch.payload_checksum) {
        problems_.add(Problem::kChecksumMismatch);
        continue;
      }
      if (ch.type == static_cast<uint16_t>(ChunkType::kEnd)) {
        saw_end_ = true;
        continue;
      }
      if (saw_end_) problems_.add(Problem::kCorruptChunk);  // nothing follows an end record
      on_chunk(ch, payload, static_cast<size_t>(at));
    }
    // Format 1.1 writers end every closed file with an end record; without it
    // the writer was killed and the file may be cut at a chunk boundary, which
    // the chunk walk alone cannot see. 1.0 files never had one.
    if (minor_ == 0) problems_.add(Problem::kEndNotRecorded);
    else if (!saw_end_ && !torn) problems_.add(Problem::kEndMissing);
  }

  // ---- chunk by chunk (ChunkReader): the caller walks the file and hands
  // each chunk over; tables are decoded into trace() and taken away by the
  // caller between chunks, so only one chunk's rows are held.
  Reader(std::string_view name, const ReadOptions& options, uint64_t file_size)
      : Reader(std::span<const std::byte>(), name, options) {
    size_ = static_cast<size_t>(file_size);
    limit_ = options.max_memory_bytes;
    if (limit_ == 0) limit_ = std::max<uint64_t>(uint64_t{1} << 30, 512 * file_size);
    cap_to_available_memory();
  }
  // One chunk whose checksums were verified. Table rows charged to the
  // memory limit are released again: the caller clears the tables.
  void stream_chunk(const format::ChunkHeader& ch, const uint8_t* payload, size_t offset) {
    const uint64_t before = memory_, raw_before = raw_size_;
    read_chunk(ch, payload, offset);
    if (ch.type >= static_cast<uint16_t>(ChunkType::kKernels)) memory_ = before + (raw_size_ - raw_before);
  }
  // String ids of the rows decoded so far mapped to ours, unfinished GPU
  // rows of collector traces dropped (counted), as finish() does.
  void finish_rows() { remap_and_drop(); }
  ProblemCounts problems() const {
    ProblemCounts out = stored_problems_;
    for (int i = 0; i < kProblemCount; ++i) out.counts[i] += problems_.counts[i];
    return out;
  }
  Trace& trace() { return trace_; }
  ProblemCounts& counted() { return problems_; }

  void check_file_header(const uint8_t* data, size_t size) {
    const size_t n = std::min(size, sizeof format::kMagic);
    if (std::memcmp(data, format::kMagic, n) != 0) fail("{}: not a scalescope trace (bad magic)", name_);
    if (size < format::kFileHeaderSize)
      fail("{}: truncated scalescope trace ({} bytes; the file header alone is {})", name_, size,
           format::kFileHeaderSize);
    const uint16_t major = format::get_u16(data + 8), minor = format::get_u16(data + 10);
    minor_ = major == kFormatMajor ? minor : 0;
    if (major > kFormatMajor)
      fail("{}: format {}.{} is newer than this scalescope reads ({}.x); upgrade scalescope", name_, major, minor,
           kFormatMajor);
    if (major < kFormatMajor)
      fail("{}: format {}.{} is older than this scalescope reads ({}.x); re-create the trace", name_, major, minor,
           kFormatMajor);
  }

 private:
  // Walks the chunk headers once to size every column exactly: growing them
  // chunk by chunk would copy each column several times. Only what the memory
  // limit allows is reserved; a lying header cannot make this allocate more.
  void reserve_tables() {
    std::array<uint64_t, 32> rows{};
    for (size_t pos = format::kFileHeaderSize; size_ - pos >= format::kChunkHeaderSize;) {
      const uint8_t* h = data_ + pos;
      if (XXH64(h, 32, 0) != format::get_u64(h + 32)) break;
      const uint16_t type = format::get_u16(h);
      const uint64_t stored = format::get_u64(h + 8);
      if (stored > size_ - pos - format::kChunkHeaderSize) break;
      if (type < rows.size()) rows[type] += format::get_u32(h + 4);
      pos += format::kChunkHeaderSize + static_cast<size_t>(stored);
    }
    uint64_t bytes = 0;
    format::for_each_table(trace_, [&](ChunkType type, auto& table) {
      const uint64_t n = rows[static_cast<uint16_t>(type)];
      bytes += n * row_bytes(table);
      if (n && bytes <= limit_) {
        table.reserve(static_cast<size_t>(n));
        // Huge pages before the first touch: reading a trace was mostly page
        // faults (73 % of `analyze` on the shared trace), not decoding.
        format::for_each_column(table, [](int, auto& col, Transform, const auto*) {
          advise_huge_pages(col.data(), col.capacity() * sizeof col[0]);
        });
      }
    });
  }

  // The next offset at or after pos where a chunk header's checksum holds;
  // the file's size when none does.
  template <typename Fill>
  uint64_t resync(uint64_t pos, Fill& fill) const {
    constexpr size_t kBlock = size_t{1} << 20;
    while (pos + format::kChunkHeaderSize <= size_) {
      size_t got = 0;
      const uint8_t* p = fill(kBlock + format::kChunkHeaderSize, pos, &got);
      if (got < format::kChunkHeaderSize) break;
      const size_t last = got - format::kChunkHeaderSize;
      for (size_t i = 0; i <= last; ++i)
        if (XXH64(p + i, 32, 0) == format::get_u64(p + i + 32)) return pos + i;
      pos += last + 1;
    }
    return size_;
  }

  // Never more than the machine (and our rlimits) can give: refusing with a
  // one-line error beats the OOM killer.
  void cap_to_available_memory() {
    const uint64_t available = available_memory_bytes();
    limit_by_memory_ = available < limit_;
    limit_ = std::min(limit_, available);
  }

  void charge(uint64_t bytes, size_t offset) {
    memory_ += bytes;
    if (memory_ <= limit_) return;
    // A small limit of the process's own (ulimit -v, a cgroup) is not a sign
    // of a hostile file: say which limit was reached.
    if (limit_by_memory_)
      fail("{}: out of memory: the chunk at offset {} would take the trace past the {} MiB this process may still "
           "take (available memory, ulimit -v, cgroup limit)",
           name_, offset, limit_ >> 20);
    fail(
        "{}: the chunk at offset {} would take the trace past {} MiB of memory (the limit); the file is corrupt "
        "or hostile",
        name_, offset, limit_ >> 20);
  }

  // Returns the raw payload, or nullopt when the chunk is skipped (counted).
  const uint8_t* decompress(const format::ChunkHeader& ch, const uint8_t* payload) {
    if (ch.codec == static_cast<uint16_t>(format::Codec::kNone)) {
      if (ch.raw_size != ch.stored_size) throw CorruptChunk{};
      return payload;
    }
    if (ch.codec != static_cast<uint16_t>(format::Codec::kZstd)) throw UnknownFeature{};
    // The frame must announce exactly the size the header promised (already
    // capped), so a decompression bomb cannot make us allocate more.
    if (ZSTD_getFrameContentSize(payload, ch.stored_size) != ch.raw_size) throw CorruptChunk{};
    // A zstd bomb: a few bytes announcing a huge frame. The writer's chunks
    // stay far below this ratio (constant columns are not compressed data).
    if (ch.raw_size > std::max<uint64_t>(kZstdRatioFloor, ch.stored_size * kMaxZstdRatio)) throw CorruptChunk{};
    if (raw_size_ < ch.raw_size) {
      charge(ch.raw_size - raw_size_, 0);  // the scratch buffer counts against the memory limit
      // Reused by every chunk; not zero-filled (zstd writes all of it).
      raw_.reset(new uint8_t[static_cast<size_t>(ch.raw_size)]);
      raw_size_ = static_cast<size_t>(ch.raw_size);
    }
    const size_t got = ZSTD_decompressDCtx(dctx_, raw_.get(), ch.raw_size, payload, ch.stored_size);
    if (ZSTD_isError(got) || got != ch.raw_size) throw CorruptChunk{};
    return raw_.get();
  }

  void read_chunk(const format::ChunkHeader& ch, const uint8_t* payload, size_t offset) {
    const auto type = static_cast<ChunkType>(ch.type);
    const uint64_t n = ch.record_count;
    try {
      switch (type) {
        case ChunkType::kStrings: {
          // Every string costs at least its one-byte length, so n <= raw size.
          if (n > ch.raw_size || ch.raw_size > 64 + n * (10 + options_.max_string_bytes)) throw CorruptChunk{};
          charge(ch.raw_size + n * sizeof(std::string) * 2, offset);
          read_strings(n, decompress(ch, payload), ch.raw_size);
          return;
        }
        case ChunkType::kMetadata: {
          if (ch.raw_size > format::kMaxMetadataBytes) throw CorruptChunk{};
          const auto* raw = decompress(ch, payload);
          try {
            trace_.meta = format::metadata_from_json(
                std::string_view(reinterpret_cast<const char*>(raw), static_cast<size_t>(ch.raw_size)));
          } catch (const std::exception&) {
            throw CorruptChunk{};
          }
          return;
        }
        case ChunkType::kProblems: {
          if (ch.raw_size > format::kMaxProblemsBytes) throw CorruptChunk{};
          read_problems(decompress(ch, payload), ch.raw_size);
          return;
        }
        default: break;
      }
      bool known = false;
      format::for_each_table(trace_, [&](ChunkType t, auto& table) {
        if (t != type) return;
        known = true;
        if (n > format::kMaxRowsPerChunk || ch.raw_size > 4096 + n * format::kMaxRowBytes) throw CorruptChunk{};
        charge(n * row_bytes(table), offset);
        read_table(table, n, decompress(ch, payload), ch.raw_size);
      });
      if (!known) problems_.add(Problem::kUnknownChunk);
    } catch (const CorruptChunk&) {
      problems_.add(Problem::kCorruptChunk);
    } catch (const UnknownFeature&) {
      problems_.add(Problem::kUnknownChunk);
    }
  }

  void read_strings(uint64_t n, const uint8_t* raw, uint64_t raw_size) {
    Cursor c(raw, raw_size);
    const uint64_t first = c.varint();
    if (c.varint() != n || first == 0) throw CorruptChunk{};
    // Ids skipped by lost chunks: each string costs at least one byte of the
    // file, so a real gap is smaller than the file; a larger one is corrupt.
    if (first > remap_.size() && first - remap_.size() > size_) throw CorruptChunk{};
    if (first + n > (uint64_t{1} << 32)) throw CorruptChunk{};
    lengths_.resize(n);
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; ++i) {
      lengths_[i] = c.varint();
      if (lengths_[i] > options_.max_string_bytes) throw CorruptChunk{};
      total += lengths_[i];
    }
    if (total != c.remaining()) throw CorruptChunk{};
    const auto* text = reinterpret_cast<const char*>(c.take(total));
    // Ids the file uses map to ids of our table (equal unless the file
    // repeats a string); a lost string chunk leaves its ids empty.
    if (first > remap_.size()) {
      charge((first - remap_.size()) * sizeof(StringId), 0);
      remap_.resize(first, kNoString);
    }
    for (uint64_t i = 0; i < n; ++i) {
      const std::string_view s(text, lengths_[i]);
      text += lengths_[i];
      const uint64_t id = first + i;
      if (id < remap_.size()) continue;  // already known (a repeated chunk)
      remap_.push_back(trace_.strings.intern(s));
    }
  }

  void read_problems(const uint8_t* raw, uint64_t raw_size) {
    Cursor c(raw, raw_size);
    const uint64_t n = c.varint();
    ProblemCounts stored;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t id = c.varint(), count = c.varint();
      if (id < static_cast<uint64_t>(kProblemCount)) stored.counts[id] = count;  // newer ids: ignored
    }
    stored_problems_ = stored;  // the last problems chunk wins
  }

  template <typename Table>
  void read_table(Table& table, uint64_t n64, const uint8_t* raw, uint64_t raw_size) {
    const size_t n = static_cast<size_t>(n64);
    Cursor c(raw, raw_size);
    constexpr size_t kMaxColumnId = 64;
    std::array<const uint8_t*, kMaxColumnId> at{};
    std::array<size_t, kMaxColumnId> len{};
    const uint64_t columns = c.varint();
    if (columns > 1024) throw CorruptChunk{};
    for (uint64_t i = 0; i < columns; ++i) {
      const uint64_t id = c.varint(), bytes = c.varint();
      const uint8_t* p = c.take(bytes);
      if (id >= kMaxColumnId) continue;  // a column of a newer writer: skipped
      if (at[id]) throw CorruptChunk{};  // the same column twice
      at[id] = p;
      len[id] = static_cast<size_t>(bytes);
    }
    const size_t old = table.size();
    try {
      format::for_each_column(table, [&](int id, auto& col, Transform transform, auto* start) {
        using V = typename std::remove_cvref_t<decltype(col)>::value_type;
        col.resize(old + n);
        if (at[id]) {
          decode_column(col.data() + old, n, transform, start ? start->data() + old : nullptr, Cursor(at[id], len[id]));
        } else {
          // Written by a writer that did not know this column: its default.
          format::for_each_column(defaults<Table>(), [&](int did, const auto& dcol, Transform, const auto*) {
            if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(dcol)>::value_type, V>)
              if (did == id) std::fill(col.begin() + static_cast<std::ptrdiff_t>(old), col.end(), dcol[0]);
          });
        }
      });
    } catch (...) {
      // Drop the rows this chunk added to the columns decoded before the failure.
      format::for_each_column(table, [&](int, auto& col, Transform, auto*) { col.resize(old); });
      throw;
    }
  }

  // String ids must index the string table: map the file's ids to ours and
  // send ids the file never defined to the empty string.
  void finish() {
    remap_and_drop();
    trace_.problems = problems();
  }

  void remap_and_drop() {
    bool identity = true;
    for (size_t i = 0; i < remap_.size() && identity; ++i) identity = remap_[i] == i;
    const auto size = static_cast<StringId>(remap_.size());
    format::for_each_table(trace_, [&](ChunkType, auto& table) {
      format::for_each_string_column(table, [&](std::vector<StringId>& col) {
        if (identity) {
          for (StringId& id : col)
            if (id >= size) id = kNoString;
        } else {
          for (StringId& id : col) id = id < size ? remap_[id] : kNoString;
        }
      });
    });
    // Collector traces written before the decoder left them out can hold GPU
    // records that CUPTI handed over unfinished (timestamp 0; see
    // cupti_decoder.cpp): one made a killed run's wall time 1.8e18 ns.
    if (trace_.meta.source == "collector") {
      const uint64_t n = drop_unfinished(trace_.kernels) + drop_unfinished(trace_.memcpys) +
                         drop_unfinished(trace_.memsets) + drop_unfinished(trace_.syncs) + drop_unfinished(trace_.nccl);
      if (n > 0) problems_.add(Problem::kIncompleteRecord, n);
    }
  }

  // Removes the rows with a zero start or end, or an end before the start; returns how many.
  // A scan without allocating first: sound traces (all but killed runs of old
  // collectors) pay one pass over two columns.
  template <typename Table>
  static uint64_t drop_unfinished(Table& table) {
    auto finished = [&](size_t i) { return !unfinished_span(table.start[i], table.end[i]); };
    uint64_t dropped = 0;
    for (size_t i = 0; i < table.size(); ++i) dropped += !finished(i);
    if (dropped == 0) return 0;
    std::vector<uint8_t> keep(table.size());
    for (size_t i = 0; i < table.size(); ++i) keep[i] = finished(i);
    format::for_each_column(table, [&](int, auto& col, Transform, auto*) {
      size_t out = 0;
      for (size_t i = 0; i < col.size(); ++i)
        if (keep[i]) col[out++] = col[i];
      col.resize(out);
    });
    return dropped;
  }

  const uint8_t* data_;
  size_t size_;
  uint16_t minor_ = 0;
  bool saw_end_ = false;
  std::string name_;
  ReadOptions options_;
  uint64_t limit_ = 0, memory_ = 0;
  bool limit_by_memory_ = false;  // limit_ is what the process may still take, below the file's own cap
  ZSTD_DCtx* dctx_ = nullptr;
  std::unique_ptr<uint8_t[]> raw_;
  size_t raw_size_ = 0;
  std::vector<uint64_t> lengths_;
  std::vector<StringId> remap_{kNoString};
  ProblemCounts problems_, stored_problems_;
  Trace trace_;
};

// The whole file in memory. read(), not mmap(): a file truncated while we
// read it (a collector rolling back a failed write) must give a torn tail,
// not SIGBUS. Files are small (a few bytes per event), so the copy is cheap.
detail::FileBytes read_file(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    const bool stat_ok = ::fstat(fd, &st) == 0;
    ::close(fd);
    if (stat_ok && S_ISDIR(st.st_mode)) fail("{}: is a directory, not a trace file", path.string());
    if (stat_ok) fail("{}: not a regular file (a FIFO, device or socket); give a trace file", path.string());
    fail("{}: cannot stat: {}", path.string(), std::strerror(err));
  }
  detail::FileBytes bytes;
  bytes.size = static_cast<size_t>(st.st_size);
  bytes.data.reset(new std::byte[bytes.size]);  // not zero-filled: read() writes it
  // Fewer bytes when the file shrank while we read: what we have ends in a torn tail.
  const ssize_t done = read_up_to(fd, bytes.data.get(), bytes.size);
  const int err = errno;
  ::close(fd);
  if (done < 0) fail("{}: cannot read: {}", path.string(), std::strerror(err));
  bytes.size = static_cast<size_t>(done);
  return bytes;
}

}  // namespace

Trace read_trace_from_memory(std::span<const std::byte> bytes, std::string_view name, const ReadOptions& options) {
  if (bytes.empty()) fail("{}: empty file, not a scalescope trace", name);
  Reader reader(bytes, name, options);
  return reader.read();
}

namespace detail {
FileBytes read_trace_bytes(const std::filesystem::path& path) { return read_file(path); }
}  // namespace detail

Trace read_trace(const std::filesystem::path& path, const ReadOptions& options) {
  const detail::FileBytes bytes = read_file(path);
  return read_trace_from_memory(bytes.span(), path.string(), options);
}

// ---- ChunkReader (chunk_reader.hpp) ---------------------------------------
// Here, beside Reader, whose decoding and checks it shares: the file is
// walked with pread() instead of being held whole.

namespace {

// Reads up to n bytes at offset; fewer only at the end of the file.
size_t pread_all(int fd, uint8_t* out, size_t n, uint64_t offset, const std::string& name) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("{}: cannot read: {}", name, std::strerror(errno));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

bool is_table_chunk(uint16_t type) {
  bool known = false;
  Trace probe;
  format::for_each_table(probe, [&](ChunkType t, auto&) { known = known || static_cast<uint16_t>(t) == type; });
  return known;
}

}  // namespace

struct ChunkReader::Impl {
  struct Entry {
    uint64_t offset = 0;  // of the chunk header
    format::ChunkHeader header;
    bool read = false;  // problems of decoding it counted once
  };
  int fd = -1;
  std::string name;
  uint64_t size = 0;
  ReadOptions options;
  std::unique_ptr<Reader> reader;
  std::vector<Entry> chunks;
  uint64_t total_rows = 0;
  std::vector<uint8_t> buffer;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  uint8_t* fill(size_t n, uint64_t offset, size_t* got) {
    if (buffer.size() < n) buffer.resize(n);
    *got = pread_all(fd, buffer.data(), n, offset, name);
    return buffer.data();
  }

  // Walks every chunk as Reader::read() does: strings, metadata and problems
  // are decoded now, table chunks are listed.
  void walk() {
    size_t got = 0;
    const uint8_t* h = fill(format::kFileHeaderSize, 0, &got);
    if (got == 0) fail("{}: empty file, not a scalescope trace", name);
    reader->check_file_header(h, got);
    reader->walk([this](size_t n, uint64_t offset, size_t* got_now) { return fill(n, offset, got_now); },
                 [&](const format::ChunkHeader& ch, const uint8_t* payload, size_t at) {
                   if (is_table_chunk(ch.type)) {
                     chunks.push_back({at, ch, false});
                     total_rows += ch.record_count;
                   } else {
                     reader->stream_chunk(ch, payload, at);  // strings, metadata, problems, unknown
                   }
                 });
    reader->trace().problems = reader->problems();
  }
};

ChunkReader::ChunkReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChunkReader::ChunkReader(ChunkReader&&) noexcept = default;
ChunkReader& ChunkReader::operator=(ChunkReader&&) noexcept = default;
ChunkReader::~ChunkReader() = default;

ChunkReader ChunkReader::open(const std::filesystem::path& path, const ReadOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->name = path.string();
  impl->options = options;
  impl->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (impl->fd < 0) fail("{}: cannot open: {}", impl->name, std::strerror(errno));
  struct stat st;
  if (::fstat(impl->fd, &st) != 0) fail("{}: cannot stat: {}", impl->name, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}: is a directory, not a trace file", impl->name);
  if (!S_ISREG(st.st_mode)) fail("{}: not a regular file (a FIFO, device or socket); give a trace file", impl->name);
  impl->size = static_cast<uint64_t>(st.st_size);
  impl->reader = std::make_unique<Reader>(impl->name, options, impl->size);
  impl->walk();
  return ChunkReader(std::move(impl));
}

const Trace& ChunkReader::head() const { return impl_->reader->trace(); }
size_t ChunkReader::chunk_count() const { return impl_->chunks.size(); }
uint32_t ChunkReader::rows(size_t i) const { return impl_->chunks.at(i).header.record_count; }
uint64_t ChunkReader::total_rows() const { return impl_->total_rows; }

void ChunkReader::read(size_t i, Trace& batch) {
  Impl& m = *impl_;
  Impl::Entry& e = m.chunks.at(i);
  size_t got = 0;
  const uint8_t* payload = m.fill(static_cast<size_t>(e.header.stored_size), e.offset + format::kChunkHeaderSize, &got);
  if (got < e.header.stored_size ||
      (m.options.verify_checksums && XXH64(payload, e.header.stored_size, 0) != e.header.payload_checksum))
    fail("{}: the chunk at offset {} changed while it was read; read the file again", m.name, e.offset);
  const ProblemCounts before = m.reader->counted();
  Trace& t = m.reader->trace();
  m.reader->stream_chunk(e.header, payload, static_cast<size_t>(e.offset));
  m.reader->finish_rows();
  if (e.read) m.reader->counted() = before;  // counted the first time
  e.read = true;
  t.problems = m.reader->problems();
  // The decoded rows move to the batch; the batch's emptied columns come
  // back, so their capacity serves the next chunk. Every table, walked as the
  // format lists them: a table left out here (format 1.4's host_modules once
  // was) would stay in the reader, out of the batches, and be remapped again
  // with every later chunk.
  format::for_each_table(batch, [&](ChunkType type, auto& into) {
    format::for_each_column(into, [](int, auto& col, Transform, auto*) { col.clear(); });
    format::for_each_table(t, [&](ChunkType from_type, auto& from) {
      if constexpr (std::is_same_v<decltype(&into), decltype(&from)>)
        if (type == from_type) std::swap(into, from);
    });
  });
}

bool is_trace_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // a FIFO would block the read
    ::close(fd);
    return false;
  }
  char magic[sizeof format::kMagic];
  const ssize_t n = ::read(fd, magic, sizeof magic);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, format::kMagic, sizeof magic) == 0;
}

}  // namespace scalescope::trace
