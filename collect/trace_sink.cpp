#include "collect/trace_sink.hpp"

namespace scalescope::collect {

std::unique_ptr<TraceSink> TraceSink::open(const std::filesystem::path& path, const trace::Metadata& meta, Warn warn,
                                           std::string* error) {
  auto writer = trace::TraceWriter::try_open(path, meta, {}, error);
  if (!writer) return nullptr;
  return std::unique_ptr<TraceSink>(new TraceSink(std::move(writer), std::move(warn)));
}

bool TraceSink::append(const trace::Trace& batch, const trace::StringTable& strings) {
  // A batch of host rows only is still written: the last one (after the
  // samplers stop) may hold only them.
  if (batch.empty()) return true;
  size_t events = batch.event_count();
  if (writer_->try_append(batch, strings)) {
    events_written_ += events;
    if (failing_ && warn_) warn_("writing " + writer_->path().string() + " works again");
    failing_ = false;
    return true;
  }
  if (!failing_ && warn_)
    warn_("cannot write " + writer_->path().string() + " (" + writer_->last_error() +
          "); records are dropped and counted until writing works again");
  failing_ = true;
  events_lost_ += events;
  return false;
}

void TraceSink::finish(const trace::Metadata& meta, trace::ProblemCounts problems) {
  if (events_lost_ > 0) problems.add(trace::Problem::kDroppedRecords, events_lost_);
  writer_->try_write_metadata(meta);
  writer_->try_write_problems(problems);
  writer_->try_close();
}

}  // namespace scalescope::collect
