// scalescope import: a PyTorch-profiler (Kineto) JSON trace or an Nsight
// Systems SQLite export becomes a scalescope trace; a directory of rank traces
// (or an export holding several processes) becomes a .ssrun run directory.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/output_format_option.hpp"
#include "report/import_tables.hpp"
#include "report/json_envelope.hpp"
#include "report/table.hpp"
#include "base/error.hpp"
#include "base/file_pool.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/import/kineto_importer.hpp"
#include "base/safe_output.hpp"
#include "trace/import/nsys_importer.hpp"
#include "base/parallel_for.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/trace_source.hpp"
#include <fmt/format.h>

namespace scalescope::cli {
namespace {

namespace fs = std::filesystem;

// "x.json.gz" -> "x"; "x.pt.trace.json" -> "x.pt.trace"; "x.sqlite" -> "x".
std::string stem_of(const fs::path& p) {
  std::string n = p.filename().string();
  for (std::string_view ext : {".gz", ".gzip", ".json", ".JSON", ".sqlite3", ".sqlite"})
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0)
      n.resize(n.size() - ext.size());
  return n;
}

// The file name of one imported trace inside a run directory.
std::string trace_name(const trace::Trace& t, const std::string& stem, bool several) {
  if (t.meta.rank >= 0) return fmt::format("rank{}", t.meta.rank);
  return several ? fmt::format("{}.pid{}", stem, t.meta.pid) : stem;
}

void write_one(const trace::Trace& t, const fs::path& out) {
  // Write beside and rename: a failed or killed import never clobbers an older
  // file, and a signal removes the temporary file.
  trace::TempPath tmp(trace::temp_path_for(out));
  trace::write_trace(tmp.path(), t);
  tmp.commit_to(out);
}

// A directory of Kineto traces (one per rank) becomes a run directory: built
// in a temporary directory beside `out`, closed by its manifest, then renamed
// into place, so `out` is either absent, the old run (on failure), or the
// whole new run; never a mix.
// `produce(emit)` calls emit(order, trace, input file, file name without
// extension) once per trace, possibly from several threads at once; each trace
// is written as it comes (only the traces being imported are held), and the
// names are checked and given in `order`, so the run directory, the report and
// any error are the same whatever order the threads finish in.
using EmitTrace = std::function<void(size_t, const trace::Trace&, const fs::path&, const std::string&)>;
void import_directory(const std::function<void(const EmitTrace&)>& produce, const fs::path& out, bool force,
                      report::ImportResult& result) {
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(out, ec));
  if (exists && !fs::is_directory(out, ec)) fail("{}: exists and is not a run directory", out.string());
  if (exists && !force)
    fail("{}: already exists; importing into it would mix two runs. Pass --force to replace it, or choose another -o",
         out.string());
  trace::TempPath tmp(trace::temp_path_for(out));
  fs::remove_all(tmp.path(), ec);
  fs::create_directories(tmp.path(), ec);
  if (ec) fail("{}: cannot create run directory: {}", out.string(), ec.message());
  struct Part {
    size_t order;
    std::string name;  // the file name it will have
    fs::path input, path;
    int32_t rank;
  };
  std::mutex mutex;
  std::vector<Part> parts;  // guarded by mutex
  std::atomic<size_t> next_part{0};
  produce([&](size_t order, const trace::Trace& t, const fs::path& f, const std::string& stem) {
    // A hidden name (not *.sstrace) until every trace is in and the names are checked.
    const fs::path path = tmp.path() / fmt::format(".part{}", next_part++);
    write_one(t, path);
    std::lock_guard lock(mutex);
    parts.push_back({order, stem + std::string(trace::kTraceFileExtension), f, path, t.meta.rank});
  });
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.order < b.order; });
  std::map<std::string, fs::path> written;  // file name -> the input it came from
  std::vector<std::string> names;
  for (const Part& p : parts) {
    if (auto it = written.find(p.name); it != written.end()) {
      if (p.rank >= 0)
        fail("{} and {} both hold rank {}; a run directory holds one trace per rank (two runs in one folder?)",
             it->second.string(), p.input.string(), p.rank);
      fail("{} and {} would both become {}; rename one", it->second.string(), p.input.string(), p.name);
    }
    written.emplace(p.name, p.input);
    fs::rename(p.path, tmp.path() / p.name, ec);
    if (ec) fail("{}: cannot write {}: {}", out.string(), p.name, ec.message());
    names.push_back(p.name);
  }
  trace::write_run_manifest(tmp.path(), names, "import");  // last: the directory is complete
  if (exists) {
    // --force: the old directory goes only once the new one is whole.
    fs::path old = trace::temp_path_for(out);
    old += ".old";
    trace::TempPath old_guard(old);
    fs::rename(out, old, ec);
    if (ec) fail("{}: cannot replace: {}", out.string(), ec.message());
    try {
      tmp.commit_to(out);
    } catch (...) {
      fs::rename(old, out, ec);  // put the old run back
      throw;
    }
  } else {
    tmp.commit_to(out);
  }
  result.output = out.string();
  result.run_directory = true;
  result.traces_written = names.size();
}

