#pragma once
// The SQLite connection and statements of every part that reads or writes an
// SQLite file (Nsight Systems exports, the SQLite export, sweep databases).
// Each words SQLite's failures in its own terms: its SqliteWording turns a
// failure into the one-line message of the Error thrown.
//
//   SqliteDatabase db(path, SQLITE_OPEN_READONLY, path.string(), &word_my_error);
//   SqliteStatement st = db.prepare("SELECT id, value FROM t WHERE id > ?");
//   st.bind(1, 10);
//   while (st.step()) use(st.i64(0), st.text(1));  // text: valid until the next step

#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace scalescope::trace {

enum class SqliteAction { kOpen, kPrepare, kBind, kStep, kExec, kClose };  // what failed

struct SqliteFailure {
  const std::string& file;  // as its user names it
  sqlite3* db;              // null when opening failed without a connection
  int rc;
  SqliteAction action;
  std::string_view sql;  // empty when opening or closing
  const char* message() const { return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc); }
};
using SqliteWording = std::string (*)(const SqliteFailure&);

class SqliteStatement;

class SqliteDatabase {
 public:
  // Takes `db` (closed with this); `file` names it in messages.
  SqliteDatabase(sqlite3* db, std::string file, SqliteWording word) : db_(db), file_(std::move(file)), word_(word) {}
  // sqlite3_open_v2(path, flags).
  SqliteDatabase(const std::filesystem::path& path, int flags, std::string file, SqliteWording word);
  SqliteDatabase(SqliteDatabase&& o) noexcept
      : db_(std::exchange(o.db_, nullptr)), file_(std::move(o.file_)), word_(o.word_) {}
  ~SqliteDatabase() { sqlite3_close(db_); }

  SqliteStatement prepare(const std::string& sql);
  void exec(const char* sql);
  void close();  // reports a failure, as the destructor cannot; statements first
  sqlite3* handle() const { return db_; }
  const std::string& file() const { return file_; }

 private:
  friend class SqliteStatement;
  [[noreturn]] void fail(int rc, SqliteAction action, const char* sql = nullptr) const;
  sqlite3* db_;
  std::string file_;
  SqliteWording word_;
};

// Must not outlive its database.
class SqliteStatement {
 public:
  SqliteStatement(sqlite3_stmt* s, const SqliteDatabase* db) : s_(s), db_(db) {}  // takes `s`
  SqliteStatement(SqliteStatement&& o) noexcept : s_(std::exchange(o.s_, nullptr)), db_(o.db_) {}
  ~SqliteStatement() { sqlite3_finalize(s_); }

  // Parameters count from 1; a std::optional holding nothing binds NULL.
  template <std::integral T>
  SqliteStatement& bind(int i, T v) {
    return check(sqlite3_bind_int64(s_, i, static_cast<int64_t>(v)));
  }
  SqliteStatement& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  SqliteStatement& bind(int i, std::string_view v) {
    return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  SqliteStatement& bind_null(int i) { return check(sqlite3_bind_null(s_, i)); }
  template <typename T>
  SqliteStatement& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }
  // Parameters 1, 2 ... in order.
  template <typename... T>
  void bind_all(const T&... v) {
    int i = 1;
    (bind(i++, v), ...);
  }

  bool step() {  // a row: true; done: false
    const int rc = sqlite3_step(s_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) db_->fail(rc, SqliteAction::kStep, sqlite3_sql(s_));
    return rc == SQLITE_ROW;
  }
  void reset() { sqlite3_reset(s_); }  // bindings kept
  void run() {
    step();
    reset();
  }  // an INSERT or UPDATE, kept for the next row

  // Columns count from 0.
  int type(int c) const { return sqlite3_column_type(s_, c); }
  bool is_null(int c) const { return type(c) == SQLITE_NULL; }
  sqlite3_value* value(int c) const { return sqlite3_column_value(s_, c); }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  std::string_view text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string_view{};
  }
  std::span<const uint8_t> blob(int c) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s_, c));
    return p ? std::span<const uint8_t>(p, static_cast<size_t>(sqlite3_column_bytes(s_, c)))
             : std::span<const uint8_t>{};
  }

 private:
  SqliteStatement& check(int rc) {
    if (rc != SQLITE_OK) db_->fail(rc, SqliteAction::kBind, sqlite3_sql(s_));
    return *this;
  }
  sqlite3_stmt* s_;
  const SqliteDatabase* db_;
};

}  // namespace scalescope::trace
