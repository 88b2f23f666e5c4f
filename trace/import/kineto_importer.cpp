#include "trace/import/kineto_importer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/memory_budget.hpp"
#include "base/text_output.hpp"
#include "trace/model/nccl_kernel_name.hpp"

namespace scalescope::trace {
namespace {

namespace od = simdjson::ondemand;

// ---- input: a padded buffer holding the whole JSON text -------------------

// malloc'ed so that growing while inflating can use realloc (mremap on Linux:
// no copy, so a gzip input never needs twice the JSON in memory).
struct PaddedBuffer {
  char* data = nullptr;
  size_t size = 0, capacity = 0;  // capacity excludes the padding
  PaddedBuffer() = default;
  PaddedBuffer(const PaddedBuffer&) = delete;
  PaddedBuffer& operator=(const PaddedBuffer&) = delete;
  ~PaddedBuffer() { std::free(data); }
  void reserve(size_t n) {
    if (n <= capacity && data) return;
    void* p = std::realloc(data, n + simdjson::SIMDJSON_PADDING);
    if (!p) throw std::bad_alloc();
    data = static_cast<char*>(p);
    capacity = n;
    advise_huge_pages();
  }
  // Room for n bytes whose old content is not needed (a new file into a
  // reused buffer): no copy of the old bytes when it must grow.
  void reserve_empty(size_t n) {
    size = 0;
    if (n <= capacity && data) return;
    std::free(data);
    data = nullptr;
    capacity = 0;
    reserve(n);
  }
  // Faulting in a 170 MB JSON buffer 4 KiB at a time cost ~0.1 s of the
  // import (a sixth of it); 2 MiB pages, where the kernel offers them on
  // request (transparent_hugepage=madvise), make that ~500 times fewer faults.
  void advise_huge_pages() const {
    constexpr uintptr_t kHuge = uintptr_t{2} << 20;
    if (capacity < 4 * kHuge) return;
    const auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
    const auto end = (reinterpret_cast<uintptr_t>(data) + capacity) & ~(kHuge - 1);
    if (end > begin)
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice only: errors are harmless
  }
  void release() {
    std::free(data);
    data = nullptr;
    size = capacity = 0;
  }
  void pad() { std::memset(data + size, 0, simdjson::SIMDJSON_PADDING); }
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

void read_whole_file(const std::filesystem::path& path, PaddedBuffer& out, uint64_t limit) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("{}: is a directory, not a Kineto trace", path.string());
  // O_NONBLOCK and a regular-file check: a FIFO must be refused, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file (a FIFO, device or socket); give a Kineto JSON file", path.string());
  }
  std::unique_ptr<std::FILE, FileCloser> f(::fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  }
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("{}: cannot read: {}", path.string(), ec.message());
  if (size > limit)
    fail("{}: file of {} bytes is larger than the {} bytes the importer accepts", path.string(), size, limit);
  out.reserve_empty(size);
  if (size && std::fread(out.data, 1, size, f.get()) != size) fail("{}: read failed", path.string());
  out.size = size;
  out.pad();
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Inflates a (possibly multi-member) gzip stream into `out`, refusing output
// larger than `limit` so that a decompression bomb cannot take the machine.
// libdeflate inflates a whole buffer at once, about twice as fast as zlib's
// streaming inflate: on the 170 MB trace zlib alone cost ~0.25 s of the import.
void gunzip(std::string_view in, std::string_view name, PaddedBuffer& out, uint64_t limit, const std::string& why) {
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> inflater(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (!inflater) fail("{}: cannot start gzip decompression (out of memory)", name);
  out.size = 0;
  size_t in_pos = 0;
  uint64_t trailer_claim = 0;
  while (in_pos < in.size()) {
    const auto* member = reinterpret_cast<const unsigned char*>(in.data() + in_pos);
    const size_t member_left = in.size() - in_pos;
    // ISIZE (a member's last 4 bytes) is its size modulo 4 GiB, exact for one
    // member below 4 GiB: the first guess. The output grows when it is wrong.
    uint64_t guess = 0;
    if (in_pos == 0 && member_left >= 18) {
      const auto* p = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
      guess = uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
      // The true size is at least ISIZE (it is the size modulo 4 GiB) when the
      // stream is whole; a cut stream's last bytes are not a trailer at all.
      // So over the limit it only sizes the one attempt, up to the limit:
      // a bomb stops there, a truncated stream says so.
      if (guess > limit) {
        trailer_claim = guess;
        guess = limit;
      }
    }
    uint64_t room = std::max<uint64_t>(guess, member_left * 2 + 4096);
    for (;;) {
      room = std::min<uint64_t>(room, limit - out.size);
      if (out.size == 0) out.reserve_empty(room);  // a reused buffer: its old bytes are not copied
      else out.reserve(out.size + room);
      size_t used_in = 0, produced = 0;
      const auto rc = libdeflate_gzip_decompress_ex(inflater.get(), member, member_left, out.data + out.size,
                                                    static_cast<size_t>(room), &used_in, &produced);
      if (rc == LIBDEFLATE_SUCCESS) {
        out.size += produced;
        in_pos += used_in;
        break;
      }
      if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (out.size + room >= limit) {
          if (trailer_claim > 0)
            fail("{}: decompresses to more than {} bytes (its gzip trailer announces {}); {}", name, limit,
                 trailer_claim, why);
          fail("{}: decompresses to more than {} bytes; {}", name, limit, why);
        }
        room *= 2;
        continue;
      }
      // libdeflate reports a cut-off stream as bad data: say which it is likely to be.
      if (member_left < 18 || in_pos + member_left == in.size())
        fail("{}: truncated gzip stream, or corrupt data in its last member", name);
      fail("{}: corrupt gzip stream", name);
    }
    // Skip zero padding some tools add; another member follows otherwise.
    while (in_pos < in.size() && in[in_pos] == 0) ++in_pos;
  }
  out.pad();
}

// Copies `json` into `out` with each byte that is not part of valid UTF-8
// replaced by U+FFFD; returns how many were replaced.
uint64_t repair_utf8(const char* json, size_t size, PaddedBuffer& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(json);
  uint64_t bad = 0;
  size_t extra = 0;
  for (size_t i = 0; i < size;) {
    const size_t len = detail::utf8_sequence(p, i, size);
    if (len == 0) {
      ++bad;
      extra += 2;  // 1 byte becomes 3
      ++i;
    } else {
      i += len;
    }
  }
  if (bad == 0) return 0;
  out.reserve(size + extra);
  char* o = out.data;
  for (size_t i = 0; i < size;) {
    const size_t len = detail::utf8_sequence(p, i, size);
    if (len == 0) {
      *o++ = '\xEF';
      *o++ = '\xBF';
      *o++ = '\xBD';
      ++i;
    } else {
      std::memcpy(o, p + i, len);
      o += len;
      i += len;
    }
  }
  out.size = static_cast<size_t>(o - out.data);
  out.pad();
  return bad;
}

// ---- small exact parsers over raw JSON tokens ---------------------------------

// Microseconds as JSON number text ("5120481388009.286") to integer ns,
// exactly: Kineto prints ns resolution and a double would lose it.
bool parse_us_as_ns(std::string_view tok, int64_t& out) {
  bool neg = false;
  size_t i = 0;
  if (i < tok.size() && tok[i] == '-') {
    neg = true;
    ++i;
  }
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++digits) {
    if (digits >= 15) return false;  // > 3e7 years: not a timestamp
    whole = whole * 10 + (tok[i] - '0');
  }
  if (digits == 0) return false;
  int64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    size_t start = i;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
      if (frac_digits < 3) {
        frac = frac * 10 + (tok[i] - '0');
        ++frac_digits;
      } else if (i == start + 3) {
        round_up = tok[i] >= '5';  // sub-ns digits: round to nearest ns
      }
    }
    if (i == start) return false;
  }
  if (i != tok.size()) {
    // Exponent form (rare): go through double, rounding to ns.
    double v = 0;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || p != tok.data() + tok.size() || !std::isfinite(v) || std::fabs(v) > 9e15) return false;
    out = std::llround(v * 1000.0);
    return true;
  }
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
  out = neg ? -ns : ns;
  return true;
}

