#include "trace/import/nsys_importer.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text_output.hpp"
#include "trace/model/launcher.hpp"
#include "trace/model/nccl_kernel_name.hpp"
#include "trace/import/sqlite_input.hpp"
#include "trace/import/sqlite_statement.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {
namespace {

// ---- serialized global ids -------------------------------------------------

// nsys serializes ids as (hardware/VM id << 48) | (pid << 24) | tid (the
// export documentation's "Serialized process and thread identifiers":
// pid = (globalTid >> 24) & 0xFFFFFF, tid = globalTid & 0xFFFFFF). A process
// is keyed by everything above the tid, so equal pids on two hosts of one
// capture stay apart.
uint64_t process_key(int64_t global_id) { return static_cast<uint64_t>(global_id) >> 24; }
uint32_t pid_of_key(uint64_t key) { return static_cast<uint32_t>(key & 0xFFFFFF); }
uint32_t tid_of(int64_t global_id) { return static_cast<uint32_t>(static_cast<uint64_t>(global_id) & 0xFFFFFF); }

// ---- strings ----------------------------------------------------------------

bool all_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// "cudaMalloc_v3020" -> "cudaMalloc": nsys appends the CUDA version that
// introduced the entry point; the analyses and the Kineto importer use the
// plain names (cudaStreamSynchronize, cudaMemcpyAsync ...).
std::string_view strip_version_suffix(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v == 0 || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

// ---- SQLite -----------------------------------------------------------------

// A reader's errors: what went wrong in terms of the file, which may be
// hostile or cut short.
std::string word_read_error(const SqliteFailure& f) {
  if (f.rc == SQLITE_NOTADB)
    return fmt::format("{}: not an SQLite database (file is encrypted or not a database)", f.file);
  if (f.rc == SQLITE_CORRUPT)
    return fmt::format("{}: corrupt or truncated SQLite database ({}: {})", f.file, f.sql, f.message());
  if (f.rc == SQLITE_INTERRUPT)
    return fmt::format("{}: too much work reading the database ({}); a hostile or corrupt file", f.file, f.sql);
  return fmt::format("{}: cannot read the SQLite database ({}: {})", f.file, f.sql, f.message());
}

// An export's connection with its schema, read once: which tables and
// columns this version of nsys wrote.
class Database : public SqliteDatabase {
 public:
  Database(sqlite3* db, std::string name) : SqliteDatabase(db, std::move(name), &word_read_error) {}

  void load_schema() {
    SqliteStatement st = prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
    std::vector<std::string> names;
    while (st.step()) names.emplace_back(st.text(0));
    for (const auto& n : names) {
      // Table names come from the file: quote them for the pragma.
      std::string quoted = "\"";
      for (char c : n) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      quoted += '"';
      SqliteStatement info = prepare(fmt::format("PRAGMA table_info({})", quoted));
      std::unordered_set<std::string> cols;
      while (info.step()) cols.emplace(info.text(1));
      tables_.emplace(n, std::move(cols));
    }
  }
  // A second connection to the same file knows the schema the first read.
  void copy_schema(const Database& other) { tables_ = other.tables_; }
  bool has_table(std::string_view t) const { return tables_.count(std::string(t)) != 0; }
  bool has_column(std::string_view t, std::string_view c) const {
    auto it = tables_.find(std::string(t));
    return it != tables_.end() && it->second.count(std::string(c)) != 0;
  }
  // `"col"` when the table has the column, else NULL: selecting optional
  // columns of any schema version with one statement shape.
  std::string column_or_null(std::string_view t, std::string_view c) const {
    return has_column(t, c) ? fmt::format("\"{}\"", c) : std::string("NULL");
  }
  uint64_t count_rows(std::string_view t) {
    SqliteStatement st = prepare(fmt::format("SELECT count(*) FROM \"{}\"", t));
    return st.step() ? static_cast<uint64_t>(st.i64(0)) : 0;
  }

 private:
  std::unordered_map<std::string, std::unordered_set<std::string>> tables_;
};

constexpr char kSqliteMagic[] = "SQLite format 3";  // 16 bytes with its NUL

int abort_after_budget(void* budget) {
  auto* left = static_cast<int64_t*>(budget);
  return --*left < 0 ? 1 : 0;
}

void configure(sqlite3* db, const NsysImportOptions& options, int64_t* budget) {
  // A file is data, not code: no views or triggers of the file may call
  // functions that have side effects.
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, std::max(options.max_string_bytes, 1 << 16) * 4);
  if (options.max_sql_steps > 0) {
    *budget = options.max_sql_steps / 1000 + 1;
    sqlite3_progress_handler(db, 1000, &abort_after_budget, budget);
  }
}

// ---- the importer -------------------------------------------------------------

// Every table the report lists, in order. The mapped ones first.
struct KnownTable {
  const char* name;
  const char* mapped_to;
  const char* absent;  // what its absence means
};
constexpr KnownTable kKnownTables[] = {
    {"CUPTI_ACTIVITY_KIND_KERNEL", "kernels (+nccl for NCCL kernels)", "absent: the capture has no CUDA kernels"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "memcpys", "absent: the capture has no memory copies"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "memsets", "absent: the capture has no memory sets"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", "api (calls; backtrace rows counted only)",
     "absent: the capture has no CUDA API calls"},
    {"CUPTI_ACTIVITY_KIND_DRIVER", "api (driver calls)", "absent"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "syncs", "absent: the capture has no synchronization records"},
    {"NVTX_EVENTS", "nvtx (ranges, marks); domains and thread names resolved",
     "absent: the capture has no NVTX events"},
    {"StringIds", "names of kernels, calls, NVTX text", "absent: names unknown"},
    {"TARGET_INFO_GPU", "metadata: devices", "absent: devices unknown"},
    {"TARGET_INFO_SESSION_START_TIME", "metadata: clock anchor", "absent: no clock anchor"},
    {"PROCESSES", "metadata: process names", "absent"},
    {"ThreadNames", "metadata: thread names", "absent"},
    {"TARGET_INFO_SYSTEM_ENV", "metadata: hostname, launcher environment", "absent"},
    {"NVTX_PAYLOAD_SCHEMAS", "NVTX payload layouts (NCCL message sizes)", "absent"},
    {"NVTX_PAYLOAD_SCHEMA_ENTRIES", "NVTX payload fields (NCCL message sizes)", "absent"},
    {"ENUM_NSYS_EVENT_CLASS", "enum: API event classes", "absent: documented codes used"},
    {"ENUM_NSYS_EVENT_TYPE", "enum: NVTX event types", "absent: documented codes used"},
    {"ENUM_CUDA_MEMCPY_OPER", "enum: copy kinds", "absent: documented codes used"},
    {"ENUM_CUDA_MEM_KIND", "enum: memory kinds", "absent: documented codes used"},
    {"ENUM_CUPTI_SYNC_TYPE", "enum: synchronization kinds", "absent: documented codes used"},
    {"GPU_METRICS", "counted only (GPU metric samples)", "absent"},
    {"COMPOSITE_EVENTS", "counted only (CPU samples)", "absent"},
    {"SAMPLING_CALLCHAINS", "counted only (CPU sample stacks)", "absent"},
    {"SCHED_EVENTS", "counted only (thread scheduling)", "absent"},
    {"OSRT_API", "counted only (OS runtime calls)", "absent"},
    {"CUDA_CALLCHAINS", "counted only (CUDA API stacks)", "absent"},
    {"PROFILER_OVERHEAD", "counted only", "absent"},
    {"CUPTI_ACTIVITY_KIND_CUDA_EVENT", "counted only (event records)", "absent"},
};

// The per-table numeric codes: the export's ENUM_* table where present,
// else the codes NVIDIA documents for the 2.x schema (docs/nsys.md).
struct Enums {
  std::unordered_map<int64_t, MemcpyKind> copy_kind;
  std::unordered_map<int64_t, MemoryKind> mem_kind;
  std::unordered_map<int64_t, SyncKind> sync_kind;
  int64_t class_runtime = 0, class_driver = 1, class_backtrace = 67;
  std::unordered_set<int64_t> nvtx_range{59, 60, 70, 71}, nvtx_mark{34};
  int64_t nvtx_thread = 39, nvtx_domain_create = 75;
  std::unordered_set<int64_t> nvtx_domain_other{33, 76};  // category names, domain destroy

