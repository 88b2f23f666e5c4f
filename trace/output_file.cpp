#include "trace/output_file.hpp"

#include <cerrno>
#include <cstring>

#include "trace/error.hpp"
#include "trace/export_util.hpp"
#include "trace/safe_output.hpp"

namespace scalescope::trace::detail {

OutputFile::OutputFile(const std::filesystem::path& out) : out_(out), tmp_(temp_path_for(out)) {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail("{}: cannot create output: {}", out_.string(), std::strerror(errno));
  buf_.reserve(kFlushBytes + 4096);
}

OutputFile::~OutputFile() {
  if (f_) std::fclose(f_);
  if (!committed_) {
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    unregister_temp(tmp_);
  }
}

void OutputFile::flush() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
    fail("{}: write failed: {}", out_.string(), std::strerror(errno));
  buf_.clear();
}

void OutputFile::commit() {
  flush();
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) fail("{}: write failed: {}", out_.string(), std::strerror(errno));
  commit_output(tmp_, out_);
  committed_ = true;
}

}  // namespace scalescope::trace::detail
