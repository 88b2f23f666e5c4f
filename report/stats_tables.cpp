// The tables of `scalescope stats`, from trace/stats' typed summaries.
#include "report/stats_tables.hpp"

#include <string_view>

#include <fmt/format.h>

#include "trace/model/kernel_short_name.hpp"

namespace scalescope::report {
namespace {

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

}  // namespace

std::vector<Table> stats_tables(const trace::TraceStats& s, const std::string& scope,
                                const std::set<std::string>& want) {
  std::vector<Table> out;
  auto title = [&](const char* what) { return fmt::format("{} ({})", what, scope); };
  if (want.count("api")) {
    auto cols = duration_columns({Column("name")});
    cols.emplace_back("time_pct", 1);
    Table t(title("CUDA API summary"), cols);
    for (const auto& r : s.api) {
      std::vector<Cell> row{r.name};
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
      std::vector<Cell> row{short_names[i], r.name};
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
      std::vector<Cell> row{r.domain, r.text};
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

std::vector<Table> stats_scope_tables(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                                      std::optional<int> rank, const std::set<std::string>& want,
                                      const std::vector<std::string>& left_out) {
  std::vector<Table> tables;
  for (const StatsScope& sc : stats_scopes(input, ranks, rank))
    for (auto& t : stats_tables(sc.stats, sc.label, want)) tables.push_back(std::move(t));
  if (!tables.empty())
    for (const auto& label : left_out)
      tables.front().add_note(fmt::format(
          "{}: left out, a process without a rank or GPU activity (a launcher such as the torchrun agent)", label));
  return tables;
}

}  // namespace scalescope::report
