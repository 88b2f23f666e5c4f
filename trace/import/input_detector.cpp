#include "trace/import/input_detector.hpp"
#include "trace/model/trace_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/text_input.hpp"
#include "trace/import/sqlite_input.hpp"
#include "trace/import/sqlite_statement.hpp"
#include "trace/model/trace_format.hpp"

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
  const ssize_t got = read_up_to(fd, head.data(), head.size());
  const int err = errno;
  ::close(fd);
  if (got < 0) fail("{}: cannot read ({})", path.string(), std::strerror(err));
  head.resize(static_cast<size_t>(got));
  return head;
}

// A member's content as its reader takes it: a gzip file inflated (a
// `gzip -k` copy beside its trace is the same trace), any other file as it is
// (zlib passes bytes that are not gzip through unchanged).
class ContentReader {
 public:
  explicit ContentReader(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail("{}: cannot open ({})", p.string(), std::strerror(errno));
    gz_ = gzdopen(fd, "rb");
    if (gz_ == nullptr) {
      ::close(fd);
      fail("{}: cannot read (out of memory)", p.string());
    }
  }
  ~ContentReader() { gzclose(gz_); }
  ContentReader(const ContentReader&) = delete;
  ContentReader& operator=(const ContentReader&) = delete;
  // Up to `size` bytes; nullopt where the gzip stream is corrupt (its
  // importer says so; as a copy it differs).
  std::optional<size_t> fill(char* buf, size_t size) {
    size_t got = 0;
    while (got < size) {
      const int n = gzread(gz_, buf + got, static_cast<unsigned>(std::min<size_t>(size - got, 1u << 30)));
      if (n < 0) return std::nullopt;
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    return got;
  }
  bool gzip() const { return gzdirect(gz_) == 0; }

 private:
  gzFile gz_;
};

// The size of a member's content, modulo 2^32: what a gzip trailer states
// (ISIZE), or the file's size. Members whose keys differ cannot be copies.
uint32_t content_size_key(const fs::path& p, uintmax_t file_size) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return static_cast<uint32_t>(file_size);
  unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
  const bool gz = file_size >= 18 && ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b &&
                  ::pread(fd, trailer, 4, static_cast<off_t>(file_size - 4)) == 4;
  ::close(fd);
  if (!gz) return static_cast<uint32_t>(file_size);
  return static_cast<uint32_t>(trailer[0]) | static_cast<uint32_t>(trailer[1]) << 8 |
         static_cast<uint32_t>(trailer[2]) << 16 | static_cast<uint32_t>(trailer[3]) << 24;
}

// Do two members hold the same content? Read side by side until they differ
// (never further than the shorter one: a gzip bomb beside a small file stops
// with it). `*inflated` says whether either was gzip.
bool same_content(const fs::path& a, const fs::path& b, bool* inflated) {
  ContentReader fa(a), fb(b);
  *inflated = fa.gzip() || fb.gzip();
  constexpr size_t kBlock = 1 << 20;
  std::unique_ptr<char[]> ba(new char[kBlock]), bb(new char[kBlock]);
  for (;;) {
    const std::optional<size_t> na = fa.fill(ba.get(), kBlock), nb = fb.fill(bb.get(), kBlock);
    if (!na || !nb || *na != *nb || std::memcmp(ba.get(), bb.get(), *na) != 0) return false;
    if (*na < kBlock) return true;
  }
}

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
// Immutable (trace/import/sqlite_input.hpp): a WAL-mode file reads, and no -wal or
// -shm file appears beside it; one with a hot journal is read rolled back.
std::set<std::string> sqlite_tables(const fs::path& path, bool* damaged) {
  std::set<std::string> tables;
  *damaged = true;
  try {
    std::optional<RolledBackCopy> rolled_back;  // a hot journal beside it: read the rolled-back database
    if (has_hot_journal(path)) rolled_back.emplace(path);
    std::string open_error;
    sqlite3* raw = open_sqlite_input(rolled_back ? rolled_back->path() : path, &open_error);
    if (!raw) return tables;
    // Why it fails is not shown: the file is classified as damaged.
    SqliteDatabase db(raw, path.string(), [](const SqliteFailure&) { return std::string(); });
    SqliteStatement st = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
    while (st.step())
      if (!st.is_null(0)) tables.emplace(st.text(0));
    *damaged = false;
  } catch (const Error&) {}
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
                             return t.starts_with("CUPTI_ACTIVITY_KIND_");
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
  if (h.starts_with(kSqliteMagic)) return classify_sqlite(path);
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
    if (h.starts_with(m.bytes)) return {InputKind::kOther, m.what, {}};
  if (first != std::string_view::npos && h[first] == '<') return {InputKind::kOther, "an HTML or XML document", {}};
  return {InputKind::kOther, "a file of unrecognised content", {}};
}

