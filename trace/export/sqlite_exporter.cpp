// SQLite export: one database, the tables of docs/export-sqlite.md. Enums are
// stored as text (readable SQL); names go through one global strings table.

#include <sqlite3.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text_output.hpp"
#include "trace/export/exporters.hpp"
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

class Db {
 public:
  Db(const std::filesystem::path& path, const std::filesystem::path& shown) : shown_(shown) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      fail("{}: cannot create SQLite database: {}", shown_.string(), msg);
    }
  }
  ~Db() {
    for (auto* s : statements_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      fail("{}: SQLite error: {}", shown_.string(), msg);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      fail("{}: SQLite error: {}", shown_.string(), sqlite3_errmsg(db_));
    statements_.push_back(s);
    return s;
  }
  void step(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail("{}: SQLite error: {}", shown_.string(), sqlite3_errmsg(db_));
    sqlite3_reset(s);
  }
  void close() {
    for (auto* s : statements_) sqlite3_finalize(s);
    statements_.clear();
    if (sqlite3_close(db_) != SQLITE_OK) fail("{}: SQLite error on close: {}", shown_.string(), sqlite3_errmsg(db_));
    db_ = nullptr;
  }

 private:
  std::filesystem::path shown_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

// Binds a row's values in order: integers, text, doubles.
struct Binder {
  sqlite3_stmt* s;
  int i = 1;
  Binder& operator()(int64_t v) {
    sqlite3_bind_int64(s, i++, v);
    return *this;
  }
  Binder& operator()(std::string_view v) {
    sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Binder& operator()(double v) {
    if (std::isfinite(v)) sqlite3_bind_double(s, i++, v);
    else sqlite3_bind_null(s, i++);
    return *this;
  }
};

int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }

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
void insert_rows(Db& db, sqlite3_stmt* insert, const Table& t, const StringTable& strings, int64_t process,
                 StringIdOf&& sid) {
  for (size_t i = 0; i < t.size(); ++i) {
    Binder b{insert};
    b(process);
    for_each_column_of<Table>([&](const auto& c) {
      if (c.file_only) return;
      const auto v = (t.*c.values)[i];
      using V = std::remove_const_t<decltype(v)>;
      if constexpr (std::is_enum_v<V>) {
        b(to_string(v));
      } else if constexpr (std::is_floating_point_v<V>) {
        b(static_cast<double>(v));
      } else if (c.kind == ColumnKind::kString) {
        if (c.sqlite_text) b(strings.view(static_cast<StringId>(v)));
        else b(sid(static_cast<StringId>(v)));
      } else {
        b(static_cast<int64_t>(v));
      }
    });
    db.step(insert);
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
    Db db(tmp, out);
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
    auto* proc = db.prepare("INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?)");
    auto* dev = db.prepare("INSERT INTO devices VALUES (?,?,?,?,?,?,?,?,?,?)");
    auto* str = db.prepare("INSERT INTO strings VALUES (?,?)");
    auto* prb = db.prepare("INSERT INTO problems VALUES (?,?,?,?)");
    std::vector<sqlite3_stmt*> tables;
    for (const std::string& insert : inserts) tables.push_back(db.prepare(insert.c_str()));
    // One global string table: each trace's ids map to global ids on first use.
    std::unordered_map<std::string, int64_t> global;
    auto intern = [&](std::string_view text) {
      auto [it, inserted] = global.try_emplace(std::string(text), static_cast<int64_t>(global.size()));
      if (inserted) {
        Binder{str}(it->second)(text);
        db.step(str);
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
      Binder{proc}(pid)(int64_t{m.rank})(int64_t{m.local_rank})(int64_t{m.world_size})(std::string_view(m.hostname))(
          int64_t{m.pid})(std::string_view(m.source))(std::string_view(m.producer_version))(
          std::string_view(m.launcher))(std::string_view(m.command_line));
      db.step(proc);
      for (const DeviceInfo& d : m.devices) {
        Binder{dev}(pid)(int64_t{d.id})(std::string_view(d.name))(std::string_view(d.uuid))(
            std::string_view(d.pci_bus_id))(int64_t{d.numa_node})(int64_t{d.sm_count})(i64(d.memory_bytes))(
            int64_t{d.compute_major})(int64_t{d.compute_minor});
        db.step(dev);
      }
      size_t at = 0;
      for_each_trace_table(t, [&](const auto& table) { insert_rows(db, tables[at++], table, t.strings, pid, sid); });
      for (int p2 = 0; p2 < kProblemCount; ++p2) {
        uint64_t n = t.problems.counts[p2];
        if (!n) continue;
        Severity sev = severity_of(static_cast<Problem>(p2));
        Binder{prb}(pid)(to_string(static_cast<Problem>(p2)))(severity_name(sev))(i64(n));
        db.step(prb);
      }
    }
    db.exec("COMMIT");
    db.close();
  }
  detail::commit_output(tmp, out);
  cleanup.keep = true;
}

}  // namespace scalescope::trace
