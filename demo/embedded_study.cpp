#include "demo/embedded_study.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.hpp"

namespace scalescope::demo {

namespace fs = std::filesystem;

std::vector<fs::path> write_embedded_study(const fs::path& dir) {
  std::vector<fs::path> written;
  for (const auto& f : study_files()) {
    const fs::path rel(f.path);
    // The table is made by CMake from a glob; still, never write outside `dir`.
    if (rel.empty() || rel.is_absolute() ||
        std::any_of(rel.begin(), rel.end(), [](const fs::path& c) { return c == ".."; }))
      continue;
    const fs::path out = dir / rel;
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    if (ec) fail("{}: cannot create the folder ({})", out.parent_path().string(), ec.message());
    std::FILE* file = std::fopen(out.c_str(), "wb");
    if (file == nullptr) fail("{}: cannot write ({})", out.string(), std::strerror(errno));
    const bool ok = std::fwrite(f.data.data(), 1, f.data.size(), file) == f.data.size();
    if (std::fclose(file) != 0 || !ok) fail("{}: write failed ({})", out.string(), std::strerror(errno));
    written.push_back(out);
  }
  return written;
}

}  // namespace scalescope::demo
