#pragma once
// Imports an Nsight Systems SQLite export (`nsys export --type sqlite`) into
// Traces, one per captured process with CUDA activity, through the same
// neutral records as the Kineto importer. SQLite opens the file read-only and
// immutable (never mapped: a file cut while it is read gives an Error, not
// SIGBUS): the input is never modified, and no journal is created.
//
//   NsysImportReport report;
//   std::vector<Trace> ranks = import_nsys_file("report.sqlite", &report);
//   // report.tables: every table the importer knows, its rows, what became of them
//
// Columns are detected (PRAGMA table_info), never inferred from the export's
// version string: kernel names as StringIds or as text, NVTX text inline or
// through textId, enum codes through the ENUM_* tables where the export has
// them (documented codes otherwise), added columns such as greenContextId.
// A table the capture lacks leaves its Trace table empty, so the analyses that
// need it say "skipped"; rows the importer cannot use are counted
// (Trace::problems and the report: incomplete_record when a row is left out,
// malformed_event when a value is read as unknown), never fatal. Only input that is not a
// readable nsys export (not SQLite, corrupt, no nsys tables, no CUDA or NVTX
// events) throws scalescope::Error naming the file. docs/nsys.md has the
// mapping, the rank rules and the schema versions covered.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// What became of each table of one export; the CLI prints it after `import`.
struct NsysImportReport {
  struct Table {
    std::string name;      // "CUPTI_ACTIVITY_KIND_KERNEL"
    bool present = false;  // the export has the table
    uint64_t rows = 0;     // rows in the table (all processes)
    // Tables read row by row (events, thread names): rows that became events
    // or metadata, and rows left out (unreadable, or an NVTX range never
    // closed); the rest are counted only. Other tables: read false, both 0.
    bool read = false;
    uint64_t kept = 0, dropped = 0;
    std::string mapped_to;  // "kernels (+nccl)", "counted only", "absent", "not read: no `start` column ..."
  };
  // One traced process: what it became.
  struct Process {
    uint32_t pid = 0;
    std::string name;  // PROCESSES.name, where present
    int32_t rank = -1;
    std::string
        rank_source;  // "launcher environment (RANK)", "NVTX thread name \"MPI Rank 0\"", "file name", "unknown"
    uint64_t kernels = 0, memcpys = 0, memsets = 0, api = 0, syncs = 0, nvtx = 0, nccl = 0;
  };
  std::string input;               // the file (or name) imported
  std::string product_version;     // EXPORT_PRODUCT_VERSION, where recorded
  std::string schema_version;      // EXPORT_SCHEMA_VERSION, where recorded
  std::vector<Table> tables;       // fixed order: the mapped tables first, then the counted ones
  std::vector<Process> processes;  // in the order of the returned Traces
  uint64_t other_processes = 0;    // processes with rows but no CUDA activity (their rows: counted only)
  // Rows of the RUNTIME/DRIVER tables by event class: calls go to `api`;
  // backtrace rows repeat a call (same interval and correlation id) to carry
  // its call stack and are counted only.
  uint64_t runtime_calls = 0, driver_calls = 0, backtrace_rows = 0, other_class_rows = 0;
  // NVTX_EVENTS rows by what they are.
  uint64_t nvtx_ranges = 0, nvtx_marks = 0, nvtx_domain_rows = 0, nvtx_thread_names = 0, nvtx_other = 0;
  // NCCL's NVTX payloads (binaryData, NCCL >= 2.19 with `nsys export --include-blobs`):
  // ranges with a payload, those read as an NCCL message size, kernels given those bytes.
  uint64_t nvtx_payloads = 0, nccl_payloads = 0, nccl_bytes_joined = 0;
  uint64_t unclosed_ranges = 0;  // ranges without an end (capture stopped inside them): left out
  // Rows left out because a required value (time, NVTX type, thread id) is
  // missing or not a number (Problem::kIncompleteRecord, data loss).
  uint64_t dropped = 0;
  // Values read as unknown: a string id StringIds does not hold (once per
  // process and id), text or an out-of-range number where a number belongs
  // (once per row; Problem::kMalformedEvent); strings cut at max_string_bytes.
  uint64_t malformed = 0;
  uint64_t invalid_utf8 = 0;  // strings repaired (invalid UTF-8 bytes replaced by U+FFFD)
  uint64_t gpu_metric_samples = 0, cpu_samples = 0, sched_events = 0, osrt_calls = 0;  // counted only
  // Connections that read the file: 2 when a second one read the API tables
  // on its own thread (NsysImportOptions::parallel_min_api_rows).
  uint32_t connections = 1;

  // Rows of one table; 0 when absent.
  uint64_t rows(std::string_view table) const;
  const Table* table(std::string_view name) const;
};

struct NsysImportOptions {
  // Longest string read from the database; longer means a corrupt or hostile
  // file and is refused with an Error.
  int max_string_bytes = 1 << 20;
  // Bound on SQLite's work (virtual-machine steps over all queries); 0: none.
  // The fuzzer sets it so that a hostile schema cannot make a query endless.
  int64_t max_sql_steps = 0;
  // A file whose CUDA API tables (RUNTIME, DRIVER) hold at least this many
  // rows is read by two threads: a second read-only connection reads those
  // tables while the first reads the rest; the result is the same as one
  // thread's, to the byte. 0: always (tests); never for import_nsys_bytes or
  // with max_sql_steps.
  uint64_t parallel_min_api_rows = 100'000;
};

// Imports an export file. Traces are ordered by rank (unknown last), then pid.
std::vector<Trace> import_nsys_file(const std::filesystem::path& path, NsysImportReport* report = nullptr,
                                    const NsysImportOptions& options = {});

// Imports an export held in memory (sqlite3_deserialize; for the fuzzer and
// tests). `name` names the input in errors and the report and is the file
// name the rank rules read.
std::vector<Trace> import_nsys_bytes(std::string_view bytes, std::string_view name, NsysImportReport* report = nullptr,
                                     const NsysImportOptions& options = {});

// The rank a file name states: "rank3", "rank_3", "rank-3", "x.3.sqlite",
// "x_3.sqlite", "x-3.sqlite" -> 3; -1 when none ("report1.sqlite", "a100.sqlite").
int32_t rank_from_file_name(std::string_view file_name);

// (Which files are nsys exports is decided by trace/import/input_detector.hpp, as for every input.)

}  // namespace scalescope::trace
