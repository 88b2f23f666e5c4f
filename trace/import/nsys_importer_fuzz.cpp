// libFuzzer target: any bytes as an nsys SQLite export (through
// sqlite3_deserialize, no file) must give Traces or a scalescope::Error,
// never a crash, a hang or unbounded memory. Seeds: tests/fuzz/nsys_importer/
// (small exports of each schema variant, and row programs).
//
// Bytes that are not an SQLite image are read as a row program: they build an
// export with the importer's tables whose columns are declared without a type,
// so that every SQLite type reaches every column the row readers read (text
// where an integer belongs, NULLs, reals, blobs, huge and negative numbers,
// string ids StringIds lacks), and optionally one table without its `start`
// column. Mutating raw SQLite pages rarely gets that far.
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "trace/import/nsys_importer.hpp"

namespace {

struct Table {
  const char* name;
  std::array<const char*, 12> columns;  // nullptr-terminated when shorter
};

// The columns each row reader selects (trace/import/nsys_importer.cpp).
constexpr Table kTables[] = {
    {"CUPTI_ACTIVITY_KIND_KERNEL",
     {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "demangledName", "shortName", "gridX",
      "registersPerThread", "staticSharedMemory", "dynamicSharedMemory"}},
    {"CUPTI_ACTIVITY_KIND_MEMCPY",
     {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "srcKind", "dstKind",
      "srcDeviceId", "dstDeviceId"}},
    {"CUPTI_ACTIVITY_KIND_MEMSET",
     {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "bytes", "memKind"}},
    {"CUPTI_ACTIVITY_KIND_RUNTIME",
     {"start", "end", "eventClass", "globalTid", "correlationId", "nameId", "name", "returnValue"}},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
     {"start", "end", "globalPid", "deviceId", "streamId", "correlationId", "syncType", "eventId"}},
    {"NVTX_EVENTS", {"start", "end", "eventType", "globalTid", "text", "textId", "domainId", "binaryData"}},
    {"ThreadNames", {"nameId", "globalTid"}},
    {"StringIds", {"id", "value"}},
};
constexpr size_t kTableCount = sizeof kTables / sizeof kTables[0];
constexpr int kMaxRows = 512;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }
  std::string_view bytes(size_t n) {
    n = std::min(n, size_ - std::min(at_, size_));
    const std::string_view s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

// One value of any SQLite type, drawn from the program.
void bind_value(sqlite3_stmt* st, int i, Reader& in) {
  static constexpr int64_t kInteresting[] = {0,         -1,        INT64_MAX,  INT64_MIN, int64_t{1} << 32,
                                             INT32_MAX, INT32_MIN, UINT32_MAX, 1000000,   int64_t{1} << 48};
  switch (in.byte() % 9) {
    case 0: sqlite3_bind_null(st, i); break;
    case 1: sqlite3_bind_int64(st, i, in.byte()); break;  // small ids, codes, string ids (present or not)
    case 2: sqlite3_bind_int64(st, i, static_cast<int64_t>(in.u64())); break;
    case 3: {  // text, also numeric-looking text ("12", "0x10", "1e9")
      const std::string_view s = in.bytes(in.byte() % 64);
      sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    case 4: {  // any double: fractions, NaN, infinities, integers stored as reals
      const uint64_t bits = in.u64();
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      sqlite3_bind_double(st, i, d);
      break;
    }
    case 5: {
      const std::string_view s = in.bytes(in.byte() % 64);
      sqlite3_bind_blob(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      break;
    }
    case 6: {  // a serialized process or thread id: (host << 48) | (pid << 24) | tid
      const uint8_t pid = in.byte() % 4 + 1, tid = in.byte() % 4;
      sqlite3_bind_int64(st, i, (int64_t{1} << 48) | (int64_t{pid} << 24) | (int64_t{pid} + tid));
      break;
    }
    case 7: sqlite3_bind_int64(st, i, kInteresting[in.byte() % (sizeof kInteresting / sizeof kInteresting[0])]); break;
    default: sqlite3_bind_int64(st, i, int64_t{in.byte()} * 1000); break;  // a time
  }
}

// The export a row program describes, as an SQLite image; empty when SQLite fails.
std::string build_export(const uint8_t* data, size_t size) {
  Reader in(data, size);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {};
  }
  // The first byte may take `start` from one table (named `begin` instead).
  const size_t without_start = in.byte();
  std::array<sqlite3_stmt*, kTableCount> inserts{};
  bool ok = true;
  for (size_t t = 0; t < kTableCount && ok; ++t) {
    std::string create = std::string("CREATE TABLE \"") + kTables[t].name + "\" (", insert = "INSERT INTO \"";
    insert += std::string(kTables[t].name) + "\" VALUES (";
    int n = 0;
    for (const char* c : kTables[t].columns) {
      if (!c) break;
      const bool renamed = t == without_start && std::string_view(c) == "start";
      create += std::string(n ? ", " : "") + (renamed ? "begin" : c);
      insert += n ? ", ?" : "?";
      ++n;
    }
    create += ")";
    insert += ")";
    ok = sqlite3_exec(db, create.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK &&
         sqlite3_prepare_v2(db, insert.c_str(), -1, &inserts[t], nullptr) == SQLITE_OK;
  }
  for (int rows = 0; ok && rows < kMaxRows && !in.done(); ++rows) {
    const size_t t = in.byte() % kTableCount;
    sqlite3_stmt* st = inserts[t];
    const int n = sqlite3_bind_parameter_count(st);
    for (int i = 1; i <= n; ++i) bind_value(st, i, in);
    sqlite3_step(st);  // a duplicate StringIds id, for one, is simply not inserted
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
  for (sqlite3_stmt* st : inserts) sqlite3_finalize(st);
  std::string image;
  sqlite3_int64 bytes = 0;
  if (ok)
    if (unsigned char* p = sqlite3_serialize(db, "main", &bytes, 0)) {
      image.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(bytes));
      sqlite3_free(p);
    }
  sqlite3_close(db);
  return image;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scalescope::trace::NsysImportOptions options;
  options.max_string_bytes = 4096;
  options.max_sql_steps = 20'000'000;  // a hostile schema cannot make a query endless
  constexpr std::string_view kMagic("SQLite format 3\0", 16);
  std::string built;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.substr(0, kMagic.size()) != kMagic) {
    built = build_export(data, size);
    if (built.empty()) return 0;
    input = built;
  }
  try {
    scalescope::trace::NsysImportReport report;
    auto traces = scalescope::trace::import_nsys_bytes(input, "fuzz.sqlite", &report, options);
    for (const auto& t : traces) (void)t.event_count();
  } catch (const scalescope::Error&) {}
  return 0;
}
