#include "trace/import/sqlite_input.hpp"

#include <sqlite3.h>
#include <stdlib.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"

namespace scalescope::trace {

std::string immutable_sqlite_uri(const std::filesystem::path& path) {
  std::string uri = "file:";
  for (unsigned char c : std::filesystem::absolute(path).string()) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') uri += static_cast<char>(c);
    else uri += fmt::format("%{:02X}", c);
  }
  return uri + "?immutable=1";
}

uint64_t pending_wal_bytes(const std::filesystem::path& path) {
  constexpr uint64_t kWalHeader = 32;
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path.string() + "-wal", ec);
  return ec || bytes <= kWalHeader ? 0 : bytes - kWalHeader;
}

sqlite3* open_sqlite_input(const std::filesystem::path& path, std::string* error) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(immutable_sqlite_uri(path).c_str(), &db,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    *error = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return nullptr;
  }
  // Never mapped: a file cut while it is read would raise SIGBUS on the first
  // page past its new end. Read with pread, such a page reads as zeros, which
  // SQLite reports as a corrupt database: one error naming the file.
  sqlite3_exec(db, "PRAGMA mmap_size = 0", nullptr, nullptr, nullptr);
  return db;
}

bool has_hot_journal(const std::filesystem::path& path) {
  // A rollback journal's header starts with this magic once its writer has
  // synced it; a zeroed or empty journal is not hot (SQLite ignores it).
  static constexpr unsigned char kMagic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  std::ifstream in(path.string() + "-journal", std::ios::binary);
  char head[sizeof kMagic] = {};
  return in.read(head, sizeof head) && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

RolledBackCopy::RolledBackCopy(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / "scalescope-sqlite-XXXXXX").string();
  if (ec || !::mkdtemp(pattern.data()))
    fail("{}: cannot make a folder to roll back its hot journal in: {}", name, std::strerror(errno));
  dir_ = pattern;
  file_ = dir_ / "input.sqlite";
  std::filesystem::copy_file(path, file_, ec);
  if (!ec) std::filesystem::copy_file(name + "-journal", file_.string() + "-journal", ec);
  if (ec) {
    std::filesystem::remove_all(dir_, ec);
    fail("{}: cannot copy it and its hot journal to roll the journal back: {}", name, ec.message());
  }
  // The first read of a connection that may write rolls a hot journal back.
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(file_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  const std::string why = rc == SQLITE_OK ? "" : db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  sqlite3_close(db);
  if (rc != SQLITE_OK) {
    std::filesystem::remove_all(dir_, ec);
    fail("{}: cannot roll back its hot journal {}-journal: {}", name, name, why);
  }
}

RolledBackCopy::~RolledBackCopy() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace scalescope::trace
