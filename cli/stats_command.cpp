// scalescope stats: the nsys-stats-like summaries of a trace, a run directory
// or a Kineto JSON trace, per rank and combined across ranks.
#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/load_progress.hpp"
#include "report/json_envelope.hpp"
#include "report/stats_json.hpp"
#include "report/table.hpp"
#include "base/error.hpp"
#include "trace/model/kernel_short_name.hpp"
#include "trace/model/launcher.hpp"
#include "trace/stats/stats.hpp"
#include "trace/import/trace_source.hpp"
#include <fmt/format.h>

namespace scalescope::cli {
namespace {

using report::Cell;
using report::Column;
using report::Table;

const std::vector<std::string> kReports = {"api", "kernels", "memtime", "memsize", "nvtx", "nccl", "problems"};

std::vector<Column> duration_columns(std::vector<Column> lead) {
  for (const char* c : {"calls", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns"})
    lead.emplace_back(c, std::string_view(c) == "calls" ? 0 : 1);
  return lead;
}

void add_duration(std::vector<Cell>& row, const trace::DurationStats& d) {
  row.emplace_back(static_cast<int64_t>(d.count));
  row.emplace_back(d.total);
  row.emplace_back(d.avg);
  row.emplace_back(d.median);
  row.emplace_back(d.min);
  row.emplace_back(d.max);
  row.emplace_back(d.stddev);
}

// Names stay whole: the terminal table abbreviates them in the middle to fit
// the window (report/terminal.hpp), CSV and JSON keep them exact.
std::string shown(const std::string& name, bool) { return name; }

std::vector<Table> make_tables(const trace::TraceStats& s, const std::string& scope, const std::set<std::string>& want,
                               bool shorten) {
  std::vector<Table> out;
  auto title = [&](const char* what) { return fmt::format("{} ({})", what, scope); };
  if (want.count("api")) {
    auto cols = duration_columns({Column("name")});
    cols.emplace_back("time_pct", 1);
    Table t(title("CUDA API summary"), cols);
    for (const auto& r : s.api) {
      std::vector<Cell> row{shown(r.name, shorten)};
      add_duration(row, r.time);
      row.emplace_back(r.share * 100);
      t.add_row(std::move(row));
    }
    out.push_back(std::move(t));
  }
  if (want.count("kernels")) {
    // The short name on the terminal; the full signature for scripts.
    auto cols = duration_columns({Column("short_name"), Column("name").scripts_only()});
    cols.emplace_back("gpu_time_pct", 1);
    Table t(title("GPU kernel summary"), cols);
    std::vector<std::string_view> names;
    for (const auto& r : s.kernels) names.push_back(r.name);
    const std::vector<std::string> short_names = trace::distinct_short_names(names);
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      const auto& r = s.kernels[i];
      std::vector<Cell> row{short_names[i], shown(r.name, shorten)};
      add_duration(row, r.time);
      row.emplace_back(r.share * 100);
      t.add_row(std::move(row));
    }
    out.push_back(std::move(t));
  }
  if (want.count("memtime")) {
    auto cols = duration_columns({Column("kind"), Column("src"), Column("dst")});
    cols.emplace_back("time_pct", 1);
    Table t(title("GPU memory time by kind"), cols);
    for (const auto& r : s.memory_time) {
      std::vector<Cell> row{r.kind, r.src, r.dst};
      add_duration(row, r.time);
      row.emplace_back(r.share * 100);
      t.add_row(std::move(row));
    }
    out.push_back(std::move(t));
  }
  if (want.count("memsize")) {
    Table t(title("GPU memory size by kind"),
            {"kind", "src", "dst", "count", "total_bytes", "avg_bytes", "min_bytes", "max_bytes"});
    for (const auto& r : s.memory_size)
      t.add_row({r.kind, r.src, r.dst, static_cast<int64_t>(r.count), static_cast<int64_t>(r.total_bytes), r.avg_bytes,
                 static_cast<int64_t>(r.min_bytes), static_cast<int64_t>(r.max_bytes)});
    out.push_back(std::move(t));
  }
  if (want.count("nvtx")) {
    Table t(title("NVTX range summary"), duration_columns({Column("domain"), Column("range")}));
    for (const auto& r : s.nvtx) {
      std::vector<Cell> row{r.domain, shown(r.text, shorten)};
      add_duration(row, r.time);
      t.add_row(std::move(row));
    }
    out.push_back(std::move(t));
  }
  if (want.count("nccl")) {
    auto cols = duration_columns({Column("op"), Column("algorithm"), Column("protocol"), Column("datatype")});
    cols.emplace_back("total_bytes", 0);
    cols.emplace_back("payload_GBps", 2);
    cols.emplace_back("busbw_GBps", 2);
    Table t(title("NCCL summary"), cols);
    for (const auto& r : s.nccl) {
      std::vector<Cell> row{r.op, r.algorithm, r.protocol, r.datatype};
      add_duration(row, r.time);
      row.emplace_back(static_cast<int64_t>(r.total_bytes));
      row.emplace_back(r.bus_bytes_per_s / 1e9);
      row.emplace_back(r.busbw_count > 0 ? Cell(r.busbw_bytes_per_s / 1e9) : Cell());
      t.add_row(std::move(row));
    }
    t.add_note(
        "payload_GBps = bytes per rank / kernel time; busbw_GBps = NCCL's bus bandwidth (nccl-tests factors, "
        "n = communicator size, else WORLD_SIZE), empty when n or the bytes are unknown");
    out.push_back(std::move(t));
  }
  if (want.count("problems")) {
    Table t(title("Problems"), {"problem", "severity", "count"});
    for (const auto& r : s.problems) t.add_row({r.problem, r.severity, static_cast<int64_t>(r.count)});
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

void add_stats_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string input;
    std::string format = "table";
    std::vector<std::string> reports;
    int rank = -1;
    bool has_rank = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("stats", "Summaries of a trace (CUDA API, kernels, memory, NVTX, NCCL, problems)");
  cmd->add_option("trace", opts->input, "a .sstrace file, a .ssrun run directory, or a Kineto .json/.json.gz")
      ->required();
  cmd->add_option("--format", opts->format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("--report", opts->reports,
                  "reports to print (comma-separated): api,kernels,memtime,memsize,nvtx,nccl,problems")
      ->delimiter(',')
      ->check(CLI::IsMember(kReports));
  auto* rank_opt = cmd->add_option("--rank", opts->rank, "only this rank");
  cmd->callback([opts, rank_opt, &exit_code] {
    const auto format = *report::parse_output_format(opts->format);
    const bool shorten = format == report::OutputFormat::kTable;
    std::set<std::string> want(opts->reports.begin(), opts->reports.end());
    if (want.empty()) want.insert(kReports.begin(), kReports.end());
    LoadProgress progress("load");
    trace::TraceLoadOptions load;
    load.on_file_loaded = progress.callback();
    load.name_frames = false;  // no table of stats shows native frames: no symbol tables read
    std::vector<trace::Trace> traces = trace::load_traces(opts->input, nullptr, load);
    progress.finish();
    const std::vector<std::string> left_out = trace::drop_launchers(traces);
    if (format == report::OutputFormat::kJson) {  // typed: the summaries themselves, per rank and combined
      std::optional<int> rank;
      if (rank_opt->count()) rank = opts->rank;
      std::vector<const trace::Trace*> pointers;
      for (const auto& t : traces) pointers.push_back(&t);
      std::cout << report::json_text(
                       report::json_envelope("stats", report::stats_json(opts->input, pointers, rank, want, left_out)),
                       2)
                << "\n";
      exit_code = 0;
      return;
    }
    std::vector<Table> tables;
    if (rank_opt->count()) {
      auto it =
          std::find_if(traces.begin(), traces.end(), [&](const trace::Trace& t) { return t.meta.rank == opts->rank; });
      if (it == traces.end()) fail("{}: no trace of rank {}", opts->input, opts->rank);
      for (auto& t : make_tables(trace::compute_stats(*it), report::stats_scope_label(*it, 0), want, shorten))
        tables.push_back(std::move(t));
    } else {
      for (size_t i = 0; i < traces.size(); ++i)
        for (auto& t :
             make_tables(trace::compute_stats(traces[i]), report::stats_scope_label(traces[i], i), want, shorten))
          tables.push_back(std::move(t));
      if (traces.size() > 1) {
        std::vector<const trace::Trace*> all;
        for (const auto& t : traces) all.push_back(&t);
        for (auto& t : make_tables(trace::compute_stats(all), "all ranks", want, shorten))
          tables.push_back(std::move(t));
      }
    }
    if (!tables.empty())
      for (const auto& label : left_out)
        tables.front().add_note(fmt::format(
            "{}: left out, a process without a rank or GPU activity (a launcher such as the torchrun agent)", label));
    report::print_tables(std::cout, "stats", tables, format);
    exit_code = 0;
  });
}

}  // namespace scalescope::cli
