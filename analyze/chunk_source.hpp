#pragma once
// The rows of one rank as the analysis reads them, chunk by chunk: the table
// chunks of a .sstrace file (trace::ChunkReader: memory bounded by the chunks
// held, not by the rank's length), or a trace already in memory, which is one
// chunk read in place (never copied).
//
//   ChunkSource chunks(reader);  // or ChunkSource chunks(trace);
//   trace::Trace batch;
//   for (size_t c = 0; c < chunks.count(); ++c) {
//     const trace::Trace& rows = chunks.read(c, batch);
//     ... rows.kernels, ... (string ids index chunks.head().strings)
//   }
//
// A file's chunk holds one table's rows, the trace in memory every table's:
// the analysis takes any mix of tables in a chunk.

#include <cstddef>

#include "trace/model/chunk_reader.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

class ChunkSource {
 public:
  explicit ChunkSource(trace::ChunkReader& reader) : reader_(&reader) {}
  explicit ChunkSource(const trace::Trace& whole) : whole_(&whole) {}

  // Metadata, strings and problems (a file's problems are complete once
  // each chunk has been read once).
  const trace::Trace& head() const { return reader_ ? reader_->head() : *whole_; }
  size_t count() const { return reader_ ? reader_->chunk_count() : 1; }
  // Chunk c's rows: decoded into batch (its tables cleared first), or the
  // trace in memory itself. Valid until batch is read into again.
  const trace::Trace& read(size_t c, trace::Trace& batch) {
    if (!reader_) return *whole_;
    reader_->read(c, batch);
    return batch;
  }

 private:
  trace::ChunkReader* reader_ = nullptr;
  const trace::Trace* whole_ = nullptr;
};

}  // namespace scalescope::analyze