  MemcpyKind copy(int64_t v) const {
    auto it = copy_kind.find(v);
    return it == copy_kind.end() ? MemcpyKind::kUnknown : it->second;
  }
  MemoryKind memory(int64_t v) const {
    auto it = mem_kind.find(v);
    return it == mem_kind.end() ? MemoryKind::kUnknown : it->second;
  }
  SyncKind sync(int64_t v) const {
    auto it = sync_kind.find(v);
    return it == sync_kind.end() ? SyncKind::kUnknown : it->second;
  }
};

MemcpyKind copy_kind_of_symbol(std::string_view s) {
  // CUDA_MEMCPY_KIND_HTOD ... ; arrays live on the device, unified memory moves like the plain kinds.
  if (s.ends_with("_HTOD") || s.ends_with("_HTOA")) return MemcpyKind::kHtoD;
  if (s.ends_with("_DTOH") || s.ends_with("_ATOH")) return MemcpyKind::kDtoH;
  if (s.ends_with("_DTOD") || s.ends_with("_ATOA") || s.ends_with("_ATOD") || s.ends_with("_DTOA"))
    return MemcpyKind::kDtoD;
  if (s.ends_with("_PTOP")) return MemcpyKind::kPtoP;
  if (s.ends_with("_HTOH")) return MemcpyKind::kHtoH;
  return MemcpyKind::kUnknown;
}

MemoryKind memory_kind_of_symbol(std::string_view s) {
  if (s.ends_with("_PAGEABLE")) return MemoryKind::kPageable;
  if (s.ends_with("_PINNED")) return MemoryKind::kPinned;
  if (s.ends_with("_DEVICE") || s.ends_with("_DEVICE_STATIC")) return MemoryKind::kDevice;
  if (s.ends_with("_ARRAY")) return MemoryKind::kArray;
  if (s.ends_with("_MANAGED") || s.ends_with("_MANAGED_STATIC")) return MemoryKind::kManaged;
  return MemoryKind::kUnknown;
}

SyncKind sync_kind_of_symbol(std::string_view s) {
  if (s.ends_with("_EVENT_SYNCHRONIZE")) return SyncKind::kEventSynchronize;
  if (s.ends_with("_STREAM_WAIT_EVENT")) return SyncKind::kStreamWaitEvent;
  if (s.ends_with("_STREAM_SYNCHRONIZE")) return SyncKind::kStreamSynchronize;
  if (s.ends_with("_CONTEXT_SYNCHRONIZE")) return SyncKind::kDeviceSynchronize;
  return SyncKind::kUnknown;
}

std::optional<int32_t> parse_small_int(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "MPI Rank 3", "rank_3", "Rank-3", "rank:3" anywhere in a thread name -> 3.
std::optional<int32_t> rank_in_text(std::string_view text) {
  for (size_t i = 0; i + 4 <= text.size(); ++i) {
    if ((text[i] | 0x20) != 'r' || (text[i + 1] | 0x20) != 'a' || (text[i + 2] | 0x20) != 'n' ||
        (text[i + 3] | 0x20) != 'k')
      continue;
    if (i > 0 && std::isalpha(static_cast<unsigned char>(text[i - 1]))) continue;  // "frank"
    size_t j = i + 4;
    while (j < text.size() && (text[j] == ' ' || text[j] == '_' || text[j] == '-' || text[j] == ':' || text[j] == '#'))
      ++j;
    size_t k = j;
    while (k < text.size() && text[k] >= '0' && text[k] <= '9') ++k;
    if (k == j || (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k])))) continue;
    if (auto v = parse_small_int(text.substr(j, k - j))) return v;
  }
  return std::nullopt;
}

// What one process's rows become, before they are sorted into a Trace.
// An NCCL call as its NVTX range says (domain "NCCL", named "ncclAllReduce"
// ..., a payload with "Message size [bytes]").
struct NcclCall {
  uint32_t thread = 0;
  Timestamp start = 0, end = 0;
  NcclOp op = NcclOp::kUnknown;
  uint64_t bytes = 0;
  int64_t domain_id = 0;
  bool used = false;  // a kernel took its bytes
};

// What one process's rows become: its Trace, filled column by column as the
// rows are read. (Building record vectors first and the columns from them
// touched every row twice: a fifth of a 2 M-kernel import was page faults.)
struct ProcessBuild {
  uint64_t key = 0;
  Trace trace;
  // nsys StringIds id -> this trace's id, resolved once per distinct id:
  // a dense vector for the small ids exports use, a map beyond. The vector
  // grows with this process's lookups (name_slot), so that thousands
  // of processes with a row each do not each hold a slot per string id.
  std::vector<StringId> names;
  std::unordered_map<int64_t, StringId> far_names;
  uint64_t name_lookups = 0;
  std::vector<StringId> plain_names;  // this trace's API name id -> the id without nsys's _vNNNN suffix
  std::vector<std::pair<size_t, int64_t>> nvtx_domains;  // (nvtx row, domainId): named once the table is read
  std::vector<NcclCall> nccl_calls;                      // NVTX ranges with a decoded NCCL message size
  std::map<uint32_t, std::string> thread_names;
  std::vector<int32_t> nvtx_ranks;  // ranks named by NVTX thread names / ThreadNames
  std::string nvtx_rank_text;
  bool cuda = false;  // any CUDA activity or API row
};

constexpr StringId kUnresolved = ~StringId{0};
constexpr int64_t kDenseIds = int64_t{1} << 22;  // ids below: a vector slot (16 MB at most per process)

// One row's values, read by their SQLite type. nsys writes integers; NULL
// means "not recorded" (and is what an optional column the export lacks reads
// as). Anything else where an integer belongs (text, a blob, a real with a
// fraction, a number outside the field's range) is not guessed at: it reads
// as unknown (NULL, 0) and marks the row `misread` (Problem::kMalformedEvent).
class RowValues {
 public:
  explicit RowValues(const SqliteStatement& st) : st_(st) {}
  const SqliteStatement& statement() const { return st_; }
  std::optional<int64_t> integer(int c) {
    // One column lookup, then the value's own accessors (the column_* calls
    // look the column up each time).
    sqlite3_value* value = st_.value(c);
    switch (sqlite3_value_type(value)) {
      case SQLITE_INTEGER: return sqlite3_value_int64(value);
      case SQLITE_NULL: return std::nullopt;
      case SQLITE_FLOAT: {  // lossless only: 1.0 is 1, 1.5 is not an id or a time
        const double d = sqlite3_value_double(value);
        if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return static_cast<int64_t>(d);
        break;
      }
      default: break;
    }
    misread = true;
    return std::nullopt;
  }
  int64_t i64(int c) { return integer(c).value_or(0); }
  uint32_t u32(int c) { return in_range<uint32_t>(c); }
  int32_t i32(int c) { return in_range<int32_t>(c); }
  uint64_t u64(int c) { return in_range<uint64_t>(c); }

  bool misread = false;
  // The process the row belongs to, once the row reader knows it: the one its
  // problems are counted in.
  ProcessBuild* process = nullptr;

 private:
  template <typename T>
  T in_range(int c) {
    const std::optional<int64_t> v = integer(c);
    if (!v) return 0;
    if (!std::in_range<T>(*v)) {
      misread = true;
      return 0;
    }
    return static_cast<T>(*v);
  }
  const SqliteStatement& st_;
};

// What became of a row, for the import report's kept and dropped counts.
enum class RowFate {
  kKept,        // an event, or metadata of the trace
  kCounted,     // counted only (backtrace rows, other classes, other NVTX types)
  kLeftOut,     // left out for a reason the row reader counted (an NVTX range never closed)
  kUnreadable,  // left out: a required value missing or unreadable (Problem::kIncompleteRecord)
};

// Timestamps are columns 0 and 1 of every activity query.
enum : int { kStartCol = 0, kEndCol = 1 };
// The GPU activity tables (kernels, copies, sets, synchronizations) go on
// with globalPid, deviceId, streamId and correlationId; their own columns follow.
enum : int { kGpuPidCol = 2, kGpuDeviceCol, kGpuStreamCol, kGpuCorrCol, kGpuOwnCol };

class ApiByCorrelation;
struct ApiReader;

class Importer {
 public:
  Importer(Database& db, std::string_view file_name, const NsysImportOptions& options, NsysImportReport& report)
      : db_(db), file_name_(file_name), options_(options), report_(report) {}
  // The file, for a second connection (empty: none).
  void set_file(std::filesystem::path path) { file_ = std::move(path); }

  std::vector<Trace> run();

 private:
  friend struct ApiReader;
  ProcessBuild& process(int64_t global_id) { return process_of_key(process_key(global_id)); }
  ProcessBuild& process_of_key(uint64_t key) {
    if (last_ && last_->key == key) return *last_;
    auto& slot = processes_[key];
    if (!slot) {
      slot = std::make_unique<ProcessBuild>();
      slot->key = key;
    }
    last_ = slot.get();
    return *slot;
  }
  // A string read from the file: length-limited and valid UTF-8.
  std::string_view clean(std::string_view s, std::string& scratch) {
    if (s.size() > static_cast<size_t>(options_.max_string_bytes)) {
      ++report_.malformed;
      s = s.substr(0, static_cast<size_t>(options_.max_string_bytes));
      while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.remove_suffix(1);
      if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.remove_suffix(1);
    }
    if (all_ascii(s)) return s;
    scratch.clear();
    detail::append_valid_utf8(scratch, s);
    // Each invalid byte becomes U+FFFD's three: a repaired string is longer.
    if (scratch.size() != s.size()) {
      ++report_.invalid_utf8;
      return scratch;
    }
    return s;
  }
  // The text of nsys string id `id`; nullopt when the export has none.
  const std::string* string_value(int64_t id);
  // A name column's value in this process's string table: an id into
  // StringIds (INTEGER) or the text itself (TEXT). An id StringIds does not
  // hold is counted once per process and id; a value of another type marks
  // the row misread.
  StringId name_of(ProcessBuild& p, RowValues& v, int col);
  // This process's id for nsys string id `id`; kUnresolved until looked up.
  static StringId& name_slot(ProcessBuild& p, int64_t id);
  // An API call's name without nsys's version suffix.
  StringId plain_name(ProcessBuild& p, StringId raw);
  StringId intern(ProcessBuild& p, std::string_view text) {
    std::string scratch;
    return p.trace.strings.intern(clean(text, scratch));
  }
  // The one loop over a table: selects `columns` (NULL where the export lacks
  // one, so column indices are fixed), calls `row(values, bound)` per row,
  // which returns what became of it, and records the rows, kept and dropped
  // for the report; a table without a `required` column says so (its rows
  // read their required values as NULL, so each is left out and counted).
  // `bound` is an upper bound on the table's rows, for reserving the columns
  // of the first process that has a row (push_row).
  template <typename Row>
  void scan(const char* table, std::initializer_list<const char*> required, std::initializer_list<const char*> columns,
            Row&& row);
  uint64_t row_bound(const char* table);
  // The span of an activity row (columns 0, 1) into `r`; false when either
  // is missing or not an integer (the row is then left out: RowFate::kUnreadable).
  template <typename Record>
  static bool span(Record& r, RowValues& v, ProcessBuild& p);
  // A GPU activity row's span, device, stream and correlation into `r`, its
  // process marked as having CUDA activity; false as span().
  template <typename Record>
  static bool gpu_row(Record& r, RowValues& v, ProcessBuild& p);
  // The process of a row from its serialized pid or tid column (NULL or
  // unreadable: process key 0); its problems are counted there.
  ProcessBuild& process_of_row(RowValues& v, int col) {
    ProcessBuild& p = process(v.i64(col));
    v.process = &p;
    return p;
  }

