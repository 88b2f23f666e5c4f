#pragma once
// Private test helpers shared by the tests of trace and of the parts above
// it: a temporary folder, a trace written in chunks of a given size, and
// where an address of this process is mapped (for native-frame naming).
#include <stdlib.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::trace::testing {

// A fresh folder under the temporary directory, removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// `t` written to dir/name with at most rows_per_chunk rows per chunk.
inline std::filesystem::path write_in_chunks(const TempDir& dir, const Trace& t, size_t rows_per_chunk,
                                             const std::string& name = "t.sstrace") {
  const std::filesystem::path p = dir / name;
  WriterOptions w;
  w.max_rows_per_chunk = rows_per_chunk;
  write_trace(p, t, w);
  return p;
}

// The mapped file and file offset of an address of this process (as the
// collector records native frames).
inline bool locate_in_maps(uintptr_t addr, std::string* path, uint64_t* offset) {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) {
    uint64_t start = 0, end = 0, off = 0;
    char perms[8] = {}, file[3000] = {};
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %2999s", &start, &end, perms, &off, file) <
        4)
      continue;
    if (addr >= start && addr < end) {
      *path = file;
      *offset = addr - start + off;
      found = true;
    }
  }
  std::fclose(f);
  return found;
}

}  // namespace scalescope::trace::testing
