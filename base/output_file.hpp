#pragma once
// Private: a buffered output file for the exporters that throws an Error
// naming the file on any failed write, and removes itself unless committed.
// A name ending in ".gz" is written gzip-compressed (what the name says, and
// what Perfetto and chrome://tracing open directly).

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace scalescope::trace::detail {

class OutputFile {
 public:
  // Opens a temporary file beside `out`; commit() renames it onto `out`.
  explicit OutputFile(const std::filesystem::path& out);
  ~OutputFile();  // removes the temporary file when not committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::string& buffer() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() { flush(false); }
  void commit();

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  void flush(bool finish);
  void write(const char* data, size_t size);
  struct Gzip;
  std::filesystem::path out_, tmp_;
  std::FILE* f_ = nullptr;
  std::unique_ptr<Gzip> gzip_;  // set when the output's name ends in ".gz"
  std::string buf_;
  bool committed_ = false;
};

}  // namespace scalescope::trace::detail