  void read_enums();
  void read_versions();
  void read_payload_schemas();
  std::optional<uint64_t> message_size(std::span<const uint8_t> blob, int64_t domain_id) const;
  void join_nccl_calls(ProcessBuild& p, const ApiByCorrelation& api_by_corr);
  void read_kernels();
  void read_memcpys();
  void read_memsets();
  void read_api(const char* table);
  // The API tables on a second connection and thread (nullptr: read them here).
  std::unique_ptr<ApiReader> start_api_reader();
  void merge_api(ApiReader& reader);
  void read_syncs();
  void read_nvtx();
  void read_thread_names();
  void read_counted_only();
  std::vector<Trace> finish();
  void finish_process(ProcessBuild& p);
  void read_metadata(std::vector<ProcessBuild*>& traced);
  void assign_ranks(std::vector<ProcessBuild*>& traced);

  Database& db_;
  std::string file_name_;
  const NsysImportOptions& options_;
  NsysImportReport& report_;
  Enums enums_;
  std::map<uint64_t, std::unique_ptr<ProcessBuild>> processes_;
  ProcessBuild* last_ = nullptr;
  std::optional<SqliteStatement> string_lookup_;
  // A StringIds value, and what cleaning it counted (merge_api takes the
  // counts of the second connection's lookups only where this one made none).
  struct CachedString {
    std::optional<std::string> value;
    uint64_t malformed = 0, invalid_utf8 = 0;
  };
  std::unordered_map<int64_t, CachedString> string_cache_;
  std::filesystem::path file_;
  std::unordered_set<std::string> scanned_;  // tables whose rows a scan counted
  uint64_t db_bytes_ = 0;
  // (domainId, schemaId) -> offset of "Message size [bytes]" in the payload, and the payload's size.
  std::map<std::pair<int64_t, int64_t>, std::pair<uint64_t, uint64_t>> message_size_at_;
};

// The CUDA API tables, read by a second connection on its own thread while
// the first reads the activity tables: in a CUDA capture they are the two
// largest (every kernel has its launch call), so the import takes the time of
// one of them on a machine with two cores. The reader is an Importer of its
// own (its processes, strings, counts); merge_api folds it in as if one
// connection had read the API tables after the activity tables.
struct ApiReader {
  ApiReader(sqlite3* raw, std::string name, std::string_view file_name, const NsysImportOptions& options)
      : db(raw, std::move(name)), importer(db, file_name, options, report) {}
  ApiReader(const ApiReader&) = delete;
  ApiReader& operator=(const ApiReader&) = delete;
  ~ApiReader() {
    if (thread.joinable()) {  // the first connection failed: stop this one early
      sqlite3_interrupt(db.handle());
      thread.join();
    }
  }

  Database db;
  NsysImportReport report;
  Importer importer;
  std::exception_ptr error;
  std::thread thread;
};

