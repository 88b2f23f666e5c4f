#include "report/table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/json_envelope.hpp"
#include "report/terminal.hpp"

namespace scalescope::report {

std::optional<OutputFormat> parse_output_format(std::string_view text) {
  if (text == "table" || text == "text") return OutputFormat::kTable;
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "json") return OutputFormat::kJson;
  return std::nullopt;
}

std::vector<Column> columns(std::initializer_list<ColumnSpec> spec) {
  std::vector<Column> out;
  for (const auto& c : spec) out.push_back(Column(c.name, c.digits).detail(c.detail));
  return out;
}

Table::Table(std::string title, std::vector<Column> columns) : title_(std::move(title)), columns_(std::move(columns)) {}

Table::Table(std::string title, const std::vector<std::string>& column_names) : title_(std::move(title)) {
  for (auto& n : column_names) columns_.emplace_back(n);
}

Table::Table(std::string title, std::initializer_list<const char*> column_names) : title_(std::move(title)) {
  for (const char* n : column_names) columns_.emplace_back(n);
}

void Table::add_row(std::vector<Cell> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error(
        fmt::format("table '{}': row has {} cells, expected {}", title_, cells.size(), columns_.size()));
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
        else if constexpr (std::is_same_v<T, bool>) return full ? (v ? "true" : "false") : (v ? "yes" : "no");
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

bool is_duration_column(const Column& c) { return c.name.size() > 3 && c.name.ends_with("_ns"); }

// Terminal text of each cell: escaped, durations in readable units.
std::string terminal_cell(const Cell& c, const Column& column, int precision) {
  if (is_duration_column(column)) {
    if (const auto* i = std::get_if<int64_t>(&c)) return format_duration_ns(static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(&c); d && std::isfinite(*d)) return format_duration_ns(*d);
  }
  std::string text = terminal_safe(cell_text(c, precision, false));
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

std::string terminal_header(const Column& c) {
  return terminal_safe(is_duration_column(c) ? c.name.substr(0, c.name.size() - 3) : c.name);
}

// Abbreviates the texts of one column to `width`, each kept apart from the
// others: when two names would read the same, the cut moves until they differ
// (a name that no cut can tell apart stays whole).
void abbreviate_column(std::vector<std::string*> cells, size_t width) {
  std::set<std::string> full, shown;
  for (auto* c : cells) full.insert(*c);
  std::map<std::string, std::string> done;
  for (auto* c : cells) {
    if (display_width(*c) <= width) {
      shown.insert(*c);
      done[*c] = *c;
    }
  }
  for (auto* c : cells) {
    if (auto it = done.find(*c); it != done.end()) {
      *c = it->second;
      continue;
    }
    const size_t keep = width > 3 ? width - 3 : 0;
    std::string pick;
    // Balanced first, then more head, then more tail.
    std::vector<size_t> heads{(keep + 1) / 2};
    for (size_t d = 1; d <= keep; ++d) {
      if ((keep + 1) / 2 + d <= keep) heads.push_back((keep + 1) / 2 + d);
      if ((keep + 1) / 2 >= d) heads.push_back((keep + 1) / 2 - d);
    }
    for (size_t h : heads) {
      std::string a = abbreviate_middle(*c, width, h);
      if (!shown.count(a) && !full.count(a)) {
        pick = std::move(a);
        break;
      }
    }
    if (pick.empty()) pick = *c;
    shown.insert(pick);
    done[*c] = pick;
    *c = std::move(pick);
  }
}

}  // namespace

std::string Table::id() const {
  if (!id_.empty()) return id_;
  std::string_view t = title_;
  t = t.substr(0, std::min(t.find(" ("), t.find(':')));
  std::string out;
  for (char ch : t) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "table" : out;
}

nlohmann::json Table::json() const {
  nlohmann::json j;
  j["id"] = id();
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
  return j;
}

std::string Table::to_json() const { return json_text(json()); }

void Table::print(std::ostream& out, OutputFormat format, size_t width) const {
  if (format == OutputFormat::kJson) {
    out << to_json() << "\n";
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
  print_terminal(out, width == kAutoWidth ? output_width(STDOUT_FILENO) : width);
}

namespace {

// A table's cells as the terminal shows them, and each column's width (0:
// hidden to fit).
struct TerminalLayout {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> text;  // per row, per column
  std::vector<size_t> width;
  std::vector<size_t> hidden;  // in the order they were hidden
  bool blocks = false;         // one block per row: even so the table does not fit

  // Hidden columns have width 0 and no separator.
  size_t total() const {
    size_t n = 0, shown = 0;
    for (size_t w : width) n += w, shown += w > 0;
    return n + 2 * (shown == 0 ? 0 : shown - 1);
  }
};

TerminalLayout lay_out(const std::vector<Column>& columns, const std::vector<std::vector<Cell>>& rows) {
  TerminalLayout l;
  l.text.resize(rows.size());
  l.header.resize(columns.size());
  l.width.resize(columns.size());
  std::vector<int> precision(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    l.header[i] = terminal_header(columns[i]);
    l.width[i] = display_width(l.header[i]);
    precision[i] = columns[i].significant_figures > 0 ? precision_for(rows, i, columns[i].significant_figures)
                                                      : columns[i].precision;
  }
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t i = 0; i < columns.size(); ++i) {
      l.text[r].push_back(terminal_cell(rows[r][i], columns[i], precision[i]));
      l.width[i] = std::max(l.width[i], display_width(l.text[r].back()));
    }
  return l;
}

// How soon a narrow terminal hides column i (0: never). A count, duration or
// size directly followed by its share is a detail: the share says more on a
// narrow screen ("compute", "compute_pct").
int hide_level(const std::vector<Column>& columns, size_t i) {
  if (columns[i].is_prose) return 0;
  int level = columns[i].hide_level;
  if (level == 0 && i + 1 < columns.size()) {
    std::string_view value = columns[i].name, share = columns[i + 1].name;
    if (value.ends_with("_ns")) value.remove_suffix(3);
    if (share.ends_with("_pct") && !value.ends_with("_pct")) {
      share.remove_suffix(4);
      if (value.starts_with(share) || share.starts_with(value)) level = 1;
    }
  }
  return level;
}

// Narrows the widest name columns (never below min_name or their header),
// longest first, until the table fits max_width or no cut tells names apart.
void narrow_names(TerminalLayout& l, const std::vector<Column>& columns, const std::vector<std::vector<Cell>>& rows,
                  size_t min_name, size_t max_width) {
  for (;;) {
    size_t widest = columns.size();
    for (size_t i = 0; i < columns.size(); ++i) {
      bool text_column = !columns[i].is_prose && l.width[i] > 0;
      for (const auto& row : rows) text_column = text_column && !is_number(row[i]);
      if (!text_column || rows.empty()) continue;
      const size_t min_width = std::max(min_name, display_width(l.header[i]));
      if (l.width[i] > min_width && (widest == columns.size() || l.width[i] > l.width[widest])) widest = i;
    }
    if (widest == columns.size() || l.total() <= max_width) break;
    const size_t excess = l.total() - max_width;
    const size_t min_width = std::max(min_name, display_width(l.header[widest]));
    const size_t target = l.width[widest] - std::min(excess, l.width[widest] - min_width);
    std::vector<std::string*> cells;
    for (auto& row : l.text) cells.push_back(&row[widest]);
    abbreviate_column(cells, target);
    l.width[widest] = display_width(l.header[widest]);
    for (auto& row : l.text) l.width[widest] = std::max(l.width[widest], display_width(row[widest]));
    if (l.width[widest] > target) break;  // names no cut tells apart: stop narrowing
  }
}

// Names keep 40 characters while detail columns go, the most dispensable
// first and from the right; then names go down to 24. A table that still
// does not fit is printed in blocks with every column.
void fit_to_width(TerminalLayout& l, const std::vector<Column>& columns, const std::vector<std::vector<Cell>>& rows,
                  size_t max_width) {
  if (max_width == 0 || l.total() <= max_width) return;
  const std::vector<size_t> full_width = l.width;
  narrow_names(l, columns, rows, 40, max_width);
  std::vector<size_t> order;
  for (size_t i = 1; i < columns.size(); ++i)
    if (hide_level(columns, i) > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = hide_level(columns, a), lb = hide_level(columns, b);
    return la != lb ? la > lb : a > b;
  });
  for (size_t i : order) {
    if (l.total() <= max_width) break;
    l.width[i] = 0;
    l.hidden.push_back(i);
  }
  narrow_names(l, columns, rows, 24, max_width);
  l.blocks = l.total() > max_width;
  if (l.blocks) {
    for (size_t i : l.hidden) l.width[i] = full_width[i];
    l.hidden.clear();
  }
}

// One block per row: the short cells on one line, then each long one wrapped.
void print_row_blocks(std::ostream& out, const TerminalLayout& l, const std::vector<Column>& columns,
                      size_t max_width, bool colour) {
  for (const auto& row : l.text) {
    std::string head;
    std::vector<size_t> long_cells;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (row[i].empty()) continue;
      if (columns[i].is_prose || display_width(row[i]) > 40) {
        long_cells.push_back(i);
        continue;
      }
      head += (head.empty() ? "" : "  ") + l.header[i] + ": " + row[i];
    }
    out << (colour ? "\033[1m" : "") << wrap(head, max_width) << (colour ? "\033[0m" : "") << '\n';
    for (size_t i : long_cells) out << wrap(l.header[i] + ": " + row[i], max_width, "    ") << '\n';
  }
}