// An integer JSON number; integral doubles ("3.0") are accepted too.
bool parse_int(std::string_view tok, int64_t& out) {
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  if (ec == std::errc() && p == tok.data() + tok.size()) return true;
  double v = 0;
  auto [q, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec2 != std::errc() || q != tok.data() + tok.size() || !std::isfinite(v) || v != std::floor(v) ||
      std::fabs(v) > 9.2e18)
    return false;
  out = static_cast<int64_t>(v);
  return true;
}

bool hex4(std::string_view s, size_t i, uint32_t& v) {
  if (i + 4 > s.size()) return false;
  v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else return false;
  }
  return true;
}

// Unescapes the body of a JSON string (simdjson validated its structure but
// not the escapes' meaning). Invalid escapes become U+FFFD.
void unescape_into(std::string_view body, std::string& out) {
  out.clear();
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(body, i + 1, cp)) {
          detail::append_utf8(out, 0xFFFD);
          break;
        }
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo = 0;
          if (i + 2 < body.size() && body[i + 1] == '\\' && body[i + 2] == 'u' && hex4(body, i + 3, lo) &&
              lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        detail::append_utf8(out, cp);
        break;
      }
      default: detail::append_utf8(out, 0xFFFD); break;
    }
  }
}

// ---- one event's fields ----------------------------------------------------

// A string field: a view into the JSON text when it has no escapes (almost
// always), else into `scratch`. Valid until the next event.
struct Str {
  std::string_view view;
  std::string scratch;
  bool present = false;
};

struct Num {
  int64_t value = 0;
  bool present = false;
};

struct Args {
  Num device, stream, correlation, cbid, registers, shared_memory, bytes, in_nelems, out_nelems, group_size, seq,
      wait_stream;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  Str collective, dtype, pg_name, meta_name, sync_kind;
  void clear() {
    device = stream = correlation = cbid = registers = shared_memory = bytes = in_nelems = out_nelems = group_size =
        seq = wait_stream = Num{};
    for (int i = 0; i < 3; ++i) grid[i] = block[i] = 0;
    collective.present = dtype.present = pg_name.present = meta_name.present = sync_kind.present = false;
  }
};

struct Event {
  Str ph, cat, name;
  Num pid, tid, id;
  int64_t ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, bad = false;
  Args args;
  void clear() {
    ph.present = cat.present = name.present = false;
    pid = tid = id = Num{};
    has_ts = has_dur = bad = false;
    args.clear();
  }
};

// A scalar's JSON text: simdjson's raw token runs up to the next structural
// character, so it may carry trailing whitespace.
std::string_view token_of(od::value& v) {
  std::string_view t = v.raw_json_token();
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  return t;
}

// A key's text (keys with escapes never match a known key: returned empty).
std::string_view key_of(od::field& field) {
  const char* raw = field.key().raw();
  const char* end = raw;
  while (*end != '"') {
    if (*end == '\\') return {};
    ++end;
  }
  return {raw, static_cast<size_t>(end - raw)};
}

enum class Cat : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kSync,
  kUserAnnotation,
  kGpuUserAnnotation,
  kCpuOp,
  kPythonFunction,
  kIgnored,  // overhead, Trace spans
  kFlow,
  kFwdBwdFlow,  // PyTorch's forward -> backward links between cpu_ops
  kMetadata,
  kInstant,
  kUnknown,
};

std::string_view mapped_name(Cat c) {
  switch (c) {
    case Cat::kKernel: return "kernels (+nccl)";
    case Cat::kMemcpy: return "memcpys";
    case Cat::kMemset: return "memsets";
    case Cat::kRuntime:
    case Cat::kDriver: return "api (+syncs)";
    case Cat::kSync: return "syncs";
    case Cat::kUserAnnotation:
    case Cat::kGpuUserAnnotation:
    case Cat::kCpuOp:
    case Cat::kPythonFunction: return "nvtx";
    case Cat::kIgnored: return "counted only";
    case Cat::kFlow: return "flows (implied by correlation)";
    case Cat::kFwdBwdFlow: return "nvtx links (forward to backward)";
    case Cat::kMetadata: return "metadata";
    case Cat::kInstant: return "counted only";
    case Cat::kUnknown: break;
  }
  return "unknown";
}

Cat classify(std::string_view cat, std::string_view ph) {
  if (ph == "X") {
    if (cat == "kernel") return Cat::kKernel;
    if (cat == "cpu_op") return Cat::kCpuOp;
    if (cat == "cuda_runtime") return Cat::kRuntime;
    if (cat == "cuda_driver") return Cat::kDriver;
    if (cat == "gpu_memcpy") return Cat::kMemcpy;
    if (cat == "gpu_memset") return Cat::kMemset;
    if (cat == "user_annotation") return Cat::kUserAnnotation;
    if (cat == "gpu_user_annotation") return Cat::kGpuUserAnnotation;
    if (cat == "python_function") return Cat::kPythonFunction;
    if (cat == "cuda_sync") return Cat::kSync;
    if (cat == "overhead" || cat == "Trace") return Cat::kIgnored;
    return Cat::kUnknown;
  }
  if (ph == "s" || ph == "f" || ph == "t") return cat == "fwdbwd" ? Cat::kFwdBwdFlow : Cat::kFlow;
  if (ph == "M") return Cat::kMetadata;
  if (ph == "i" || ph == "I") return Cat::kInstant;
  return Cat::kUnknown;
}

SyncKind sync_kind_of_api(std::string_view name) {
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize") return SyncKind::kStreamSynchronize;
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize") return SyncKind::kDeviceSynchronize;
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize") return SyncKind::kEventSynchronize;
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") return SyncKind::kStreamWaitEvent;
  return SyncKind::kUnknown;
}

// Kineto's cuda_sync events: "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event".
SyncKind sync_kind_of_kineto(std::string_view kind) {
  if (kind.find("Wait") != std::string_view::npos) return SyncKind::kStreamWaitEvent;
  if (kind.find("Stream") != std::string_view::npos) return SyncKind::kStreamSynchronize;
  if (kind.find("Event") != std::string_view::npos) return SyncKind::kEventSynchronize;
  if (kind.find("Context") != std::string_view::npos || kind.find("Device") != std::string_view::npos)
    return SyncKind::kDeviceSynchronize;
  return SyncKind::kUnknown;
}

// Kineto's spellings, in the order of the enums' values ("" is kUnknown).
MemoryKind memory_kind_of(std::string_view s) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"", "Pageable", "Pinned", "Device", "Managed", "Array"});
  return value_by_name<MemoryKind>(kNames, s).value_or(MemoryKind::kUnknown);
}

MemcpyKind memcpy_kind_of(std::string_view s) {
  static constexpr auto kNames = std::to_array<std::string_view>({"", "HtoD", "DtoH", "DtoD", "PtoP", "HtoH"});
  return value_by_name<MemcpyKind>(kNames, s).value_or(MemcpyKind::kUnknown);
}

// "Memcpy HtoD (Pinned -> Device)" -> kind HtoD, src pinned, dst device.
void parse_memcpy_name(std::string_view name, MemcpyRecord& r) {
  constexpr std::string_view kPrefix = "Memcpy ";
  if (name.substr(0, kPrefix.size()) != kPrefix) return;
  name.remove_prefix(kPrefix.size());
  size_t sp = name.find(' ');
  r.kind = memcpy_kind_of(name.substr(0, sp));
  if (sp == std::string_view::npos) return;
  size_t open = name.find('(', sp), arrow = name.find(" -> ", sp), close = name.rfind(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos || close == std::string_view::npos ||
      !(open < arrow && arrow < close))
    return;
  r.src_kind = memory_kind_of(name.substr(open + 1, arrow - open - 1));
  r.dst_kind = memory_kind_of(name.substr(arrow + 4, close - arrow - 4));
}

