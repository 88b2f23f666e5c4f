#include "trace/import/trace_source.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "trace/import/clock_alignment.hpp"
#include "base/error.hpp"
#include "base/file_pool.hpp"
#include "trace/model/frame_namer.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/import/nsys_importer.hpp"
#include "base/parallel_for.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

namespace scalescope::trace {
namespace {

void sort_by_rank(std::vector<Trace>& traces) {
  std::stable_sort(traces.begin(), traces.end(), [](const Trace& a, const Trace& b) {
    const auto ra = static_cast<uint32_t>(a.meta.rank), rb = static_cast<uint32_t>(b.meta.rank);
    return ra < rb;
  });
}

// The traces sorted by rank, after checking that no rank appears twice
// (`files[i]`: the file traces[i] came from).
void sort_by_rank(const std::filesystem::path& input, std::vector<Trace>& traces,
                  const std::vector<std::filesystem::path>& files) {
  std::vector<RankOfFile> ranks;
  ranks.reserve(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) ranks.push_back({traces[i].meta.rank, files[i].filename().string()});
  check_one_trace_per_rank(input, ranks);
  sort_by_rank(traces);
}

// One rank per thread (as many as the cores and memory allow); the traces and
// reports keep the files' order, so the output is the same on any machine.
std::vector<Trace> import_kineto_files(const std::filesystem::path& input,
                                       const std::vector<std::filesystem::path>& files,
                                       std::vector<ImportReport>* reports,
                                       const std::function<void(size_t, size_t)>& on_file_loaded) {
  std::vector<Trace> traces(files.size());
  std::vector<ImportReport> file_reports(files.size());
  std::mutex mutex;
  size_t loaded = 0;  // guarded by mutex
  const unsigned threads = threads_for_files(files.size(), kineto_import_memory_bytes(files));
  // One scratch per worker: its next rank reuses the buffers the last one touched.
  std::vector<KinetoImportScratch> scratch(threads);
  parallel_for(files.size(), threads, [&](size_t i, unsigned worker) {
    traces[i] = import_kineto_file(files[i], &file_reports[i], {}, &scratch[worker]);
    if (on_file_loaded) {
      std::lock_guard lock(mutex);
      on_file_loaded(++loaded, files.size());
    }
  });
  if (reports)
    for (auto& r : file_reports) reports->push_back(std::move(r));
  sort_by_rank(input, traces, files);
  return traces;
}

// Each export of a directory (one per rank), or one export; an export holding
// several processes with CUDA activity gives a Trace per process.
std::vector<Trace> import_nsys_files(const std::filesystem::path& input,
                                     const std::vector<std::filesystem::path>& files,
                                     const std::function<void(size_t, size_t)>& on_file_loaded) {
  std::vector<Trace> traces;
  std::vector<std::filesystem::path> from;  // the file of each trace
  for (size_t i = 0; i < files.size(); ++i) {
    for (auto& t : import_nsys_file(files[i])) {
      traces.push_back(std::move(t));
      from.push_back(files[i]);
    }
    if (on_file_loaded) on_file_loaded(i + 1, files.size());
  }
  sort_by_rank(input, traces, from);
  return traces;
}

}  // namespace

std::vector<std::filesystem::path> list_kineto_files(const std::filesystem::path& dir) {
  DetectedInput in = detect_input(dir);
  if (in.kind != InputKind::kKinetoDirectory) return {};
  return std::move(in.files);
}

void warn_skipped_files(const std::filesystem::path& path, const DetectedInput& in) {
  if (in.skipped.empty()) return;
  std::fprintf(stderr, "scalescope: warning: %s: %zu file%s left out, not a trace: %s\n", path.string().c_str(),
               in.skipped.size(), in.skipped.size() == 1 ? "" : "s", skipped_list(in.skipped).c_str());
}

void check_one_trace_per_rank(const std::filesystem::path& input, const std::vector<RankOfFile>& ranks) {
  std::map<int32_t, const std::string*> seen;
  for (const RankOfFile& r : ranks) {
    if (r.rank < 0) continue;
    const auto [it, fresh] = seen.emplace(r.rank, &r.file);
    if (fresh) continue;
    const std::string prefix = input.empty() ? "" : input.string() + ": ";
    if (*it->second == r.file) fail("{}two processes of {} both hold rank {}", prefix, r.file, r.rank);
    fail("{}{} and {} both hold rank {}; a run holds one trace per rank (two runs, or a copy, in one folder?)", prefix,
         *it->second, r.file, r.rank);
  }
}

void fail_not_a_trace(const std::filesystem::path& path, const DetectedInput& in) {
  const std::string_view hint = hint_for(in.kind);
  if (!hint.empty()) fail("{}: {}; {}", path.string(), in.what, hint);
  fail("{}: {}; {}", path.string(), in.what, kTraceInputsAccepted);
}

std::vector<Trace> load_traces(const std::filesystem::path& path, std::vector<ImportReport>* reports,
                               const std::function<void(size_t, size_t)>& on_file_loaded) {
  TraceLoadOptions options;
  options.on_file_loaded = on_file_loaded;
  return load_traces(path, reports, options);
}

std::vector<Trace> load_traces(const std::filesystem::path& path, std::vector<ImportReport>* reports,
                               const TraceLoadOptions& options) {
  const auto& on_file_loaded = options.on_file_loaded;
  const DetectedInput in = detect_input(path);
  switch (in.kind) {
    case InputKind::kRunDirectory: {
      LoadOptions load;
      load.on_file_loaded = on_file_loaded;
      // Data loss is also counted in the traces' problems; the message names the files.
      load.on_warning = [](const std::string& m) { std::fprintf(stderr, "scalescope: warning: %s\n", m.c_str()); };
      load.align_clocks = options.align_clocks;
      load.clocks = options.clocks;
      std::vector<Trace> traces = load_run(path, load);
      if (options.name_frames) name_frames(traces);
      return traces;
    }
    case InputKind::kTraceFile: {
      std::vector<Trace> traces = load_run(path);
      if (options.name_frames) name_frames(traces);
      return traces;
    }
    case InputKind::kKinetoDirectory: {
      warn_skipped_files(path, in);
      std::vector<Trace> traces = import_kineto_files(path, in.files, reports, on_file_loaded);
      AlignOptions align;
      align.apply = options.align_clocks;
      ClockAlignment clocks = align_clocks(traces, align);
      if (options.clocks) *options.clocks = std::move(clocks);
      return traces;
    }
    case InputKind::kKinetoJson: return import_kineto_files({}, {path}, reports, on_file_loaded);
    case InputKind::kNsysSqlite: return import_nsys_files(path, {path}, on_file_loaded);
    case InputKind::kNsysDirectory:
      warn_skipped_files(path, in);
      return import_nsys_files(path, in.files, on_file_loaded);
    default: fail_not_a_trace(path, in);
  }
}

}  // namespace scalescope::trace