// What the import report keeps of each trace of an nsys export.
std::vector<report::ImportedTrace> imported_traces(const std::vector<trace::Trace>& traces) {
  std::vector<report::ImportedTrace> out;
  for (const auto& t : traces) out.push_back(report::ImportedTrace::of(t));
  return out;
}

struct ImportArgs {
  std::string input, output;
  report::OutputFormat format = report::OutputFormat::kTable;
  bool force = false;
};

// A folder of Kineto traces: one rank per thread; each rank's report keeps the files' order.
report::ImportResult import_kineto_directory(const ImportArgs& a, const fs::path& in,
                                             const trace::DetectedInput& detected) {
  fs::path out = a.output.empty() ? fs::path(in.string() + std::string(trace::kRunDirExtension)) : fs::path(a.output);
  trace::check_output(out, {in}, true);  // an existing run directory: import_directory decides (--force)
  report::ImportResult result{.input = a.input};
  import_directory(
      [&](const EmitTrace& emit) {
        const auto& files = detected.files;
        result.kineto.resize(files.size());
        const unsigned threads = trace::threads_for_files(files.size(), trace::kineto_import_memory_bytes(files));
        // One scratch per worker: its next rank reuses the buffers the last one touched.
        std::vector<trace::KinetoImportScratch> scratch(threads);
        trace::parallel_for(files.size(), threads, [&](size_t i, unsigned worker) {
          trace::ImportReport rep;
          trace::Trace t = trace::import_kineto_file(files[i], &rep, {}, &scratch[worker]);
          emit(i, t, files[i], t.meta.rank >= 0 ? fmt::format("rank{}", t.meta.rank) : stem_of(files[i]));
          result.kineto[i] = {std::move(rep), report::ImportedTrace::of(t)};
        });
      },
      out, a.force, result);
  return result;
}

// One Kineto trace: one .sstrace, replaced when it exists (documented); never the input.
report::ImportResult import_kineto_json(const ImportArgs& a, const fs::path& in) {
  fs::path out = a.output.empty() ? in.parent_path() / (stem_of(in) + std::string(trace::kTraceFileExtension))
                                  : fs::path(a.output);
  trace::check_output(out, {in}, true);
  trace::ImportReport rep;
  trace::Trace t = trace::import_kineto_file(in, &rep);
  write_one(t, out);
  report::ImportResult result{.input = a.input, .output = out.string(), .traces_written = 1};
  result.kineto.push_back({std::move(rep), report::ImportedTrace::of(t)});
  return result;
}