// Keys one of which a profiler's JSON trace (Kineto, Chrome trace format)
// writes near its start: Kineto begins with schemaVersion and
// deviceProperties, other writers with traceEvents itself.
bool has_trace_key(std::string_view head) {
  for (std::string_view key : {"\"traceEvents\"", "\"schemaVersion\"", "\"deviceProperties\"", "\"distributedInfo\""})
    if (head.find(key) != std::string_view::npos) return true;
  return false;
}

// The first bytes a gzip file decompresses to (what fits of kHeadBytes), or
// nullopt when they cannot tell what it holds: its start cannot be inflated,
// or it ends (truncated) before either the stream's end or kHeadBytes.
std::optional<std::string> gunzip_head(std::string_view compressed) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out(kHeadBytes, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_SYNC_FLUSH);
  const size_t got = out.size() - z.avail_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END && got < out.size()) return std::nullopt;
  out.resize(got);
  return out;
}

// Does a directory member that the detector calls a JSON trace look like one?
// False for JSON without any trace key in its head (a config file, a run's
// own run.json or manifest); true when the head cannot tell (a gzip stream
// corrupt or cut short): the importer then names what is wrong with the file.
bool looks_like_json_trace(const fs::path& file) {
  std::string head = read_head(file);
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) {
    std::optional<std::string> inflated = gunzip_head(head);
    if (!inflated) return true;
    head = std::move(*inflated);
  }
  return has_trace_key(head);
}

// "a.json, b.json and 3 more": the names of a listing, kept short.
std::string some_names(const std::vector<fs::path>& files) {
  constexpr size_t kShown = 3;
  std::string out;
  for (size_t i = 0; i < files.size() && i < kShown; ++i)
    out += (i ? ", " : "") + files[i].filename().string();
  if (files.size() > kShown) out += fmt::format(" and {} more", files.size() - kShown);
  return out;
}

// Two members with the same content are one trace copied (byte for byte, or
// one of them gzipped): read as two ranks they would count every kernel
// twice. Only members whose contents have equal sizes are read.
void refuse_copies(const fs::path& dir, const std::vector<fs::path>& files) {
  std::map<uint32_t, std::vector<const fs::path*>> by_size;
  std::error_code ec;
  for (const fs::path& f : files) {
    const uintmax_t size = fs::file_size(f, ec);
    if (!ec) by_size[content_size_key(f, size)].push_back(&f);
  }
  for (const auto& [size, group] : by_size)
    for (size_t i = 0; i < group.size(); ++i)
      for (size_t j = i + 1; j < group.size(); ++j) {
        bool inflated = false;
        if (same_content(*group[i], *group[j], &inflated))
          fail("{}: {} and {} are copies of one trace (the same bytes{}); a folder holds one trace per rank: {}",
               dir.string(), group[i]->filename().string(), group[j]->filename().string(),
               inflated ? " once inflated" : "", "remove one");
      }
}

