// analyze_path: load and summarize ranks a few at a time (bounded memory).
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "analyze/stream_analyzer.hpp"
#include "trace/error.hpp"
#include "trace/frame_namer.hpp"
#include "trace/input_detector.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/chunk_reader.hpp"
#include "trace/launcher.hpp"
#include "trace/parallel_for.hpp"
#include "trace/python_record.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_source.hpp"

namespace scalescope::analyze {
namespace fs = std::filesystem;

std::vector<fs::path> list_trace_inputs(const fs::path& path) {
  trace::DetectedInput in = trace::detect_input(path);
  switch (in.kind) {
    case trace::InputKind::kTraceFile:
    case trace::InputKind::kKinetoJson:
    case trace::InputKind::kNsysSqlite: return {path};
    case trace::InputKind::kRunDirectory:
    case trace::InputKind::kKinetoDirectory:
    case trace::InputKind::kNsysDirectory:
      trace::warn_skipped_files(path, in);
      return std::move(in.files);
    default: trace::fail_not_a_trace(path, in);
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

// combine_files, with traces[i] (ranks[i]'s) put in the order combine()
// gives the ranks (by rank, launchers left out) so that they line up with run.ranks.
RunAnalysis combine_in_order(std::vector<RankAnalysis> ranks, const std::vector<std::string>& file_names,
                             std::vector<trace::Trace>& traces, bool align_clocks) {
  if (traces.size() != ranks.size()) fail("analyze: {} ranks but {} traces", ranks.size(), traces.size());
  number_ranks(ranks, file_names);
  std::vector<size_t> order(ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranks[a].rank < ranks[b].rank; });
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  std::vector<RankAnalysis> sorted;
  std::vector<trace::Trace> kept;
  for (size_t i : order) {
    if (!trace::is_launcher(ranks[i].rank, ranks[i].gpu_activity, any_gpu)) kept.push_back(std::move(traces[i]));
    sorted.push_back(std::move(ranks[i]));
  }
  traces = std::move(kept);
  return combine(std::move(sorted), align_clocks);  // its sort is stable: the order stays
}

}  // namespace

bool detail::analyze_streaming(trace::InputKind kind, uint64_t rows, const Options& options, bool visitor) {
  return kind == trace::InputKind::kTraceFile && !visitor && rows > options.stream_above_rows;
}

RunAnalysis combine_files(std::vector<RankAnalysis> ranks, const std::vector<std::string>& file_names,
                          bool align_clocks) {
  number_ranks(ranks, file_names);
  return combine(std::move(ranks), align_clocks);
}

void number_ranks(std::vector<RankAnalysis>& ranks, const std::vector<std::string>& file_names) {
  if (file_names.size() != ranks.size())
    fail("combine_files: {} ranks but {} file names", ranks.size(), file_names.size());
  // Unknown ranks (no RANK in the process's environment, a Kineto trace
  // without distributedInfo) are numbered in file order, skipping numbers a
  // known rank has. A rank-less process without GPU work while others have
  // some (the torchrun agent) keeps -1: combine() leaves it out by name.
  // Two traces of one rank (two runs, or a copy, in one folder) would be two
  // rows of that rank and findings over twice the ranks.
  std::vector<trace::RankOfFile> claimed;
  for (size_t i = 0; i < ranks.size(); ++i) claimed.push_back({ranks[i].rank, file_names[i]});
  trace::check_one_trace_per_rank({}, claimed);
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
}

RunAnalysis analyze_path(const fs::path& path, const Options& options, unsigned threads,
                         const std::function<void(size_t, size_t)>& on_file_done, const RankVisitor& visit) {
  const std::vector<fs::path> files = list_trace_inputs(path);
  std::vector<std::vector<RankAnalysis>> per_file(files.size());
  // Visits in input order: file i's ranks wait until every earlier file's have
  // been visited (items start in index order, so the lowest waiting one can
  // always go on). An earlier failure wakes the waiters, which then skip.
  std::mutex visit_mutex;
  std::condition_variable visit_turn;
  size_t next_file = 0, next_rank = 0;
  bool failed = false;
  // The one pool (trace/parallel_for.hpp): up to 4 ranks at a time by
  // default, the first failing file in order named. Each thread keeps one
  // scratch (detail::WindowScratch) for all the ranks it analyses.
  const unsigned workers = trace::worker_count(threads, files.size(), 4);
  std::vector<detail::WindowScratch> scratch(workers);
  // Native frames (format 1.4) are named here, offline, by one namer for the
  // whole run: each library is loaded once, whatever the number of ranks.
  trace::FrameNamer namer(trace::frame_namer_options_from_env());
  std::mutex namer_mutex;
  trace::parallel_for(
      files.size(), workers,
      [&](size_t i, unsigned worker) {
        try {
          // A large .sstrace rank, when nothing needs its whole Trace, is
          // analysed chunk by chunk: its memory is bounded whatever its length.
          if (!visit && trace::detect_input(files[i]).kind == trace::InputKind::kTraceFile) {
            trace::ChunkReader reader = trace::ChunkReader::open(files[i]);
            if (detail::analyze_streaming(trace::InputKind::kTraceFile, reader.total_rows(), options, false)) {
              per_file[i].push_back(analyze_rank_streaming(std::move(reader), options, [&](trace::Trace& t) {
                std::lock_guard lock(namer_mutex);
                namer.name(t);
              }));
              return;
            }
          }
          std::vector<trace::Trace> traces = load_one(files[i]);
          for (trace::Trace& t : traces)
            if (t.host_callsites.size() > 0) {
              std::lock_guard lock(namer_mutex);
              namer.name(t);
            }
          std::vector<RankAnalysis> analysed;
          analysed.reserve(traces.size());
          for (const trace::Trace& t : traces) analysed.push_back(detail::analyze_rank(t, options, scratch[worker]));
          if (visit) {
            std::unique_lock lock(visit_mutex);
            visit_turn.wait(lock, [&] { return next_file == i || failed; });
            if (failed) return;  // an earlier file's error is the one reported
            for (size_t k = 0; k < traces.size(); ++k) visit(next_rank++, traces[k], analysed[k]);
            ++next_file;
            visit_turn.notify_all();
          }
          per_file[i] = std::move(analysed);
        } catch (...) {
          {
            std::lock_guard lock(visit_mutex);
            failed = true;
          }
          visit_turn.notify_all();
          throw;
        }
      },
      on_file_done);
  std::vector<RankAnalysis> ranks;
  std::vector<std::string> names;  // ranks[i] came from the file names[i]
  for (size_t f = 0; f < per_file.size(); ++f)
    for (auto& r : per_file[f]) {
      r.input_index = ranks.size();
      ranks.push_back(std::move(r));
      names.push_back(files[f].filename().string());
    }
  add_python_stacks(ranks, path);
  // A profiled run's Python bootstrap wrote torch.distributed's rank and
  // process groups beside the traces (the per-file loads above do not read
  // the directory): as load_run gives them to whole traces.
  if (std::error_code ec; fs::is_directory(path, ec)) {
    const std::vector<trace::PythonRecord> records = trace::read_python_records(path);
    for (RankAnalysis& r : ranks)
      if (const trace::PythonRecord* rec = trace::record_of_process(records, r.hostname, r.pid))
        trace::take_python_record(*rec, r.rank, r.process_groups);
  }
  // A PyTorch profiler run without CUDA activity gives a trace of host
  // operators only: every GPU table would be empty, so say why instead.
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  if (!ranks.empty() && !any_gpu &&
      std::all_of(files.begin(), files.end(),
                  [](const fs::path& f) { return trace::detect_input(f).kind == trace::InputKind::kKinetoJson; }))
    fail("no GPU activity in {} (was ProfilerActivity.CUDA on?)", path.string());
  return combine_files(std::move(ranks), names, options.align_clocks);
}

RunAnalysis analyze_traces(std::vector<trace::Trace>& traces, const std::vector<std::string>& file_names,
                           const Options& options) {
  std::vector<RankAnalysis> ranks;
  ranks.reserve(traces.size());
  detail::WindowScratch scratch;
  for (const trace::Trace& t : traces) {
    ranks.push_back(detail::analyze_rank(t, options, scratch));
    ranks.back().input_index = ranks.size() - 1;
  }
  return combine_in_order(std::move(ranks), file_names, traces, options.align_clocks);
}

}  // namespace scalescope::analyze
