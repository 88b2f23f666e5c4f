#pragma once
// The one content-based detector of what a path holds. Every command that
// takes an input asks it, so that a Kineto trace saved as `x.trace`, a
// `.sstrace` given to `import`, an Nsight Systems export or a PNG are told apart
// the same way everywhere, by their bytes, never by their names.
//
//   DetectedInput in = detect_input("rank0.json.gz");
//   if (in.kind == InputKind::kNsysReport) fail("{}: {}; {}", path, in.what, hint_for(in.kind));
//
// Paths that cannot be inputs at all are errors (scalescope::Error naming the
// path): missing, a symlink loop, unreadable, or not a regular file or
// directory (a FIFO would block a reader forever, a device never ends).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

enum class InputKind : uint8_t {
  kTraceFile,        // a scalescope trace (.sstrace magic)
  kRunDirectory,     // a directory holding .sstrace files (a .ssrun)
  kKinetoJson,       // a PyTorch-profiler (Kineto) Chrome JSON trace, plain or gzip
  kKinetoDirectory,  // a directory of Kineto JSON traces, one per rank
  kNsysSqlite,       // an Nsight Systems SQLite export (nsys export --type sqlite)
  kNsysDirectory,    // a directory of Nsight Systems SQLite exports, one per rank
  kNsysReport,       // an Nsight Systems report (.nsys-rep / .qdrep): needs `nsys export` first
  kSweepDatabase,    // a scalescope sweep database (SQLite with sweeps and runs tables)
  kSqliteDatabase,   // another SQLite database
  kMlperfRunsCsv,    // the runs CSV `scalescope mlperf ingest` writes
  kOther,            // anything else; DetectedInput::what says what it looks like
};

// A file of a directory named like a trace (*.json, *.json.gz, *.sqlite)
// that holds something else: left out of the run, and named when it is read.
struct SkippedFile {
  std::filesystem::path path;
  std::string what;  // "an HTML or XML document", "a JSON file that is not a profiler trace (no traceEvents)"
};

struct DetectedInput {
  InputKind kind = InputKind::kOther;
  std::string what;  // a noun phrase for messages: "a PNG image", "a sweep database", ...
  // For directory kinds: the member files of that kind, sorted by name.
  std::vector<std::filesystem::path> files;
  // For Kineto and nsys directories: the files named like traces that are not
  // (a run directory's own JSON files are never listed), sorted by name.
  std::vector<SkippedFile> skipped;
};

// Reads at most a few KiB of a file (and, for SQLite, its table names) to
// classify it. Directories are classified by their members' content; one is
// refused (an Error naming the files) when it mixes kinds (.sstrace files
// beside Kineto traces or nsys exports: one kind would be left out) or holds
// two copies of one trace (the same bytes: one rank counted twice).
DetectedInput detect_input(const std::filesystem::path& path);

// "a.json (an HTML or XML document), b.json (an empty file)": the skipped
// files for a warning, at most a few named.
std::string skipped_list(const std::vector<SkippedFile>& skipped);

// Short stable name ("trace-file", "kineto-json", ...) for JSON and tests.
std::string_view to_string(InputKind kind);

// What to do with an input of this kind when a trace command got it, e.g.
// "use scalescope scaling" for a sweep database; empty when nothing fits.
std::string_view hint_for(InputKind kind);

// The sentence trace commands use for what they accept.
inline constexpr std::string_view kTraceInputsAccepted =
    "expected a scalescope trace (.sstrace), a run directory (.ssrun), a PyTorch-profiler JSON trace (.json, "
    ".json.gz), an Nsight Systems SQLite export, or a directory of them";

}  // namespace scalescope::trace
