// Export formats by name and by output file name.
#include <string>

#include "base/enum_names.hpp"
#include "trace/export/exporters.hpp"

namespace scalescope::trace {

namespace {
constexpr auto kFormatNames = std::to_array<std::string_view>({"chrome", "perfetto", "sqlite", "csv"});
}  // namespace

std::string_view to_string(ExportFormat format) {
  return name_by_value<ExportFormat::kCsv>(kFormatNames, format, "chrome");
}

std::optional<ExportFormat> parse_export_format(std::string_view name) {
  return value_by_name<ExportFormat>(kFormatNames, name);
}

std::optional<ExportFormat> export_format_of(const std::filesystem::path& out) {
  const std::string text = out.string();
  std::error_code ec;
  if (text.ends_with('/') || std::filesystem::is_directory(out, ec)) return ExportFormat::kCsv;
  std::string name = out.filename().string();
  if (name.ends_with(".gz")) name.resize(name.size() - 3);
  if (name.ends_with(".json")) return ExportFormat::kChrome;
  if (name.ends_with(".pftrace") || name.ends_with(".perfetto-trace")) return ExportFormat::kPerfetto;
  if (out.filename().string() == name && (name.ends_with(".sqlite") || name.ends_with(".db")))
    return ExportFormat::kSqlite;  // SQLite is not written compressed
  return std::nullopt;
}

void export_traces(std::span<const Trace> traces, ExportFormat format, const std::filesystem::path& out) {
  switch (format) {
    case ExportFormat::kChrome: return export_chrome(traces, out);
    case ExportFormat::kPerfetto: return export_perfetto(traces, out);
    case ExportFormat::kSqlite: return export_sqlite(traces, out);
    case ExportFormat::kCsv: return export_csv(traces, out);
  }
}

}  // namespace scalescope::trace
