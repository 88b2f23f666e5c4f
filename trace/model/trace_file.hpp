#pragma once
// The scalescope trace file (.sstrace): append-only, chunked, compressed,
// checksummed, versioned. docs/trace-format.md describes every byte.
//
//   TraceWriter w = TraceWriter::open("rank0.sstrace", meta);
//   w.append(batch, strings);   // one chunk per non-empty table, one write() each
//   w.write_metadata(meta);     // again at the end: the last metadata chunk wins
//   w.close();
//   Trace t = read_trace("rank0.sstrace");
//
// A writer killed at any point leaves every complete chunk readable; the
// reader counts a torn tail (Problem::kTornTail) and returns the rest.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

inline constexpr uint16_t kFormatMajor = 1;
// 1.1 added the nvtx link column (id 9) and the end record (chunk type 4)
// that close() writes last: a file cut at a chunk boundary is told from a
// complete one (Problem::kEndMissing).
// 1.2 added the host thread table (chunk type 24) and the host thread sample
// table (chunk type 25) of the collector's host sampler; 1.0/1.1 readers skip
// them as unknown chunks.
// 1.3 added native call stacks of the host sampler's threads: the callsite
// table (chunk type 26, a prefix tree of frames) and the stack sample table
// (chunk type 27); older readers skip them as unknown chunks.
// 1.4 names native frames offline: the collector writes each frame's module
// and file offset only, and the module table (chunk type 28: path, build-id,
// mapping per process) that the analysing machine names them from
// (trace/model/frame_namer.hpp); callsites gained a status column (id 7).
inline constexpr uint16_t kFormatMinor = 4;
inline constexpr std::string_view kTraceFileExtension = ".sstrace";
inline constexpr std::string_view kRunDirExtension = ".ssrun";

struct WriterOptions {
  int zstd_level = 3;
  // Larger batches are split into chunks of at most this many rows (at most 4M).
  size_t max_rows_per_chunk = size_t{1} << 20;
  // fsync() in flush() and close(); off by default (the page cache survives a
  // killed process, only a machine crash needs it).
  bool fsync = false;
};

// Writes one trace file. Not thread-safe: one thread (the collector's encoder
// thread) owns a writer. Every chunk goes to the file in a single write(); a
// failed write is rolled back (ftruncate) so the file stays readable.
//
// Throwing calls raise scalescope::Error naming the file. The try_* calls
// never throw (for the collector, which must not harm the job): they return
// false and leave the reason in last_error(). After a failed write the writer
// stays usable; a later append may succeed once space is freed.
class TraceWriter {
 public:
  // Creates (truncates) `path` and writes the file header and `meta`.
  static TraceWriter open(const std::filesystem::path& path, const Metadata& meta, const WriterOptions& options = {});
  // As open(), without throwing: nullptr and *error set on failure.
  static std::unique_ptr<TraceWriter> try_open(const std::filesystem::path& path, const Metadata& meta,
                                               const WriterOptions& options, std::string* error) noexcept;

  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  ~TraceWriter();  // closes the file without an end record (see close())

  // Writes the strings of `strings` not written before (ids from the last
  // written one up to strings.size()), then one chunk per non-empty table of
  // `batch` (batch.meta, batch.strings and batch.problems are ignored). The
  // tables' StringIds index `strings`, which must only grow between calls.
  // Example (collector): keep one StringTable for the whole run, fill a fresh
  // batch Trace per buffer, append(batch, strings), clear the batch.
  void append(const Trace& batch, const StringTable& strings);
  void append(const Trace& trace) { append(trace, trace.strings); }
  bool try_append(const Trace& batch, const StringTable& strings) noexcept;

  // Metadata and problem counts may be written many times; readers keep the
  // last complete chunk of each (e.g. pages_at_end and the end clock anchor).
  void write_metadata(const Metadata& meta);
  bool try_write_metadata(const Metadata& meta) noexcept;
  void write_problems(const ProblemCounts& problems);
  bool try_write_problems(const ProblemCounts& problems) noexcept;

