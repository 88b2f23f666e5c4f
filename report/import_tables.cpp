// What `scalescope import` made of its input: its tables and its JSON, from
// the importers' reports.
#include "report/import_tables.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/json_fields.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::report {
namespace {

// A rank or world size, "unknown" where the trace does not say (-1: a trace
// without torch.distributed, an nsys export of an MPI job).
std::string known(int64_t v) { return v >= 0 ? std::to_string(v) : std::string("unknown"); }

nlohmann::json known_or_null(int64_t v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::vector<Table> kineto_tables(const trace::ImportReport& rep, const ImportedTrace& t) {
  Table cats(fmt::format("Imported {} ({} bytes of JSON, {} events)", rep.input, rep.json_bytes, rep.events),
             {"cat", "ph", "events", "mapped_to"});
  cats.set_id("imported_categories");
  for (const auto& c : rep.categories) cats.add_row({c.cat, c.ph, static_cast<int64_t>(c.events), c.mapped_to});
  Table tables("Trace tables", {"table", "rows"});
  auto row = [&](const char* name, uint64_t n) { tables.add_row({std::string(name), static_cast<int64_t>(n)}); };
  for (const char* name : {"kernels", "nccl", "memcpy", "memset", "api", "sync", "nvtx"}) row(name, t.rows_of(name));
  row("flows (not stored)", rep.flows);
  row("metadata kept", rep.metadata_kept);
  row("metadata dropped", rep.metadata_dropped);
  row("counted only", rep.ignored);
  row("unknown", rep.unknown);
  row("malformed", rep.malformed);
  tables.add_note(fmt::format("rank {}, world size {}, {} device(s)", known(t.rank), known(t.world_size), t.devices));
  return {std::move(cats), std::move(tables)};
}

std::vector<Table> nsys_tables(const trace::NsysImportReport& rep, const std::vector<ImportedTrace>& traces) {
  Table tabs(fmt::format("Imported {} (Nsight Systems {}, export schema {})", rep.input,
                         rep.product_version.empty() ? "version not recorded" : rep.product_version,
                         rep.schema_version.empty() ? "not recorded" : rep.schema_version),
             {"table", "rows", "kept", "dropped", "mapped_to"});
  // kept and dropped only for the tables read row by row; the others' rows are counted or looked up.
  auto count = [](const trace::NsysImportReport::Table& t, uint64_t n) -> Cell {
    if (!t.read) return std::monostate{};
    return static_cast<int64_t>(n);
  };
  for (const auto& t : rep.tables)
    if (t.present || t.mapped_to != "absent")
      tabs.add_row({t.name, static_cast<int64_t>(t.rows), count(t, t.kept), count(t, t.dropped), t.mapped_to});
  Table rows("Rows by kind", {"kind", "rows", "became"});
  auto row = [&](const char* kind, uint64_t n, const char* became) {
    rows.add_row({std::string(kind), static_cast<int64_t>(n), std::string(became)});
  };
  row("CUDA runtime calls", rep.runtime_calls, "api");
  row("CUDA driver calls", rep.driver_calls, "api");
  row("CUDA backtrace rows", rep.backtrace_rows, "counted only (repeat a call to carry its stack)");
  row("other API classes", rep.other_class_rows, "counted only (cuBLAS, cuDNN ... ranges)");
  row("NVTX ranges", rep.nvtx_ranges, "nvtx");
  row("NVTX marks", rep.nvtx_marks, "nvtx (end = start)");
  row("NVTX domain rows", rep.nvtx_domain_rows, "domain names");
  row("NVTX thread names", rep.nvtx_thread_names, "thread names, rank");
  row("NVTX other", rep.nvtx_other, "counted only");
  row("NVTX ranges never closed", rep.unclosed_ranges, "left out (problem: malformed)");
  if (rep.nvtx_payloads != 0) {  // exports with binaryData (`nsys export --include-blobs=true`)
    row("NVTX ranges with a binary payload", rep.nvtx_payloads, "payload read only for NCCL's message size");
    row("NCCL message sizes decoded", rep.nccl_payloads, "bytes of the NCCL kernel the call launched");
    row("NCCL kernels given bytes", rep.nccl_bytes_joined, "nccl bytes (others: 0, unknown)");
  }
  row("rows with a time, type or id missing or not a number", rep.dropped,
      "left out (problem: incomplete_record, data loss)");
  row("unreadable values or unknown string ids", rep.malformed,
      "read as unknown, or named from the next column (problem: malformed_event)");
  row("strings with invalid UTF-8", rep.invalid_utf8, "repaired (U+FFFD)");
  row("GPU metric samples", rep.gpu_metric_samples, "counted only");
  row("CPU samples", rep.cpu_samples, "counted only");
  row("scheduling events", rep.sched_events, "counted only");
  row("OS runtime calls", rep.osrt_calls, "counted only");
  rows.add_note(fmt::format("{} traced process(es); {} other process(es) with rows but no CUDA activity (counted only)",
                            rep.processes.size(), rep.other_processes));
  Table procs("Traces (one per process with CUDA activity)",
              {"pid", "process", "rank", "rank_from", "kernels", "nccl", "memcpy", "memset", "api", "sync", "nvtx"});
  for (const auto& p : rep.processes)
    procs.add_row({static_cast<int64_t>(p.pid), p.name, static_cast<int64_t>(p.rank), p.rank_source,
                   static_cast<int64_t>(p.kernels), static_cast<int64_t>(p.nccl), static_cast<int64_t>(p.memcpys),
                   static_cast<int64_t>(p.memsets), static_cast<int64_t>(p.api), static_cast<int64_t>(p.syncs),
                   static_cast<int64_t>(p.nvtx)});
  for (const auto& t : traces)
    procs.add_note(fmt::format("pid {}: {} device(s), world size {}", t.pid, t.devices, known(t.world_size)));
  return {std::move(tabs), std::move(rows), std::move(procs)};
}

}  // namespace

ImportedTrace ImportedTrace::of(const trace::Trace& t) {
  ImportedTrace out{.pid = t.meta.pid,
                    .rank = t.meta.rank,
                    .world_size = t.meta.world_size,
                    .devices = t.meta.devices.size(),
                    .rows = {}};
  trace::for_each_trace_table(t, [&](const auto& table) {
    using TableT = std::remove_cvref_t<decltype(table)>;
    out.rows.emplace_back(std::string(trace::TableColumns<TableT>::name), table.size());
  });
  return out;
}

uint64_t ImportedTrace::rows_of(std::string_view table) const {
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == table; });
  return it == rows.end() ? 0 : it->second;
}

