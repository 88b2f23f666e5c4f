#pragma once
// The rows of one rank as the analysis reads them, chunk by chunk: the table
// chunks of a .sstrace file (trace::ChunkReader: memory bounded by the chunks
// held, not by the rank's length), or a trace already in memory, cut into
// slices of one table of at most a file chunk's rows (read in place, never
// copied), so that what the analysis holds per chunk is bounded the same way.
//
//   ChunkSource chunks(reader);  // or ChunkSource chunks(trace);
//   trace::Trace batch;
//   for (size_t c = 0; c < chunks.count(); ++c) {
//     const Chunk rows = chunks.read(c, batch);
//     for (size_t i : rows.of(rows->kernels)) ... rows->kernels.start[i] ...
//     (string ids index chunks.head().strings)
//   }
//
// A chunk's rows of a table are rows.of(table), indexes into that table:
// every row of a file's chunk (which holds one table's rows), or a slice of
// one table of the trace in memory (no rows of the others).

#include <algorithm>
#include <cstddef>
#include <vector>

#include "trace/model/chunk_reader.hpp"
#include "trace/model/table_columns.hpp"
#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::analyze {

// Row indexes [first, last) of one table; a range-for yields each index.
// (Not std::views::iota: clang 14 cannot compile libstdc++ 12's iota_view.)
class RowRange {
 public:
  class iterator {
   public:
    explicit iterator(size_t row) : row_(row) {}
    size_t operator*() const { return row_; }
    iterator& operator++() {
      ++row_;
      return *this;
    }
    bool operator==(const iterator&) const = default;

   private:
    size_t row_;
  };
  RowRange(size_t first, size_t last) : first_(first), last_(last) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(last_); }
  size_t size() const { return last_ - first_; }
  bool empty() const { return first_ == last_; }

 private:
  size_t first_, last_;
};

class Chunk {
 public:
  // Every row of every table of `rows`.
  explicit Chunk(const trace::Trace& rows) : rows_(&rows) {}
  // Rows [first, last) of `table`, a table of `rows`; none of the others.
  Chunk(const trace::Trace& rows, const void* table, size_t first, size_t last)
      : rows_(&rows), table_(table), first_(first), last_(last) {}

  const trace::Trace& operator*() const { return *rows_; }
  const trace::Trace* operator->() const { return rows_; }
  // The chunk's rows of `table` (a table of this chunk's trace).
  template <typename Table>
  RowRange of(const Table& table) const {
    if (!table_) return RowRange(0, table.size());
    return static_cast<const void*>(&table) == table_ ? RowRange(first_, last_) : RowRange(0, 0);
  }

 private:
  const trace::Trace* rows_;
  const void* table_ = nullptr;  // null: every row of every table
  size_t first_ = 0, last_ = 0;
};

class ChunkSource {
 public:
  explicit ChunkSource(trace::ChunkReader& reader) : reader_(&reader) {}
  // rows_per_chunk: a slice's rows at most (a file chunk's by default).
  explicit ChunkSource(const trace::Trace& whole,
                       size_t rows_per_chunk = trace::WriterOptions{}.max_rows_per_chunk)
      : whole_(&whole) {
    rows_per_chunk = std::max<size_t>(rows_per_chunk, 1);
    trace::for_each_trace_table(whole, [&](const auto& table) {
      for (size_t first = 0; first < table.size(); first += rows_per_chunk)
        slices_.push_back({&table, first, std::min(table.size(), first + rows_per_chunk)});
    });
  }

  // Metadata, strings and problems (a file's problems are complete once
  // each chunk has been read once).
  const trace::Trace& head() const { return reader_ ? reader_->head() : *whole_; }
  size_t count() const { return reader_ ? reader_->chunk_count() : slices_.size(); }
  // Chunk c's rows: decoded into batch (its tables cleared first), or a
  // slice of the trace in memory. Valid until batch is read into again.
  Chunk read(size_t c, trace::Trace& batch) {
    if (!reader_) return Chunk(*whole_, slices_[c].table, slices_[c].first, slices_[c].last);
    // The batch's columns are released, not handed back to the reader for
    // the next chunk: a batch and the reader would otherwise each keep the
    // largest chunk of every table read so far.
    batch = trace::Trace{};
    reader_->read(c, batch);
    return Chunk(batch);
  }

 private:
  struct Slice {
    const void* table;
    size_t first, last;
  };
  trace::ChunkReader* reader_ = nullptr;
  const trace::Trace* whole_ = nullptr;
  std::vector<Slice> slices_;
};

}  // namespace scalescope::analyze
