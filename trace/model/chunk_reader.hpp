#pragma once
// A trace file read one table chunk at a time, for analyses whose memory must
// not grow with the trace: open() walks the file once, verifying
// every chunk as read_trace() does, and keeps the metadata, strings and
// problem counts; read(i) decodes table chunk i into a caller's batch.
//
//   ChunkReader r = ChunkReader::open("rank0.sstrace");
//   Trace batch;
//   for (size_t i = 0; i < r.chunk_count(); ++i) {
//     r.read(i, batch);              // batch's tables hold chunk i's rows only
//     ... batch.kernels, ... (string ids index r.head().strings)
//   }
//
// Chunks come in file order; a chunk's rows are those one writer append()
// wrote, not a time range. Reading every chunk once gives exactly the rows,
// strings, metadata and problems that read_trace() gives, in the same order.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::trace {

class ChunkReader {
 public:
  // Errors (not a trace, unreadable version, absurd sizes) as read_trace().
  static ChunkReader open(const std::filesystem::path& path, const ReadOptions& options = {});
  ChunkReader(ChunkReader&&) noexcept;
  ChunkReader& operator=(ChunkReader&&) noexcept;
  ~ChunkReader();

  // Metadata (the last metadata chunk), strings and problems of the file;
  // its tables are empty. Problems found while decoding table chunks (corrupt
  // columns, unfinished rows) are added once each chunk has been read once.
  const Trace& head() const;
  size_t chunk_count() const;     // table chunks whose checksums hold
  uint32_t rows(size_t i) const;  // as its header says
  uint64_t total_rows() const;    // over all table chunks
  // Clears batch's tables (capacity kept) and decodes chunk i into them.
  void read(size_t i, Trace& batch);

 private:
  struct Impl;
  explicit ChunkReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace scalescope::trace