// "Memset (Device)" -> device.
MemoryKind parse_memset_name(std::string_view name) {
  size_t open = name.find('('), close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return MemoryKind::kUnknown;
  return memory_kind_of(name.substr(open + 1, close - open - 1));
}

// Element size of PyTorch's ScalarType names and NCCL's kernel-name types.
uint32_t dtype_bytes(std::string_view t) {
  struct Entry {
    std::string_view name;
    uint32_t bytes;
  };
  static constexpr Entry kTypes[] = {
      {"Float", 4},
      {"float", 4},
      {"f32", 4},
      {"Half", 2},
      {"half", 2},
      {"f16", 2},
      {"BFloat16", 2},
      {"bf16", 2},
      {"Double", 8},
      {"double", 8},
      {"f64", 8},
      {"Long", 8},
      {"i64", 8},
      {"u64", 8},
      {"Int", 4},
      {"i32", 4},
      {"u32", 4},
      {"Short", 2},
      {"Char", 1},
      {"Byte", 1},
      {"i8", 1},
      {"u8", 1},
      {"Bool", 1},
      {"Float8_e4m3fn", 1},
      {"Float8_e5m2", 1},
      {"f8e4m3", 1},
      {"f8e5m2", 1},
      {"ComplexFloat", 8},
      {"ComplexDouble", 16},
      {"ComplexHalf", 4},
  };
  for (const auto& e : kTypes)
    if (e.name == t) return e.bytes;
  return 0;
}

// ---- the importer ----------------------------------------------------------

class Importer {
 public:
  Importer(std::string_view name, const KinetoImportOptions& options, ImportReport& report)
      : name_(name), options_(options), report_(report) {}

  Trace run(const char* json, size_t size, size_t capacity, od::parser& parser);
  // The same import with the traceEvents array parsed piece by piece (see
  // import_json_text); nullopt when the text is not laid out for it. Throws
  // Error on anything the one-pass run() might word differently.
  std::optional<Trace> run_in_pieces(char* json, size_t size, size_t capacity, od::parser& piece_parser,
                                     size_t piece_bytes);

 private:
  [[noreturn]] void json_error(simdjson::error_code ec) const;
  void check(simdjson::error_code ec) const {
    if (ec) json_error(ec);
  }
  // Calls f(key, value, type) for every field of `obj`.
  template <typename F>
  void for_each_field(od::object& obj, F&& f) {
    for (auto fr : obj) {
      od::field field;
      check(std::move(fr).get(field));
      const std::string_view key = key_of(field);
      od::value val = field.value();
      od::json_type vt;
      check(val.type().get(vt));
      f(key, val, vt);
    }
  }
  // The same for `v` when it is an object; false, calling nothing, when not.
  template <typename F>
  bool for_each_field(od::value& v, F&& f) {
    od::json_type t;
    check(v.type().get(t));
    if (t != od::json_type::object) return false;
    od::object obj;
    check(v.get_object().get(obj));
    for_each_field(obj, f);
    return true;
  }
  // Reads a string value (already known to be a string) into `s`.
  void read_string(od::value& v, Str& s);
  bool read_number(od::value& v, Num& n);
  void read_dims(od::value& v, uint32_t (&dims)[3]);
  void read_args(od::value& v, Args& a);
  void read_event(od::object& obj, Event& e);
  void handle_event(Event& e);
  // handle_event's steps by category; start and end are checked already.
  void keep_metadata(const Event& e);
  void add_kernel(const Event& e, Timestamp start, Timestamp end);
  void add_nccl_kernel(const Event& e, const KernelRecord& r, Timestamp start, Timestamp end);
  void add_memcpy(const Event& e, Timestamp start, Timestamp end);
  void add_memset(const Event& e, Timestamp start, Timestamp end);
  void add_api_call(const Event& e, Cat c, Timestamp start, Timestamp end);
  void add_sync(const Event& e, Timestamp start, Timestamp end);
  void add_range(const Event& e, Cat c, Timestamp start, Timestamp end);
  void read_events(od::value& val);
  // The root object's members; `carved` (when set) is where the traceEvents
  // array was cut out of this text, and `pieces` reads it.
  void read_root(od::document& doc, const char* carved, const std::function<void()>& pieces);
  void start(const char* json, size_t size);
  void read_device_properties(od::value& v);
  void read_distributed_info(od::value& v);
  void read_process_groups(od::value& v);
  ImportReport::Category& category(std::string_view cat, std::string_view ph);
  void malformed() {
    ++report_.malformed;
    trace_.problems.add(Problem::kMalformedEvent);
  }
  void finish();

  std::string_view name_;
  const KinetoImportOptions& options_;
  ImportReport& report_;
  Trace trace_;
  const char* json_begin_ = nullptr;
  od::document* doc_ = nullptr;

  std::vector<KernelRecord> kernels_;
  std::vector<MemcpyRecord> memcpys_;
  std::vector<MemsetRecord> memsets_;
  std::vector<ApiRecord> api_;
  std::vector<SyncRecord> syncs_;
  std::vector<NvtxRecord> nvtx_;
  std::vector<NcclRecord> nccl_;
  // One end of a fwdbwd flow: the cpu_op that encloses (tid, ts) gets the link.
  struct FlowEnd {
    int64_t id;
    uint32_t thread;
    Timestamp ts;
    bool start;
  };
  std::vector<FlowEnd> fwdbwd_;
  void link_forward_backward();
  // Reserves each record list for `factor` times its rows so far (the rest of
  // the text holds about as many per byte): no growth by copying, whose fresh
  // pages cost more than the copy (the cpu_op list was a sixth of an import).
  void reserve_ahead(double factor) {
    auto ahead = [factor](auto& v) { v.reserve(static_cast<size_t>(static_cast<double>(v.size()) * factor) + 64); };
    ahead(kernels_);
    ahead(memcpys_);
    ahead(memsets_);
    ahead(api_);
    ahead(syncs_);
    ahead(nvtx_);
    ahead(nccl_);
    ahead(fwdbwd_);
  }
  std::vector<Cat> category_cat_;  // parallel to report_.categories
  size_t last_category_ = 0;
  StringId domain_user_ = 0, domain_cpu_op_ = 0, domain_gpu_user_ = 0, domain_python_ = 0;
  int64_t host_pid_ = -1;
  PaddedBuffer repaired_;  // the JSON with invalid UTF-8 replaced, only when needed
};

void Importer::json_error(simdjson::error_code ec) const {
  size_t offset = 0;
  if (doc_) {
    const char* loc = nullptr;
    if (!doc_->current_location().get(loc) && loc >= json_begin_) offset = static_cast<size_t>(loc - json_begin_);
  }
  if (offset) fail("{}: invalid JSON near byte {}: {}", name_, offset, simdjson::error_message(ec));
  fail("{}: invalid JSON: {}", name_, simdjson::error_message(ec));
}

void Importer::read_string(od::value& v, Str& s) {
  std::string_view tok = token_of(v);
  if (tok.size() < 2 || tok.front() != '"' || tok.back() != '"') json_error(simdjson::STRING_ERROR);
  std::string_view body = tok.substr(1, tok.size() - 2);
  if (body.size() > options_.max_string_bytes)
    fail("{}: a string of {} bytes near byte {} is longer than the {} bytes allowed", name_, body.size(),
         tok.data() - json_begin_, options_.max_string_bytes);
  s.present = true;
  if (std::memchr(body.data(), '\\', body.size()) == nullptr) {
    s.view = body;
  } else {
    unescape_into(body, s.scratch);
    s.view = s.scratch;
  }
}

