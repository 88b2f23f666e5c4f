// scalescope import: a PyTorch-profiler (Kineto) JSON trace or an Nsight
// Systems SQLite export becomes a scalescope trace; a directory of rank traces
// (or an export holding several processes) becomes a .ssrun run directory.
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "report/table.hpp"
#include "trace/error.hpp"
#include "trace/input_detector.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/nsys_importer.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_source.hpp"

namespace scalescope::cli {
namespace {

namespace fs = std::filesystem;

// "x.json.gz" -> "x"; "x.pt.trace.json" -> "x.pt.trace"; "x.sqlite" -> "x".
std::string stem_of(const fs::path& p) {
  std::string n = p.filename().string();
  for (std::string_view ext : {".gz", ".gzip", ".json", ".JSON", ".sqlite3", ".sqlite"})
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) n.resize(n.size() - ext.size());
  return n;
}

std::vector<report::Table> report_tables(const trace::ImportReport& rep, const trace::Trace& t) {
  report::Table cats(fmt::format("Imported {} ({} bytes of JSON, {} events)", rep.input, rep.json_bytes, rep.events),
                     {"cat", "ph", "events", "mapped_to"});
  for (const auto& c : rep.categories)
    cats.add_row({c.cat, c.ph, static_cast<int64_t>(c.events), c.mapped_to});
  report::Table tables("Trace tables", {"table", "rows"});
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
  tables.add_note(fmt::format("rank {}, world size {}, {} device(s)", t.meta.rank, t.meta.world_size, t.meta.devices.size()));
  return {std::move(cats), std::move(tables)};
}

// What became of each table of an nsys export, and of each traced process.
std::vector<report::Table> nsys_report_tables(const trace::NsysImportReport& rep, const std::vector<trace::Trace>& traces) {
  report::Table tabs(fmt::format("Imported {} (Nsight Systems {}, export schema {})", rep.input,
                                 rep.product_version.empty() ? "version not recorded" : rep.product_version,
                                 rep.schema_version.empty() ? "not recorded" : rep.schema_version),
                     {"table", "rows", "mapped_to"});
  for (const auto& t : rep.tables)
    if (t.present || t.mapped_to != "absent") tabs.add_row({t.name, static_cast<int64_t>(t.rows), t.mapped_to});
  report::Table rows("Rows by kind", {"kind", "rows", "became"});
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
  row("malformed rows or unknown string ids", rep.malformed, "left out or named from the next column (problem: malformed)");
  row("strings with invalid UTF-8", rep.invalid_utf8, "repaired (U+FFFD)");
  row("GPU metric samples", rep.gpu_metric_samples, "counted only");
  row("CPU samples", rep.cpu_samples, "counted only");
  row("scheduling events", rep.sched_events, "counted only");
  row("OS runtime calls", rep.osrt_calls, "counted only");
  rows.add_note(fmt::format("{} traced process(es); {} other process(es) with rows but no CUDA activity (counted only)",
                            rep.processes.size(), rep.other_processes));
  report::Table procs("Traces (one per process with CUDA activity)",
                      {"pid", "process", "rank", "rank_from", "kernels", "nccl", "memcpy", "memset", "api", "sync", "nvtx"});
  for (const auto& p : rep.processes)
    procs.add_row({static_cast<int64_t>(p.pid), p.name, static_cast<int64_t>(p.rank), p.rank_source,
                   static_cast<int64_t>(p.kernels), static_cast<int64_t>(p.nccl), static_cast<int64_t>(p.memcpys),
                   static_cast<int64_t>(p.memsets), static_cast<int64_t>(p.api), static_cast<int64_t>(p.syncs),
                   static_cast<int64_t>(p.nvtx)});
  for (const auto& t : traces)
    procs.add_note(fmt::format("pid {}: {} device(s), world size {}", t.meta.pid, t.meta.devices.size(), t.meta.world_size));
  return {std::move(tabs), std::move(rows), std::move(procs)};
}

// The file name of one imported trace inside a run directory.
std::string trace_name(const trace::Trace& t, const std::string& stem, bool several) {
  if (t.meta.rank >= 0) return fmt::format("rank{}", t.meta.rank);
  return several ? fmt::format("{}.pid{}", stem, t.meta.pid) : stem;
}

void write_one(const trace::Trace& t, const fs::path& out) {
  // Write beside and rename: a failed import never clobbers an older file.
  fs::path tmp = out;
  tmp += ".tmp";
  try {
    trace::write_trace(tmp, t);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) fail("{}: cannot write: {}", out.string(), ec.message());
}

}  // namespace

