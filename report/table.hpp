#pragma once
// One table type for every reporting command, so that the terminal, CSV and
// JSON forms of a result always agree. Cells hold text or numbers; numbers keep
// full precision in CSV/JSON and are rounded only for the terminal.
//
//   report::Table t("GPU kernel summary", {"name", "calls", "total_ns"});
//   t.add_row({std::string("gemm"), int64_t{12}, 3.5e6});
//   t.print(std::cout, report::OutputFormat::kTable);

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/format_units.hpp"

namespace scalescope::report {

enum class OutputFormat { kTable, kCsv, kJson };

// Parses "table", "csv", "json"; nullopt otherwise.
std::optional<OutputFormat> parse_output_format(std::string_view text);

// Empty (monostate) cells print as "" / null; booleans as yes/no on the
// terminal, true/false in CSV and JSON.
using Cell = std::variant<std::monostate, std::string, int64_t, double, bool>;

struct Column {
  // explicit: a braced list of names means std::vector<std::string>, not Columns
  explicit Column(std::string column_name, int digits = 3) : name(std::move(column_name)), precision(digits) {}
  // A column of doubles shown on the terminal with at least `figures`
  // significant figures: the digits after the point are chosen at print time
  // from the column's smallest non-zero value (0.000612 -> "0.000612", not
  // "0.0006"). CSV and JSON keep full precision as always.
  static Column significant(std::string column_name, int figures) {
    Column c(std::move(column_name), 0);
    c.significant_figures = figures;
    return c;
  }
  // A column of sentences (evidence, a fix): never abbreviated; a table with
  // one that does not fit the terminal is printed as one block per row.
  static Column prose(std::string column_name) {
    Column c(std::move(column_name), 0);
    c.is_prose = true;
    return c;
  }
  // A column a narrow terminal may hide (CSV and JSON always have it): the
  // higher, the sooner. 0: always shown.
  Column&& detail(int level = 1) && {
    hide_level = level;
    return std::move(*this);
  }
  // A column for scripts only (CSV and JSON): the terminal leaves it out,
  // e.g. a kernel's full signature beside the short name it shows.
  Column&& scripts_only() && {
    for_scripts_only = true;
    return std::move(*this);
  }
  std::string name;
  int precision;                // digits after the point for doubles on the terminal
  int hide_level = 0;           // see detail()
  int significant_figures = 0;  // > 0: precision is chosen per column at print time (see significant())
  bool is_prose = false;
  bool for_scripts_only = false;  // see scripts_only()
};

// Columns from a compact list: name, digits after the point, and how soon a
// narrow terminal may hide the column (Column::detail; 0: never).
//   report::columns({{"rank", 0}, {"wall_ns", 0}, {"cv", 3, 2}})
struct ColumnSpec {
  const char* name;
  int digits;
  int detail = 0;
};
std::vector<Column> columns(std::initializer_list<ColumnSpec> spec);

// Table::print's width: the terminal's (see output_width), or a given one.
inline constexpr size_t kAutoWidth = static_cast<size_t>(-1);

class Table {
 public:
  Table(std::string title, std::vector<Column> columns);
  Table(std::string title, const std::vector<std::string>& column_names);
  // Table t("x", {"a", "b"}): literal names (an exact match, so no ambiguity).
  Table(std::string title, std::initializer_list<const char*> column_names);

  void add_row(std::vector<Cell> cells);  // must have one cell per column
  // A stable id for scripts ("gpu_kernel_summary"); by default the title up
  // to its first " (" or ":", in snake_case, so paths and counts stay out.
  void set_id(std::string id) { id_ = std::move(id); }
  std::string id() const;
  void add_note(std::string note);  // printed under the table (terminal), "notes" in JSON

  const std::string& title() const { return title_; }
  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }
  const std::vector<std::string>& notes() const { return notes_; }

  // Terminal: aligned columns, numbers right-aligned, colour on a tty unless
  // NO_COLOR is set, control characters escaped, fitted to `width` (long
  // names abbreviated in the middle, prose tables as blocks), columns named
  // *_ns shown as durations. CSV: RFC 4180 quoting, data exact. JSON: the
  // table's object alone (a command prints print_tables' envelope).
  void print(std::ostream& out, OutputFormat format, size_t width = kAutoWidth) const;
  // One table object {"id","title","columns","rows","notes"} (rows as objects keyed by column).
  nlohmann::json json() const;
  std::string to_json() const;  // json() as text

 private:
  void print_terminal(std::ostream& out, size_t width) const;

  std::string title_;
  std::string id_;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  std::vector<std::string> notes_;
};

// The tables of `command` in the JSON envelope (report/json_envelope.hpp):
// {"schema_version": N, "command": command, "tables": [...]}.
nlohmann::json tables_json(std::string_view command, const std::vector<Table>& tables);

// Prints the tables of `command`: one after another on the terminal; CSV
// blocks, each headed by a line "# <id>: <title>" and separated by one blank
// line (README, "Output for scripts", reads them with pandas); or
// tables_json as one line.
void print_tables(std::ostream& out, std::string_view command, const std::vector<Table>& tables, OutputFormat format,
                  size_t width = kAutoWidth);

// True when colour should be used on this stream (a tty and NO_COLOR unset).
bool use_colour(int fd);

// Human formats: 1.230 ms, 4.50 GiB, 12.0%, the ones of the advisor's
// findings too (base/format_units.hpp, the one place for them).
using trace::format_bytes;
using trace::format_duration_ns;
using trace::format_percent;

}  // namespace scalescope::report
