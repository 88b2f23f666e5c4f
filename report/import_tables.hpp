#pragma once
// What `scalescope import` made of its input, typed, and drawn once: the
// tables of the terminal and CSV, and the JSON of `import --format json` and
// of the C library's run info (one definition of an import report's JSON).
//
//   report::ImportResult r{.input = "trace.json.gz"};
//   r.kineto.push_back({rep, report::ImportedTrace::of(trace)});
//   report::print_tables(std::cout, "import", report::import_tables(r), format);

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/import/nsys_importer.hpp"

namespace scalescope::report {

// What an import report says of one trace it made, kept once the trace
// itself is written and freed.
struct ImportedTrace {
  uint32_t pid = 0;
  int32_t rank = -1, world_size = -1;  // -1: the trace does not say
  size_t devices = 0;
  std::vector<std::pair<std::string, uint64_t>> rows;  // rows per trace table, by name, in export order

  static ImportedTrace of(const trace::Trace& t);
  uint64_t rows_of(std::string_view table) const;  // 0 for a table it does not name
};

struct KinetoImport {
  trace::ImportReport report;
  ImportedTrace trace;
};

struct NsysImport {
  trace::NsysImportReport report;
  std::vector<ImportedTrace> traces;  // one per process with CUDA activity, in the report's order
};

// One import: Kineto files or nsys exports (one kind), in input order, and
// what was written.
struct ImportResult {
  std::string input;
  std::vector<KinetoImport> kineto;
  std::vector<NsysImport> nsys;
  std::string output;          // the .sstrace or .ssrun written
  bool run_directory = false;  // output is a run directory of traces_written traces
  size_t traces_written = 0;
};

// Every table of the import, in the order `import` prints them: per Kineto
// file its event categories and the rows of each trace table; per nsys
// export what became of its tables and kinds of rows, and its processes.
// The last table's notes say what was written.
std::vector<Table> import_tables(const ImportResult& result);

// {"input", "output", "run_directory", "traces_written",
//  "kineto": [{"report": import_report_json, "trace": imported_trace_json}],
//  "nsys": [{"report": nsys_import_report_json, "traces": [imported_trace_json]}]}
nlohmann::json import_json(const ImportResult& result);

// {"input", "json_bytes", "events", "categories": [{"cat", "ph", "events",
// "mapped_to"}], "flows", "metadata_kept", "metadata_dropped", "ignored",
// "unknown", "malformed"}
nlohmann::json import_report_json(const trace::ImportReport& report);
// {"input", "product_version", "schema_version" ("" where not recorded),
// "tables": [{"name", "present", "rows", "kept", "dropped" (null for tables
// not read row by row), "mapped_to"}], "processes": [{"pid", "name", "rank",
// "rank_source", "kernels", "nccl", "memcpys", "memsets", "api", "syncs",
// "nvtx"}], "other_processes", then the rows by kind (runtime_calls,
// driver_calls, ..., osrt_calls)}
nlohmann::json nsys_import_report_json(const trace::NsysImportReport& report);
// {"pid", "rank", "world_size" (null when the trace does not say),
// "devices", "rows": {table: rows}}
nlohmann::json imported_trace_json(const ImportedTrace& trace);

}  // namespace scalescope::report