bool Importer::read_number(od::value& v, Num& n) {
  od::json_type t;
  check(v.type().get(t));
  if (t != od::json_type::number) return false;
  if (!parse_int(token_of(v), n.value)) return false;
  n.present = true;
  return true;
}

void Importer::read_dims(od::value& v, uint32_t (&dims)[3]) {
  od::json_type t;
  check(v.type().get(t));
  if (t != od::json_type::array) return;
  od::array arr;
  check(v.get_array().get(arr));
  int i = 0;
  for (auto item : arr) {
    od::value x;
    check(item.get(x));
    Num n;
    if (i < 3 && read_number(x, n) && n.value >= 0 && n.value <= UINT32_MAX) dims[i] = static_cast<uint32_t>(n.value);
    ++i;
  }
}

void Importer::read_args(od::value& v, Args& a) {
  for_each_field(v, [&](std::string_view key, od::value& val, od::json_type vt) {
    auto str = [&](Str& s) {
      if (vt == od::json_type::string) read_string(val, s);
    };
    auto num = [&](Num& n) {
      if (vt == od::json_type::number) read_number(val, n);
    };
    switch (key.size() ? key[0] : 0) {
      case 'b':
        if (key == "bytes") num(a.bytes);
        else if (key == "block") read_dims(val, a.block);
        break;
      case 'c':
        if (key == "correlation") num(a.correlation);
        else if (key == "cbid") num(a.cbid);
        else if (key == "cuda_sync_kind") str(a.sync_kind);
        break;
      case 'd':
        if (key == "device") num(a.device);
        else if (key == "dtype") str(a.dtype);
        break;
      case 'g':
        if (key == "grid") read_dims(val, a.grid);
        break;
      case 'n':
        if (key == "name") str(a.meta_name);
        break;
      case 'r':
        if (key == "registers per thread") num(a.registers);
        break;
      case 's':
        if (key == "stream") num(a.stream);
        else if (key == "shared memory") num(a.shared_memory);
        break;
      case 'w':
        if (key == "wait_on_stream") num(a.wait_stream);
        break;
      case 'C':
        if (key == "Collective name") str(a.collective);
        break;
      case 'G':
        if (key == "Group size") num(a.group_size);
        break;
      case 'I':
        if (key == "In msg nelems") num(a.in_nelems);
        break;
      case 'O':
        if (key == "Out msg nelems") num(a.out_nelems);
        break;
      case 'P':
        if (key == "Process Group Name") str(a.pg_name);
        break;
      case 'S':
        if (key == "Seq") num(a.seq);
        break;
      default: break;
    }
  });
}

void Importer::read_event(od::object& obj, Event& e) {
  for_each_field(obj, [&](std::string_view key, od::value& val, od::json_type vt) {
    if (key == "ph") {
      if (vt == od::json_type::string) read_string(val, e.ph);
      else e.bad = true;
    } else if (key == "cat") {
      if (vt == od::json_type::string) read_string(val, e.cat);
      else e.bad = true;
    } else if (key == "name") {
      if (vt == od::json_type::string) read_string(val, e.name);
      else e.bad = true;
    } else if (key == "ts") {
      if (vt == od::json_type::number && parse_us_as_ns(token_of(val), e.ts)) e.has_ts = true;
      else e.bad = true;
    } else if (key == "dur") {
      if (vt == od::json_type::number && parse_us_as_ns(token_of(val), e.dur)) e.has_dur = true;
      else e.bad = true;
    } else if (key == "pid") {
      if (vt == od::json_type::number) read_number(val, e.pid);
    } else if (key == "tid") {
      if (vt == od::json_type::number) read_number(val, e.tid);
    } else if (key == "id") {
      if (vt == od::json_type::number) read_number(val, e.id);
    } else if (key == "args") {
      read_args(val, e.args);
    }
  });
}

ImportReport::Category& Importer::category(std::string_view cat, std::string_view ph) {
  auto& cats = report_.categories;
  if (last_category_ < cats.size() && cats[last_category_].cat == cat && cats[last_category_].ph == ph)
    return cats[last_category_];
  for (size_t i = 0; i < cats.size(); ++i) {
    if (cats[i].cat == cat && cats[i].ph == ph) {
      last_category_ = i;
      return cats[i];
    }
  }
  // Bounded: a hostile file with a million categories shares one bucket.
  constexpr size_t kMaxCategories = 256;
  if (cats.size() >= kMaxCategories) {
    cat = "(other categories)";
    ph = "";
    for (size_t i = 0; i < cats.size(); ++i)
      if (cats[i].cat == cat) return cats[last_category_ = i];
  }
  Cat c = classify(cat, ph);
  cats.push_back({std::string(cat), std::string(ph), 0, std::string(mapped_name(c))});
  category_cat_.push_back(c);
  last_category_ = cats.size() - 1;
  return cats.back();
}

uint32_t as_u32(const Num& n, int64_t fallback = 0) {
  int64_t v = n.present ? n.value : fallback;
  return static_cast<uint32_t>(v);
}

// A device or stream id (the field, or the fallback when the field is absent)
// that a 32-bit unsigned column can hold: -3 or 2^32 + 1 would otherwise wrap
// into another device's id without a word.
bool fits_u32(const Num& n, int64_t fallback) {
  const int64_t v = n.present ? n.value : fallback;
  return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX);
}

// Where GPU work ran: its span, device (the event's pid where args lack it),
// stream (its tid) and correlation. False when the device is missing or
// either id does not fit.
template <typename Record>
bool place_gpu_work(const Event& e, Timestamp start, Timestamp end, Record& r) {
  const Args& a = e.args;
  if (!(a.device.present || e.pid.present)) return false;
  if (!fits_u32(a.device, e.pid.value) || !fits_u32(a.stream, e.tid.value)) return false;
  r.start = start;
  r.end = end;
  r.device = as_u32(a.device, e.pid.value);
  r.stream = as_u32(a.stream, e.tid.value);
  r.correlation = as_u32(a.correlation);
  return true;
}

uint64_t byte_count(const Num& bytes) {
  return bytes.present && bytes.value > 0 ? static_cast<uint64_t>(bytes.value) : 0;
}

void Importer::handle_event(Event& e) {
  ++report_.events;
  std::string_view ph = e.ph.present ? e.ph.view : std::string_view{};
  std::string_view cat = e.cat.present ? e.cat.view : std::string_view{};
  ImportReport::Category& counted = category(cat, ph);
  ++counted.events;
  Cat c = category_cat_[last_category_];
  if (c == Cat::kUnknown) {
    ++report_.unknown;
    trace_.problems.add(Problem::kUnknownEvent);
    return;
  }
  if (c == Cat::kFlow) {
    ++report_.flows;
    return;
  }
  if (c == Cat::kFwdBwdFlow) {
    ++report_.flows;
    if ((ph == "s" || ph == "f") && e.id.present && e.tid.present && e.has_ts && !e.bad)
      fwdbwd_.push_back({e.id.value, as_u32(e.tid), e.ts, ph == "s"});
    return;
  }
  if (c == Cat::kMetadata) return keep_metadata(e);
  if (c == Cat::kIgnored || c == Cat::kInstant) {
    ++report_.ignored;
    return;
  }
  // Every mapped category is a complete ("X") event: it needs ts and dur.
  if (e.bad || !e.has_ts || !e.has_dur || !e.name.present) {
    malformed();
    return;
  }
  Timestamp start = e.ts, end = e.ts + e.dur;
  if (e.dur < 0) {
    trace_.problems.add(Problem::kNegativeDuration);
    end = start;
  }
  switch (c) {
    case Cat::kKernel: return add_kernel(e, start, end);
    case Cat::kMemcpy: return add_memcpy(e, start, end);
    case Cat::kMemset: return add_memset(e, start, end);
    case Cat::kRuntime:
    case Cat::kDriver: return add_api_call(e, c, start, end);
    case Cat::kSync: return add_sync(e, start, end);
    case Cat::kUserAnnotation:
    case Cat::kGpuUserAnnotation:
    case Cat::kCpuOp:
    case Cat::kPythonFunction: return add_range(e, c, start, end);
    default: return;
  }
}

