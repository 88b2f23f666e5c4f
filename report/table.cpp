#include "report/table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace scalescope::report {

std::optional<OutputFormat> parse_output_format(std::string_view text) {
  if (text == "table" || text == "text") return OutputFormat::kTable;
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "json") return OutputFormat::kJson;
  return std::nullopt;
}

Table::Table(std::string title, std::vector<Column> columns)
    : title_(std::move(title)), columns_(std::move(columns)) {}

Table::Table(std::string title, const std::vector<std::string>& column_names) : title_(std::move(title)) {
  for (auto& n : column_names) columns_.emplace_back(n);
}

Table::Table(std::string title, std::initializer_list<const char*> column_names) : title_(std::move(title)) {
  for (const char* n : column_names) columns_.emplace_back(n);
}

void Table::add_row(std::vector<Cell> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error(fmt::format("table '{}': row has {} cells, expected {}", title_, cells.size(),
                                       columns_.size()));
  rows_.push_back(std::move(cells));
}

void Table::add_note(std::string note) { notes_.push_back(std::move(note)); }

namespace {

std::string cell_text(const Cell& c, int precision, bool full) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "";
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else if constexpr (std::is_same_v<T, int64_t>) return fmt::format("{}", v);
        else {
          if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
          return full ? fmt::format("{}", v) : fmt::format("{:.{}f}", v, precision);
        }
      },
      c);
}

// Digits after the point that show a column's smallest non-zero magnitude with
// `figures` significant figures (at most 12 digits, none for large values).
int precision_for(const std::vector<std::vector<Cell>>& rows, size_t column, int figures) {
  double smallest = 0;
  for (const auto& r : rows)
    if (const double* v = std::get_if<double>(&r[column]); v && std::isfinite(*v) && *v != 0)
      smallest = smallest == 0 ? std::fabs(*v) : std::min(smallest, std::fabs(*v));
  if (smallest == 0) return std::min(figures, 3);
  const int magnitude = static_cast<int>(std::floor(std::log10(smallest)));
  return std::clamp(figures - 1 - magnitude, 0, 12);
}

bool is_number(const Cell& c) { return std::holds_alternative<int64_t>(c) || std::holds_alternative<double>(c); }

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += "\"\"";
    else out += ch;
  }
  out += '"';
  return out;
}

nlohmann::json cell_json(const Cell& c) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return nullptr;
        else if constexpr (std::is_same_v<T, double>) {
          if (!std::isfinite(v)) return nullptr;  // JSON has no NaN/inf
          return v;
        } else return v;
      },
      c);
}

// Display width of UTF-8 text: count code points, not bytes.
size_t display_width(std::string_view s) {
  size_t n = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace

std::string Table::to_json() const {
  nlohmann::json j;
  j["title"] = title_;
  nlohmann::json cols = nlohmann::json::array();
  for (auto& c : columns_) cols.push_back(c.name);
  j["columns"] = cols;
  nlohmann::json rows = nlohmann::json::array();
  for (auto& r : rows_) {
    nlohmann::json o = nlohmann::json::object();
    for (size_t i = 0; i < columns_.size(); ++i) o[columns_[i].name] = cell_json(r[i]);
    rows.push_back(std::move(o));
  }
  j["rows"] = rows;
  if (!notes_.empty()) j["notes"] = notes_;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Table::print(std::ostream& out, OutputFormat format) const {
  if (format == OutputFormat::kJson) {
    out << to_json() << '\n';
    return;
  }
  if (format == OutputFormat::kCsv) {
    for (size_t i = 0; i < columns_.size(); ++i) out << (i ? "," : "") << csv_escape(columns_[i].name);
    out << '\n';
    for (auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << csv_escape(cell_text(r[i], 0, true));
      out << '\n';
    }
    return;
  }
  const bool colour = use_colour(STDOUT_FILENO);
  std::vector<std::vector<std::string>> text(rows_.size());
  std::vector<size_t> width(columns_.size());
  std::vector<int> precision(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    width[i] = display_width(columns_[i].name);
    precision[i] = columns_[i].significant_figures > 0 ? precision_for(rows_, i, columns_[i].significant_figures)
                                                       : columns_[i].precision;
  }
  for (size_t r = 0; r < rows_.size(); ++r)
    for (size_t i = 0; i < columns_.size(); ++i) {
      text[r].push_back(cell_text(rows_[r][i], precision[i], false));
      width[i] = std::max(width[i], display_width(text[r].back()));
    }
  if (!title_.empty()) out << (colour ? "\033[1m" : "") << title_ << (colour ? "\033[0m" : "") << '\n';
  auto pad = [&](const std::string& s, size_t w, bool right) {
    size_t n = display_width(s);
    std::string fill(w > n ? w - n : 0, ' ');
    return right ? fill + s : s + fill;
  };
  std::string header;
  for (size_t i = 0; i < columns_.size(); ++i) {
    bool right = !rows_.empty() && is_number(rows_[0][i]);
    header += (i ? "  " : "") + pad(columns_[i].name, width[i], right);
  }
  out << (colour ? "\033[4m" : "") << header << (colour ? "\033[0m" : "") << '\n';
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i)
      line += (i ? "  " : "") + pad(text[r][i], width[i], is_number(rows_[r][i]));
    // Trailing blanks of the last column are noise in logs and diffs.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
  for (auto& n : notes_) out << (colour ? "\033[2m" : "") << n << (colour ? "\033[0m" : "") << '\n';
}

void print_tables(std::ostream& out, const std::vector<Table>& tables, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    out << '[';
    for (size_t i = 0; i < tables.size(); ++i) out << (i ? "," : "") << tables[i].to_json();
    out << "]\n";
    return;
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) out << '\n';
    if (format == OutputFormat::kCsv) out << "# " << tables[i].title() << '\n';
    tables[i].print(out, format);
  }
}

bool use_colour(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && no_colour[0] != '\0') return false;
  return isatty(fd) != 0;
}

std::string format_duration_ns(double ns) {
  double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.3f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, kUnits[u]);
}

std::string format_percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

}  // namespace scalescope::report