constexpr const char* kApiTables[] = {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"};

std::unique_ptr<ApiReader> Importer::start_api_reader() {
  // A second connection opens the file again (import_nsys_file), and the
  // step budget is one connection's.
  if (file_.empty() || options_.max_sql_steps > 0 || !sqlite3_threadsafe()) return nullptr;
  uint64_t rows = 0;
  try {
    for (const char* t : kApiTables)
      if (db_.has_column(t, "start") && db_.has_column(t, "end")) rows += row_bound(t);
  } catch (const Error&) {
    return nullptr;  // a corrupt table: read here, in one connection's order, for the same error
  }
  if (rows < options_.parallel_min_api_rows) return nullptr;
  std::string open_error;
  sqlite3* raw = open_sqlite_input(file_, &open_error);
  if (!raw) return nullptr;
  int64_t no_budget = 0;
  configure(raw, options_, &no_budget);
  auto reader = std::make_unique<ApiReader>(raw, db_.file(), file_name_, options_);
  reader->db.copy_schema(db_);
  Importer& other = reader->importer;
  other.enums_ = enums_;
  other.db_bytes_ = db_bytes_;
  other.report_.tables = report_.tables;  // where its scans record their row counts
  try {
    reader->thread = std::thread([r = reader.get()] {
      try {
        for (const char* t : kApiTables) r->importer.read_api(t);
      } catch (...) {
        r->error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    return nullptr;  // no thread to be had: read them here
  }
  return reader;
}

// Folds the API reader's results in exactly as one connection reading the
// API tables after the activity tables would have made them: the same string
// ids in each trace, the same counts.
void Importer::merge_api(ApiReader& reader) {
  reader.thread.join();
  if (reader.error) std::rethrow_exception(reader.error);
  report_.connections = 2;
  Importer& other = reader.importer;
  const NsysImportReport& theirs = other.report_;
  report_.runtime_calls += theirs.runtime_calls;
  report_.driver_calls += theirs.driver_calls;
  report_.backtrace_rows += theirs.backtrace_rows;
  report_.other_class_rows += theirs.other_class_rows;
  report_.malformed += theirs.malformed;
  report_.dropped += theirs.dropped;
  report_.invalid_utf8 += theirs.invalid_utf8;
  for (const auto& t : theirs.tables) {
    if (!other.scanned_.count(t.name)) continue;
    scanned_.insert(t.name);
    for (auto& mine : report_.tables)
      if (mine.name == t.name) mine = t;
  }
  // A StringIds value this connection looked up already would not have been
  // looked up (nor its repairs counted) again.
  for (auto& [id, entry] : other.string_cache_) {
    const auto [at, added] = string_cache_.try_emplace(id, std::move(entry));  // (moves only when added)
    if (!added) {
      report_.malformed -= entry.malformed;
      report_.invalid_utf8 -= entry.invalid_utf8;
    }
  }
  for (auto& [key, q] : other.processes_) {
    ProcessBuild& p = process_of_key(key);
    p.cuda |= q->cuda;
    for (size_t i = 0; i < p.trace.problems.counts.size(); ++i)
      p.trace.problems.counts[i] += q->trace.problems.counts[i];
    // The reader's strings in the order it met them, which is the order one
    // connection would have added them to this trace's table.
    std::vector<StringId> to_mine(q->trace.strings.size());
    for (size_t i = 0; i < to_mine.size(); ++i)
      to_mine[i] = p.trace.strings.intern(q->trace.strings.view(static_cast<StringId>(i)));
    auto merge_slot = [&](int64_t id, StringId slot_theirs) {
      if (slot_theirs == kUnresolved) return;
      const bool missing = !string_cache_.at(id).value;
      StringId& slot = name_slot(p, id);
      if (slot == kUnresolved) {
        slot = missing ? kNoString : to_mine[slot_theirs];
      } else if (missing) {  // counted once per process and id, here already
        --report_.malformed;
        p.trace.problems.counts[static_cast<int>(Problem::kMalformedEvent)] -= 1;
      }
    };
    for (size_t id = 0; id < q->names.size(); ++id) merge_slot(static_cast<int64_t>(id), q->names[id]);
    for (const auto& [id, slot_theirs] : q->far_names) merge_slot(id, slot_theirs);
    // Only the API tables fill `api`, so this trace's is empty. (plain_names
    // serves only the API scans: not merged.)
    p.trace.api = std::move(q->trace.api);
    for (StringId& name : p.trace.api.name) name = to_mine[name];
  }
}

const std::string* Importer::string_value(int64_t id) {
  auto it = string_cache_.find(id);
  if (it == string_cache_.end()) {
    CachedString entry;
    if (!string_lookup_ && db_.has_column("StringIds", "id") && db_.has_column("StringIds", "value"))
      string_lookup_.emplace(db_.prepare("SELECT value FROM StringIds WHERE id = ?"));
    if (string_lookup_) {
      string_lookup_->reset();
      string_lookup_->bind(1, id);
      if (string_lookup_->step()) {
        const uint64_t malformed = report_.malformed, invalid = report_.invalid_utf8;
        std::string scratch;
        entry.value = std::string(clean(string_lookup_->text(0), scratch));
        entry.malformed = report_.malformed - malformed;
        entry.invalid_utf8 = report_.invalid_utf8 - invalid;
      }
    }
    it = string_cache_.emplace(id, std::move(entry)).first;
  }
  return it->second.value ? &*it->second.value : nullptr;
}

StringId& Importer::name_slot(ProcessBuild& p, int64_t id) {
  ++p.name_lookups;
  if (id >= 0 && static_cast<uint64_t>(id) < p.names.size()) return p.names[static_cast<size_t>(id)];
  // Dense slots for at most 256 + 16 per lookup: memory in proportion to the
  // process's rows, not to the export's string count.
  const uint64_t limit = std::min<uint64_t>(kDenseIds, 256 + 16 * p.name_lookups);
  if (id >= 0 && static_cast<uint64_t>(id) < limit) {
    const auto i = static_cast<size_t>(id);
    const size_t old_size = p.names.size();
    p.names.resize(std::min<size_t>(std::max(i + 1, 2 * old_size), limit), kUnresolved);
    // Ids the map held while the vector was shorter move into it: one slot per id.
    if (!p.far_names.empty())
      for (auto it = p.far_names.begin(); it != p.far_names.end();) {
        if (it->first >= 0 && static_cast<uint64_t>(it->first) < p.names.size()) {
          p.names[static_cast<size_t>(it->first)] = it->second;
          it = p.far_names.erase(it);
        } else {
          ++it;
        }
      }
    return p.names[i];
  }
  return p.far_names.try_emplace(id, kUnresolved).first->second;
}

StringId Importer::name_of(ProcessBuild& p, RowValues& v, int col) {
  const SqliteStatement& st = v.statement();
  switch (st.type(col)) {
    case SQLITE_INTEGER: {
      const int64_t id = st.i64(col);
      StringId& slot = name_slot(p, id);
      if (slot == kUnresolved) {
        const std::string* value = string_value(id);
        if (!value) {  // an id StringIds does not hold (merge_api relies on these counts)
          ++report_.malformed;
          p.trace.problems.add(Problem::kMalformedEvent);
        }
        slot = value ? p.trace.strings.intern(*value) : kNoString;
      }
      return slot;
    }
    case SQLITE_TEXT: return intern(p, st.text(col));
    case SQLITE_NULL: return kNoString;
    default: v.misread = true; return kNoString;  // a number with a fraction, a blob: no name
  }
}

StringId Importer::plain_name(ProcessBuild& p, StringId raw) {
  if (raw >= p.plain_names.size()) p.plain_names.resize(static_cast<size_t>(raw) + 1, kUnresolved);
  StringId& plain = p.plain_names[raw];
  if (plain == kUnresolved) {
    const std::string_view full = p.trace.strings.view(raw);
    const std::string_view stripped = strip_version_suffix(full);
    plain = stripped.size() == full.size() ? raw : p.trace.strings.intern(stripped);
  }
  return plain;
}

void Importer::read_enums() {
  auto read = [&](const char* table, auto&& apply) {
    if (!db_.has_column(table, "id") || !db_.has_column(table, "name")) return false;
    SqliteStatement st = db_.prepare(fmt::format("SELECT id, name FROM \"{}\"", table));
    while (st.step())
      if (!st.is_null(0)) apply(st.i64(0), st.text(1));
    return true;
  };
  // Documented codes (CUDA_MEMCPY_KIND, CUDA_MEMOPR_MEMORY_KIND, CUpti_ActivitySynchronizationType).
  enums_.copy_kind = {{1, MemcpyKind::kHtoD}, {2, MemcpyKind::kDtoH},  {3, MemcpyKind::kHtoD},  {4, MemcpyKind::kDtoH},
                      {5, MemcpyKind::kDtoD}, {6, MemcpyKind::kDtoD},  {7, MemcpyKind::kDtoD},  {8, MemcpyKind::kDtoD},
                      {9, MemcpyKind::kHtoH}, {10, MemcpyKind::kPtoP}, {11, MemcpyKind::kHtoD}, {12, MemcpyKind::kDtoH},
                      {13, MemcpyKind::kDtoD}};
  enums_.mem_kind = {{0, MemoryKind::kPageable}, {1, MemoryKind::kPinned},  {2, MemoryKind::kDevice},
                     {3, MemoryKind::kArray},    {4, MemoryKind::kManaged}, {5, MemoryKind::kDevice},
                     {6, MemoryKind::kManaged}};
  enums_.sync_kind = {{1, SyncKind::kEventSynchronize},
                      {2, SyncKind::kStreamWaitEvent},
                      {3, SyncKind::kStreamSynchronize},
                      {4, SyncKind::kDeviceSynchronize}};
  std::unordered_map<int64_t, MemcpyKind> copy;
  if (read("ENUM_CUDA_MEMCPY_OPER", [&](int64_t id, std::string_view n) { copy[id] = copy_kind_of_symbol(n); }))
    enums_.copy_kind = std::move(copy);
  std::unordered_map<int64_t, MemoryKind> mem;
  if (read("ENUM_CUDA_MEM_KIND", [&](int64_t id, std::string_view n) { mem[id] = memory_kind_of_symbol(n); }))
    enums_.mem_kind = std::move(mem);
  std::unordered_map<int64_t, SyncKind> sync;
  if (read("ENUM_CUPTI_SYNC_TYPE", [&](int64_t id, std::string_view n) { sync[id] = sync_kind_of_symbol(n); }))
    enums_.sync_kind = std::move(sync);
  read("ENUM_NSYS_EVENT_CLASS", [&](int64_t id, std::string_view n) {
    if (n == "TRACE_PROCESS_EVENT_CUDA_RUNTIME") enums_.class_runtime = id;
    else if (n == "TRACE_PROCESS_EVENT_CUDA_DRIVER") enums_.class_driver = id;
    else if (n == "TRACE_PROCESS_EVENT_CUDABACKTRACE") enums_.class_backtrace = id;
  });
  // The event-type table may list only the types a capture used: names
  // found there replace the documented code of the same name.
  read("ENUM_NSYS_EVENT_TYPE", [&](int64_t id, std::string_view n) {
    if (n == "NvtxPushPopRange" || n == "NvtxStartEndRange" || n == "NvtxtPushPopRange" || n == "NvtxtStartEndRange")
      enums_.nvtx_range.insert(id);
    else if (n == "NvtxMark") enums_.nvtx_mark.insert(id);
    else if (n == "NvtxThread") enums_.nvtx_thread = id;
    else if (n == "NvtxDomainCreate") enums_.nvtx_domain_create = id;
    else if (n == "NvtxCategory" || n == "NvtxDomainDestroy") enums_.nvtx_domain_other.insert(id);
  });
}

void Importer::read_versions() {
  for (const char* table : {"EXPORT_META_DATA", "META_DATA_EXPORT"}) {
    if (!db_.has_column(table, "name") || !db_.has_column(table, "value")) continue;
    SqliteStatement st = db_.prepare(fmt::format("SELECT name, value FROM \"{}\"", table));
    std::string scratch;
    while (st.step()) {
      const std::string_view n = st.text(0);
      if (n == "EXPORT_PRODUCT_VERSION") report_.product_version = std::string(clean(st.text(1), scratch));
      else if (n == "EXPORT_SCHEMA_VERSION") report_.schema_version = std::string(clean(st.text(1), scratch));
    }
  }
}

// At most the table's largest rowid (rows are never deleted from an export),
// and never more rows than the file has room for (a hostile rowid must not
// reserve gigabytes). 0 when unknown (a table WITHOUT ROWID).
uint64_t Importer::row_bound(const char* table) {
  sqlite3_stmt* raw = nullptr;
  const std::string sql = fmt::format("SELECT max(rowid) FROM \"{}\"", table);
  if (sqlite3_prepare_v2(db_.handle(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return 0;
  }
  SqliteStatement st(raw, &db_);
  if (!st.step() || st.is_null(0) || st.i64(0) <= 0) return 0;
  // A row takes at least 4 bytes of a page (cell pointer, sizes, rowid).
  return std::min(static_cast<uint64_t>(st.i64(0)), db_bytes_ / 4);
}

template <typename Row>
void Importer::scan(const char* table, std::initializer_list<const char*> required,
                    std::initializer_list<const char*> columns, Row&& row) {
  if (!db_.has_table(table)) return;
  const char* missing = nullptr;
  for (const char* c : required)
    if (!missing && !db_.has_column(table, c)) missing = c;
  std::string sql = "SELECT ";
  for (const char* c : columns) {
    if (sql.size() > 7) sql += ", ";
    sql += db_.column_or_null(table, c);
  }
  sql += fmt::format(" FROM \"{}\"", table);
  uint64_t bound = row_bound(table);
  SqliteStatement st = db_.prepare(sql);
  uint64_t rows = 0, kept = 0, dropped = 0;
  while (st.step()) {
    ++rows;
    RowValues v(st);
    const RowFate fate = row(v, bound);
    kept += fate == RowFate::kKept;
    dropped += fate == RowFate::kLeftOut || fate == RowFate::kUnreadable;
    if (fate == RowFate::kUnreadable) {
      ++report_.dropped;
      if (v.process) v.process->trace.problems.add(Problem::kIncompleteRecord);
    } else if (v.misread) {
      ++report_.malformed;
      if (v.process) v.process->trace.problems.add(Problem::kMalformedEvent);
    }
  }
  scanned_.insert(table);
  for (auto& t : report_.tables) {
    if (t.name != table) continue;
    t.rows = rows;
    t.kept = kept;
    t.dropped = dropped;
    t.read = true;
    if (missing) t.mapped_to = fmt::format("not read: no `{}` column (every row left out)", missing);
  }
}

template <typename Record>
bool Importer::span(Record& r, RowValues& v, ProcessBuild& p) {
  const std::optional<int64_t> start = v.integer(kStartCol), end = v.integer(kEndCol);
  if (!start || !end) return false;
  r.start = *start;
  r.end = *end;
  if (r.end < r.start) {
    p.trace.problems.add(Problem::kNegativeDuration);
    r.end = r.start;
  }
  return true;
}

template <typename Record>
bool Importer::gpu_row(Record& r, RowValues& v, ProcessBuild& p) {
  if (!span(r, v, p)) return false;
  p.cuda = true;
  r.device = v.u32(kGpuDeviceCol);
  r.stream = v.u32(kGpuStreamCol);
  r.correlation = v.u32(kGpuCorrCol);
  return true;
}

// A CUDA activity row left out as unreadable still says its process had CUDA
// activity: the process becomes a trace that carries the loss (a process
// whose pid is unknown, key 0, does not: see Importer::finish).
RowFate unreadable_cuda_row(ProcessBuild& p) {
  if (p.key != 0) p.cuda = true;
  return RowFate::kUnreadable;
}

// SQLite reads NULL as 0: one call per column on the hot path.
uint32_t u32(const SqliteStatement& st, int c) { return static_cast<uint32_t>(st.i64(c)); }
uint64_t non_negative(const SqliteStatement& st, int c) { return st.i64(c) < 0 ? 0 : static_cast<uint64_t>(st.i64(c)); }

// Asks for 2 MiB pages (transparent huge pages, which Debian's kernels grant
// on request: "madvise" mode) for the untouched, 2 MiB-aligned rest of a
// column's reserved room. Filling ~200 MB of columns 4 KiB page by page was
// a sixth of a 2 M-kernel import (one page fault per 4 KiB, costly in a VM).
// Advice only: where the kernel refuses, nothing changes.
template <typename T>
void advise_huge_pages(std::vector<T>& column) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(column.data());
  const uintptr_t first = (begin + (column.size() + 1) * sizeof(T) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + column.capacity() * sizeof(T)) & ~(kHuge - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

// Rows a process's table holds before its columns get huge pages: a process
// with few rows of a large table then never takes 2 MiB per column.
constexpr size_t kHugePagesAfterRows = size_t{1} << 16;

// Appends a row. Room for every row of the table (`table_rows`, then 0) is
// reserved once, in the process that has the first row: an export of one
// process (the usual one) never reallocates its columns, and the others grow
// theirs as vectors do. (Reserving the whole table in every process made an
// export of 10,000 processes with one kernel each take 7 GB.)
template <typename Table, typename Record>
void push_row(Table& t, const Record& r, uint64_t& table_rows) {
  if (t.start.capacity() == 0 && table_rows > 0) {
    t.reserve(static_cast<size_t>(std::min<uint64_t>(table_rows, uint64_t{1} << 32)));
    table_rows = 0;
  }
  t.push(r);
  if (t.size() == kHugePagesAfterRows)
    for_each_column_of<Table>([&](const auto& c) { advise_huge_pages(t.*c.values); });
}

void Importer::read_kernels() {
  enum {
    kDemangled = kGpuOwnCol,
    kMangled = kDemangled + 3,
    kGridX,
    kGridY,
    kGridZ,
    kBlockX,
    kBlockY,
    kBlockZ,
    kRegisters,
    kStaticShared,
    kDynamicShared
  };
  // Names: the demangled one (what Kineto and the kernel-class rules read),
  // then whichever name column the export has.
  scan("CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end"},
       {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "demangledName", "name", "shortName",
        "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
        "staticSharedMemory", "dynamicSharedMemory"},
       [&](RowValues& v, uint64_t& bound) {
         ProcessBuild& p = process_of_row(v, kGpuPidCol);
         KernelRecord r;
         if (!gpu_row(r, v, p)) return unreadable_cuda_row(p);
         for (int c = kDemangled; c <= kMangled && r.name == kNoString; ++c) r.name = name_of(p, v, c);
         r.grid_x = v.u32(kGridX), r.grid_y = v.u32(kGridY), r.grid_z = v.u32(kGridZ);
         r.block_x = v.u32(kBlockX), r.block_y = v.u32(kBlockY), r.block_z = v.u32(kBlockZ);
         r.registers_per_thread = v.u32(kRegisters);
         const uint64_t shared = uint64_t{v.u32(kStaticShared)} + v.u32(kDynamicShared);
         r.shared_memory_bytes = static_cast<uint32_t>(std::min<uint64_t>(shared, UINT32_MAX));
         push_row(p.trace.kernels, r, bound);
         const std::string_view name = p.trace.strings.view(r.name);
         if (name.substr(0, 4) != "nccl") return RowFate::kKept;
         // The one parser of NCCL kernel names (trace/model/nccl_kernel_name.hpp); the
         // payload size is not in the name (docs/nsys.md: bytes stay 0 without payloads).
         const NcclKernelName nk = parse_nccl_kernel_name(name).value_or(NcclKernelName{});
         NcclRecord n;
         n.start = r.start;
         n.end = r.end;
         n.device = r.device;
         n.stream = r.stream;
         n.op = nk.op;
         n.datatype = p.trace.strings.intern(nk.datatype);
         n.algorithm = p.trace.strings.intern(nk.algorithm);
         n.protocol = p.trace.strings.intern(nk.protocol);
         n.correlation = r.correlation;
         p.trace.nccl.push(n);
         return RowFate::kKept;
       });
}

void Importer::read_memcpys() {
  enum { kBytes = kGpuOwnCol, kCopyKind, kSrcKind, kDstKind, kSrcDevice, kDstDevice };
  scan("CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "end"},
       {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "srcKind", "dstKind",
        "srcDeviceId", "dstDeviceId"},
       [&](RowValues& v, uint64_t& bound) {
         ProcessBuild& p = process_of_row(v, kGpuPidCol);
         MemcpyRecord r;
         if (!gpu_row(r, v, p)) return unreadable_cuda_row(p);
         r.bytes = v.u64(kBytes);
         const auto copy_kind = v.integer(kCopyKind), src_kind = v.integer(kSrcKind), dst_kind = v.integer(kDstKind);
         r.kind = copy_kind ? enums_.copy(*copy_kind) : MemcpyKind::kUnknown;
         r.src_kind = src_kind ? enums_.memory(*src_kind) : MemoryKind::kUnknown;
         r.dst_kind = dst_kind ? enums_.memory(*dst_kind) : MemoryKind::kUnknown;
         if (r.kind == MemcpyKind::kPtoP) {
           const uint32_t src = v.u32(kSrcDevice), dst = v.u32(kDstDevice);
           r.peer_device = src == r.device ? dst : src;
         }
         push_row(p.trace.memcpys, r, bound);
         return RowFate::kKept;
       });
}

void Importer::read_memsets() {
  enum { kBytes = kGpuOwnCol, kMemKind };
  scan("CUPTI_ACTIVITY_KIND_MEMSET", {"start", "end"},
       {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "bytes", "memKind"},
       [&](RowValues& v, uint64_t& bound) {
         ProcessBuild& p = process_of_row(v, kGpuPidCol);
         MemsetRecord r;
         if (!gpu_row(r, v, p)) return unreadable_cuda_row(p);
         r.bytes = v.u64(kBytes);
         const auto mem_kind = v.integer(kMemKind);
         r.dst_kind = mem_kind ? enums_.memory(*mem_kind) : MemoryKind::kUnknown;
         push_row(p.trace.memsets, r, bound);
         return RowFate::kKept;
       });
}

void Importer::read_api(const char* table) {
  enum { kTid = 2, kClass, kCorr, kNameId, kName, kReturn };
  const bool driver_table = std::string_view(table) == "CUPTI_ACTIVITY_KIND_DRIVER";
  scan(table, {"start", "end"},
       {"start", "end", "globalTid", "eventClass", "correlationId", "nameId", "name", "returnValue"},
       [&](RowValues& v, uint64_t& bound) {
         const int64_t tid = v.i64(kTid);
         ProcessBuild& p = process(tid);
         v.process = &p;
         ApiDomain domain = driver_table ? ApiDomain::kDriver : ApiDomain::kRuntime;
         if (const std::optional<int64_t> cls = v.integer(kClass)) {
           if (*cls == enums_.class_backtrace) {
             // Repeats a call of the same correlation id to carry its stack.
             ++report_.backtrace_rows;
             return RowFate::kCounted;
           }
           if (*cls == enums_.class_runtime) domain = ApiDomain::kRuntime;
           else if (*cls == enums_.class_driver) domain = ApiDomain::kDriver;
           else {
             ++report_.other_class_rows;  // cuBLAS, cuDNN ... ranges of other libraries
             return RowFate::kCounted;
           }
         }
         ApiRecord r;
         if (!span(r, v, p)) return unreadable_cuda_row(p);
         p.cuda = true;
         (domain == ApiDomain::kDriver ? report_.driver_calls : report_.runtime_calls) += 1;
         r.domain = domain;
         r.thread = tid_of(tid);
         r.correlation = v.u32(kCorr);
         StringId raw = name_of(p, v, kNameId);
         if (raw == kNoString) raw = name_of(p, v, kName);
         r.name = plain_name(p, raw);
         r.return_code = v.i32(kReturn);
         push_row(p.trace.api, r, bound);
         return RowFate::kKept;
       });
}

void Importer::read_syncs() {
  enum { kSyncType = kGpuOwnCol, kEvent };
  scan("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"start", "end"},
       {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "syncType", "eventId"},
       [&](RowValues& v, uint64_t& bound) {
         ProcessBuild& p = process_of_row(v, kGpuPidCol);
         SyncRecord r;
         if (!gpu_row(r, v, p)) return unreadable_cuda_row(p);
         const auto sync_type = v.integer(kSyncType);
         r.kind = sync_type ? enums_.sync(*sync_type) : SyncKind::kUnknown;
         if (r.kind == SyncKind::kDeviceSynchronize) r.stream = 0;  // a context synchronization is not about one stream
         r.event = v.u64(kEvent);
         push_row(p.trace.syncs, r, bound);
         return RowFate::kKept;
       });
}

void Importer::read_nvtx() {
  enum { kType = 2, kTid, kText, kTextId, kDomain, kPayload };
  std::map<std::pair<uint64_t, int64_t>, StringId> domains;  // (process, domainId) -> name
  scan("NVTX_EVENTS", {"start", "eventType"},
       {"start", "end", "eventType", "globalTid", "text", "textId", "domainId", "binaryData"},
       [&](RowValues& v, uint64_t& bound) {
         const int64_t gtid = v.i64(kTid);
         ProcessBuild& p = process(gtid);
         v.process = &p;
         const std::optional<int64_t> event_type = v.integer(kType), start = v.integer(kStartCol);
         if (!event_type || !start) return RowFate::kUnreadable;
         const int64_t type = *event_type;
         StringId text = name_of(p, v, kText);
         if (text == kNoString) text = name_of(p, v, kTextId);
         const int64_t domain_id = v.i64(kDomain);
         if (type == enums_.nvtx_domain_create) {
           ++report_.nvtx_domain_rows;
           domains[{p.key, domain_id}] = text;
           return RowFate::kKept;
         }
         if (type == enums_.nvtx_thread) {
           ++report_.nvtx_thread_names;
           const std::string_view name = p.trace.strings.view(text);
           p.thread_names[tid_of(gtid)] = std::string(name);
           if (auto rank = rank_in_text(name)) {
             p.nvtx_ranks.push_back(*rank);
             if (p.nvtx_rank_text.empty()) p.nvtx_rank_text = std::string(name);
           }
           return RowFate::kKept;
         }
         if (enums_.nvtx_domain_other.count(type)) {
           ++report_.nvtx_domain_rows;
           return RowFate::kKept;
         }
         const bool range = enums_.nvtx_range.count(type) != 0, mark = enums_.nvtx_mark.count(type) != 0;
         if (!range && !mark) {
           ++report_.nvtx_other;
           return RowFate::kCounted;
         }
         NvtxRecord r;
         r.start = *start;
         if (range) {
           if (v.statement().is_null(kEndCol)) {
             ++report_.unclosed_ranges;
             p.trace.problems.add(Problem::kMalformedEvent);
             return RowFate::kLeftOut;
           }
           const std::optional<int64_t> end = v.integer(kEndCol);
           if (!end) return RowFate::kUnreadable;
           r.end = *end;
           if (r.end < r.start) {
             p.trace.problems.add(Problem::kNegativeDuration);
             r.end = r.start;
           }
           ++report_.nvtx_ranges;
         } else {
           r.end = r.start;
           r.kind = NvtxKind::kMark;
           ++report_.nvtx_marks;
         }
         r.text = text;
         r.thread = tid_of(gtid);
         if (domain_id != 0) p.nvtx_domains.emplace_back(p.trace.nvtx.size(), domain_id);
         if (range && !v.statement().is_null(kPayload)) {
           ++report_.nvtx_payloads;
           if (auto bytes = message_size(v.statement().blob(kPayload), domain_id)) {
             const std::string_view name = p.trace.strings.view(text);
             NcclCall call{r.thread, r.start,
                           r.end,    nccl_op_from_name(name.substr(0, 4) == "nccl" ? name.substr(4) : name),
                           *bytes,   domain_id};
             p.nccl_calls.push_back(call);
           }
         }
         push_row(p.trace.nvtx, r, bound);
         return RowFate::kKept;
       });
  // A domain's create row may follow its ranges: names are set once the
  // table is read. Domain 0 is NVTX's default domain: no name.
  for (auto& [key, p] : processes_) {
    for (const auto& [row, domain_id] : p->nvtx_domains) {
      auto it = domains.find({key, domain_id});
      p->trace.nvtx.domain[row] =
          it != domains.end() ? it->second : p->trace.strings.intern(fmt::format("domain {}", domain_id));
    }
    p->nvtx_domains.clear();
    // Message sizes count only from NCCL's own domain.
    const uint64_t process = key;  // (clang before 16 cannot capture structured bindings)
    const StringTable& strings = p->trace.strings;
    std::erase_if(p->nccl_calls, [&](const NcclCall& c) {
      auto it = domains.find({process, c.domain_id});
      return it == domains.end() || strings.view(it->second) != "NCCL";
    });
    report_.nccl_payloads += p->nccl_calls.size();
  }
}

// NCCL (2.19+) registers a payload schema per call kind; nsys exports them in
// NVTX_PAYLOAD_SCHEMAS / NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId,
// entry name, type, offset). Only the message size is read: an 8-byte entry
// named as NCCL names it, at an offset inside the schema's payload.
void Importer::read_payload_schemas() {
  constexpr const char* t = "NVTX_PAYLOAD_SCHEMA_ENTRIES";
  for (const char* c : {"domainId", "schemaId", "idx", "type", "name", "offset"})
    if (!db_.has_column(t, c)) return;
  std::map<std::pair<int64_t, int64_t>, uint64_t> payload_size;
  if (db_.has_column("NVTX_PAYLOAD_SCHEMAS", "schemaId") && db_.has_column("NVTX_PAYLOAD_SCHEMAS", "payloadSize") &&
      db_.has_column("NVTX_PAYLOAD_SCHEMAS", "domainId")) {
    SqliteStatement st = db_.prepare("SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS");
    while (st.step())
      if (!st.is_null(2) && st.i64(2) > 0) payload_size[{st.i64(0), st.i64(1)}] = static_cast<uint64_t>(st.i64(2));
  }
  // 8-byte unsigned entry types of nvToolsExtPayload.h: ulong, ulonglong, uint64, size_t.
  SqliteStatement st = db_.prepare(fmt::format(
      "SELECT domainId, schemaId, idx, type, offset FROM \"{}\" WHERE name = 'Message size [bytes]' AND type IN (8, 10, 18, 22)",
      t));
  while (st.step() && message_size_at_.size() < 4096) {
    // An entry after the first without an offset would need the layout rules
    // of every type before it: not decoded.
    if (st.is_null(4) && st.i64(2) != 0) continue;
    const std::pair<int64_t, int64_t> key{st.i64(0), st.i64(1)};
    const uint64_t offset = non_negative(st, 4);
    auto size = payload_size.find(key);
    const uint64_t bytes = size == payload_size.end() ? 0 : size->second;
    if (bytes != 0 && offset + 8 > bytes) continue;
    message_size_at_[key] = {offset, bytes};
  }
}

// binaryData: the payload after a 32-byte header. NVIDIA's schema reference
// says only "Binary payload. See docs for format."; the header as read by
// open-source readers of 2026.x exports (docs/nsys.md) holds the domain id
// (bytes 0-3), the schema id (8-11) and the payload's size (16-23). A blob is
// decoded only when all three agree with the row and the schema tables.
std::optional<uint64_t> Importer::message_size(std::span<const uint8_t> blob, int64_t domain_id) const {
  constexpr size_t kHeader = 32;
  if (blob.size() < kHeader || message_size_at_.empty()) return std::nullopt;
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(blob[at + i]) << (8 * i);
    return v;
  };
  if ((u64(0) & 0xFFFFFFFF) != (static_cast<uint64_t>(domain_id) & 0xFFFFFFFF)) return std::nullopt;
  const auto schema = static_cast<int64_t>(u64(8) & 0xFFFFFFFF);
  auto it = message_size_at_.find({domain_id, schema});
  if (it == message_size_at_.end()) return std::nullopt;
  const uint64_t size = u64(16), offset = it->second.first, schema_size = it->second.second;
  if (size != blob.size() - kHeader || (schema_size != 0 && size != schema_size) || offset + 8 > size)
    return std::nullopt;
  return u64(kHeader + offset);
}

void Importer::read_thread_names() {
  enum { kNameId, kTid };
  scan("ThreadNames", {"nameId", "globalTid"}, {"nameId", "globalTid"}, [&](RowValues& v, uint64_t&) {
    const std::optional<int64_t> tid = v.integer(kTid);
    ProcessBuild& p = process(tid.value_or(0));
    v.process = &p;
    if (!tid) return RowFate::kUnreadable;
    const StringId name = name_of(p, v, kNameId);
    if (name == kNoString) return RowFate::kUnreadable;
    const std::string_view text = p.trace.strings.view(name);
    p.thread_names.emplace(tid_of(*tid), std::string(text));
    if (auto rank = rank_in_text(text)) {
      p.nvtx_ranks.push_back(*rank);
      if (p.nvtx_rank_text.empty()) p.nvtx_rank_text = std::string(text);
    }
    return RowFate::kKept;
  });
}

void Importer::read_counted_only() {
  auto count = [&](const char* table) { return db_.has_table(table) ? db_.count_rows(table) : 0; };
  report_.gpu_metric_samples = count("GPU_METRICS");
  report_.cpu_samples = count("COMPOSITE_EVENTS");
  report_.sched_events = count("SCHED_EVENTS");
  report_.osrt_calls = count("OSRT_API");
}

// nsys writes most tables in start order: checking first saves the sort,
// which otherwise rebuilds the table's columns in (stable) start order.
template <typename Table>
void sort_by_start(Table& t) {
  if (std::is_sorted(t.start.begin(), t.start.end())) return;
  std::vector<uint32_t> order(t.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return t.start[a] < t.start[b]; });
  Table sorted;
  sorted.reserve(t.size());
  for (uint32_t i : order) sorted.push(t.row(i));
  t = std::move(sorted);
}

// Correlation id -> API row: a vector when the ids are dense (they count up
// from 1 in a process), a map otherwise.
class ApiByCorrelation {
 public:
  explicit ApiByCorrelation(const std::vector<uint32_t>& correlation) {
    const uint32_t max = correlation.empty() ? 0 : *std::max_element(correlation.begin(), correlation.end());
    dense_ = max <= 4 * correlation.size() + 4096;
    if (dense_) dense_rows_.assign(static_cast<size_t>(max) + 1, kNone);
    for (size_t i = 0; i < correlation.size(); ++i) {
      const uint32_t c = correlation[i];
      if (c == 0) continue;
      if (!dense_) sparse_rows_.emplace(c, static_cast<uint32_t>(i));
      else if (dense_rows_[c] == kNone) dense_rows_[c] = static_cast<uint32_t>(i);  // the first, as emplace keeps
    }
  }
  // The API row of `corr`, or nullopt.
  std::optional<uint32_t> find(uint32_t corr) const {
    if (dense_) {
      if (corr >= dense_rows_.size() || dense_rows_[corr] == kNone) return std::nullopt;
      return dense_rows_[corr];
    }
    auto it = sparse_rows_.find(corr);
    return it == sparse_rows_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  bool dense_ = true;
  std::vector<uint32_t> dense_rows_;
  std::unordered_map<uint32_t, uint32_t> sparse_rows_;
};

// Gives each NCCL kernel the message size of the NCCL call that launched it:
// the kernel's launch (its correlation id's API call) lies inside the call's
// NVTX range on the same thread. A call's bytes go to its first kernel only;
// kernels launched at ncclGroupEnd (no payload) or whose call's op differs
// from the kernel name's keep bytes 0 (unknown).
void Importer::join_nccl_calls(ProcessBuild& p, const ApiByCorrelation& api_by_corr) {
  if (p.nccl_calls.empty() || p.trace.nccl.size() == 0) return;
  auto& calls = p.nccl_calls;
  std::sort(calls.begin(), calls.end(), [](const NcclCall& a, const NcclCall& b) {
    return std::tie(a.thread, a.start) < std::tie(b.thread, b.start);
  });
  Trace& tr = p.trace;
  for (size_t i = 0; i < tr.nccl.size(); ++i) {
    const auto row = api_by_corr.find(tr.nccl.correlation[i]);
    if (!row) continue;
    const uint32_t thread = tr.api.thread[*row];
    const Timestamp launch = tr.api.start[*row];
    // The innermost range holding the launch: the latest start at or before it.
    auto it = std::upper_bound(calls.begin(), calls.end(), std::make_pair(thread, launch),
                               [](const std::pair<uint32_t, Timestamp>& k, const NcclCall& c) {
                                 return k < std::make_pair(c.thread, c.start);
                               });
    for (int back = 0; back < 8 && it != calls.begin(); ++back) {
      --it;
      if (it->thread != thread) break;
      if (it->end < launch) continue;  // an earlier call that ended before the launch
      const NcclOp kernel_op = tr.nccl.op[i];
      if (!it->used && (it->op == NcclOp::kUnknown || kernel_op == NcclOp::kUnknown || it->op == kernel_op)) {
        tr.nccl.bytes[i] = it->bytes;
        it->used = true;
        ++report_.nccl_bytes_joined;
      }
      break;
    }
  }
}

void Importer::finish_process(ProcessBuild& p) {
  Trace& tr = p.trace;
  sort_by_start(tr.kernels);
  sort_by_start(tr.memcpys);
  sort_by_start(tr.memsets);
  sort_by_start(tr.api);
  sort_by_start(tr.syncs);
  sort_by_start(tr.nvtx);
  sort_by_start(tr.nccl);
  // Sequence numbers of collectives in time order (the communicator is not in a kernel's name).
  for (size_t i = 0; i < tr.nccl.size(); ++i) tr.nccl.sequence[i] = static_cast<int64_t>(i);

  // Synchronous copies and sets: the launching call's name says so. A sync
  // record's thread: its API call's.
  const ApiByCorrelation api_by_corr(tr.api.correlation);
  std::vector<int8_t> async_name(tr.strings.size(), -1);  // per API name id: -1 unknown yet
  auto is_async = [&](uint32_t corr) {
    const auto row = api_by_corr.find(corr);
    if (!row) return true;
    const StringId id = tr.api.name[*row];
    if (async_name[id] < 0) {
      const std::string_view n = tr.strings.view(id);
      async_name[id] = n.find("Async") != std::string_view::npos || n.find("async") != std::string_view::npos ||
                       (n.substr(0, 6) != "cudaMe" && n.substr(0, 4) != "cuMe");
    }
    return async_name[id] != 0;
  };
  uint64_t unmatched = 0;
  const bool have_api = tr.api.size() != 0;
  auto matched = [&](uint32_t corr) { return !have_api || corr == 0 || api_by_corr.find(corr).has_value(); };
  for (size_t i = 0; i < tr.memcpys.size(); ++i) {
    tr.memcpys.is_async[i] = is_async(tr.memcpys.correlation[i]);
    unmatched += !matched(tr.memcpys.correlation[i]);
  }
  for (size_t i = 0; i < tr.memsets.size(); ++i) {
    tr.memsets.is_async[i] = is_async(tr.memsets.correlation[i]);
    unmatched += !matched(tr.memsets.correlation[i]);
  }
  for (uint32_t corr : tr.kernels.correlation) unmatched += !matched(corr);
  for (size_t i = 0; i < tr.syncs.size(); ++i)
    if (const auto row = api_by_corr.find(tr.syncs.correlation[i])) tr.syncs.thread[i] = tr.api.thread[*row];
  if (unmatched) tr.problems.add(Problem::kUnmatchedCorrelation, unmatched);
  join_nccl_calls(p, api_by_corr);
  // Release what reserving for the whole table took beyond this process's rows.
  auto fit = [](auto& table) {
    if (table.start.capacity() > 2 * table.size() + 1024) table = std::remove_cvref_t<decltype(table)>(table);
  };
  fit(tr.kernels);
  fit(tr.memcpys);
  fit(tr.memsets);
  fit(tr.api);
  fit(tr.syncs);
  fit(tr.nvtx);
}

// Host facts of the capture: devices, hostname, clock anchor, process names,
// versions. The capture's tables are host-wide; each traced process gets the
// devices of its own host (serialized ids carry the host in their top bits).
void Importer::read_metadata(std::vector<ProcessBuild*>& traced) {
  std::vector<std::pair<uint64_t, DeviceInfo>> devices;  // (host id, device)
  if (db_.has_column("TARGET_INFO_GPU", "id")) {
    constexpr const char* t = "TARGET_INFO_GPU";
    SqliteStatement st = db_.prepare(
        fmt::format("SELECT id, {}, {}, {}, {}, {}, {}, {}, {} FROM TARGET_INFO_GPU", db_.column_or_null(t, "vmId"),
                    db_.column_or_null(t, "name"), db_.column_or_null(t, "busLocation"), db_.column_or_null(t, "uuid"),
                    db_.column_or_null(t, "totalMemory"), db_.column_or_null(t, "smCount"),
                    db_.column_or_null(t, "computeMajor"), db_.column_or_null(t, "computeMinor")));
    std::string scratch;
    while (st.step() && devices.size() < 1024) {
      DeviceInfo d;
      d.id = u32(st, 0);
      d.name = std::string(clean(st.text(2), scratch));
      d.pci_bus_id = std::string(clean(st.text(3), scratch));
      const std::string uuid(clean(st.text(4), scratch));
      d.uuid = uuid.empty() || uuid.rfind("GPU-", 0) == 0 ? uuid : "GPU-" + uuid;
      d.memory_bytes = st.is_null(5) || st.i64(5) < 0 ? 0 : static_cast<uint64_t>(st.i64(5));
      d.sm_count = u32(st, 6);
      d.compute_major = static_cast<int32_t>(u32(st, 7));
      d.compute_minor = static_cast<int32_t>(u32(st, 8));
      devices.emplace_back(st.is_null(1) ? 0 : static_cast<uint64_t>(st.i64(1)) >> 48, std::move(d));
    }
  }
  std::optional<int64_t> session_start;
  if (db_.has_column("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) {
    SqliteStatement st = db_.prepare("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
    if (st.step() && !st.is_null(0)) session_start = st.i64(0);
  }
  std::string hostname;
  if (db_.has_column("TARGET_INFO_SYSTEM_ENV", "name") && db_.has_column("TARGET_INFO_SYSTEM_ENV", "value")) {
    SqliteStatement st = db_.prepare("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'");
    std::string scratch;
    if (st.step()) hostname = std::string(clean(st.text(0), scratch));
  }
  std::map<uint32_t, std::string> process_names;
  if (db_.has_column("PROCESSES", "pid") && db_.has_column("PROCESSES", "name")) {
    // PROCESSES lists every process of the host (thousands): look up the traced ones.
    SqliteStatement st = db_.prepare("SELECT name FROM PROCESSES WHERE pid = ? LIMIT 1");
    std::string scratch;
    for (ProcessBuild* p : traced) {
      st.reset();
      st.bind(1, pid_of_key(p->key));
      if (st.step()) process_names[pid_of_key(p->key)] = std::string(clean(st.text(0), scratch));
    }
  }
  for (ProcessBuild* p : traced) {
    Metadata& m = p->trace.meta;
    m.source = "nsys";
    m.producer_version = "scalescope nsys importer 1";
    m.pid = pid_of_key(p->key);
    m.hostname = hostname;
    auto name = process_names.find(m.pid);
    if (name != process_names.end()) m.command_line = name->second;
    const uint64_t host = p->key >> 24;
    bool any_same_host = false;
    for (const auto& [h, d] : devices) any_same_host |= h == host;
    for (const auto& [h, d] : devices)
      if (!any_same_host || h == host) m.devices.push_back(d);
    if (session_start) m.clock.push_back(ClockAnchor{0, *session_start});
    else p->trace.problems.add(Problem::kClockAnchorMissing);
    if (!report_.product_version.empty()) m.extra["nsys.product_version"] = report_.product_version;
    if (!report_.schema_version.empty()) m.extra["nsys.schema_version"] = report_.schema_version;
    size_t kept = 0;
    for (const auto& [tid, tname] : p->thread_names) {
      if (++kept > 256) break;  // extra stays small
      m.extra[fmt::format("nsys.thread.{}", tid)] = tname;
    }
  }
}

// Ranks, in order: the launcher environment the capture recorded (only when
// the capture holds one traced process: the environment is the host's), NVTX
// thread names ("MPI Rank 3", as nsys's MPI tracing names them), the file name.
void Importer::assign_ranks(std::vector<ProcessBuild*>& traced) {
  Environment env;
  if (db_.has_column("TARGET_INFO_SYSTEM_ENV", "name") && db_.has_column("TARGET_INFO_SYSTEM_ENV", "value")) {
    SqliteStatement st = db_.prepare("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name LIKE '%Environment%'");
    while (st.step()) {
      std::string_view v = st.text(0);
      while (!v.empty()) {
        const size_t nl = v.find('\n');
        const std::string_view line = v.substr(0, nl);
        v = nl == std::string_view::npos ? std::string_view{} : v.substr(nl + 1);
        const size_t eq = line.find('=');
        if (eq != std::string_view::npos && eq > 0 && line.size() < 4096)
          env.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
      }
    }
  }
  const int32_t file_rank = rank_from_file_name(file_name_);
  for (ProcessBuild* p : traced) {
    Metadata& m = p->trace.meta;
    std::string source = "unknown";
    if (traced.size() == 1) {
      if (const LauncherRank r = rank_from_environment(env); r.rank >= 0) {
        m.rank = r.rank;
        m.launcher = r.launcher;
        m.local_rank = r.local_rank;
        m.world_size = r.world_size;
        source = fmt::format("launcher environment ({})", r.rank_variable);
      }
    }
    if (m.rank < 0 && !p->nvtx_ranks.empty()) {
      const bool agree = std::all_of(p->nvtx_ranks.begin(), p->nvtx_ranks.end(),
                                     [&](int32_t r) { return r == p->nvtx_ranks.front(); });
      if (agree) {
        m.rank = p->nvtx_ranks.front();
        source = fmt::format("NVTX thread name \"{}\"", p->nvtx_rank_text);
      }
    }
    if (m.rank < 0 && traced.size() == 1 && file_rank >= 0) {
      m.rank = file_rank;
      source = "file name";
    }
    m.extra["nsys.rank_source"] = source;
  }
}

std::vector<Trace> Importer::finish() {
  std::vector<ProcessBuild*> traced;
  for (auto& [key, p] : processes_)
    if (p->cuda) traced.push_back(p.get());
  // A capture without CUDA activity but with NVTX (e.g. CUDA not traced):
  // its NVTX processes become the traces; the GPU analyses then say skipped.
  if (traced.empty())
    for (auto& [key, p] : processes_)
      if (p->trace.nvtx.size() != 0) traced.push_back(p.get());
  if (traced.empty() && report_.dropped != 0)
    fail(
        "{}: the nsys export holds no readable CUDA or NVTX events ({} row(s) left out: a time, type or id missing or "
        "not a number)",
        db_.file(), report_.dropped);
  if (traced.empty())
    fail("{}: the nsys export holds no CUDA or NVTX events (was the capture made with --trace=cuda,nvtx?)", db_.file());
  // Rows of no known process (their pid or tid NULL or unreadable: key 0)
  // that were left out or misread may have been any traced process's: each
  // trace counts them, so that no trace reads as complete.
  auto unknown = processes_.find(0);
  if (unknown != processes_.end() && std::find(traced.begin(), traced.end(), unknown->second.get()) == traced.end())
    for (const Problem q : {Problem::kIncompleteRecord, Problem::kMalformedEvent})
      for (ProcessBuild* p : traced) p->trace.problems.add(q, unknown->second->trace.problems.get(q));
  report_.other_processes = processes_.size() - traced.size();
  read_metadata(traced);
  assign_ranks(traced);
  for (ProcessBuild* p : traced) finish_process(*p);
  std::stable_sort(traced.begin(), traced.end(), [](const ProcessBuild* a, const ProcessBuild* b) {
    const auto ra = static_cast<uint32_t>(a->trace.meta.rank), rb = static_cast<uint32_t>(b->trace.meta.rank);
    return ra != rb ? ra < rb : a->trace.meta.pid < b->trace.meta.pid;
  });
  std::vector<Trace> out;
  for (ProcessBuild* p : traced) {
    const Trace& t = p->trace;
    NsysImportReport::Process pr;
    pr.pid = t.meta.pid;
    pr.name = t.meta.command_line;
    pr.rank = t.meta.rank;
    pr.rank_source = t.meta.extra.at("nsys.rank_source");
    pr.kernels = t.kernels.size(), pr.memcpys = t.memcpys.size(), pr.memsets = t.memsets.size();
    pr.api = t.api.size(), pr.syncs = t.syncs.size(), pr.nvtx = t.nvtx.size(), pr.nccl = t.nccl.size();
    report_.processes.push_back(std::move(pr));
    out.push_back(std::move(p->trace));
  }
  return out;
}

std::vector<Trace> Importer::run() {
  report_.input = db_.file();
  db_.load_schema();
  // An nsys export always has StringIds and at least one of its event tables.
  const bool nsys = db_.has_table("StringIds") &&
                    (db_.has_table("CUPTI_ACTIVITY_KIND_KERNEL") || db_.has_table("CUPTI_ACTIVITY_KIND_RUNTIME") ||
                     db_.has_table("NVTX_EVENTS") || db_.has_table("TARGET_INFO_SESSION_START_TIME"));
  if (!nsys)
    fail(
        "{}: an SQLite database but not an Nsight Systems export (no StringIds and CUPTI_ACTIVITY_KIND_* / NVTX_EVENTS "
        "tables; make one with `nsys export --type sqlite`)",
        db_.file());
  for (const auto& k : kKnownTables) {
    NsysImportReport::Table t;
    t.name = k.name;
    t.present = db_.has_table(k.name);
    t.mapped_to = t.present ? k.mapped_to : k.absent;
    report_.tables.push_back(std::move(t));
  }
  {
    SqliteStatement pages = db_.prepare("PRAGMA page_count");
    SqliteStatement page_size = db_.prepare("PRAGMA page_size");
    if (pages.step() && page_size.step())
      db_bytes_ = static_cast<uint64_t>(std::max<int64_t>(0, pages.i64(0))) *
                  static_cast<uint64_t>(std::max<int64_t>(0, page_size.i64(0)));
  }
  read_enums();
  read_versions();
  read_payload_schemas();
  std::unique_ptr<ApiReader> api_reader = start_api_reader();
  read_kernels();
  read_memcpys();
  read_memsets();
  if (api_reader) merge_api(*api_reader);
  else
    for (const char* t : kApiTables) read_api(t);
  read_syncs();
  read_nvtx();
  read_thread_names();
  read_counted_only();
  // Rows of the tables no scan read (counted only, or lacking a required column).
  for (auto& t : report_.tables)
    if (t.present && !scanned_.count(t.name)) t.rows = db_.count_rows(t.name);
  return finish();
}

void check_header(std::string_view head, std::string_view name) {
  if (head.size() < sizeof kSqliteMagic || std::memcmp(head.data(), kSqliteMagic, sizeof kSqliteMagic) != 0)
    fail("{}: not an SQLite database, so not an nsys export (make one with `nsys export --type sqlite`)", name);
}

std::vector<Trace> import_open(sqlite3* raw, std::string_view name, std::string_view file_name,
                               const std::filesystem::path& file, NsysImportReport* report,
                               const NsysImportOptions& options, int64_t* budget) {
  Database db(raw, std::string(name));
  configure(raw, options, budget);
  NsysImportReport local;
  NsysImportReport& rep = report ? *report : local;
  rep = NsysImportReport{};
  Importer imp(db, file_name, options, rep);
  imp.set_file(file);
  return imp.run();
}

}  // namespace

uint64_t NsysImportReport::rows(std::string_view name) const {
  const Table* t = table(name);
  return t ? t->rows : 0;
}

const NsysImportReport::Table* NsysImportReport::table(std::string_view name) const {
  for (const auto& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<Trace> import_nsys_file(const std::filesystem::path& path, NsysImportReport* report,
                                    const NsysImportOptions& options) {
  const std::string name = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("{}: is a directory, not an nsys export", name);
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } const file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) fail("{}: cannot open: {}", name, std::strerror(errno));
  char head[20] = {};
  const ssize_t n = ::pread(file.fd, head, sizeof head, 0);
  if (n < 0) fail("{}: cannot read: {}", name, std::strerror(errno));
  check_header(std::string_view(head, static_cast<size_t>(n)), name);
  // A WAL-mode export reads as its file holds it; a log beside it with frames
  // (more than its 32-byte header) holds changes that are not in the file,
  // which a read-only reader cannot apply: refused rather than read without them.
  if (n == sizeof head && (head[18] == 2 || head[19] == 2))
    if (const uint64_t pending = pending_wal_bytes(path))
      fail(
          "{}: its write-ahead log {}-wal holds {} bytes of changes not yet in the file, which a read-only reader "
          "cannot apply; fold them in first: sqlite3 {} 'PRAGMA wal_checkpoint(TRUNCATE)'",
          name, name, pending, name);
  // A hot journal beside it: the database is the file with the journal
  // rolled back, in a private copy (the input is never written).
  std::optional<RolledBackCopy> rolled_back;
  if (has_hot_journal(path)) rolled_back.emplace(path);
  const std::filesystem::path& read = rolled_back ? rolled_back->path() : path;
  // SQLite reads the file itself, page by page (never mapped: sqlite_input.hpp);
  // a second connection may open it again (NsysImportOptions::parallel_min_api_rows).
  std::string open_error;
  sqlite3* db = open_sqlite_input(read, &open_error);
  if (!db) fail("{}: cannot open the SQLite database: {}", name, open_error);
  int64_t budget = 0;
  return import_open(db, name, path.filename().string(), read, report, options, &budget);
}

std::vector<Trace> import_nsys_bytes(std::string_view bytes, std::string_view name, NsysImportReport* report,
                                     const NsysImportOptions& options) {
  check_header(bytes, name);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    fail("{}: cannot open an in-memory SQLite database", name);
  }
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size()));
  if (!copy) {
    sqlite3_close(db);
    throw std::bad_alloc();
  }
  std::memcpy(copy, bytes.data(), bytes.size());
  // A WAL-mode image (header bytes 18-19 = 2) reads as a rollback-journal one:
  // an image in memory has no -wal file, and SQLite's memory files cannot be in WAL mode.
  if (bytes.size() >= 20 && (copy[18] == 2 || copy[19] == 2)) copy[18] = copy[19] = 1;
  // FREEONCLOSE hands the copy to SQLite, even when deserializing fails.
  if (sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(bytes.size()),
                          static_cast<sqlite3_int64>(bytes.size()),
                          SQLITE_DESERIALIZE_READONLY | SQLITE_DESERIALIZE_FREEONCLOSE) != SQLITE_OK) {
    const std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    fail("{}: cannot read the SQLite database: {}", name, msg);
  }
  int64_t budget = 0;
  return import_open(db, name, std::filesystem::path(std::string(name)).filename().string(), {}, report, options,
                     &budget);
}

int32_t rank_from_file_name(std::string_view file_name) {
  // Drop the extensions ("x.3.sqlite" keeps "x.3", "rank3.nsys-rep.sqlite" keeps "rank3").
  std::string_view stem = file_name;
  for (std::string_view ext : {".sqlite", ".sqlite3", ".db", ".nsys-rep", ".qdrep"})
    if (stem.size() > ext.size() && stem.substr(stem.size() - ext.size()) == ext) stem.remove_suffix(ext.size());
  if (auto r = rank_in_text(stem)) return *r;
  // A trailing number set off by a separator: "x_3", "x-3", "x.3".
  size_t k = stem.size();
  while (k > 0 && stem[k - 1] >= '0' && stem[k - 1] <= '9') --k;
  if (k == stem.size() || k == 0) return -1;
  const char sep = stem[k - 1];
  if (sep != '_' && sep != '-' && sep != '.') return -1;
  return parse_small_int(stem.substr(k)).value_or(-1);
}

}  // namespace scalescope::trace