void Importer::keep_metadata(const Event& e) {
  // Process and thread names are small and useful for exporters; the sort
  // indices and labels of the viewer are not.
  std::string_view what = e.name.present ? e.name.view : std::string_view{};
  if ((what == "process_name" || what == "thread_name" || what == "process_labels") && e.args.meta_name.present &&
      e.pid.present && trace_.meta.extra.size() < 4096) {
    std::string key = fmt::format("kineto.{}.{}", what, e.pid.value);
    if (what == "thread_name") key += fmt::format(".{}", e.tid.value);
    trace_.meta.extra[key] = std::string(e.args.meta_name.view);
    ++report_.metadata_kept;
  } else {
    ++report_.metadata_dropped;
  }
}

void Importer::add_kernel(const Event& e, Timestamp start, Timestamp end) {
  const Args& a = e.args;
  KernelRecord r;
  if (!(a.stream.present || e.tid.present) || !place_gpu_work(e, start, end, r)) return malformed();
  r.name = trace_.strings.intern(e.name.view);
  r.grid_x = a.grid[0], r.grid_y = a.grid[1], r.grid_z = a.grid[2];
  r.block_x = a.block[0], r.block_y = a.block[1], r.block_z = a.block[2];
  r.registers_per_thread = as_u32(a.registers);
  r.shared_memory_bytes = as_u32(a.shared_memory);
  kernels_.push_back(r);
  if (e.name.view.substr(0, 4) == "nccl") add_nccl_kernel(e, r, start, end);
}

void Importer::add_nccl_kernel(const Event& e, const KernelRecord& r, Timestamp start, Timestamp end) {
  const Args& a = e.args;
  // The one parser of NCCL kernel names (trace/model/nccl_kernel_name.hpp).
  const NcclKernelName nn = parse_nccl_kernel_name(e.name.view).value_or(NcclKernelName{});
  NcclRecord n;
  n.start = start;
  n.end = end;
  n.device = r.device;
  n.stream = r.stream;
  n.op = a.collective.present ? nccl_op_from_name(a.collective.view) : NcclOp::kUnknown;
  if (n.op == NcclOp::kUnknown) n.op = nn.op;
  n.count = a.in_nelems.present && a.in_nelems.value > 0 ? static_cast<uint64_t>(a.in_nelems.value) : 0;
  uint32_t elem = a.dtype.present ? dtype_bytes(a.dtype.view) : 0;
  if (elem == 0) elem = dtype_bytes(nn.datatype);
  n.bytes = n.count * elem;
  std::string_view dtype = a.dtype.present ? a.dtype.view : std::string_view(nn.datatype);
  n.datatype = trace_.strings.intern(dtype);
  n.algorithm = trace_.strings.intern(nn.algorithm);
  n.protocol = trace_.strings.intern(nn.protocol);
  n.communicator = a.pg_name.present ? trace_.strings.intern(a.pg_name.view) : kNoString;
  n.sequence = a.seq.present ? a.seq.value : -1;
  n.group_size = a.group_size.present ? static_cast<int32_t>(a.group_size.value) : -1;
  n.correlation = r.correlation;
  nccl_.push_back(n);
}

void Importer::add_memcpy(const Event& e, Timestamp start, Timestamp end) {
  MemcpyRecord r;
  if (!place_gpu_work(e, start, end, r)) return malformed();
  r.bytes = byte_count(e.args.bytes);
  parse_memcpy_name(e.name.view, r);
  memcpys_.push_back(r);
}

void Importer::add_memset(const Event& e, Timestamp start, Timestamp end) {
  MemsetRecord r;
  if (!place_gpu_work(e, start, end, r)) return malformed();
  r.bytes = byte_count(e.args.bytes);
  r.dst_kind = parse_memset_name(e.name.view);
  memsets_.push_back(r);
}

void Importer::add_api_call(const Event& e, Cat c, Timestamp start, Timestamp end) {
  const Args& a = e.args;
  ApiRecord r;
  r.start = start;
  r.end = end;
  r.thread = as_u32(e.tid);
  r.domain = c == Cat::kRuntime ? ApiDomain::kRuntime : ApiDomain::kDriver;
  r.callback_id = as_u32(a.cbid);
  r.name = trace_.strings.intern(e.name.view);
  r.correlation = as_u32(a.correlation);
  api_.push_back(r);
  if (host_pid_ < 0 && e.pid.present) host_pid_ = e.pid.value;
  SyncKind sk = sync_kind_of_api(e.name.view);
  if (sk != SyncKind::kUnknown) {
    SyncRecord s;
    s.start = start;
    s.end = end;
    s.kind = sk;
    s.thread = r.thread;
    s.correlation = r.correlation;
    syncs_.push_back(s);
  }
}

void Importer::add_sync(const Event& e, Timestamp start, Timestamp end) {
  const Args& a = e.args;
  if (!fits_u32(a.device, e.pid.value) || !fits_u32(a.stream, 0)) return malformed();
  SyncRecord s;
  s.start = start;
  s.end = end;
  s.kind = sync_kind_of_kineto(a.sync_kind.present ? a.sync_kind.view : e.name.view);
  s.device = as_u32(a.device, e.pid.value);
  s.stream = as_u32(a.stream);
  s.correlation = as_u32(a.correlation);
  syncs_.push_back(s);
}

void Importer::add_range(const Event& e, Cat c, Timestamp start, Timestamp end) {
  const Args& a = e.args;
  NvtxRecord r;
  r.start = start;
  r.end = end;
  r.text = trace_.strings.intern(e.name.view);
  r.thread = as_u32(e.tid);
  if (c == Cat::kGpuUserAnnotation) {
    if (!fits_u32(a.device, e.pid.value) || as_u32(a.device, e.pid.value) > INT32_MAX ||
        !fits_u32(a.stream, e.tid.value))
      return malformed();
    r.domain = domain_gpu_user_;
    r.device = static_cast<int32_t>(as_u32(a.device, e.pid.value));
    r.thread = as_u32(a.stream, e.tid.value);
  } else if (c == Cat::kCpuOp && e.name.view.substr(0, 12) != "ProfilerStep") {
    r.domain = domain_cpu_op_;
  } else if (c == Cat::kPythonFunction) {
    r.domain = domain_python_;
  } else {
    r.domain = domain_user_;  // user_annotation, and ProfilerStep#N whatever its category
  }
  if (c != Cat::kGpuUserAnnotation && host_pid_ < 0 && e.pid.present) host_pid_ = e.pid.value;
  nvtx_.push_back(r);
}

void Importer::read_device_properties(od::value& v) {
  od::json_type t;
  check(v.type().get(t));
  if (t != od::json_type::array) return;
  od::array arr;
  check(v.get_array().get(arr));
  for (auto item : arr) {
    od::value dv;
    check(item.get(dv));
    DeviceInfo d;
    const bool object = for_each_field(dv, [&](std::string_view key, od::value& val, od::json_type vt) {
      Num n;
      if (vt == od::json_type::string && key == "name") {
        Str s;
        read_string(val, s);
        d.name = std::string(s.view);
      } else if (vt == od::json_type::number && read_number(val, n)) {
        if (key == "id") d.id = static_cast<uint32_t>(n.value);
        else if (key == "totalGlobalMem") d.memory_bytes = static_cast<uint64_t>(n.value);
        else if (key == "numSms") d.sm_count = static_cast<uint32_t>(n.value);
        else if (key == "computeMajor") d.compute_major = static_cast<int32_t>(n.value);
        else if (key == "computeMinor") d.compute_minor = static_cast<int32_t>(n.value);
      }
    });
    if (object && trace_.meta.devices.size() < 1024) trace_.meta.devices.push_back(std::move(d));
  }
}

