// TraceWriter: encodes tables column by column (delta / duration transforms,
// frame-of-reference byte-shuffled packing, constants stored once), compresses
// each chunk with zstd and writes it with one pwrite() at the end of the last
// complete chunk, so a kill or a failed write never leaves a torn chunk
// before good data.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <xxhash.h>
#include <zstd.h>

#include "base/error.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/model/trace_format.hpp"

namespace scalescope::trace {

using format::ChunkType;
using format::Encoding;
using format::Transform;

namespace {

// Strings longer than this are cut (readers refuse longer ones by default).
constexpr size_t kMaxWrittenStringBytes = size_t{1} << 20;
constexpr size_t kMaxStringChunkBytes = size_t{16} << 20;
// Keeps every table chunk far below the readers' default 1 GiB chunk cap.
constexpr size_t kMaxWrittenRowsPerChunk = size_t{1} << 22;

int width_for(uint64_t range) {
  if (range == 0) return 0;
  if (range <= 0xFF) return 1;
  if (range <= 0xFFFF) return 2;
  if (range <= 0xFFFFFFFFull) return 4;
  return 8;
}

// Appends one column's bytes (encoding byte first) for rows [begin, end).
template <typename V, typename S>
void encode_column(std::vector<uint8_t>& out, std::vector<uint64_t>& scratch, const std::vector<V>& col,
                   Transform transform, const S* start, size_t begin, size_t end) {
  const size_t n = end - begin;
  scratch.resize(n);
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t v = format::to_bits(col[begin + i]);
    switch (transform) {
      case Transform::kNone: scratch[i] = v; break;
      case Transform::kDelta:
        scratch[i] = v - prev;
        prev = v;
        break;
      case Transform::kMinusStart: scratch[i] = v - format::to_bits((*start)[begin + i]); break;
    }
  }
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (uint64_t u : scratch) {
    const auto s = static_cast<int64_t>(u);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  const uint64_t base = static_cast<uint64_t>(lo);
  const int width = width_for(static_cast<uint64_t>(hi) - base);
  if (width == 0) {
    out.push_back(static_cast<uint8_t>(Encoding::kConstant));
    format::put_varint(out, base);
    return;
  }
  out.push_back(static_cast<uint8_t>(Encoding::kPacked));
  out.push_back(static_cast<uint8_t>(width));
  format::put_varint(out, base);
  const size_t at = out.size();
  out.resize(at + n * static_cast<size_t>(width));
  // Byte-shuffled: all low bytes, then all second bytes...; the high planes
  // are mostly zero or repetitive, which zstd compresses to almost nothing.
  for (int k = 0; k < width; ++k) {
    uint8_t* plane = out.data() + at + static_cast<size_t>(k) * n;
    const int shift = 8 * k;
    for (size_t i = 0; i < n; ++i) plane[i] = static_cast<uint8_t>((scratch[i] - base) >> shift);
  }
}

}  // namespace

struct TraceWriter::Impl {
  std::filesystem::path path;
  WriterOptions options;
  int fd = -1;
  uint64_t offset = 0;           // end of the last complete chunk
  uint64_t strings_written = 1;  // id 0 is always "" and never written
  uint64_t chunks = 0;           // complete chunks written (the end record counts them)
  std::string last_error;
  ZSTD_CCtx* cctx = nullptr;
  std::vector<uint8_t> payload, column, out;
  std::vector<uint64_t> scratch;
  int inject_ok = -1;  // write failure injection: -1 off
  int inject_errno = 0;

  ~Impl() {
    if (fd >= 0) ::close(fd);
    ZSTD_freeCCtx(cctx);
  }

  [[noreturn]] void fail_errno(const char* what, int err) {
    fail("{}: cannot {}: {}", path.string(), what, std::strerror(err));
  }

  // Writes `size` bytes at `offset` and advances it, or rolls the file back
  // to `offset` and throws.
  void write_at_end(const uint8_t* data, size_t size) {
    if (fd < 0) fail("{}: trace writer is closed", path.string());
    size_t done = 0;
    while (done < size) {
      ssize_t n;
      if (inject_ok == 0) {
        // Simulated failure after a partial write, like ENOSPC mid-chunk.
        inject_ok = -1;
        const ssize_t half = ::pwrite(fd, data, size / 2, static_cast<off_t>(offset));
        (void)half;
        errno = inject_errno;
        n = -1;
      } else {
        n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
      }
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        // Drop the partial chunk so the next one starts at a chunk boundary.
        if (::ftruncate(fd, static_cast<off_t>(offset)) != 0) {}
        fail_errno("write trace chunk", err);
      }
      done += static_cast<size_t>(n);
    }
    if (inject_ok > 0) --inject_ok;
    offset += size;
  }

