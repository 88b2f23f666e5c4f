// load_run: one trace file, or every *.sstrace of a run directory read in
// parallel by a small pool of threads (each file is independent), then
// ordered by rank and pid so that index i is a stable rank order.

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "trace/clock_alignment.hpp"
#include "trace/error.hpp"
#include "trace/trace_file.hpp"

namespace scalescope::trace {

std::vector<std::filesystem::path> list_run_files(const std::filesystem::path& run_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) fail("{}: not a run directory", run_dir.string());
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(run_dir, ec);
  if (ec) fail("{}: cannot list run directory: {}", run_dir.string(), ec.message());
  for (const auto& entry : it) {
    if (entry.path().extension() == kTraceFileExtension && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  if (files.empty()) fail("{}: run directory holds no {} files", run_dir.string(), kTraceFileExtension);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Trace> load_run(const std::filesystem::path& path_or_file, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path_or_file, ec)) fail("{}: no such file or directory", path_or_file.string());
  if (!std::filesystem::is_directory(path_or_file, ec)) {
    std::vector<Trace> one;
    one.push_back(read_trace(path_or_file, options.read));
    return one;
  }
  const std::vector<std::filesystem::path> files = list_run_files(path_or_file);
  std::vector<Trace> traces(files.size());
  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, files.size()));
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::exception_ptr first_error;
  size_t first_error_index = files.size();
  size_t loaded = 0;  // guarded by mutex
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      try {
        traces[i] = read_trace(files[i], options.read);
        if (options.on_file_loaded) {
          std::lock_guard lock(mutex);
          options.on_file_loaded(++loaded, files.size());
        }
      } catch (...) {
        // Report the error of the first file in name order, whatever thread saw it first.
        std::lock_guard lock(mutex);
        if (i < first_error_index) {
          first_error_index = i;
          first_error = std::current_exception();
        }
        next = files.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
  std::stable_sort(traces.begin(), traces.end(), [](const Trace& a, const Trace& b) {
    // Unknown rank (-1) sorts last.
    const auto ra = static_cast<uint32_t>(a.meta.rank), rb = static_cast<uint32_t>(b.meta.rank);
    if (ra != rb) return ra < rb;
    return a.meta.pid < b.meta.pid;
  });
  AlignOptions align;
  align.apply = options.align_clocks;
  ClockAlignment clocks = align_clocks(traces, align);
  if (options.clocks) *options.clocks = std::move(clocks);
  return traces;
}

}  // namespace scalescope::trace
