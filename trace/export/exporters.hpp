#pragma once
// Exporters of traces to other tools' formats (one file per exporter:
// chrome_exporter.cpp, sqlite_exporter.cpp, csv_exporter.cpp). Each writes to a
// temporary name beside the output and renames it into place when complete, so
// a failed export never leaves a half-written file under the output name and
// never destroys a previous one.
//
//   std::vector<Trace> ranks = load_traces("run.ssrun");
//   export_chrome(ranks, "run.json");     // open in https://ui.perfetto.dev
//   export_perfetto(ranks, "run.pftrace"); // the same, in Perfetto's binary format
//   export_sqlite(ranks, "run.sqlite");   // schema: docs/export-sqlite.md
//   export_csv(ranks, "run-csv");         // one CSV per event kind

#include <filesystem>
#include <optional>
#include <span>
#include <string_view>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// Chrome trace JSON: a process per trace (rank), a track per GPU stream with
// kernels, copies and sets, API calls and NVTX ranges on host threads, GPU
// annotation ranges on a per-device track, flows from each launching API call
// to its GPU work (by correlation id), counters as "C" events. Timestamps are
// microseconds from the earliest event of all ranks (Unix-aligned via each
// trace's clock anchors), with ns precision.
// An output named *.gz is gzip-compressed.
void export_chrome(std::span<const Trace> traces, const std::filesystem::path& out);

// Perfetto's binary trace format (protobuf TracePackets: TrackDescriptors and
// TrackEvents with interned names), with the tracks, slices, flows and
// counters of export_chrome; several times smaller than the JSON and read by
// the Perfetto UI and trace_processor far beyond JSON's size limits.
// Timestamps are ns from the Chrome export's origin (or from an earlier
// counter or stack sample). An output named *.gz is gzip-compressed.
void export_perfetto(std::span<const Trace> traces, const std::filesystem::path& out);

// SQLite database with the tables documented in docs/export-sqlite.md.
void export_sqlite(std::span<const Trace> traces, const std::filesystem::path& out);

// A directory of CSV files (kernels.csv, memcpy.csv, ...), names resolved to
// text, each row tagged with its process (trace index) and rank. `out` must not
// exist or be an empty directory.
void export_csv(std::span<const Trace> traces, const std::filesystem::path& out);

enum class ExportFormat : uint8_t { kChrome, kPerfetto, kSqlite, kCsv };
std::string_view to_string(ExportFormat format);                       // "chrome", "perfetto", "sqlite", "csv"
std::optional<ExportFormat> parse_export_format(std::string_view name);  // the inverse; nullopt if unknown

// The format an output's name implies: .json or .json.gz -> chrome,
// .pftrace or .perfetto-trace (also .gz) -> perfetto, .sqlite or .db ->
// sqlite, an existing directory or a name ending in '/' -> csv; nullopt
// for anything else.
std::optional<ExportFormat> export_format_of(const std::filesystem::path& out);

// Runs the exporter of `format`.
void export_traces(std::span<const Trace> traces, ExportFormat format, const std::filesystem::path& out);

}  // namespace scalescope::trace