  void write_chunk(ChunkType type, uint32_t records, const std::vector<uint8_t>& raw) {
    const size_t bound = ZSTD_compressBound(raw.size());
    out.resize(format::kChunkHeaderSize + bound);
    uint8_t* body = out.data() + format::kChunkHeaderSize;
    size_t stored = ZSTD_compress2(cctx, body, bound, raw.data(), raw.size());
    auto codec = format::Codec::kZstd;
    if (ZSTD_isError(stored) || stored >= raw.size()) {
      // Incompressible (or tiny): store as is.
      codec = format::Codec::kNone;
      stored = raw.size();
      out.resize(format::kChunkHeaderSize + stored);
      body = out.data() + format::kChunkHeaderSize;
      if (stored) std::memcpy(body, raw.data(), stored);
    }
    uint8_t* h = out.data();
    format::put_u16(h + 0, static_cast<uint16_t>(type));
    format::put_u16(h + 2, static_cast<uint16_t>(codec));
    format::put_u32(h + 4, records);
    format::put_u64(h + 8, stored);
    format::put_u64(h + 16, raw.size());
    format::put_u64(h + 24, XXH64(body, stored, 0));
    format::put_u64(h + 32, XXH64(h, 32, 0));
    write_at_end(out.data(), format::kChunkHeaderSize + stored);
    ++chunks;
  }

  void write_end() {
    payload.clear();
    format::put_varint(payload, chunks);
    format::put_varint(payload, offset);
    write_chunk(ChunkType::kEnd, 0, payload);
  }

  void write_strings(const StringTable& strings) {
    while (strings_written < strings.size()) {
      payload.clear();
      const uint64_t first = strings_written;
      uint64_t last = first, bytes = 0;
      while (last < strings.size() && last - first < options.max_rows_per_chunk) {
        const size_t len = std::min(strings.view(static_cast<StringId>(last)).size(), kMaxWrittenStringBytes);
        if (last > first && bytes + len > kMaxStringChunkBytes) break;
        bytes += len;
        ++last;
      }
      format::put_varint(payload, first);
      format::put_varint(payload, last - first);
      for (uint64_t id = first; id < last; ++id)
        format::put_varint(payload, std::min(strings.view(static_cast<StringId>(id)).size(), kMaxWrittenStringBytes));
      for (uint64_t id = first; id < last; ++id) {
        std::string_view s = strings.view(static_cast<StringId>(id));
        s = s.substr(0, kMaxWrittenStringBytes);
        payload.insert(payload.end(), s.begin(), s.end());
      }
      write_chunk(ChunkType::kStrings, static_cast<uint32_t>(last - first), payload);
      strings_written = last;
    }
  }

  template <typename Table>
  void write_table(ChunkType type, const Table& table) {
    const size_t rows = table.size();
    for (size_t begin = 0; begin < rows; begin += options.max_rows_per_chunk) {
      const size_t end = std::min(rows, begin + options.max_rows_per_chunk);
      payload.clear();
      size_t columns = 0;
      format::for_each_column(table, [&](int, const auto&, Transform, const auto*) { ++columns; });
      format::put_varint(payload, columns);
      format::for_each_column(table, [&](int id, const auto& col, Transform transform, const auto* start) {
        if (col.size() != rows)
          fail("{}: table column {} has {} rows, expected {}", path.string(), id, col.size(), rows);
        column.clear();
        using S = std::remove_cvref_t<decltype(*start)>;
        encode_column<typename std::remove_cvref_t<decltype(col)>::value_type, S>(column, scratch, col, transform,
                                                                                  start, begin, end);
        format::put_varint(payload, static_cast<uint64_t>(id));
        format::put_varint(payload, column.size());
        payload.insert(payload.end(), column.begin(), column.end());
      });
      write_chunk(type, static_cast<uint32_t>(end - begin), payload);
    }
  }

  void append(const Trace& batch, const StringTable& strings) {
    write_strings(strings);
    format::for_each_table(batch, [&](ChunkType type, const auto& table) { write_table(type, table); });
  }

  void write_metadata(const Metadata& meta) {
    const std::string json = format::metadata_to_json(meta);
    payload.assign(json.begin(), json.end());
    write_chunk(ChunkType::kMetadata, 1, payload);
  }

