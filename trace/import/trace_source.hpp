#pragma once
// What the trace-reading commands accept, loaded into Traces: a .sstrace file,
// a .ssrun run directory, a Kineto .json/.json.gz or an nsys SQLite export
// (imported on the fly; an export holding several processes with CUDA activity
// gives one Trace each), or a directory of Kineto JSON traces or of nsys
// exports (one per rank, each imported). The input's
// kind is decided by content (trace/import/input_detector.hpp), never by its name.
//
//   std::vector<ImportReport> reports;   // filled for Kineto inputs
//   std::vector<Trace> ranks = load_traces("run.ssrun");

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "trace/import/kineto_importer.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::trace {

// Traces sorted by rank (unknown last). Errors name the path.
// on_file_loaded: after each file of a directory, (files done, files in all).
std::vector<Trace> load_traces(const std::filesystem::path& path, std::vector<ImportReport>* reports = nullptr,
                               const std::function<void(size_t, size_t)>& on_file_loaded = {});

struct ClockAlignment;

struct TraceLoadOptions {
  std::function<void(size_t, size_t)> on_file_loaded;  // as above
  bool align_clocks = true;                            // see LoadOptions::align_clocks
  ClockAlignment* clocks = nullptr;                    // when set: receives the estimate per host
  // Collector traces (format 1.4): name native frames from the modules on
  // this machine (trace/model/frame_namer.hpp; SCALESCOPE_SYMFS), one load per file.
  bool name_frames = true;
};
std::vector<Trace> load_traces(const std::filesystem::path& path, std::vector<ImportReport>* reports,
                               const TraceLoadOptions& options);

// The Kineto JSON traces (*.json, *.json.gz by content) of a directory, sorted
// by name; empty when the directory holds .sstrace files or no Kineto traces.
std::vector<std::filesystem::path> list_kineto_files(const std::filesystem::path& dir);

struct DetectedInput;
// For a directory input with files named like traces that are not (an HTML
// page saved as rank0.json.gz, a config.json): one warning line on stderr
// naming them, so that a rank left out is never left out silently:
//   "scalescope: warning: gpt2: 1 file left out, not a trace: rank0.json.gz (an HTML or XML document)"
void warn_skipped_files(const std::filesystem::path& path, const DetectedInput& in);

// One trace per rank: throws when two traces claim the same rank (-1, unknown,
// may repeat), naming both files: "gpt2: a.json and b.json both hold rank 0; ...".
// `files[i]` is the file traces[i] came from; `input` (may be empty) prefixes the message.
struct RankOfFile {
  int32_t rank = -1;
  std::string file;
};
void check_one_trace_per_rank(const std::filesystem::path& input, const std::vector<RankOfFile>& ranks);

// Throws the one-line error for an input that is not a trace: what it is, and
// what to use instead (e.g. `scalescope scaling` for a sweep database).
[[noreturn]] void fail_not_a_trace(const std::filesystem::path& path, const DetectedInput& in);

}  // namespace scalescope::trace