void Importer::read_distributed_info(od::value& v) {
  for_each_field(v, [&](std::string_view key, od::value& val, od::json_type vt) {
    Num n;
    if (vt == od::json_type::number && read_number(val, n) && (key == "rank" || key == "world_size")) {
      // -1 is "not recorded"; anything else outside the 32-bit column's range
      // (4294967297 would wrap to rank 1) is counted and not used.
      const bool is_rank = key == "rank";
      if (n.value == -1) return;
      if (n.value < (is_rank ? 0 : 1) || n.value > INT32_MAX) {
        malformed();
        return;
      }
      (is_rank ? trace_.meta.rank : trace_.meta.world_size) = static_cast<int32_t>(n.value);
    } else if (vt == od::json_type::string && (key == "backend" || key == "nccl_version")) {
      Str s;
      read_string(val, s);
      trace_.meta.extra[fmt::format("kineto.{}", key)] = std::string(s.view);
    } else if (vt == od::json_type::array && key == "pg_config") {
      read_process_groups(val);
    }
  });
}

// distributedInfo.pg_config (PyTorch 2.2+): [{"pg_name": "0", "pg_desc":
// "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}].
// A group with no name or a rank out of range is counted as malformed and
// left out: a wrong group would put the wrong name on a communicator.
void Importer::read_process_groups(od::value& v) {
  od::array groups;
  check(v.get_array().get(groups));
  for (auto item : groups) {
    od::value gv;
    check(item.get(gv));
    if (trace_.meta.process_groups.size() >= kMaxProcessGroups) {
      malformed();
      continue;
    }
    ProcessGroup g;
    bool ok = true;
    const bool object = for_each_field(gv, [&](std::string_view key, od::value& val, od::json_type vt) {
      if (vt == od::json_type::string && (key == "pg_name" || key == "pg_desc" || key == "backend_config")) {
        Str s;
        read_string(val, s);
        (key == "pg_name" ? g.name : key == "pg_desc" ? g.description : g.backend) = std::string(s.view.substr(0, 256));
      } else if (vt == od::json_type::array && key == "ranks") {
        od::array ranks;
        check(val.get_array().get(ranks));
        for (auto r : ranks) {
          od::value rv;
          check(r.get(rv));
          Num n;
          if (!read_number(rv, n) || n.value < 0 || n.value > INT32_MAX || g.ranks.size() >= kMaxProcessGroupRanks) {
            ok = false;
            continue;
          }
          g.ranks.push_back(static_cast<int32_t>(n.value));
        }
      }
    });
    if (!object || !ok || g.name.empty()) {
      malformed();
      continue;
    }
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
    trace_.meta.process_groups.push_back(std::move(g));
  }
}

void Importer::start(const char* json, size_t size) {
  json_begin_ = json;
  report_.input = std::string(name_);
  report_.json_bytes = size;
  trace_.meta.source = "kineto";
  trace_.meta.producer_version = "scalescope kineto importer 1";
  domain_user_ = trace_.strings.intern("user_annotation");
  domain_cpu_op_ = trace_.strings.intern("cpu_op");
  domain_gpu_user_ = trace_.strings.intern("gpu_user_annotation");
  domain_python_ = trace_.strings.intern("python_function");
}

void Importer::read_events(od::value& val) {
  od::array events;
  check(val.get_array().get(events));
  Event e;
  for (auto item : events) {
    od::value ev;
    check(item.get(ev));
    od::json_type et;
    check(ev.type().get(et));
    if (et != od::json_type::object) {
      ++report_.events;
      malformed();
      continue;
    }
    od::object obj;
    check(ev.get_object().get(obj));
    e.clear();
    read_event(obj, e);
    handle_event(e);
  }
}

void Importer::read_root(od::document& doc, const char* carved, const std::function<void()>& pieces) {
  doc_ = &doc;
  od::json_type root_type;
  if (doc.type().get(root_type) || root_type != od::json_type::object)
    fail("{}: not a Kineto trace (the JSON is not an object with traceEvents)", name_);
  od::object root;
  check(doc.get_object().get(root));
  bool saw_events = false, read_carved = false;
  for_each_field(root, [&](std::string_view key, od::value& val, od::json_type vt) {
    if (key == "traceEvents") {
      if (vt != od::json_type::array) fail("{}: not a Kineto trace (traceEvents is not an array)", name_);
      saw_events = true;
      if (carved && val.raw_json_token().data() == carved) {
        // The "[]" left where the array was cut out: its events come in pieces.
        od::array empty;
        check(val.get_array().get(empty));
        for (auto item : empty) check(item.error());
        read_carved = true;
        pieces();
        doc_ = &doc;
      } else {
        read_events(val);
      }
    } else if (key == "deviceProperties") {
      read_device_properties(val);
    } else if (key == "distributedInfo") {
      read_distributed_info(val);
    } else if (key == "baseTimeNanoseconds" && vt == od::json_type::number) {
      Num n;
      if (read_number(val, n)) trace_.meta.clock.push_back(ClockAnchor{0, n.value});
    } else if ((key == "cuda_driver_version" || key == "cuda_runtime_version" || key == "cupti_version" ||
                key == "schemaVersion") &&
               vt == od::json_type::number) {
      trace_.meta.extra[fmt::format("kineto.{}", key)] = std::string(token_of(val));
    } else if ((key == "trace_id" || key == "traceName") && vt == od::json_type::string) {
      Str s;
      read_string(val, s);
      if (s.view.size() <= 4096) trace_.meta.extra[fmt::format("kineto.{}", key)] = std::string(s.view);
    }
  });
  // The On-Demand parser validates lazily: make sure nothing follows the root.
  const char* after = nullptr;
  if (!doc.current_location().get(after)) fail("{}: invalid JSON: trailing content after the root object", name_);
  if (!saw_events) fail("{}: not a Kineto trace (no traceEvents array)", name_);
  // The cut was not the root's traceEvents (it was inside some other value):
  // the one-pass import reads this text.
  if (carved && !read_carved) fail("{}: traceEvents not where it was cut", name_);
  doc_ = nullptr;
}

Trace Importer::run(const char* json, size_t size, size_t capacity, od::parser& parser) {
  start(json, size);
  od::document doc;
  auto ec = parser.iterate(json, size, capacity).get(doc);
  if (ec == simdjson::UTF8_ERROR) {
    // simdjson refuses a whole document for one bad byte. Repair only then (a
    // valid file pays nothing): each invalid byte becomes U+FFFD, counted.
    const uint64_t replaced = repair_utf8(json, size, repaired_);
    if (replaced > 0) {
      if (repaired_.size > options_.max_json_bytes)
        fail("{}: {} bytes of JSON after replacing invalid UTF-8 is more than the importer accepts", name_,
             repaired_.size);
      json = repaired_.data;
      size = repaired_.size;
      capacity = repaired_.capacity + simdjson::SIMDJSON_PADDING;
      json_begin_ = json;
      trace_.problems.add(Problem::kInvalidUtf8, replaced);
      ec = parser.iterate(json, size, capacity).get(doc);
    }
  }
  if (ec) json_error(ec);
  read_root(doc, nullptr, {});
  finish();
  return std::move(trace_);
}

