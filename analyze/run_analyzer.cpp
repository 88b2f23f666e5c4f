// analyze_path and analyze_traces: the one run pipeline (load, analyze each
// rank a few at a time with bounded memory, combine).
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "analyze/stream_analyzer.hpp"
#include "base/error.hpp"
#include "trace/model/frame_namer.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/chunk_reader.hpp"
#include "trace/model/launcher.hpp"
#include "base/parallel_for.hpp"
#include "trace/model/python_record.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/trace_source.hpp"

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

// Numbers ranks without one in input order (skipping known ranks; a
// rank-less process without GPU work while others have some keeps -1) and
// labels each "rank N (file name)". file_names[i] belongs to ranks[i].
void number_ranks(std::vector<RankAnalysis>& ranks, const std::vector<std::string>& file_names) {
  if (file_names.size() != ranks.size())
    fail("analyze: {} ranks but {} file names", ranks.size(), file_names.size());
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

// One input item of the pipeline (a file, or one trace already in memory):
// traces to analyse and visit whole, or a rank already analysed chunk by chunk.
struct LoadedItem {
  std::vector<trace::Trace> owned;          // read from the item's file
  std::vector<const trace::Trace*> traces;  // to analyse: `owned`'s, or the caller's
  std::optional<RankAnalysis> streamed;
};

// The one body of analyze_path and analyze_traces. Item i is loaded by
// load(i, worker), its ranks named name_of(i); `input` (may be empty) is the
// path the items came from, whose run directory holds the Python bootstrap's
// stacks and records.
RunAnalysis analyze_items(size_t items, const std::function<LoadedItem(size_t, unsigned)>& load,
                          const std::function<std::string(size_t)>& name_of, const fs::path& input,
                          const Options& options, unsigned threads,
                          const std::function<void(size_t, size_t)>& on_item_done, const RankVisitor& visit) {
  std::vector<std::vector<RankAnalysis>> per_item(items);
  // Visits in input order: item i's ranks wait until every earlier item's have
  // been visited (items start in index order, so the lowest waiting one can
  // always go on). An earlier failure wakes the waiters, which then skip.
  std::mutex visit_mutex;
  std::condition_variable visit_turn;
  size_t next_item = 0, next_rank = 0;
  bool failed = false;
  // The one pool (base/parallel_for.hpp): up to 4 ranks at a time by
  // default, the first failing item in order named.
  const unsigned workers = trace::worker_count(threads, items, 4);
  trace::parallel_for(
      items, workers,
      [&](size_t i, unsigned worker) {
        try {
          LoadedItem item = load(i, worker);
          if (item.streamed) {
            per_item[i].push_back(std::move(*item.streamed));
            return;
          }
          std::vector<RankAnalysis> analysed;
          analysed.reserve(item.traces.size());
          for (const trace::Trace* t : item.traces) analysed.push_back(analyze_rank(*t, options));
          if (visit) {
            std::unique_lock lock(visit_mutex);
            visit_turn.wait(lock, [&] { return next_item == i || failed; });
            if (failed) return;  // an earlier item's error is the one reported
            for (size_t k = 0; k < item.traces.size(); ++k) visit(next_rank++, *item.traces[k], analysed[k]);
            ++next_item;
            visit_turn.notify_all();
          }
          per_item[i] = std::move(analysed);
        } catch (...) {
          {
            std::lock_guard lock(visit_mutex);
            failed = true;
          }
          visit_turn.notify_all();
          throw;
        }
      },
      on_item_done);
  std::vector<RankAnalysis> ranks;
  std::vector<std::string> names;  // ranks[i] came from the file names[i]
  for (size_t f = 0; f < per_item.size(); ++f)
    for (auto& r : per_item[f]) {
      r.input_index = ranks.size();
      ranks.push_back(std::move(r));
      names.push_back(name_of(f));
    }
  const trace::InputKind input_kind = input.empty() ? trace::InputKind::kOther : trace::detect_input(input).kind;
  if (!input.empty()) add_python_stacks(ranks, input);
  // A profiled run's Python bootstrap wrote torch.distributed's rank and
  // process groups beside the traces (the per-file loads do not read the
  // directory): as load_run gives them to whole traces.
  HangReport hang;
  if (std::error_code ec; !input.empty() && fs::is_directory(input, ec)) {
    std::vector<std::string> warnings;
    hang = find_hang(read_hang_dumps(input, &warnings));
    for (const auto& w : warnings) fmt::print(stderr, "scalescope: warning: skipped hang dump {}\n", w);
    warnings.clear();
    hang.flight_recorder = find_flight_recorder_hang(read_run_flight_recorder_dumps(input, &warnings));
    for (const auto& w : warnings) fmt::print(stderr, "scalescope: warning: skipped flight recorder dump {}\n", w);
    const std::vector<trace::PythonRecord> records = trace::read_python_records(input);
    for (RankAnalysis& r : ranks)
      if (const trace::PythonRecord* rec = trace::record_of_process(records, r.hostname, r.pid))
        trace::take_python_record(*rec, r.rank, r.process_groups);
  }
  // A PyTorch profiler run without CUDA activity gives a trace of host
  // operators only: every GPU table would be empty, so say why instead.
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  if (!ranks.empty() && !any_gpu &&
      (input_kind == trace::InputKind::kKinetoJson || input_kind == trace::InputKind::kKinetoDirectory))
    fail("no GPU activity in {} (was ProfilerActivity.CUDA on?)", input.string());
  number_ranks(ranks, names);
  RunAnalysis run = combine(std::move(ranks), options.align_clocks);
  run.nccl_ops = combine_nccl_ops(run.ranks);
  run.hang = std::move(hang);
  return run;
}

}  // namespace

