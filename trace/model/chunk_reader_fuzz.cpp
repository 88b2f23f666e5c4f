// Feeds arbitrary bytes to the chunk-at-a-time reader (the streaming
// analysis). It must either read or throw scalescope::Error, never crash, and
// when both readers accept the input, reading every chunk once must give the
// rows read_trace gives, every table and column bit for bit (chunk_reader.hpp's
// promise), so a difference traps.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "trace/model/chunk_reader.hpp"
#include "base/error.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/model/trace_format.hpp"

namespace {

using scalescope::trace::Trace;
namespace format = scalescope::trace::format;

// Appends every column of batch to the same column of all.
void append(Trace& all, const Trace& batch) {
  format::for_each_table(all, [&](format::ChunkType type, auto& into) {
    format::for_each_table(batch, [&](format::ChunkType from_type, const auto& from) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(into)>, std::remove_cvref_t<decltype(from)>>) {
        if (type != from_type) return;
        format::for_each_column(into, [&](int id, auto& col, format::Transform, const auto*) {
          format::for_each_column(from, [&](int from_id, const auto& src, format::Transform, const auto*) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(col)>, std::remove_cvref_t<decltype(src)>>)
              if (id == from_id) col.insert(col.end(), src.begin(), src.end());
          });
        });
      }
    });
  });
}

// Every table's every column, bit for bit, and the strings the ids index.
bool same_rows(const Trace& a, const Trace& b) {
  if (a.strings.size() != b.strings.size()) return false;
  for (scalescope::trace::StringId i = 0; i < a.strings.size(); ++i)
    if (a.strings.view(i) != b.strings.view(i)) return false;
  bool same = true;
  format::for_each_table(a, [&](format::ChunkType type, const auto& ta) {
    format::for_each_table(b, [&](format::ChunkType tb_type, const auto& tb) {
      if constexpr (std::is_same_v<decltype(&ta), decltype(&tb)>) {
        if (type != tb_type) return;
        format::for_each_column(ta, [&](int id, const auto& ca, format::Transform, const auto*) {
          format::for_each_column(tb, [&](int idb, const auto& cb, format::Transform, const auto*) {
            if constexpr (std::is_same_v<decltype(&ca), decltype(&cb)>) {
              if (id != idb) return;
              if (ca.size() != cb.size()) {
                same = false;
                return;
              }
              for (size_t i = 0; i < ca.size(); ++i) same = same && format::to_bits(ca[i]) == format::to_bits(cb[i]);
            }
          });
        });
      }
    });
  });
  return same;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader takes a path (it preads): an anonymous in-memory file gives it one.
  const int fd = memfd_create("chunk_reader_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) {
      close(fd);
      return 0;
    }
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  scalescope::trace::ReadOptions options;
  options.max_memory_bytes = uint64_t{256} << 20;  // below libFuzzer's default 2 GB RSS limit
  options.max_chunk_bytes = uint64_t{64} << 20;
  // Mutated inputs rarely keep a valid XXH64: also read without checksum checks.
  for (bool verify : {true, false}) {
    options.verify_checksums = verify;
    std::optional<Trace> whole, chunked;
    try {
      whole = scalescope::trace::read_trace_from_memory(std::span(reinterpret_cast<const std::byte*>(data), size),
                                                        "fuzz input", options);
    } catch (const scalescope::Error&) {}
    try {
      auto reader = scalescope::trace::ChunkReader::open(path, options);
      Trace batch, all;
      for (size_t i = 0; i < reader.chunk_count(); ++i) {
        reader.read(i, batch);
        append(all, batch);
      }
      all.strings = reader.head().strings;
      chunked = std::move(all);
    } catch (const scalescope::Error&) {}
    if (whole && chunked && !same_rows(*whole, *chunked)) __builtin_trap();
  }
  close(fd);
  return 0;
}