std::optional<Trace> Importer::run_in_pieces(char* json, size_t size, size_t capacity, od::parser& piece_parser,
                                             size_t piece_bytes) {
  // Where the array is: after the first "traceEvents" key, up to a ']' near
  // the end. Only a guess (the key could sit in a string, the ']' in a string
  // after the array): read_root checks that the root's traceEvents is what was
  // cut out, and a wrong end leaves the last piece unbalanced.
  constexpr std::string_view kKey = "\"traceEvents\"";
  const void* key = memmem(json, size, kKey.data(), kKey.size());
  if (!key) return std::nullopt;
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  size_t pos = static_cast<size_t>(static_cast<const char*>(key) - json) + kKey.size();
  while (pos < size && is_space(json[pos])) ++pos;
  if (pos >= size || json[pos] != ':') return std::nullopt;
  ++pos;
  while (pos < size && is_space(json[pos])) ++pos;
  if (pos >= size || json[pos] != '[') return std::nullopt;
  const size_t open = pos;

  // The text without the array's contents ("traceEvents": []), parsed as the
  // root. The array's end is taken as the last ']' whose skeleton has whole
  // strings (a ']' in a string after the array gives an unclosed one).
  size_t close = size;
  PaddedBuffer skeleton;
  od::parser root_parser;
  od::document root_doc;
  for (int tries = 0;; ++tries) {
    const void* close_ptr = tries < 8 ? memrchr(json + open, ']', close - open) : nullptr;
    if (!close_ptr) return std::nullopt;
    close = static_cast<size_t>(static_cast<const char*>(close_ptr) - json);
    if (close - open < 2 * piece_bytes) return std::nullopt;  // one piece: no gain
    skeleton.reserve_empty(open + 1 + (size - close));
    std::memcpy(skeleton.data, json, open + 1);
    std::memcpy(skeleton.data + open + 1, json + close, size - close);
    skeleton.size = open + 1 + (size - close);
    skeleton.pad();
    if (!root_parser.iterate(skeleton.data, skeleton.size, skeleton.capacity + simdjson::SIMDJSON_PADDING)
             .get(root_doc))
      break;
  }

  start(json, size);
  read_root(root_doc, skeleton.data + open, [&] {
    // Pieces of about piece_bytes, cut after "},<newline>" (a raw newline is
    // never inside a JSON string); each is parsed as an array of its own,
    // "[" and "]" written over the commas around it for that time. (The
    // On-Demand parser sets no depth limit, so one level less changes nothing.)
    // The parser's structural index (4 bytes per token) then spans a piece,
    // not the whole text: the pages it touches are reused piece after piece.
    if (piece_parser.capacity() < 2 * piece_bytes) check(piece_parser.allocate(2 * piece_bytes));
    size_t from = open + 1;  // the piece's first byte; json[from - 1] is '[' or a comma
    while (from <= close) {
      size_t to = close;  // json[to] is the comma or ']' after the piece
      if (close - from > 2 * piece_bytes) {
        constexpr std::string_view kCut = "},\n";
        const void* cut = memmem(json + from + piece_bytes, close - from - piece_bytes, kCut.data(), kCut.size());
        if (cut) to = static_cast<size_t>(static_cast<const char*>(cut) - json) + 1;
      }
      // After a cut, a piece of only whitespace would hide a trailing comma.
      if (from > open + 1 && std::all_of(json + from, json + to, is_space))
        fail("{}: invalid JSON: a comma ends traceEvents", name_);
      struct Restore {
        char* at1;
        char* at2;
        char c1, c2;
        ~Restore() {
          *at1 = c1;
          *at2 = c2;
        }
      } restore{json + from - 1, json + to, json[from - 1], json[to]};
      json[from - 1] = '[';
      json[to] = ']';
      od::document doc;
      json_begin_ = json + from - 1;
      check(piece_parser.iterate(json + from - 1, to - from + 2, capacity - (from - 1)).get(doc));
      doc_ = &doc;
      od::value val;
      check(doc.get_value().get(val));
      read_events(val);
      const char* after = nullptr;
      if (!doc.current_location().get(after)) fail("{}: invalid JSON: a piece of traceEvents is not whole", name_);
      ++report_.pieces;
      // After the first piece: room for the whole text's rows, with a margin.
      if (report_.pieces == 1) reserve_ahead(1.25 * static_cast<double>(close - open) / static_cast<double>(to - open));
      doc_ = nullptr;
      from = to + 1;
    }
    json_begin_ = json;
  });
  finish();
  return std::move(trace_);
}

template <typename Record>
void sort_by_start(std::vector<Record>& v) {
  auto by_start = [](const Record& a, const Record& b) { return a.start < b.start; };
  // Most tables arrive in start order already; std::stable_sort would still
  // take a buffer of half the table (fresh pages) to merge into.
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::stable_sort(v.begin(), v.end(), by_start);
}

void Importer::finish() {
  std::apply([](auto&... records) { (sort_by_start(records), ...); },
             std::tie(kernels_, memcpys_, memsets_, api_, syncs_, nvtx_, nccl_));
  link_forward_backward();

  // Sequence numbers per communicator in time order, where Kineto gave none.
  std::unordered_map<StringId, int64_t> next_seq;
  for (auto& n : nccl_)
    if (n.sequence < 0) n.sequence = next_seq[n.communicator]++;

  // Synchronous copies and sets: the launching API call's name says so.
  std::unordered_map<uint32_t, StringId> api_by_corr;
  api_by_corr.reserve(api_.size());
  for (const auto& a : api_)
    if (a.correlation) api_by_corr.emplace(a.correlation, a.name);
  auto is_async = [&](uint32_t corr) {
    auto it = api_by_corr.find(corr);
    if (it == api_by_corr.end()) return true;
    std::string_view n = trace_.strings.view(it->second);
    return n.find("Async") != std::string_view::npos || n.find("async") != std::string_view::npos ||
           (n.substr(0, 6) != "cudaMe" && n.substr(0, 4) != "cuMe");
  };
  uint64_t unmatched = 0;
  auto matched = [&](uint32_t corr) { return corr == 0 || api_by_corr.count(corr) != 0; };
  for (auto& m : memcpys_) {
    m.is_async = is_async(m.correlation);
    unmatched += !matched(m.correlation);
  }
  for (auto& m : memsets_) {
    m.is_async = is_async(m.correlation);
    unmatched += !matched(m.correlation);
  }
  for (const auto& k : kernels_) unmatched += !matched(k.correlation);
  if (unmatched) trace_.problems.add(Problem::kUnmatchedCorrelation, unmatched);

  auto fill = [](auto& table, auto& records) {
    table.reserve(records.size());
    for (const auto& r : records) table.push(r);
    records.clear();
    records.shrink_to_fit();
  };
  fill(trace_.kernels, kernels_);
  fill(trace_.memcpys, memcpys_);
  fill(trace_.memsets, memsets_);
  fill(trace_.api, api_);
  fill(trace_.syncs, syncs_);
  fill(trace_.nvtx, nvtx_);
  fill(trace_.nccl, nccl_);
  if (host_pid_ >= 0) trace_.meta.pid = static_cast<uint32_t>(host_pid_);
}