std::vector<Table> import_tables(const ImportResult& result) {
  std::vector<Table> tables;
  for (const auto& k : result.kineto)
    for (auto& t : kineto_tables(k.report, k.trace)) tables.push_back(std::move(t));
  for (const auto& n : result.nsys)
    for (auto& t : nsys_tables(n.report, n.traces)) tables.push_back(std::move(t));
  if (result.run_directory) {
    if (tables.empty()) tables.emplace_back("Import", std::vector<std::string>{"note"});
    tables.back().add_note(fmt::format("wrote {} trace(s) to {}", result.traces_written, result.output));
  } else if (!tables.empty()) {
    tables.back().add_note(fmt::format("wrote {}", result.output));
  }
  return tables;
}

nlohmann::json import_report_json(const trace::ImportReport& r) {
  nlohmann::json cats = nlohmann::json::array();
  for (const auto& c : r.categories) cats.push_back(SCALESCOPE_JSON_FIELDS(c, cat, ph, events, mapped_to));
  return json_with(SCALESCOPE_JSON_FIELDS(r, input, json_bytes, events, flows, metadata_kept, metadata_dropped, ignored,
                                          unknown, malformed),
                   {{"categories", std::move(cats)}});
}

nlohmann::json nsys_import_report_json(const trace::NsysImportReport& r) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : r.tables)
    tables.push_back(json_with(SCALESCOPE_JSON_FIELDS(t, name, present, rows, mapped_to),
                               {{"kept", t.read ? nlohmann::json(t.kept) : nlohmann::json(nullptr)},
                                {"dropped", t.read ? nlohmann::json(t.dropped) : nlohmann::json(nullptr)}}));
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& p : r.processes)
    processes.push_back(
        SCALESCOPE_JSON_FIELDS(p, pid, name, rank, rank_source, kernels, nccl, memcpys, memsets, api, syncs, nvtx));
  return json_with(SCALESCOPE_JSON_FIELDS(r, input, product_version, schema_version, other_processes, runtime_calls,
                                          driver_calls, backtrace_rows, other_class_rows, nvtx_ranges, nvtx_marks,
                                          nvtx_domain_rows, nvtx_thread_names, nvtx_other, nvtx_payloads, nccl_payloads,
                                          nccl_bytes_joined, unclosed_ranges, dropped, malformed, invalid_utf8,
                                          gpu_metric_samples, cpu_samples, sched_events, osrt_calls),
                   {{"tables", std::move(tables)}, {"processes", std::move(processes)}});
}

nlohmann::json imported_trace_json(const ImportedTrace& t) {
  nlohmann::json rows = nlohmann::json::object();
  for (const auto& [table, n] : t.rows) rows[table] = n;
  return {{"pid", t.pid},
          {"rank", known_or_null(t.rank)},
          {"world_size", known_or_null(t.world_size)},
          {"devices", t.devices},
          {"rows", std::move(rows)}};
}

nlohmann::json import_json(const ImportResult& result) {
  nlohmann::json kineto = nlohmann::json::array(), nsys = nlohmann::json::array();
  for (const auto& k : result.kineto)
    kineto.push_back({{"report", import_report_json(k.report)}, {"trace", imported_trace_json(k.trace)}});
  for (const auto& n : result.nsys) {
    nlohmann::json traces = nlohmann::json::array();
    for (const auto& t : n.traces) traces.push_back(imported_trace_json(t));
    nsys.push_back({{"report", nsys_import_report_json(n.report)}, {"traces", std::move(traces)}});
  }
  return json_with(SCALESCOPE_JSON_FIELDS(result, input, output, run_directory, traces_written),
                   {{"kineto", std::move(kineto)}, {"nsys", std::move(nsys)}});
}

}  // namespace scalescope::report