  void write_problems(const ProblemCounts& problems) {
    payload.clear();
    uint64_t n = 0;
    for (uint64_t c : problems.counts) n += c != 0;
    format::put_varint(payload, n);
    for (int i = 0; i < kProblemCount; ++i) {
      if (problems.counts[i] == 0) continue;
      format::put_varint(payload, static_cast<uint64_t>(i));
      format::put_varint(payload, problems.counts[i]);
    }
    write_chunk(ChunkType::kProblems, static_cast<uint32_t>(n), payload);
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;
TraceWriter::~TraceWriter() {
  // No end record here: a writer destroyed mid-write must not vouch for the file.
  if (impl_ && impl_->fd >= 0) {
    ::close(impl_->fd);
    impl_->fd = -1;
  }
}

TraceWriter TraceWriter::open(const std::filesystem::path& path, const Metadata& meta, const WriterOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  impl->options.max_rows_per_chunk = std::clamp<size_t>(options.max_rows_per_chunk, 1, kMaxWrittenRowsPerChunk);
  impl->cctx = ZSTD_createCCtx();
  if (!impl->cctx) fail("{}: cannot create a zstd compressor (out of memory)", path.string());
  ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_compressionLevel, options.zstd_level);
  impl->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl->fd < 0) impl->fail_errno("create trace file", errno);
  uint8_t header[format::kFileHeaderSize] = {};
  std::memcpy(header, format::kMagic, sizeof format::kMagic);
  format::put_u16(header + 8, kFormatMajor);
  format::put_u16(header + 10, kFormatMinor);
  format::put_u32(header + 12, 0);  // flags: none defined in 1.0
  impl->write_at_end(header, sizeof header);
  impl->write_metadata(meta);
  return TraceWriter(std::move(impl));
}

std::unique_ptr<TraceWriter> TraceWriter::try_open(const std::filesystem::path& path, const Metadata& meta,
                                                   const WriterOptions& options, std::string* error) noexcept {
  try {
    return std::make_unique<TraceWriter>(open(path, meta, options));
  } catch (const std::exception& e) {
    if (error) *error = e.what();
  } catch (...) {
    if (error) *error = path.string() + ": cannot open trace file";
  }
  return nullptr;
}

void TraceWriter::append(const Trace& batch, const StringTable& strings) { impl_->append(batch, strings); }

void TraceWriter::write_metadata(const Metadata& meta) { impl_->write_metadata(meta); }
void TraceWriter::write_problems(const ProblemCounts& problems) { impl_->write_problems(problems); }

namespace {
template <typename F>
bool no_throw(std::string& error, F&& f) noexcept {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error in trace writer";
  }
  return false;
}
}  // namespace

bool TraceWriter::try_append(const Trace& batch, const StringTable& strings) noexcept {
  return no_throw(impl_->last_error, [&] { append(batch, strings); });
}
bool TraceWriter::try_write_metadata(const Metadata& meta) noexcept {
  return no_throw(impl_->last_error, [&] { write_metadata(meta); });
}
bool TraceWriter::try_write_problems(const ProblemCounts& problems) noexcept {
  return no_throw(impl_->last_error, [&] { write_problems(problems); });
}
bool TraceWriter::try_close() noexcept {
  return no_throw(impl_->last_error, [&] { close(); });
}

void TraceWriter::flush() {
  if (impl_->fd >= 0 && impl_->options.fsync && ::fsync(impl_->fd) != 0) impl_->fail_errno("fsync", errno);
}

void TraceWriter::close() {
  if (impl_->fd < 0) return;
  impl_->write_end();  // throws (fd kept) when the disk is full: try_close() reports it
  const int fd = impl_->fd;
  impl_->fd = -1;
  const bool sync_failed = impl_->options.fsync && ::fsync(fd) != 0;
  const int sync_errno = errno;
  if (::close(fd) != 0 && !sync_failed) impl_->fail_errno("close trace file", errno);
  if (sync_failed) impl_->fail_errno("fsync", sync_errno);
}

const std::string& TraceWriter::last_error() const { return impl_->last_error; }
const std::filesystem::path& TraceWriter::path() const { return impl_->path; }
uint64_t TraceWriter::bytes_written() const { return impl_->offset; }
uint64_t TraceWriter::strings_written() const { return impl_->strings_written; }

void TraceWriter::inject_write_failure(int n_ok, int errno_value) {
  impl_->inject_ok = n_ok;
  impl_->inject_errno = errno_value;
}

void write_trace(const std::filesystem::path& path, const Trace& trace, const WriterOptions& options) {
  TraceWriter w = TraceWriter::open(path, trace.meta, options);
  w.append(trace);
  w.write_problems(trace.problems);
  w.close();
}

}  // namespace scalescope::trace