bool detail::analyze_streaming(trace::InputKind kind, uint64_t rows, const Options& options, bool visitor) {
  return kind == trace::InputKind::kTraceFile && !visitor && rows > options.stream_above_rows;
}

RunAnalysis analyze_path(const fs::path& path, const Options& options, unsigned threads,
                         const std::function<void(size_t, size_t)>& on_file_done, const RankVisitor& visit) {
  const std::vector<fs::path> files = list_trace_inputs(path);
  // Native frames (format 1.4) are named here, offline, by one namer for the
  // whole run: each library is loaded once, whatever the number of ranks.
  trace::FrameNamer namer(trace::frame_namer_options_from_env());
  std::mutex namer_mutex;
  const auto load = [&](size_t i, unsigned) {
    LoadedItem item;
    // A large .sstrace rank, when nothing needs its whole Trace, is
    // analysed chunk by chunk: its memory is bounded whatever its length.
    if (!visit && trace::detect_input(files[i]).kind == trace::InputKind::kTraceFile) {
      trace::ChunkReader reader = trace::ChunkReader::open(files[i]);
      if (detail::analyze_streaming(trace::InputKind::kTraceFile, reader.total_rows(), options, false)) {
        item.streamed = analyze_rank_streaming(std::move(reader), options, [&](trace::Trace& t) {
          std::lock_guard lock(namer_mutex);
          namer.name(t);
        });
        return item;
      }
    }
    item.owned = load_one(files[i]);
    for (trace::Trace& t : item.owned) {
      if (t.host_callsites.size() > 0) {
        std::lock_guard lock(namer_mutex);
        namer.name(t);
      }
      item.traces.push_back(&t);
    }
    return item;
  };
  return analyze_items(
      files.size(), load, [&](size_t i) { return files[i].filename().string(); }, path, options, threads,
      on_file_done, visit);
}

RunAnalysis analyze_traces(const std::vector<trace::Trace>& traces, const std::vector<std::string>& file_names,
                           const Options& options, const fs::path& input, unsigned threads, const RankVisitor& visit) {
  if (file_names.size() != traces.size())
    fail("analyze: {} traces but {} file names", traces.size(), file_names.size());
  const auto load = [&](size_t i, unsigned) {
    LoadedItem item;
    item.traces.push_back(&traces[i]);
    return item;
  };
  return analyze_items(
      traces.size(), load, [&](size_t i) { return file_names[i]; }, input, options, threads, {}, visit);
}

}  // namespace scalescope::analyze
