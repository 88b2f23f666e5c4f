#pragma once
// Analyses of traces: pure functions of trace::Trace that return small summary
// structs (never copies of events), so many ranks fit in memory at once.
//
//   analyze::Options options;                       // whole trace, default rules
//   analyze::RankAnalysis r = analyze::analyze_rank(trace, options);
//   analyze::RunAnalysis run = analyze::combine({r, ...});  // adds stragglers
//   nlohmann::json j = analyze::to_json(run);
//
// Every analysis that lacks the event kinds it needs is marked skipped with a
// stated reason (Availability) instead of reporting a wrong number.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

// The per-analysis result types, for callers' convenience.
#include "analyze/diff.hpp"
#include "analyze/json.hpp"
#include "analyze/options.hpp"
#include "analyze/rank_analysis.hpp"
#include "analyze/run_analysis.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

// ---- entry points ---------------------------------------------------------

// Analyses one rank's trace. The window is resolved against this trace. The
// engine is the one that reads an .sstrace file chunk by chunk
// (stream_analyzer.hpp), with the trace read in place as slices of its tables
// of a file chunk's size.
RankAnalysis analyze_rank(const trace::Trace& trace, const Options& options);
// Matches collectives across ranks (communicator + sequence, else order of
// occurrence per communicator and op) and finds stragglers. Drops the ranks'
// collective lists afterwards to keep the result small.
// With align_clocks, collective times of hosts whose clocks differ are first
// moved onto the reference host's clock (RunAnalysis::clocks says by how much).
RunAnalysis combine(std::vector<RankAnalysis> ranks, bool align_clocks = true);

// When `input` is a run directory: each rank's summarize_python_stacks over
// its python-stacks-*.json files (a file that cannot be read is a warning on
// stderr naming it). The run pipeline (analyze_path, analyze_traces) calls it.
void add_python_stacks(std::vector<RankAnalysis>& ranks, const std::filesystem::path& input);

// Analyses every rank of a path: a .sstrace file, a .ssrun run directory, a
// Kineto .json/.json.gz, or a directory of Kineto traces. Ranks are loaded and
// analysed `threads` at a time (0: up to 4, fewer on small machines), and each
// trace is dropped once summarized, so memory stays bounded by a few traces.
// Errors name the file.
// on_file_done: after each file, (files done, files in all), one call at a time.
// visit: when given, called for each rank right after its analysis, with its
// trace as read (clocks not moved) and its analysis (not yet numbered,
// labelled or combined), before the trace is dropped: a caller that draws
// events (the HTML report) takes what it draws there, so that it shows the
// very analysis `scalescope analyze` prints without holding every trace.
// Calls come one at a time, in input order (input_index 0, 1, ...; the
// rank's RankAnalysis::input_index in the result); a loaded rank waits for
// its turn, so at most `threads` traces are in memory.
using RankVisitor = std::function<void(size_t input_index, const trace::Trace&, const RankAnalysis&)>;
RunAnalysis analyze_path(const std::filesystem::path& path, const Options& options, unsigned threads = 0,
                         const std::function<void(size_t, size_t)>& on_file_done = {}, const RankVisitor& visit = {});
// analyze_path for traces already in memory (the C ABI's run, the demo's, a
// test's): the same pipeline, with traces[i] as one input labelled
// file_names[i]. input: the path they were read from, if any (a run
// directory's Python stacks and records are read from it, as analyze_path
// does); visit: as analyze_path's.
RunAnalysis analyze_traces(const std::vector<trace::Trace>& traces, const std::vector<std::string>& file_names,
                           const Options& options, const std::filesystem::path& input = {}, unsigned threads = 0,
                           const RankVisitor& visit = {});
// The trace files analyze_path would read, in order.
std::vector<std::filesystem::path> list_trace_inputs(const std::filesystem::path& path);

}  // namespace scalescope::analyze
