// CSV export: one file per event kind in a new directory, names as text.

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "base/text_output.hpp"
#include "trace/export/exporters.hpp"
#include "base/output_file.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {
namespace {

// A CSV file being written: header on open, fields appended with separators.
class CsvFile {
 public:
  CsvFile(const std::filesystem::path& path, std::initializer_list<std::string_view> columns)
      : CsvFile(path, std::vector<std::string>(columns.begin(), columns.end())) {}
  CsvFile(const std::filesystem::path& path, const std::vector<std::string>& columns)
      : file_(std::make_unique<detail::OutputFile>(path)) {
    for (const auto& c : columns) field(c);
    end_row();
  }
  CsvFile& field(std::string_view s) {
    sep();
    detail::append_csv_field(file_->buffer(), s);
    return *this;
  }
  template <typename T>
  CsvFile& num(T v) {
    sep();
    fmt::format_to(std::back_inserter(file_->buffer()), "{}", v);
    return *this;
  }
  void end_row() {
    file_->buffer() += '\n';
    first_ = true;
    file_->maybe_flush();
  }
  void commit() { file_->commit(); }

 private:
  void sep() {
    if (!first_) file_->buffer() += ',';
    first_ = false;
  }
  std::unique_ptr<detail::OutputFile> file_;
  bool first_ = true;
};

// One trace table's file: process, rank, then the table's exported columns.
template <typename Table>
std::vector<std::string> csv_header() {
  std::vector<std::string> names{"process", "rank"};
  for_each_column_of<Table>([&](const auto& c) {
    if (!c.file_only) names.push_back(exported_name(c.name, c.kind));
  });
  return names;
}

template <typename Table>
void write_rows(CsvFile& f, const Table& t, const StringTable& strings, size_t process, int32_t rank) {
  for (size_t i = 0; i < t.size(); ++i) {
    f.num(process).num(rank);
    for_each_column_of<Table>([&](const auto& c) {
      if (c.file_only) return;
      const auto v = (t.*c.values)[i];
      using V = std::remove_const_t<decltype(v)>;
      if constexpr (std::is_enum_v<V>) {
        f.field(to_string(v));
      } else if constexpr (std::is_floating_point_v<V>) {
        if (std::isfinite(v)) f.num(v);
        else f.field("");
      } else if (c.kind == ColumnKind::kString) {
        f.field(strings.view(static_cast<StringId>(v)));
      } else if (c.kind == ColumnKind::kAddress) {
        f.field(fmt::format("0x{:x}", v));
      } else if (c.kind == ColumnKind::kBool) {
        f.num(static_cast<int>(v));
      } else {
        f.num(v);
      }
    });
    f.end_row();
  }
}

}  // namespace

void export_csv(std::span<const Trace> traces, const std::filesystem::path& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) {
    if (!std::filesystem::is_directory(out, ec)) fail("{}: exists and is not a directory", out.string());
    if (!std::filesystem::is_empty(out, ec))
      fail("{}: directory is not empty (CSV export does not overwrite)", out.string());
  }
  const std::filesystem::path tmp = detail::temp_path_for(out);
  std::filesystem::remove_all(tmp, ec);
  if (!std::filesystem::create_directories(tmp, ec) || ec)
    fail("{}: cannot create directory: {}", out.string(), ec.message());
  try {
    auto p = [&](const char* name) { return tmp / name; };
    CsvFile proc(p("processes.csv"), {"process", "rank", "local_rank", "world_size", "hostname", "pid", "source"});
    CsvFile dev(p("devices.csv"), {"process", "rank", "id", "name", "uuid", "pci_bus_id", "numa_node", "sm_count",
                                   "memory_bytes", "compute_major", "compute_minor"});
    CsvFile prb(p("problems.csv"), {"process", "rank", "problem", "severity", "count"});
    std::vector<std::unique_ptr<CsvFile>> tables;  // one per trace table, in export order
    for_each_table_type([&](auto table) {
      using Table = typename decltype(table)::type;
      tables.push_back(std::make_unique<CsvFile>(tmp / fmt::format("{}.csv", TableColumns<Table>::name),
                                                 csv_header<Table>()));
    });
    for (size_t pi = 0; pi < traces.size(); ++pi) {
      const Trace& t = traces[pi];
      const StringTable& s = t.strings;
      const int32_t rank = t.meta.rank;
      proc.num(pi)
          .num(rank)
          .num(t.meta.local_rank)
          .num(t.meta.world_size)
          .field(t.meta.hostname)
          .num(t.meta.pid)
          .field(t.meta.source)
          .end_row();
      for (const DeviceInfo& d : t.meta.devices) {
        dev.num(pi)
            .num(rank)
            .num(d.id)
            .field(d.name)
            .field(d.uuid)
            .field(d.pci_bus_id)
            .num(d.numa_node)
            .num(d.sm_count)
            .num(d.memory_bytes)
            .num(d.compute_major)
            .num(d.compute_minor)
            .end_row();
      }
      size_t at = 0;
      for_each_trace_table(t, [&](const auto& table) { write_rows(*tables[at++], table, s, pi, rank); });
      for (int q = 0; q < kProblemCount; ++q) {
        if (!t.problems.counts[q]) continue;
        Severity sev = severity_of(static_cast<Problem>(q));
        prb.num(pi)
            .num(rank)
            .field(to_string(static_cast<Problem>(q)))
            .field(severity_name(sev))
            .num(t.problems.counts[q])
            .end_row();
      }
    }
    for (CsvFile* f : {&proc, &dev, &prb}) f->commit();
    for (auto& f : tables) f->commit();
  } catch (...) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
  // An empty existing directory is replaced by the finished one.
  std::filesystem::remove(out, ec);
  detail::commit_output(tmp, out);
}

}  // namespace scalescope::trace