// The header line and one aligned line per row (numbers to the right).
void print_aligned(std::ostream& out, const TerminalLayout& l, const std::vector<std::vector<Cell>>& rows,
                   bool colour) {
  auto pad = [&](const std::string& s, size_t w, bool right) {
    size_t n = display_width(s);
    std::string fill(w > n ? w - n : 0, ' ');
    return right ? fill + s : s + fill;
  };
  const auto shown = [&](size_t i) { return l.width[i] > 0; };
  std::string line;
  for (size_t i = 0; i < l.header.size(); ++i) {
    if (!shown(i)) continue;
    bool right = !rows.empty() && is_number(rows[0][i]);
    line += (line.empty() ? "" : "  ") + pad(l.header[i], l.width[i], right);
  }
  line.erase(line.find_last_not_of(' ') + 1);
  out << (colour ? "\033[4m" : "") << line << (colour ? "\033[0m" : "") << '\n';
  for (size_t r = 0; r < rows.size(); ++r) {
    line.clear();
    bool first = true;
    for (size_t i = 0; i < l.header.size(); ++i) {
      if (!shown(i)) continue;
      line += (first ? "" : "  ") + pad(l.text[r][i], l.width[i], is_number(rows[r][i]));
      first = false;
    }
    // Trailing blanks of the last column are noise in logs and diffs.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

}  // namespace

void Table::print_terminal(std::ostream& out, size_t max_width) const {
  if (std::any_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.for_scripts_only; })) {
    Table shown(title_, {});
    shown.notes_ = notes_;
    std::vector<size_t> keep;
    for (size_t i = 0; i < columns_.size(); ++i)
      if (!columns_[i].for_scripts_only) keep.push_back(i), shown.columns_.push_back(columns_[i]);
    for (const auto& row : rows_) {
      std::vector<Cell> cells;
      for (size_t i : keep) cells.push_back(row[i]);
      shown.rows_.push_back(std::move(cells));
    }
    shown.print_terminal(out, max_width);
    return;
  }
  const bool colour = use_colour(STDOUT_FILENO);
  TerminalLayout layout = lay_out(columns_, rows_);
  fit_to_width(layout, columns_, rows_, max_width);
  if (rows_.empty() && !notes_.empty()) {
    // Nothing to tabulate (a skipped analysis): the title and why, no header row.
    const std::string head = title_.substr(0, title_.find(" ("));
    std::string line = terminal_safe(head);
    for (size_t i = 0; i < notes_.size(); ++i) {
      std::string_view note = notes_[i];
      if (note.starts_with(head + ": ")) note.remove_prefix(head.size() + 2);
      line += (i ? "; " : ": ") + terminal_safe(std::string(note));
    }
    out << wrap(line, max_width) << '\n';
    return;
  }
  if (!title_.empty())
    out << (colour ? "\033[1m" : "") << wrap(terminal_safe(title_), max_width) << (colour ? "\033[0m" : "") << '\n';
  if (layout.blocks) print_row_blocks(out, layout, columns_, max_width, colour);
  else print_aligned(out, layout, rows_, colour);
  std::vector<std::string> notes = notes_;
  if (!layout.blocks && !layout.hidden.empty()) {
    std::sort(layout.hidden.begin(), layout.hidden.end());
    std::string names;
    for (size_t i : layout.hidden) names += (names.empty() ? "" : ", ") + layout.header[i];
    notes.push_back(fmt::format("not shown at {} columns: {} (a wider terminal or --format csv shows them)",
                                max_width, names));
  }
  for (auto& n : notes)
    out << (colour ? "\033[2m" : "") << wrap(terminal_safe(n), max_width) << (colour ? "\033[0m" : "") << '\n';
}

nlohmann::json tables_json(std::string_view command, const std::vector<Table>& tables) {
  nlohmann::json list = nlohmann::json::array();
  for (const Table& t : tables) list.push_back(t.json());
  return json_envelope(command, {{"tables", std::move(list)}});
}

void print_tables(std::ostream& out, std::string_view command, const std::vector<Table>& tables, OutputFormat format,
                  size_t width) {
  if (format == OutputFormat::kJson) {
    out << json_text(tables_json(command, tables)) << "\n";
    return;
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) out << '\n';
    if (format == OutputFormat::kCsv) {
      // One line: a title with a line break would end the block early.
      std::string title = tables[i].title();
      std::replace(title.begin(), title.end(), '\n', ' ');
      out << "# " << tables[i].id() << ": " << title << '\n';
    }
    tables[i].print(out, format, width);
  }
}

bool use_colour(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && no_colour[0] != '\0') return false;
  return isatty(fd) != 0;
}

}  // namespace scalescope::report
