// SQLite export: one database, the tables of docs/export-sqlite.md. Enums are
// stored as text (readable SQL); names go through one global strings table.

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/text_output.hpp"
#include "trace/export/exporters.hpp"
#include "trace/import/sqlite_statement.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {
namespace {

// The tables of processes, devices, strings and problems; the trace tables'
// come from their column lists (table_schema).
constexpr const char* kSchema = R"SQL(
CREATE TABLE processes (id INTEGER PRIMARY KEY, rank INTEGER, local_rank INTEGER, world_size INTEGER,
  hostname TEXT, pid INTEGER, source TEXT, producer_version TEXT, launcher TEXT, command_line TEXT);
CREATE TABLE devices (process_id INTEGER, id INTEGER, name TEXT, uuid TEXT, pci_bus_id TEXT, numa_node INTEGER,
  sm_count INTEGER, memory_bytes INTEGER, compute_major INTEGER, compute_minor INTEGER);
CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE problems (process_id INTEGER, problem TEXT, severity TEXT, count INTEGER);
)SQL";

// The export's errors: SQLite's message, naming the file being written.
std::string word_write_error(const SqliteFailure& f) {
  if (f.action == SqliteAction::kOpen) return fmt::format("{}: cannot create SQLite database: {}", f.file, f.message());
  if (f.action == SqliteAction::kClose) return fmt::format("{}: SQLite error on close: {}", f.file, f.message());
  return fmt::format("{}: SQLite error: {}", f.file, f.message());
}

// A trace table's column in SQLite: strings are ids into `strings` (<name>_id)
// unless the column keeps its text.
template <typename C>
std::string sqlite_name(const C& c) {
  std::string name = exported_name(c.name, c.kind);
  if (c.kind == ColumnKind::kString && !c.sqlite_text) name += "_id";
  return name;
}

template <typename C>
const char* sqlite_type(const C& c) {
  if (c.kind == ColumnKind::kEnum || (c.kind == ColumnKind::kString && c.sqlite_text)) return "TEXT";
  if (c.kind == ColumnKind::kReal) return "REAL";
  return "INTEGER";
}

// CREATE TABLE and INSERT of one trace table: process_id, then its exported columns.
template <typename Table>
std::pair<std::string, std::string> table_schema() {
  std::string create = fmt::format("CREATE TABLE {} (process_id INTEGER", TableColumns<Table>::name);
  std::string insert = fmt::format("INSERT INTO {} VALUES (?", TableColumns<Table>::name);
  for_each_column_of<Table>([&](const auto& c) {
    if (c.file_only) return;
    create += fmt::format(", {} {}", sqlite_name(c), sqlite_type(c));
    insert += ",?";
  });
  return {create + ");", insert + ")"};
}

template <typename Table, typename StringIdOf>
void insert_rows(SqliteStatement& insert, const Table& t, const StringTable& strings, int64_t process,
                 StringIdOf&& sid) {
  for (size_t i = 0; i < t.size(); ++i) {
    int at = 1;
    auto b = [&](const auto& v) { insert.bind(at++, v); };
    b(process);
    for_each_column_of<Table>([&](const auto& c) {
      if (c.file_only) return;
      const auto v = (t.*c.values)[i];
      using V = std::remove_const_t<decltype(v)>;
      if constexpr (std::is_enum_v<V>) {
        b(to_string(v));
      } else if constexpr (std::is_floating_point_v<V>) {
        b(std::isfinite(v) ? std::optional<double>(v) : std::nullopt);  // not finite: NULL
      } else if (c.kind == ColumnKind::kString) {
        if (c.sqlite_text) b(strings.view(static_cast<StringId>(v)));
        else b(sid(static_cast<StringId>(v)));
      } else {
        b(static_cast<int64_t>(v));
      }
    });
    insert.run();
  }
}

}  // namespace

void export_sqlite(std::span<const Trace> traces, const std::filesystem::path& out) {
  const std::filesystem::path tmp = detail::temp_path_for(out);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  struct Cleanup {
    const std::filesystem::path& p;
    bool keep = false;
    ~Cleanup() {
      std::error_code e;
      if (!keep) std::filesystem::remove(p, e);
    }
  } cleanup{tmp};
  {
    SqliteDatabase db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, out.string(), &word_write_error);
    // A fresh file written once: no journal and no fsync until the end.
    db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
    db.exec(kSchema);
    std::vector<std::string> inserts;  // one per trace table, in export order
    for_each_table_type([&](auto table) {
      auto [create, insert] = table_schema<typename decltype(table)::type>();
      db.exec(create.c_str());
      inserts.push_back(std::move(insert));
    });
    db.exec("BEGIN");
    {  // the statements, finalized before the file is closed
      SqliteStatement proc = db.prepare("INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?)");
      SqliteStatement dev = db.prepare("INSERT INTO devices VALUES (?,?,?,?,?,?,?,?,?,?)");
      SqliteStatement str = db.prepare("INSERT INTO strings VALUES (?,?)");
      SqliteStatement prb = db.prepare("INSERT INTO problems VALUES (?,?,?,?)");
      std::vector<SqliteStatement> tables;
      for (const std::string& insert : inserts) tables.push_back(db.prepare(insert));
      // One global string table: each trace's ids map to global ids on first use.
      std::unordered_map<std::string, int64_t> global;
      auto intern = [&](std::string_view text) {
        auto [it, inserted] = global.try_emplace(std::string(text), static_cast<int64_t>(global.size()));
        if (inserted) {
          str.bind_all(it->second, text);
          str.run();
        }
        return it->second;
      };
      intern("");
      for (size_t p = 0; p < traces.size(); ++p) {
        const Trace& t = traces[p];
        const int64_t pid = static_cast<int64_t>(p);
        std::vector<int64_t> ids(t.strings.size(), -1);
        auto sid = [&](StringId id) {
          if (id >= ids.size()) return int64_t{0};
          if (ids[id] < 0) ids[id] = intern(t.strings.view(id));
          return ids[id];
        };
        const Metadata& m = t.meta;
        proc.bind_all(pid, m.rank, m.local_rank, m.world_size, m.hostname, m.pid, m.source, m.producer_version,
                      m.launcher, m.command_line);
        proc.run();
        for (const DeviceInfo& d : m.devices) {
          dev.bind_all(pid, d.id, d.name, d.uuid, d.pci_bus_id, d.numa_node, d.sm_count, d.memory_bytes,
                       d.compute_major, d.compute_minor);
          dev.run();
        }
        size_t at = 0;
        for_each_trace_table(t, [&](const auto& table) { insert_rows(tables[at++], table, t.strings, pid, sid); });
        for (int p2 = 0; p2 < kProblemCount; ++p2) {
          uint64_t n = t.problems.counts[p2];
          if (!n) continue;
          Severity sev = severity_of(static_cast<Problem>(p2));
          prb.bind_all(pid, to_string(static_cast<Problem>(p2)), severity_name(sev), n);
          prb.run();
        }
      }
    }
    db.exec("COMMIT");
    db.close();
  }
  detail::commit_output(tmp, out);
  cleanup.keep = true;
}

}  // namespace scalescope::trace