// A folder of nsys exports: each file's processes, one trace each.
report::ImportResult import_nsys_directory(const ImportArgs& a, const fs::path& in,
                                           const trace::DetectedInput& detected) {
  fs::path out = a.output.empty() ? fs::path(in.string() + std::string(trace::kRunDirExtension)) : fs::path(a.output);
  trace::check_output(out, {in}, true);
  report::ImportResult result{.input = a.input};
  import_directory(
      [&](const EmitTrace& emit) {
        size_t order = 0;
        for (const auto& f : detected.files) {
          trace::NsysImportReport rep;
          std::vector<trace::Trace> traces = trace::import_nsys_file(f, &rep);
          for (const auto& t : traces) emit(order++, t, f, trace_name(t, stem_of(f), traces.size() > 1));
          result.nsys.push_back({std::move(rep), imported_traces(traces)});
        }
      },
      out, a.force, result);
  return result;
}

// One nsys export: one .sstrace, or a run directory when several processes
// had CUDA activity (nsys profile mpirun ...), one trace per rank.
report::ImportResult import_nsys_sqlite(const ImportArgs& a, const fs::path& in) {
  trace::NsysImportReport rep;
  std::vector<trace::Trace> traces = trace::import_nsys_file(in, &rep);
  report::ImportResult result{.input = a.input};
  result.nsys.push_back({std::move(rep), imported_traces(traces)});
  const std::string stem = stem_of(in);
  if (traces.size() == 1) {
    fs::path out = a.output.empty() ? in.parent_path() / (stem + std::string(trace::kTraceFileExtension))
                                    : fs::path(a.output);
    trace::check_output(out, {in}, true);
    write_one(traces[0], out);
    result.output = out.string();
    result.traces_written = 1;
    return result;
  }
  fs::path out =
      a.output.empty() ? in.parent_path() / (stem + std::string(trace::kRunDirExtension)) : fs::path(a.output);
  if (out.extension().string() == trace::kTraceFileExtension)
    fail("{}: holds {} processes with CUDA activity; write them to a run directory (-o {}{})", in.string(),
         traces.size(), stem, trace::kRunDirExtension);
  trace::check_output(out, {in}, true);
  import_directory(
      [&](const EmitTrace& emit) {
        for (size_t i = 0; i < traces.size(); ++i) emit(i, traces[i], in, trace_name(traces[i], stem, true));
      },
      out, a.force, result);
  return result;
}

report::ImportResult import_input(const ImportArgs& a) {
  const fs::path in(a.input);
  const trace::DetectedInput detected = trace::detect_input(in);
  trace::warn_skipped_files(in, detected);
  switch (detected.kind) {
    case trace::InputKind::kTraceFile:
    case trace::InputKind::kRunDirectory:
      fail("{}: already {}; nothing to import (give it to stats, analyze or export directly)", in.string(),
           detected.what);
    case trace::InputKind::kKinetoDirectory: return import_kineto_directory(a, in, detected);
    case trace::InputKind::kKinetoJson: return import_kineto_json(a, in);
    case trace::InputKind::kNsysDirectory: return import_nsys_directory(a, in, detected);
    case trace::InputKind::kNsysSqlite: return import_nsys_sqlite(a, in);
    default: trace::fail_not_a_trace(in, detected);
  }
}

}  // namespace

void add_import_command(CLI::App& app, int& /*exit_code*/) {
  auto opts = std::make_shared<ImportArgs>();
  auto* cmd = app.add_subcommand(
      "import",
      "Import a PyTorch-profiler (Kineto) trace (.json, .json.gz) or an Nsight Systems SQLite export, or a directory of rank traces");
  cmd->add_option("trace", opts->input,
                  "Kineto JSON trace or nsys export (.sqlite), or a directory of them (one per rank)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "output .sstrace (or .ssrun directory for a directory input)");
  add_output_format(cmd, opts->format, "how to print the import report");
  cmd->add_flag(
      "--force", opts->force,
      "replace an existing output run directory (a single .sstrace output is always replaced; an input never)");
  cmd->callback([opts] {
    const auto format = opts->format;
    const report::ImportResult result = import_input(*opts);
    if (format == report::OutputFormat::kJson)  // typed: the importers' reports and what was written
      std::cout << report::json_text(report::json_envelope("import", report::import_json(result)), 2) << "\n";
    else report::print_tables(std::cout, "import", report::import_tables(result), format);
  });
}

}  // namespace scalescope::cli