DetectedInput classify_directory(const fs::path& path) {
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) fail("{}: cannot list the directory ({})", path.string(), ec.message());
  std::vector<fs::path> traces, kineto, nsys;
  std::vector<SkippedFile> not_traces;  // named like a trace (.json, .sqlite), holding something else
  bool profile_run = false;  // run.json or a run manifest: written by `scalescope profile`
  for (const auto& entry : it) {
    // Members are classified by content too, but a listing never follows a
    // member that is not a regular file (a FIFO among the traces is skipped).
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    // Hidden files and writers' temporaries (x.sstrace.tmp) are never members.
    if (name.empty() || name[0] == '.' || ends_with_ci(name, ".tmp") || name.find(".tmp-") != std::string::npos)
      continue;
    // run.json and other small JSON files of a run directory are not Kineto
    // traces: within a directory only *.json / *.json.gz names are candidates.
    const bool json_name =
        ends_with_ci(name, ".json") || ends_with_ci(name, ".json.gz") || ends_with_ci(name, ".json.gzip");
    const bool sqlite_name = ends_with_ci(name, ".sqlite") || ends_with_ci(name, ".sqlite3");
    if (name == "run.json" || (name.starts_with(kManifestPrefix) && ends_with_ci(name, ".json"))) profile_run = true;
    // A member named .sstrace claims to be a rank's trace: if it is not one,
    // that rank would be missing without a word, so it is an error.
    const bool trace_name = ends_with_ci(name, ".sstrace");
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0) continue;
    if (st.st_size == 0) {
      if (trace_name) fail("{}: an empty file, not a scalescope trace, in the run directory {}", entry.path().string(),
                           path.string());
      if (json_name || sqlite_name) not_traces.push_back({entry.path(), "an empty file"});
      continue;
    }
    DetectedInput member;
    try {
      member = classify_file(entry.path(), st);
    } catch (const Error&) {
      if (trace_name) throw;
      if (json_name || sqlite_name) not_traces.push_back({entry.path(), "unreadable"});
      continue;  // other unreadable members are not traces
    }
    if (trace_name && member.kind != InputKind::kTraceFile)
      fail("{}: not a scalescope trace ({}), in the run directory {}", entry.path().string(), member.what,
           path.string());
    // As load_run lists them: a run directory's traces carry the extension.
    if (member.kind == InputKind::kTraceFile && trace_name) {
      traces.push_back(entry.path());
    } else if (member.kind == InputKind::kKinetoJson && json_name && name != "run.json") {
      if (looks_like_json_trace(entry.path())) kineto.push_back(entry.path());
      else not_traces.push_back({entry.path(), "a JSON file that is not a profiler trace (no traceEvents)"});
    } else if (member.kind == InputKind::kNsysSqlite) {
      nsys.push_back(entry.path());
    } else if ((json_name && name != "run.json") || sqlite_name) {
      not_traces.push_back({entry.path(), member.what});
    }
  }
  if (ec) fail("{}: cannot list the directory ({})", path.string(), ec.message());
  for (auto* v : {&traces, &kineto, &nsys}) std::sort(v->begin(), v->end());
  std::sort(not_traces.begin(), not_traces.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return a.path < b.path; });
  // One folder is read as one run of one kind: reading one kind and leaving
  // the others out would drop ranks without a word.
  auto refuse_mix = [&](const char* a_what, const std::vector<fs::path>& a, const char* b_what,
                        const std::vector<fs::path>& b) {
    fail("{}: holds {} ({}) and {} ({}); a folder is read as one run of one kind: move one kind to its own folder",
         path.string(), a_what, some_names(a), b_what, some_names(b));
  };
  if (!traces.empty()) {
    if (!kineto.empty()) refuse_mix("scalescope traces", traces, "PyTorch-profiler traces", kineto);
    if (!nsys.empty()) refuse_mix("scalescope traces", traces, "Nsight Systems exports", nsys);
    refuse_copies(path, traces);
    // The JSON files of a run directory are its own (run.json, manifests,
    // per-process facts), not traces left out.
    return {InputKind::kRunDirectory, "a run directory", std::move(traces), {}};
  }
  // A profile run without a rank trace: its JSON files are the run's own
  // records (run.json, manifests, process summaries), not Kineto traces.
  if (profile_run && kineto.empty() && nsys.empty())
    return {InputKind::kOther,
            "a profile run that recorded no GPU activity (no rank trace: the collector saw no CUDA work in the job)",
            {},
            {}};
  if (!kineto.empty() && !nsys.empty())
    refuse_mix("PyTorch-profiler traces", kineto, "Nsight Systems exports", nsys);
  if (!kineto.empty()) {
    refuse_copies(path, kineto);
    return {InputKind::kKinetoDirectory, "a directory of PyTorch-profiler JSON traces", std::move(kineto),
            std::move(not_traces)};
  }
  if (!nsys.empty()) {
    refuse_copies(path, nsys);
    return {InputKind::kNsysDirectory, "a directory of Nsight Systems SQLite exports", std::move(nsys),
            std::move(not_traces)};
  }
  if (!not_traces.empty())
    return {InputKind::kOther, fmt::format("a directory without traces ({})", skipped_list(not_traces)), {}, {}};
  return {InputKind::kOther, "a directory without traces", {}, {}};
}

}  // namespace

std::string skipped_list(const std::vector<SkippedFile>& skipped) {
  constexpr size_t kShown = 5;
  std::string out;
  for (size_t i = 0; i < skipped.size() && i < kShown; ++i)
    out += fmt::format("{}{} ({})", i ? ", " : "", skipped[i].path.filename().string(), skipped[i].what);
  if (skipped.size() > kShown) out += fmt::format(" and {} more", skipped.size() - kShown);
  return out;
}

DetectedInput detect_input(const fs::path& path) {
  const struct stat st = stat_input(path);
  if (S_ISDIR(st.st_mode)) return classify_directory(path);
  return classify_file(path, st);
}

std::string_view to_string(InputKind kind) {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"trace-file", "run-directory", "kineto-json", "kineto-directory", "nsys-sqlite", "nsys-directory", "nsys-report",
       "sweep-database", "sqlite-database", "mlperf-runs-csv", "other"});
  return name_by_value<InputKind::kOther>(kNames, kind, "other");
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