  void flush();  // fsync when WriterOptions::fsync; chunks are never buffered
  // Writes the end record (the file says it is complete) and closes; idempotent.
  // The destructor closes WITHOUT the end record: a writer destroyed by an
  // exception (or never closed) leaves a file readers report as torn.
  void close();
  bool try_close() noexcept;

  const std::string& last_error() const;
  const std::filesystem::path& path() const;
  uint64_t bytes_written() const;    // file size after the last complete chunk
  uint64_t strings_written() const;  // ids [0, strings_written()) are in the file

  // Test hook: pretend the write() after the next `n_ok` succeeding ones fails
  // with `errno_value` after writing half its bytes (simulates ENOSPC mid-chunk).
  void inject_write_failure(int n_ok, int errno_value);

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ReadOptions {
  // Refuse (one-line Error) chunks whose stored or decompressed payload is
  // larger than this: a corrupt or hostile length cannot allocate 1 TB.
  uint64_t max_chunk_bytes = uint64_t{1} << 30;
  // Refuse files whose decoded tables would need more memory than this.
  // 0: max(1 GiB, 512 x file size).
  uint64_t max_memory_bytes = 0;
  uint64_t max_string_bytes = uint64_t{1} << 20;  // one string; longer is corrupt
  bool verify_checksums = true;
};

// Reads a whole trace file. Torn tail, bad checksums and unknown chunk types
// are counted in Trace::problems and reading goes on. A file that is not a
// trace, a too-new or too-old major version, or absurd sizes throw
// scalescope::Error: "X: not a scalescope trace (bad magic)",
// "X: format 2.0 is newer than this scalescope reads (1.x)", ...
Trace read_trace(const std::filesystem::path& path, const ReadOptions& options = {});
// The same from bytes in memory; `name` names the input in errors.
Trace read_trace_from_memory(std::span<const std::byte> bytes, std::string_view name, const ReadOptions& options = {});

// Writes a whole Trace (meta, strings, every table, problems) to `path`.
void write_trace(const std::filesystem::path& path, const Trace& trace, const WriterOptions& options = {});

// Is `path` a file that starts with the trace magic? (For commands that take
// "a trace or something else".) False for unreadable files.
bool is_trace_file(const std::filesystem::path& path);

// The *.sstrace files of a run directory (<name>.ssrun/ with one file per
// process and run.json), sorted by name; Error when none or not a directory.
std::vector<std::filesystem::path> list_run_files(const std::filesystem::path& run_dir);

// ---- run directory manifests (docs/trace-format.md, "Run directories") ----
// A writer of a run directory writes, last, manifest-<writer>.json listing
// each trace file it wrote with its size and XXH64: the directory is then
// known complete. One writer per node (profile) or one for the whole run
// (import, writer "import"); readers take the union of all manifest*.json.
inline constexpr std::string_view kManifestPrefix = "manifest";

struct ManifestEntry {
  std::string name;  // file name inside the run directory
  uint64_t bytes = 0;
  uint64_t xxh64 = 0;  // of the whole file, seed 0
};

// Writes <run_dir>/manifest-<writer>.json (temp file renamed into place)
// listing `files` (names inside run_dir); `writer` names the writer, e.g. a
// host name ("" gives manifest.json). Throws Error naming the file.
void write_run_manifest(const std::filesystem::path& run_dir, const std::vector<std::string>& files,
                        std::string_view writer = "");

// What the manifests of a run directory say about its trace files.
struct RunCheck {
  bool has_manifest = false;
  std::vector<ManifestEntry> listed;       // union of the manifests
  std::vector<std::string> missing;        // listed, not present
  std::vector<std::string> unlisted;       // present *.sstrace no manifest lists (a writer that did not finish)
  std::vector<std::string> changed;        // listed, present, but of another size or checksum (load_run fills it)
  std::vector<std::string> bad_manifests;  // unreadable manifest files
  // One line for a person; "" when complete.
  std::string message(const std::filesystem::path& run_dir) const;
};
RunCheck check_run_manifest(const std::filesystem::path& run_dir);

}  // namespace scalescope::trace
