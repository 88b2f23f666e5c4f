// analyze_path: load and summarize ranks a few at a time (bounded memory).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "analyze/analyze.hpp"
#include "trace/error.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/trace_file.hpp"

namespace scalescope::analyze {
namespace fs = std::filesystem;

std::vector<fs::path> list_trace_inputs(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path.string());
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<fs::path> traces, kineto;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    if (entry.path().extension() == trace::kTraceFileExtension) traces.push_back(entry.path());
    else if (trace::is_kineto_path(entry.path())) kineto.push_back(entry.path());
  }
  if (ec) fail("{}: cannot list the directory: {}", path.string(), ec.message());
  auto& files = traces.empty() ? kineto : traces;
  if (files.empty()) fail("{}: the directory holds no .sstrace files and no Kineto .json/.json.gz traces", path.string());
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

trace::Trace load_one(const fs::path& file) {
  if (trace::is_trace_file(file)) return trace::read_trace(file);
  if (trace::is_kineto_path(file)) return trace::import_kineto_file(file);
  fail("{}: neither a scalescope trace (.sstrace) nor a PyTorch-profiler JSON trace (.json, .json.gz)", file.string());
}

}  // namespace

RunAnalysis analyze_path(const fs::path& path, const Options& options, unsigned threads,
                         const std::function<void(size_t, size_t)>& on_file_done) {
  const std::vector<fs::path> files = list_trace_inputs(path);
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  threads = std::min<unsigned>(threads, static_cast<unsigned>(files.size()));
  std::vector<RankAnalysis> ranks(files.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;  // also serialises on_file_done
  size_t files_done = 0;
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        trace::Trace t = load_one(files[i]);
        ranks[i] = analyze_rank(t, options);
        if (on_file_done) {
          std::lock_guard lock(error_mutex);
          on_file_done(++files_done, files.size());
        }
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next = files.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  // Unknown ranks (no RANK in the process's environment, a Kineto trace
  // without distributedInfo) are numbered in file order, skipping numbers a
  // known rank has. A rank-less process without GPU work while others have
  // some (the torchrun agent) keeps -1: combine() leaves it out by name.
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  std::set<int32_t> used;
  for (const auto& r : ranks)
    if (r.rank >= 0) used.insert(r.rank);
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].rank < 0 && (ranks[i].gpu_activity || !any_gpu)) {
      auto n = static_cast<int32_t>(i);
      while (used.count(n)) ++n;
      ranks[i].rank = n;
      used.insert(n);
    }
    ranks[i].label = ranks[i].rank >= 0 ? fmt::format("rank {} ({})", ranks[i].rank, files[i].filename().string())
                                        : fmt::format("no rank ({})", files[i].filename().string());
  }
  return combine(std::move(ranks));
}

}  // namespace scalescope::analyze
