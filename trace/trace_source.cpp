#include "trace/trace_source.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "trace/error.hpp"
#include "trace/trace_file.hpp"

namespace scalescope::trace {
namespace {

// First non-space byte is '{' or the gzip magic: worth handing to the importer.
bool looks_like_json_or_gzip(const std::filesystem::path& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return false;
  unsigned char buf[64];
  size_t n = std::fread(buf, 1, sizeof buf, f.get());
  if (n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) return true;
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') continue;
    return buf[i] == '{' || buf[i] == '[';
  }
  return false;
}

void sort_by_rank(std::vector<Trace>& traces) {
  std::stable_sort(traces.begin(), traces.end(), [](const Trace& a, const Trace& b) {
    const auto ra = static_cast<uint32_t>(a.meta.rank), rb = static_cast<uint32_t>(b.meta.rank);
    return ra < rb;
  });
}

}  // namespace

std::vector<std::filesystem::path> list_kineto_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) fail("{}: cannot list directory: {}", dir.string(), ec.message());
  for (const auto& entry : it)
    if (entry.is_regular_file(ec) && is_kineto_path(entry.path())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Trace> load_traces(const std::filesystem::path& path, std::vector<ImportReport>* reports,
                               const std::function<void(size_t, size_t)>& on_file_loaded) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: no such file or directory", path.string());
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::filesystem::path> json = list_kineto_files(path);
    bool has_sstrace = false;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec))
      if (entry.path().extension() == kTraceFileExtension) has_sstrace = true;
    if (has_sstrace || json.empty()) {
      LoadOptions load;
      load.on_file_loaded = on_file_loaded;
      return load_run(path, load);
    }
    std::vector<Trace> traces;
    for (const auto& f : json) {
      ImportReport rep;
      traces.push_back(import_kineto_file(f, &rep));
      if (reports) reports->push_back(std::move(rep));
      if (on_file_loaded) on_file_loaded(traces.size(), json.size());
    }
    sort_by_rank(traces);
    return traces;
  }
  if (is_trace_file(path)) return load_run(path);
  if (is_kineto_path(path) || looks_like_json_or_gzip(path)) {
    ImportReport rep;
    std::vector<Trace> one;
    one.push_back(import_kineto_file(path, &rep));
    if (reports) reports->push_back(std::move(rep));
    return one;
  }
  fail("{}: neither a scalescope trace (.sstrace), a run directory nor a Kineto JSON trace", path.string());
}

}  // namespace scalescope::trace
