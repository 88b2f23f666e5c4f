#pragma once
// How scalescope opens an SQLite file it only reads (an Nsight Systems
// export; any database the input detector classifies): read-only and
// immutable, so that no lock is taken and no journal, -wal or -shm file
// appears beside the input, and a WAL-mode file or one with a leftover (hot)
// journal reads. The file is never mapped (a file cut
// while read would raise SIGBUS): SQLite reads it page by page.
//
//   std::string why;
//   sqlite3* db = open_sqlite_input("report.sqlite", &why);  // nullptr: `why` says why
//
// (A file with a hot journal beside it is first rolled back in a private
// copy: RolledBackCopy.)

#include <cstdint>
#include <filesystem>
#include <string>

struct sqlite3;

namespace scalescope::trace {

// "file:<percent-encoded absolute path>?immutable=1".
std::string immutable_sqlite_uri(const std::filesystem::path& path);

// Bytes of the write-ahead log beside `path` (`path`-wal) beyond its 32-byte
// header, i.e. changes not yet in the file itself; 0 when there is none.
uint64_t pending_wal_bytes(const std::filesystem::path& path);

// A read-only, immutable connection with mmap off; nullptr and `error` set
// when SQLite refuses the file.
sqlite3* open_sqlite_input(const std::filesystem::path& path, std::string* error);

// A hot rollback journal beside `path` (`path`-journal with its header
// written): a writer stopped inside a transaction, so the file alone may hold
// part of it, and only rolling the journal back gives the database.
bool has_hot_journal(const std::filesystem::path& path);

// `path` with its hot journal rolled back, as SQLite does it, in a private
// copy of both files under the temporary folder: the input and its journal
// are never written. The copy is removed when this is destroyed (a killed
// process leaves it in the temporary folder). Throws Error naming `path`.
class RolledBackCopy {
 public:
  explicit RolledBackCopy(const std::filesystem::path& path);
  RolledBackCopy(const RolledBackCopy&) = delete;
  RolledBackCopy& operator=(const RolledBackCopy&) = delete;
  ~RolledBackCopy();
  const std::filesystem::path& path() const { return file_; }

 private:
  std::filesystem::path dir_, file_;
};

}  // namespace scalescope::trace
