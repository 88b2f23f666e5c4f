#include "trace/input_detector.hpp"
#include "trace/trace_file.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "trace/error.hpp"
#include "trace/sqlite_input.hpp"
#include "trace/trace_format.hpp"

namespace scalescope::trace {
namespace fs = std::filesystem;
namespace {

// Enough for every magic below and for a CSV header line.
constexpr size_t kHeadBytes = 4096;

std::string_view file_type_noun(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// stat() that turns every way a path can fail to be an input into one line.
struct stat stat_input(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      struct stat lst {};
      if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
        fail("{}: a symbolic link to a missing file", path.string());
      fail("{}: no such file or directory", path.string());
    }
    if (err == ELOOP) fail("{}: too many levels of symbolic links (a symlink loop)", path.string());
    fail("{}: cannot read ({})", path.string(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    fail("{}: {}, not a file scalescope can read", path.string(), file_type_noun(st.st_mode));
  return st;
}

std::string read_head(const fs::path& path) {
  // O_NONBLOCK: the file was a regular file when stat() looked; if it was
  // swapped for a FIFO since, the open does not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open ({})", path.string(), std::strerror(errno));
  std::string head(kHeadBytes, '\0');
  size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::read(fd, head.data() + got, head.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("{}: cannot read ({})", path.string(), std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  head.resize(got);
  return head;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), s.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// `mlperf ingest` writes a header naming these columns.
bool looks_like_mlperf_csv(std::string_view head) {
  const std::string_view line = head.substr(0, head.find_first_of("\r\n"));
  auto has = [&](std::string_view col) {
    size_t p = 0;
    while (p <= line.size()) {
      size_t e = line.find(',', p);
      if (e == std::string_view::npos) e = line.size();
      std::string_view cell = line.substr(p, e - p);
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = cell.substr(1, cell.size() - 2);
      if (cell == col) return true;
      p = e + 1;
    }
    return false;
  };
  return has("submitter") && has("system") && has("benchmark");
}

// The table names of an SQLite file, opened read-only (never written, no
// journal created). Empty with *damaged set when SQLite cannot read it.
// Immutable (trace/sqlite_input.hpp): a WAL-mode file reads, and no -wal or
// -shm file appears beside it; one with a hot journal is read rolled back.
std::set<std::string> sqlite_tables(const fs::path& path, bool* damaged) {
  std::set<std::string> tables;
  *damaged = true;
  std::string open_error;
  std::optional<RolledBackCopy> rolled_back;  // a hot journal beside it: read the rolled-back database
  try {
    if (has_hot_journal(path)) rolled_back.emplace(path);
  } catch (const Error&) {
    return tables;
  }
  sqlite3* db = open_sqlite_input(rolled_back ? rolled_back->path() : path, &open_error);
  if (db) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st, nullptr) == SQLITE_OK) {
      int rc;
      while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (const auto* name = sqlite3_column_text(st, 0)) tables.emplace(reinterpret_cast<const char*>(name));
      *damaged = rc != SQLITE_DONE;
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return tables;
}

DetectedInput classify_sqlite(const fs::path& path) {
  bool damaged = false;
  const std::set<std::string> tables = sqlite_tables(path, &damaged);
  if (damaged) return {InputKind::kSqliteDatabase, "a damaged or unreadable SQLite database", {}};
  auto has = [&](const char* t) { return tables.count(t) != 0; };
  if (has("sweeps") && has("runs")) return {InputKind::kSweepDatabase, "a scalescope sweep database", {}};
  const bool nsys_tables = has("TARGET_INFO_SESSION_START_TIME") || has("EXPORT_META_DATA") || has("ThreadNames") ||
                           has("NVTX_EVENTS") || std::any_of(tables.begin(), tables.end(), [](const std::string& t) {
                             return starts_with(t, "CUPTI_ACTIVITY_KIND_");
                           });
  if (has("StringIds") && nsys_tables) return {InputKind::kNsysSqlite, "an Nsight Systems SQLite export", {}};
  return {InputKind::kSqliteDatabase,
          "an SQLite database that is neither an Nsight Systems export nor a sweep database",
          {}};
}

DetectedInput classify_file(const fs::path& path, const struct stat& st) {
  const std::string name = path.filename().string();
  if (st.st_size == 0) return {InputKind::kOther, "an empty file", {}};
  const std::string head = read_head(path);
  const std::string_view h = head;
  if (h.size() >= sizeof format::kMagic && std::memcmp(h.data(), format::kMagic, sizeof format::kMagic) == 0)
    return {InputKind::kTraceFile, "a scalescope trace", {}};
  if (starts_with(h, kSqliteMagic)) return classify_sqlite(path);
  if (h.size() >= 2 && static_cast<unsigned char>(h[0]) == 0x1f && static_cast<unsigned char>(h[1]) == 0x8b)
    return {InputKind::kKinetoJson, "a gzip-compressed JSON trace", {}};  // the importer checks the content
  const size_t first = h.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (h[first] == '{' || h[first] == '['))
    return {InputKind::kKinetoJson, "a JSON trace", {}};
  if (ends_with_ci(name, ".nsys-rep") || ends_with_ci(name, ".qdrep"))
    return {InputKind::kNsysReport, "an Nsight Systems report", {}};
  if (looks_like_mlperf_csv(h))
    return {InputKind::kMlperfRunsCsv, "an MLPerf runs CSV (from scalescope mlperf ingest)", {}};
  struct Magic {
    std::string_view bytes;
    const char* what;
  };
  static constexpr Magic kMagics[] = {
      {"\x89PNG\r\n\x1a\n", "a PNG image"},
      {"\xff\xd8\xff", "a JPEG image"},
      {"%PDF-", "a PDF document"},
      {"PK\x03\x04", "a ZIP archive"},
      {"\x7f"
       "ELF",
       "an executable (ELF)"},
      {"\x28\xb5\x2f\xfd", "a zstd-compressed file"},
      {"\xfd"
       "7zXZ",
       "an xz-compressed file"},
      {"BZh", "a bzip2-compressed file"},
  };
  for (const auto& m : kMagics)
    if (starts_with(h, m.bytes)) return {InputKind::kOther, m.what, {}};
  if (first != std::string_view::npos && h[first] == '<') return {InputKind::kOther, "an HTML or XML document", {}};
  return {InputKind::kOther, "a file of unrecognised content", {}};
}

DetectedInput classify_directory(const fs::path& path) {
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) fail("{}: cannot list the directory ({})", path.string(), ec.message());
  std::vector<fs::path> traces, kineto, nsys;
  bool profile_run = false;  // run.json or a run manifest: written by `scalescope profile`
  for (const auto& entry : it) {
    // Members are classified by content too, but a listing never follows a
    // member that is not a regular file (a FIFO among the traces is skipped).
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    // Hidden files and writers' temporaries (x.sstrace.tmp) are never members.
    if (name.empty() || name[0] == '.' || ends_with_ci(name, ".tmp") || name.find(".tmp-") != std::string::npos)
      continue;
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0 || st.st_size == 0) continue;
    // run.json and other small JSON files of a run directory are not Kineto
    // traces: within a directory only *.json / *.json.gz names are candidates.
    const bool json_name =
        ends_with_ci(name, ".json") || ends_with_ci(name, ".json.gz") || ends_with_ci(name, ".json.gzip");
    if (name == "run.json" || (name.starts_with(kManifestPrefix) && ends_with_ci(name, ".json"))) profile_run = true;
    // A member named .sstrace claims to be a rank's trace: if it is not one,
    // that rank would be missing without a word, so it is an error.
    const bool trace_name = ends_with_ci(name, ".sstrace");
    DetectedInput member;
    try {
      member = classify_file(entry.path(), st);
    } catch (const Error&) {
      if (trace_name) throw;
      continue;  // other unreadable members are not traces
    }
    if (trace_name && member.kind != InputKind::kTraceFile)
      fail("{}: not a scalescope trace ({}), in the run directory {}", entry.path().string(), member.what,
           path.string());
    // As load_run lists them: a run directory's traces carry the extension.
    if (member.kind == InputKind::kTraceFile && trace_name) traces.push_back(entry.path());
    else if (member.kind == InputKind::kKinetoJson && json_name && name != "run.json") kineto.push_back(entry.path());
    else if (member.kind == InputKind::kNsysSqlite) nsys.push_back(entry.path());
  }
  if (ec) fail("{}: cannot list the directory ({})", path.string(), ec.message());
  for (auto* v : {&traces, &kineto, &nsys}) std::sort(v->begin(), v->end());
  if (!traces.empty()) return {InputKind::kRunDirectory, "a run directory", std::move(traces)};
  // A profile run without a rank trace: its JSON files are the run's own
  // records (run.json, manifests, process summaries), not Kineto traces.
  if (profile_run)
    return {InputKind::kOther,
            "a profile run that recorded no GPU activity (no rank trace: the collector saw no CUDA work in the job)",
            {}};
  if (!kineto.empty())
    return {InputKind::kKinetoDirectory, "a directory of PyTorch-profiler JSON traces", std::move(kineto)};
  if (!nsys.empty())
    return {InputKind::kNsysDirectory, "a directory of Nsight Systems SQLite exports", std::move(nsys)};
  return {InputKind::kOther, "a directory without traces", {}};
}

}  // namespace

DetectedInput detect_input(const fs::path& path) {
  const struct stat st = stat_input(path);
  if (S_ISDIR(st.st_mode)) return classify_directory(path);
  return classify_file(path, st);
}

bool is_trace_input(InputKind kind) {
  switch (kind) {
    case InputKind::kTraceFile:
    case InputKind::kRunDirectory:
    case InputKind::kKinetoJson:
    case InputKind::kKinetoDirectory:
    case InputKind::kNsysSqlite:
    case InputKind::kNsysDirectory: return true;
    default: return false;
  }
}

std::string_view to_string(InputKind kind) {
  switch (kind) {
    case InputKind::kTraceFile: return "trace-file";
    case InputKind::kRunDirectory: return "run-directory";
    case InputKind::kKinetoJson: return "kineto-json";
    case InputKind::kKinetoDirectory: return "kineto-directory";
    case InputKind::kNsysSqlite: return "nsys-sqlite";
    case InputKind::kNsysDirectory: return "nsys-directory";
    case InputKind::kNsysReport: return "nsys-report";
    case InputKind::kSweepDatabase: return "sweep-database";
    case InputKind::kSqliteDatabase: return "sqlite-database";
    case InputKind::kMlperfRunsCsv: return "mlperf-runs-csv";
    case InputKind::kOther: return "other";
  }
  return "other";
}

std::string_view hint_for(InputKind kind) {
  switch (kind) {
    case InputKind::kSweepDatabase: return "use scalescope scaling (or scalescope report) for a sweep database";
    case InputKind::kMlperfRunsCsv: return "use scalescope mlperf scores or analyze for an MLPerf runs CSV";
    case InputKind::kNsysReport:
      return "export it first with `nsys export --type sqlite REPORT.nsys-rep`, then give scalescope the .sqlite file";
    default: return "";
  }
}

}  // namespace scalescope::trace
