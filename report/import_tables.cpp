// The tables `scalescope import` prints: what became of each part of the input.
#include "report/import_tables.hpp"

#include <string>

#include <fmt/format.h>

namespace scalescope::report {
namespace {

// A rank or world size, "unknown" where the trace does not say (-1: a trace
// without torch.distributed, an nsys export of an MPI job).
std::string known(int64_t v) { return v >= 0 ? std::to_string(v) : std::string("unknown"); }

}  // namespace

std::vector<Table> import_tables(const trace::ImportReport& rep, const trace::Trace& t) {
  Table cats(fmt::format("Imported {} ({} bytes of JSON, {} events)", rep.input, rep.json_bytes, rep.events),
             {"cat", "ph", "events", "mapped_to"});
  cats.set_id("imported_categories");
  for (const auto& c : rep.categories) cats.add_row({c.cat, c.ph, static_cast<int64_t>(c.events), c.mapped_to});
  Table tables("Trace tables", {"table", "rows"});
  auto row = [&](const char* name, size_t n) { tables.add_row({std::string(name), static_cast<int64_t>(n)}); };
  row("kernels", t.kernels.size());
  row("nccl", t.nccl.size());
  row("memcpy", t.memcpys.size());
  row("memset", t.memsets.size());
  row("api", t.api.size());
  row("sync", t.syncs.size());
  row("nvtx", t.nvtx.size());
  row("flows (not stored)", rep.flows);
  row("metadata kept", rep.metadata_kept);
  row("metadata dropped", rep.metadata_dropped);
  row("counted only", rep.ignored);
  row("unknown", rep.unknown);
  row("malformed", rep.malformed);
  tables.add_note(fmt::format("rank {}, world size {}, {} device(s)", known(t.meta.rank), known(t.meta.world_size),
                              t.meta.devices.size()));
  return {std::move(cats), std::move(tables)};
}

std::vector<Table> nsys_import_tables(const trace::NsysImportReport& rep, const std::vector<trace::Trace>& traces) {
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
    procs.add_note(fmt::format("pid {}: {} device(s), world size {}", t.meta.pid, t.meta.devices.size(),
                               known(t.meta.world_size)));
  return {std::move(tabs), std::move(rows), std::move(procs)};
}

}  // namespace scalescope::report