// PyTorch links the forward op that created an autograd node to the node's
// backward op with a fwdbwd flow: "s" at the forward op's start on its thread,
// "f" (binding "e": the enclosing slice) at the backward op's start. Both ops
// get the same link id (dense, from 1), so that attribution can charge
// backward kernels to the forward op's module (docs/attribution.md).
void Importer::link_forward_backward() {
  if (fwdbwd_.empty()) return;
  std::unordered_map<uint32_t, std::vector<uint32_t>> ops_by_thread;  // cpu_op rows, in start order
  for (uint32_t i = 0; i < nvtx_.size(); ++i)
    if (nvtx_[i].domain == domain_cpu_op_ && nvtx_[i].device < 0) ops_by_thread[nvtx_[i].thread].push_back(i);
  std::unordered_map<int64_t, uint32_t> dense;
  for (const FlowEnd& f : fwdbwd_) {
    auto it = ops_by_thread.find(f.thread);
    if (it == ops_by_thread.end()) continue;
    const auto& rows = it->second;
    // The deepest op holding ts: the latest start at or before it (the shortest on a tie).
    auto pos =
        std::upper_bound(rows.begin(), rows.end(), f.ts, [&](Timestamp ts, uint32_t r) { return ts < nvtx_[r].start; });
    int64_t best = -1;
    for (int steps = 0; pos != rows.begin() && steps < 64; ++steps) {
      const NvtxRecord& r = nvtx_[*--pos];
      if (best >= 0 && r.start < nvtx_[static_cast<size_t>(best)].start) break;
      if (f.ts < r.end || f.ts == r.start)
        if (best < 0 || r.end < nvtx_[static_cast<size_t>(best)].end) best = *pos;
    }
    if (best < 0) continue;
    auto [d, inserted] = dense.try_emplace(f.id, static_cast<uint32_t>(dense.size() + 1));
    uint32_t& link = nvtx_[static_cast<size_t>(best)].link;
    if (link == 0) link = d->second;
  }
  fwdbwd_.clear();
  fwdbwd_.shrink_to_fit();
}

}  // namespace

uint64_t ImportReport::count(std::string_view cat, std::string_view ph) const {
  for (const auto& c : categories)
    if (c.cat == cat && c.ph == ph) return c.events;
  return 0;
}

namespace {

// Imports the JSON text in `json` (padded; its bytes may be rewritten for a
// while and are restored). Piece by piece when it is large enough; when that
// meets anything unexpected (bad JSON, a layout it does not cut), the text is
// read again in one pass, whose errors are the importer's errors as before.
Trace import_json_text(std::string_view name, const KinetoImportOptions& options, ImportReport& report, char* json,
                       size_t size, size_t capacity, od::parser& parser) {
  if (options.piece_bytes > 0 && size >= 2 * options.piece_bytes) {
    ImportReport piece_report;
    Importer imp(name, options, piece_report);
    try {
      if (auto t = imp.run_in_pieces(json, size, capacity, parser, options.piece_bytes)) {
        report = std::move(piece_report);
        return std::move(*t);
      }
    } catch (const Error&) {
      // Read again in one pass below, which says what is wrong as it always did.
    }
  }
  Importer imp(name, options, report);
  return imp.run(json, size, capacity, parser);
}

}  // namespace

Trace import_kineto_json(std::string_view json, std::string_view name, ImportReport* report,
                         const KinetoImportOptions& options) {
  if (json.size() > options.max_json_bytes)
    fail("{}: {} bytes of JSON is more than the {} bytes the importer accepts", name, json.size(),
         options.max_json_bytes);
  PaddedBuffer buf;
  buf.reserve(json.size());
  if (!json.empty()) std::memcpy(buf.data, json.data(), json.size());
  buf.size = json.size();
  buf.pad();
  ImportReport local;
  od::parser parser;
  return import_json_text(name, options, report ? *report : local, buf.data, buf.size,
                          buf.capacity + simdjson::SIMDJSON_PADDING, parser);
}

// What one thread keeps from one file to the next (see the header).
struct KinetoImportScratch::Buffers {
  PaddedBuffer raw;   // the file's bytes (the JSON itself when not gzip)
  PaddedBuffer json;  // the inflated JSON of a .json.gz
  od::parser parser;  // its structural index, sized to the largest JSON so far
};

KinetoImportScratch::KinetoImportScratch() : buffers_(std::make_unique<Buffers>()) {}
KinetoImportScratch::~KinetoImportScratch() = default;
KinetoImportScratch::KinetoImportScratch(KinetoImportScratch&&) noexcept = default;
KinetoImportScratch& KinetoImportScratch::operator=(KinetoImportScratch&&) noexcept = default;

Trace import_kineto_file(const std::filesystem::path& path, ImportReport* report, const KinetoImportOptions& options) {
  return import_kineto_file(path, report, options, nullptr);
}

Trace import_kineto_file(const std::filesystem::path& path, ImportReport* report, const KinetoImportOptions& options,
                         KinetoImportScratch* scratch) {
  const std::string name = path.string();
  ImportReport local;
  ImportReport& rep = report ? *report : local;
  // Without a caller's scratch, one for this file only: its buffers are freed
  // as soon as they are no longer needed, as before there was reuse.
  std::unique_ptr<KinetoImportScratch> own;
  if (!scratch) {
    own = std::make_unique<KinetoImportScratch>();
    scratch = own.get();
  }
  KinetoImportScratch::Buffers& b = *scratch->buffers_;
  PaddedBuffer& raw = b.raw;
  // Memory bound: what this process may still take, over the import's cost per JSON byte.
  const uint64_t memory = available_memory_bytes();
  const uint64_t by_memory = memory / std::max<uint64_t>(1, options.memory_per_json_byte);
  const uint64_t json_limit = std::min(options.max_json_bytes, by_memory);
  const std::string memory_why = fmt::format(
      "importing needs about {} bytes of memory per JSON byte and this process may take {} MiB more "
      "(free memory and limits)",
      options.memory_per_json_byte, memory >> 20);
  read_whole_file(path, raw, options.max_json_bytes);
  if (!is_gzip(std::string_view(raw.data, raw.size)) && raw.size > json_limit)
    fail("{}: {} bytes of JSON is too large to import here: {}", name, raw.size, memory_why);
  if (is_gzip(std::string_view(raw.data, raw.size))) {
    PaddedBuffer& json = b.json;
    const uint64_t by_ratio = std::max<uint64_t>(raw.size * options.max_gzip_ratio, uint64_t{1} << 20);
    std::string why;
    uint64_t limit = json_limit;
    if (by_ratio < limit) {
      limit = by_ratio;
      why = fmt::format(
          "more than {}x its compressed size ({} bytes), the limit for gzip input (a decompression bomb "
          "or not a trace; see docs/data-safety.md)",
          options.max_gzip_ratio, raw.size);
    } else if (by_memory < options.max_json_bytes) {
      why = memory_why;
    } else {
      why = "more than the importer accepts (a decompression bomb or not a trace)";
    }
    gunzip(std::string_view(raw.data, raw.size), name, json, limit, why);
    if (own) raw.release();  // free the compressed bytes before parsing (nobody reuses them)
    return import_json_text(name, options, rep, json.data, json.size, json.capacity + simdjson::SIMDJSON_PADDING,
                            b.parser);
  }
  return import_json_text(name, options, rep, raw.data, raw.size, raw.capacity + simdjson::SIMDJSON_PADDING, b.parser);
}

uint64_t kineto_import_memory_bytes(const std::vector<std::filesystem::path>& files,
                                    const KinetoImportOptions& options) {
  uint64_t most = 0;
  for (const auto& f : files) {
    std::error_code ec;
    uint64_t json = std::filesystem::file_size(f, ec);
    if (ec) continue;
    // A gzip member's last 4 bytes are its size modulo 4 GiB (the importer's limit anyway).
    unsigned char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
    if (std::unique_ptr<std::FILE, FileCloser> in(std::fopen(f.c_str(), "rb"));
        in && json >= 18 && std::fread(head, 1, 2, in.get()) == 2 && head[0] == 0x1f && head[1] == 0x8b &&
        std::fseek(in.get(), -4, SEEK_END) == 0 && std::fread(tail, 1, 4, in.get()) == 4) {
      const uint64_t isize =
          uint64_t{tail[0]} | uint64_t{tail[1]} << 8 | uint64_t{tail[2]} << 16 | uint64_t{tail[3]} << 24;
      json = std::min(std::max(json, isize), json * options.max_gzip_ratio);
    }
    most = std::max(most, std::min(json, options.max_json_bytes) * options.memory_per_json_byte);
  }
  return most;
}

}  // namespace scalescope::trace
