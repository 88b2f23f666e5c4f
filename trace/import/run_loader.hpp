#pragma once
// A run loaded: one trace file, or every trace of a run directory read in
// parallel and checked against its manifests, host clocks aligned.
//
//   std::vector<Trace> ranks = load_run("job.ssrun", {.threads = 4});

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "trace/model/trace_file.hpp"

namespace scalescope::trace {

struct ClockAlignment;

struct LoadOptions {
  ReadOptions read;
  unsigned threads = 0;  // 0: std::thread::hardware_concurrency()
  // After each file of a run directory: (files done, files in all). Called
  // from the loader threads, one call at a time (for a progress bar).
  std::function<void(size_t, size_t)> on_file_loaded;
  // Called with RunCheck::message when a run directory is incomplete (data loss).
  std::function<void(const std::string&)> on_warning;
  // Traces of several hosts: move each host's clock onto the reference
  // host's, estimated from matched collectives (trace/import/clock_alignment.hpp).
  bool align_clocks = true;
  ClockAlignment* clocks = nullptr;  // when set: receives the estimate per host
};

// Loads a single trace file, or every trace of a run directory in parallel
// (at most `threads` at once), sorted by rank then pid (unknown rank last).
// Errors name the file. A run directory is checked against its manifests:
// a missing, short or changed file, or one no manifest lists, is counted as
// Problem::kRunIncomplete (data loss) on the first trace; a directory without
// any manifest (older builds) as Problem::kRunNoManifest (info). Two traces
// of one rank are an Error naming both files.
std::vector<Trace> load_run(const std::filesystem::path& path_or_file, const LoadOptions& options = {});

}  // namespace scalescope::trace