void add_import_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string input, output, format = "table";
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "import", "Import a PyTorch-profiler (Kineto) trace (.json, .json.gz) or an Nsight Systems SQLite export, or a directory of rank traces");
  cmd->add_option("trace", opts->input, "Kineto JSON trace or nsys export (.sqlite), or a directory of them (one per rank)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "output .sstrace (or .ssrun directory for a directory input)");
  cmd->add_option("--format", opts->format, "report format: table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->callback([opts, &exit_code] {
    const auto format = *report::parse_output_format(opts->format);
    fs::path in(opts->input);
    const trace::DetectedInput detected = trace::detect_input(in);
    std::vector<report::Table> tables;
    switch (detected.kind) {
      case trace::InputKind::kTraceFile:
      case trace::InputKind::kRunDirectory:
        fail("{}: already {}; nothing to import (give it to stats, analyze or export directly)", in.string(),
             detected.what);
      case trace::InputKind::kKinetoDirectory: {
        const std::vector<fs::path>& files = detected.files;
        std::error_code ec;
        fs::path out = opts->output.empty() ? fs::path(in.string() + std::string(trace::kRunDirExtension)) : fs::path(opts->output);
        fs::create_directories(out, ec);
        if (ec) fail("{}: cannot create run directory: {}", out.string(), ec.message());
        for (const auto& f : files) {
          trace::ImportReport rep;
          trace::Trace t = trace::import_kineto_file(f, &rep);
          std::string name = t.meta.rank >= 0 ? fmt::format("rank{}", t.meta.rank) : stem_of(f);
          write_one(t, out / (name + std::string(trace::kTraceFileExtension)));
          for (auto& tab : report_tables(rep, t)) tables.push_back(std::move(tab));
        }
        tables.back().add_note(fmt::format("wrote {} trace(s) to {}", files.size(), out.string()));
        break;
      }
      case trace::InputKind::kKinetoJson: {
        fs::path out = opts->output.empty() ? in.parent_path() / (stem_of(in) + std::string(trace::kTraceFileExtension))
                                            : fs::path(opts->output);
        trace::ImportReport rep;
        trace::Trace t = trace::import_kineto_file(in, &rep);
        write_one(t, out);
        tables = report_tables(rep, t);
        tables.back().add_note(fmt::format("wrote {}", out.string()));
        break;
      }
      case trace::InputKind::kNsysDirectory: {
        std::error_code ec;
        fs::path out = opts->output.empty() ? fs::path(in.string() + std::string(trace::kRunDirExtension)) : fs::path(opts->output);
        fs::create_directories(out, ec);
        if (ec) fail("{}: cannot create run directory: {}", out.string(), ec.message());
        size_t written = 0;
        for (const auto& f : detected.files) {
          trace::NsysImportReport rep;
          std::vector<trace::Trace> traces = trace::import_nsys_file(f, &rep);
          for (const auto& t : traces) {
            write_one(t, out / (trace_name(t, stem_of(f), traces.size() > 1) + std::string(trace::kTraceFileExtension)));
            ++written;
          }
          for (auto& tab : nsys_report_tables(rep, traces)) tables.push_back(std::move(tab));
        }
        tables.back().add_note(fmt::format("wrote {} trace(s) to {}", written, out.string()));
        break;
      }
      case trace::InputKind::kNsysSqlite: {
        trace::NsysImportReport rep;
        std::vector<trace::Trace> traces = trace::import_nsys_file(in, &rep);
        tables = nsys_report_tables(rep, traces);
        const std::string stem = stem_of(in);
        if (traces.size() == 1) {
          fs::path out = opts->output.empty() ? in.parent_path() / (stem + std::string(trace::kTraceFileExtension))
                                              : fs::path(opts->output);
          write_one(traces[0], out);
          tables.back().add_note(fmt::format("wrote {}", out.string()));
          break;
        }
        // Several processes with CUDA activity (nsys profile mpirun ...): one trace per rank.
        fs::path out = opts->output.empty() ? in.parent_path() / (stem + std::string(trace::kRunDirExtension))
                                            : fs::path(opts->output);
        if (out.extension().string() == trace::kTraceFileExtension)
          fail("{}: holds {} processes with CUDA activity; write them to a run directory (-o {}{})", in.string(),
               traces.size(), stem, trace::kRunDirExtension);
        std::error_code ec;
        fs::create_directories(out, ec);
        if (ec) fail("{}: cannot create run directory: {}", out.string(), ec.message());
        for (const auto& t : traces) write_one(t, out / (trace_name(t, stem, true) + std::string(trace::kTraceFileExtension)));
        tables.back().add_note(fmt::format("wrote {} trace(s) to {}", traces.size(), out.string()));
        break;
      }
      default:
        trace::fail_not_a_trace(in, detected);
    }
    report::print_tables(std::cout, tables, format);
    exit_code = 0;
  });
}

}  // namespace scalescope::cli
