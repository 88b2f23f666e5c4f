#include "trace/import/sqlite_statement.hpp"

#include "base/error.hpp"

namespace scalescope::trace {

SqliteDatabase::SqliteDatabase(const std::filesystem::path& path, int flags, std::string file, SqliteWording word)
    : db_(nullptr), file_(std::move(file)), word_(word) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc == SQLITE_OK) return;
  const std::string message = word_(SqliteFailure{file_, db_, rc, SqliteAction::kOpen, {}});
  sqlite3_close(db_);  // the destructor does not run
  throw Error(message);
}

void SqliteDatabase::fail(int rc, SqliteAction action, const char* sql) const {
  throw Error(word_(SqliteFailure{file_, db_, rc, action, sql ? sql : ""}));
}

SqliteStatement SqliteDatabase::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) fail(rc, SqliteAction::kPrepare, sql.c_str());
  return SqliteStatement(s, this);
}

void SqliteDatabase::exec(const char* sql) {
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK)
    fail(rc, SqliteAction::kExec, sql);
}

void SqliteDatabase::close() {
  if (const int rc = sqlite3_close(db_); rc != SQLITE_OK) fail(rc, SqliteAction::kClose);
  db_ = nullptr;
}

}  // namespace scalescope::trace
