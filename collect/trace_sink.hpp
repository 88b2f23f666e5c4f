#pragma once
// The collector's side of the trace file: appends batches through
// TraceWriter::try_append and turns a failed write (disk full, file gone)
// into one warning per failure streak plus counted lost events, never an
// exception. A later append that succeeds resumes the trace.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::collect {

class TraceSink {
 public:
  using Warn = std::function<void(const std::string& line)>;

  // nullptr with *error when the file cannot be created.
  static std::unique_ptr<TraceSink> open(const std::filesystem::path& path, const trace::Metadata& meta, Warn warn,
                                         std::string* error);

  // Writes the batch (its string ids index `strings`); false when it was lost.
  bool append(const trace::Trace& batch, const trace::StringTable& strings);
  // Final metadata and problem counts (lost events added), then close.
  void finish(const trace::Metadata& meta, trace::ProblemCounts problems);

  uint64_t events_written() const { return events_written_; }
  uint64_t events_lost() const { return events_lost_; }
  bool failing() const { return failing_; }
  uint64_t bytes_written() const { return writer_->bytes_written(); }
  const std::filesystem::path& path() const { return writer_->path(); }
  trace::TraceWriter& writer() { return *writer_; }  // tests inject failures

 private:
  TraceSink(std::unique_ptr<trace::TraceWriter> writer, Warn warn)
      : writer_(std::move(writer)), warn_(std::move(warn)) {}
  std::unique_ptr<trace::TraceWriter> writer_;
  Warn warn_;
  uint64_t events_written_ = 0, events_lost_ = 0;
  bool failing_ = false;
};

}  // namespace scalescope::collect
