#pragma once
// Imports a PyTorch-profiler (Kineto) Chrome trace (.json or .json.gz) into a
// Trace in one single-threaded pass (simdjson On-Demand over the whole file).
//
//   ImportReport report;
//   Trace t = import_kineto_file("rank0.json.gz", &report);
//   // report.categories: events per (cat, ph) exactly as in the JSON
//
// Mapping: kernel -> kernels (NCCL kernels also -> nccl), gpu_memcpy -> memcpys,
// gpu_memset -> memsets, cuda_runtime/cuda_driver -> api (synchronizing calls
// also -> syncs), cuda_sync -> syncs, user_annotation/ProfilerStep#N,
// gpu_user_annotation, cpu_op, python_function -> nvtx ranges (domain = the
// category). Flows (ac2g, fwdbwd) are implied by correlation ids and only
// counted. Every table is sorted by start time. Events that are malformed or of
// unknown categories are counted (Trace::problems), never fatal; only input
// that is not a Kineto trace at all (not JSON, no traceEvents) throws
// scalescope::Error naming the file.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// What became of each kind of event; the CLI prints it after `import`.
struct ImportReport {
  struct Category {
    std::string cat;  // "" for events without one (metadata, instants)
    std::string ph;   // the Chrome phase: X, s, f, M, i ...
    uint64_t events = 0;
    std::string mapped_to;  // "kernels", "api", "flows (counted)", "unknown" ...
  };
  std::string input;                 // the file (or name) imported
  uint64_t json_bytes = 0;           // JSON text size (after decompression)
  uint64_t events = 0;               // entries of traceEvents
  std::vector<Category> categories;  // in first-seen order
  uint64_t flows = 0;                // flow events: ac2g is implied by correlation; fwdbwd becomes NvtxRecord::link
  uint64_t metadata_kept = 0, metadata_dropped = 0;
  uint64_t ignored = 0;    // profiler overhead, Trace spans, instants: counted only
  uint64_t unknown = 0;    // unknown categories/phases (Problem::kUnknownEvent)
  uint64_t malformed = 0;  // missing or mistyped fields (Problem::kMalformedEvent)
  uint64_t pieces = 0;     // traceEvents read in this many pieces (0: in one pass; piece_bytes)

  // Events of one (cat, ph); 0 when none.
  uint64_t count(std::string_view cat, std::string_view ph) const;
};

struct KinetoImportOptions {
  // Longest string value read from an event; longer means a corrupt or hostile
  // file (a 100 MB kernel name) and is refused with an Error.
  size_t max_string_bytes = size_t{1} << 20;
  // Largest JSON text accepted (after decompression). simdjson's documents
  // are limited to 4 GiB; this also stops decompression bombs.
  uint64_t max_json_bytes = (uint64_t{1} << 32) - 4096;
  // A .json.gz may inflate to at most this many times its compressed size
  // (real Kineto traces: ~13x; a decompression bomb: ~1000x). Refused early,
  // from the gzip trailer when it tells, else when inflating reaches it.
  uint64_t max_gzip_ratio = 100;
  // Bytes of memory per byte of JSON the import may need (the text, simdjson's
  // structural index, the tables): JSON larger than the memory this process
  // may still take (available_memory_bytes) divided by this is refused.
  uint64_t memory_per_json_byte = 6;
  // The traceEvents array of a large text is parsed in pieces of about this
  // many bytes (cut between events), so that the JSON parser's index (about
  // 1.3x the text) is one piece's, reused, instead of the whole text's: fresh
  // pages are most of an import's cost. 0: one pass over the whole text.
  // Same result either way; anything unexpected is read again in one pass.
  size_t piece_bytes = size_t{4} << 20;
};

// Buffers one thread keeps from one file to the next: the file's bytes, the
// inflated JSON and the JSON parser's structural index (about 1.3x the JSON
// on Kineto's pretty-printed text). The first touch of fresh memory is most of
// an import's cost (docs/performance.md); with a scratch per thread, the
// ranks of a folder after the first reuse pages already touched. Holds the
// largest file's buffers until destroyed: one per worker, for one folder.
class KinetoImportScratch {
 public:
  KinetoImportScratch();
  ~KinetoImportScratch();
  KinetoImportScratch(KinetoImportScratch&&) noexcept;
  KinetoImportScratch& operator=(KinetoImportScratch&&) noexcept;

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
  friend Trace import_kineto_file(const std::filesystem::path&, ImportReport*, const KinetoImportOptions&,
                                  KinetoImportScratch*);
};

// Imports a file; gzip is detected by its magic bytes, not the name.
Trace import_kineto_file(const std::filesystem::path& path, ImportReport* report = nullptr,
                         const KinetoImportOptions& options = {});
// The same, reusing `scratch`'s buffers (nullptr: buffers for this file only).
Trace import_kineto_file(const std::filesystem::path& path, ImportReport* report, const KinetoImportOptions& options,
                         KinetoImportScratch* scratch);

// Imports JSON text held in memory (any buffer; it is copied into a padded
// one). `name` names the input in errors and in the report.
Trace import_kineto_json(std::string_view json, std::string_view name, ImportReport* report = nullptr,
                         const KinetoImportOptions& options = {});

// The most memory importing any one of `files` may take (its JSON size, from
// a .json.gz's trailer, times memory_per_json_byte): bounds how many are
// imported at once. Files that cannot be read count as empty (their import
// reports the error).
uint64_t kineto_import_memory_bytes(const std::vector<std::filesystem::path>& files,
                                    const KinetoImportOptions& options = {});

}  // namespace scalescope::trace
