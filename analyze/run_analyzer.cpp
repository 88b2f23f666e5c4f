// analyze_path: load and summarize ranks a few at a time (bounded memory).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "analyze/analyze.hpp"
#include "trace/error.hpp"
#include "trace/input_detector.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/launcher.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_source.hpp"

namespace scalescope::analyze {
namespace fs = std::filesystem;

std::vector<fs::path> list_trace_inputs(const fs::path& path) {
  trace::DetectedInput in = trace::detect_input(path);
  switch (in.kind) {
    case trace::InputKind::kTraceFile:
    case trace::InputKind::kKinetoJson:
    case trace::InputKind::kNsysSqlite:
      return {path};
    case trace::InputKind::kRunDirectory:
    case trace::InputKind::kKinetoDirectory:
    case trace::InputKind::kNsysDirectory:
      return std::move(in.files);
    default:
      trace::fail_not_a_trace(path, in);
  }
}

namespace {

// The traces of one input file: one, or one per process of an nsys export
// that captured several (nsys profile mpirun ...).
std::vector<trace::Trace> load_one(const fs::path& file) {
  const trace::DetectedInput in = trace::detect_input(file);
  std::vector<trace::Trace> out;
  switch (in.kind) {
    case trace::InputKind::kTraceFile: out.push_back(trace::read_trace(file)); break;
    case trace::InputKind::kKinetoJson: out.push_back(trace::import_kineto_file(file)); break;
    default: out = trace::load_traces(file); break;
  }
  return out;
}

}  // namespace

RunAnalysis combine_files(std::vector<RankAnalysis> ranks, const std::vector<std::string>& file_names,
                          bool align_clocks) {
  if (file_names.size() != ranks.size()) fail("combine_files: {} ranks but {} file names", ranks.size(), file_names.size());
  // Unknown ranks (no RANK in the process's environment, a Kineto trace
  // without distributedInfo) are numbered in file order, skipping numbers a
  // known rank has. A rank-less process without GPU work while others have
  // some (the torchrun agent) keeps -1: combine() leaves it out by name.
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  std::set<int32_t> used;
  for (const auto& r : ranks)
    if (r.rank >= 0) used.insert(r.rank);
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].rank < 0 && !trace::is_launcher(ranks[i].rank, ranks[i].gpu_activity, any_gpu)) {
      auto n = static_cast<int32_t>(i);
      while (used.count(n)) ++n;
      ranks[i].rank = n;
      used.insert(n);
    }
    ranks[i].label = ranks[i].rank >= 0 ? fmt::format("rank {} ({})", ranks[i].rank, file_names[i])
                                        : fmt::format("no rank ({})", file_names[i]);
  }
  return combine(std::move(ranks), align_clocks);
}

RunAnalysis analyze_path(const fs::path& path, const Options& options, unsigned threads,
                         const std::function<void(size_t, size_t)>& on_file_done) {
  const std::vector<fs::path> files = list_trace_inputs(path);
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  threads = std::min<unsigned>(threads, static_cast<unsigned>(files.size()));
  std::vector<std::vector<RankAnalysis>> per_file(files.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;  // also serialises on_file_done
  size_t files_done = 0;
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        for (const trace::Trace& t : load_one(files[i])) per_file[i].push_back(analyze_rank(t, options));
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
  std::vector<RankAnalysis> ranks;
  std::vector<std::string> names;  // ranks[i] came from the file names[i]
  for (size_t f = 0; f < per_file.size(); ++f)
    for (auto& r : per_file[f]) {
      ranks.push_back(std::move(r));
      names.push_back(files[f].filename().string());
    }
  return combine_files(std::move(ranks), names, options.align_clocks);
}

}  // namespace scalescope::analyze
