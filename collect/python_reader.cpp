#include "collect/python_reader.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "trace/model/elf_build_id.hpp"
#include "base/text_output.hpp"

namespace scalescope::collect {
namespace {

// CPython 3.11, x86-64: offsetof() over the python3.11-dev headers
// (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
// Include/cpython/pystate.h, code.h, unicodeobject.h, bytesobject.h)
// compiled with Py_BUILD_CORE.
constexpr CPythonLayout kCPython311{
    .minor = 11,
    .runtime_interpreters_head = 40,
    .interp_next = 0,
    .interp_threads_head = 16,
    .tstate_next = 8,
    .tstate_native_thread_id = 160,
    .tstate_cframe = 56,
    .cframe_current_frame = 8,  // after int use_tracing
    .frame_code = 32,
    .frame_previous = 48,
    .frame_prev_instr = 56,
    .frame_owner = 69,
    .frame_owned_by_cstack = -1,  // 3.11 has no shim frames
    .code_firstlineno = 72,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_adaptive = 184,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,  // PyASCIIObject still holds wstr in 3.11
    .unicode_compact_data = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

// CPython 3.12, x86-64: the same headers at v3.12.0, laid out by field order
// and the LP64 sizes (pycore_interp.h grew id, id_refcount, requires_idref,
// id_mutex, _initialized, finalizing and the monitoring versions before
// threads; pystate.h moved cframe after the recursion counters; code.h grew
// the monitoring fields before co_code_adaptive; wstr left PyASCIIObject).
// The C-stack entry frames (owner FRAME_OWNED_BY_CSTACK = 3) are skipped.
constexpr CPythonLayout kCPython312{
    .minor = 12,
    .runtime_interpreters_head = 40,
    .interp_next = 0,
    .interp_threads_head = 72,
    .tstate_next = 8,
    .tstate_native_thread_id = 144,
    .tstate_cframe = 56,
    .cframe_current_frame = 0,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_prev_instr = 56,
    .frame_owner = 70,
    .frame_owned_by_cstack = 3,
    .code_firstlineno = 68,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_adaptive = 192,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 40,
    .unicode_compact_data = 56,
    .bytes_size = 16,
    .bytes_data = 32,
};

constexpr uint64_t kTypeOffset = 8;  // PyObject.ob_type
constexpr size_t kMaxString = 4096;  // longer names and paths are not code's
constexpr size_t kMaxTable = size_t{1} << 20;
constexpr size_t kMaxInterpreters = 64, kMaxThreads = 4096, kMaxWalk = 4096;

template <typename T>
T at(const std::vector<uint8_t>& bytes, uint64_t offset) {
  T v{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

bool read_u64(const RemoteRead& read, uint64_t addr, uint64_t* out) { return read(addr, sizeof *out, out); }

// A compact str object as UTF-8; false when it is not one.
bool read_str(const CPythonLayout& l, const CPythonTypes& types, const RemoteRead& read, uint64_t addr,
              std::string* out) {
  std::vector<uint8_t> head(l.unicode_compact_data);
  if (addr == 0 || !read(addr, head.size(), head.data())) return false;
  if (at<uint64_t>(head, kTypeOffset) != types.unicode) return false;
  const int64_t length = at<int64_t>(head, l.unicode_length);
  const uint32_t state = at<uint32_t>(head, l.unicode_state);
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (length < 0 || static_cast<uint64_t>(length) > kMaxString || !compact) return false;
  const size_t n = static_cast<size_t>(length);
  if (ascii) {
    out->resize(n);
    return n == 0 || read(addr + l.unicode_ascii_data, n, out->data());
  }
  if (kind != 1 && kind != 2 && kind != 4) return false;
  std::vector<uint8_t> data(n * kind);
  if (n && !read(addr + l.unicode_compact_data, data.size(), data.data())) return false;
  out->clear();
  for (size_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, data.data() + i * kind, kind);  // little-endian: the low bytes first
    trace::detail::append_utf8(*out, c);
  }
  return true;
}

bool read_bytes(const CPythonLayout& l, const CPythonTypes& types, const RemoteRead& read, uint64_t addr,
                std::vector<uint8_t>* out) {
  std::vector<uint8_t> head(l.bytes_data);
  if (addr == 0 || !read(addr, head.size(), head.data())) return false;
  if (at<uint64_t>(head, kTypeOffset) != types.bytes) return false;
  const int64_t size = at<int64_t>(head, l.bytes_size);
  if (size < 0 || static_cast<uint64_t>(size) > kMaxTable) return false;
  out->resize(static_cast<size_t>(size));
  return size == 0 || read(addr + l.bytes_data, out->size(), out->data());
}

const CodeCache::Code* read_code(const CPythonLayout& l, const CPythonTypes& types, const RemoteRead& read,
                                 uint64_t addr, CodeCache& cache) {
  std::vector<uint8_t> head(l.code_adaptive);
  if (addr == 0 || !read(addr, head.size(), head.data())) return nullptr;
  if (at<uint64_t>(head, kTypeOffset) != types.code) return nullptr;
  CodeCache::Code c;
  c.filename = at<uint64_t>(head, l.code_filename);
  c.qualname = at<uint64_t>(head, l.code_qualname);
  c.linetable = at<uint64_t>(head, l.code_linetable);
  c.first_line = at<int32_t>(head, l.code_firstlineno);
  if (const CodeCache::Code* known = cache.find(addr, c)) return known;
  if (!read_str(l, types, read, c.filename, &c.file)) return nullptr;
  if (!read_str(l, types, read, c.qualname, &c.function) &&
      !read_str(l, types, read, at<uint64_t>(head, l.code_name), &c.function))
    return nullptr;
  if (!read_bytes(l, types, read, c.linetable, &c.table)) return nullptr;
  return cache.put(addr, std::move(c));
}

// One thread's frames, leaf first; false when the walk tore.
bool read_frames(const CPythonLayout& l, const CPythonTypes& types, const RemoteRead& read, uint64_t frame,
                 CodeCache& cache, PythonThreadStack* out) {
  std::vector<uint8_t> f(l.frame_owner + 1);
  for (size_t steps = 0; frame != 0; ++steps) {
    if (steps == kMaxWalk) return false;  // a cycle: only a torn read makes one
    if (out->frames.size() == kMaxPythonDepth) {
      out->truncated = true;
      return true;
    }
    if (!read(frame, f.size(), f.data())) return false;
    const uint64_t code_addr = at<uint64_t>(f, l.frame_code);
    const uint64_t prev_instr = at<uint64_t>(f, l.frame_prev_instr);
    const int owner = at<int8_t>(f, l.frame_owner);
    frame = at<uint64_t>(f, l.frame_previous);
    if (owner == l.frame_owned_by_cstack) continue;
    const CodeCache::Code* code = read_code(l, types, read, code_addr, cache);
    if (!code) return false;
    const int64_t offset = static_cast<int64_t>(prev_instr - (code_addr + l.code_adaptive));
    if (offset < 0) continue;  // pushed, not yet started: the interpreter does not show it either
    out->frames.push_back({code->file, line_for_offset(code->table, code->first_line, offset), code->function});
  }
  return true;
}

bool known_pointer_fields(const CodeCache::Code& a, const CodeCache::Code& b) {
  return a.filename == b.filename && a.qualname == b.qualname && a.linetable == b.linetable &&
         a.first_line == b.first_line;
}

}  // namespace

const CPythonLayout* cpython_layout(uint32_t py_version_hex) {
  if ((py_version_hex >> 24) != 3) return nullptr;
  switch ((py_version_hex >> 16) & 0xFF) {
    case 11:
      return &kCPython311;
    case 12:
      return &kCPython312;
    default:
      return nullptr;
  }
}

int32_t line_for_offset(std::span<const uint8_t> table, int32_t first_line, int64_t byte_offset) {
  // Each entry: a first byte with bit 7 set, bits 3..6 the kind, bits 0..2
  // the code units covered minus one; then the kind's varints. Kinds: 15 no
  // location, 14 long form and 13 no columns (a signed line delta varint
  // first), 10..12 one line (delta 0..2), 0..9 short form (same line).
  size_t pos = 0;
  int64_t line = first_line, end = 0;
  auto varint = [&](size_t* p) {
    uint64_t value = 0;
    for (unsigned shift = 0; *p < table.size() && shift < 64; shift += 6) {
      const uint8_t b = table[(*p)++];
      value |= uint64_t{b & 63u} << shift;
      if (!(b & 64)) break;
    }
    return value;
  };
  while (pos < table.size()) {
    const uint8_t first = table[pos];
    if (!(first & 128)) return 0;  // not at an entry: not a location table
    const unsigned kind = (first >> 3) & 15;
    int64_t delta = 0;
    size_t next = pos + 1;
    if (kind == 13 || kind == 14) {
      const uint64_t u = varint(&next);
      delta = (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
    } else if (kind == 11 || kind == 12) {
      delta = kind - 10;
    }
    // Wrapping: a table of another layout (or garbage) may sum past int64;
    // such a line is out of range below and gives 0.
    line = static_cast<int64_t>(static_cast<uint64_t>(line) + static_cast<uint64_t>(delta));
    const int64_t start = end;
    end += ((first & 7) + 1) * 2;
    if (byte_offset >= start && byte_offset < end)
      return kind == 15 || line < 0 || line > INT32_MAX ? 0 : static_cast<int32_t>(line);
    pos = next;
    while (pos < table.size() && !(table[pos] & 128)) ++pos;  // the rest of the entry
  }
  return 0;
}

const CodeCache::Code* CodeCache::find(uint64_t addr, const Code& key) const {
  auto it = codes_.find(addr);
  return it != codes_.end() && known_pointer_fields(it->second, key) ? &it->second : nullptr;
}

const CodeCache::Code* CodeCache::put(uint64_t addr, Code code) {
  if (codes_.size() >= 65536) codes_.clear();  // a job that makes code without end: start again
  return &(codes_[addr] = std::move(code));
}

std::vector<PythonThreadStack> read_thread_stacks(const CPythonLayout& l, const CPythonTypes& types,
                                                  uint64_t runtime_addr, const RemoteRead& read, CodeCache& cache,
                                                  uint64_t* torn) {
  std::vector<PythonThreadStack> out;
  uint64_t interp = 0;
  if (!read_u64(read, runtime_addr + l.runtime_interpreters_head, &interp)) return out;
  for (size_t i = 0; interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t tstate = 0;
    if (!read_u64(read, interp + l.interp_threads_head, &tstate)) break;
    for (size_t t = 0; tstate != 0 && t < kMaxThreads; ++t) {
      std::vector<uint8_t> ts(l.tstate_native_thread_id + 8);
      if (!read(tstate, ts.size(), ts.data())) {
        ++*torn;
        break;
      }
      PythonThreadStack stack;
      stack.native_id = static_cast<uint32_t>(at<uint64_t>(ts, l.tstate_native_thread_id));
      uint64_t frame = 0;
      const uint64_t cframe = at<uint64_t>(ts, l.tstate_cframe);
      bool ok = cframe == 0 || read_u64(read, cframe + l.cframe_current_frame, &frame);
      ok = ok && read_frames(l, types, read, frame, cache, &stack);
      if (!ok)
        ++*torn;
      else if (!stack.frames.empty())
        out.push_back(std::move(stack));
      tstate = at<uint64_t>(ts, l.tstate_next);
    }
    if (!read_u64(read, interp + l.interp_next, &interp)) break;
  }
  return out;
}

namespace {

struct Mapping {
  uint64_t start = 0, offset = 0;
  std::string path;
};

std::vector<Mapping> read_maps(uint32_t pid) {
  std::vector<Mapping> out;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode path
    Mapping m;
    char perms[8] = {};
    unsigned long long start = 0, end = 0, offset = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4 ||
        path_at <= 0)
      continue;
    m.start = start;
    m.offset = offset;
    m.path = line.substr(static_cast<size_t>(path_at));
    if (m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
    out.push_back(std::move(m));
  }
  return out;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "3.10" from python3.10 or libpython3.10.so.1.0; "" when the name says none.
std::string version_in_name(const std::string& path) {
  std::string name = base_name(path);
  for (std::string_view prefix : {"libpython", "python"}) {
    if (!name.starts_with(prefix)) continue;
    std::string v;
    for (char c : name.substr(prefix.size()))
      if ((c >= '0' && c <= '9') || c == '.')
        v += c;
      else
        break;
    while (!v.empty() && v.back() == '.') v.pop_back();
    if (v.find('.') != std::string::npos) return v;
  }
  return "";
}

}  // namespace

std::unique_ptr<PythonProcessReader> PythonProcessReader::open(uint32_t pid, std::string* note, bool* is_python) {
  if (is_python) *is_python = false;
  const std::vector<Mapping> maps = read_maps(pid);
  if (maps.empty()) {
    *note = fmt::format("pid {}: its memory map cannot be read (gone, or not ours to read)", pid);
    return nullptr;
  }
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid), ec).string();
  // libpython first: a shared build's executable holds no _PyRuntime.
  std::vector<std::string> candidates;
  for (const Mapping& m : maps)
    if (base_name(m.path).starts_with("libpython") &&
        std::find(candidates.begin(), candidates.end(), m.path) == candidates.end())
      candidates.push_back(m.path);
  if (!exe.empty()) candidates.push_back(exe);

  static constexpr std::array<std::string_view, 5> kSymbols = {"_PyRuntime", "Py_Version", "PyCode_Type",
                                                               "PyUnicode_Type", "PyBytes_Type"};
  for (const std::string& path : candidates) {
    std::string error;
    const auto symbols = trace::elf_symbol_values_of_file(path.c_str(), kSymbols, &error);
    if (!symbols || symbols->values[0] == 0) continue;
    const auto mapped = std::find_if(maps.begin(), maps.end(),
                                     [&](const Mapping& m) { return m.path == path && m.offset == 0; });
    if (mapped == maps.end()) continue;
    if (is_python) *is_python = true;
    const uint64_t bias = mapped->start - symbols->first_load_vaddr;
    std::unique_ptr<PythonProcessReader> r(new PythonProcessReader());
    r->pid_ = pid;
    uint32_t version = 0;
    const RemoteRead read = [pid](uint64_t addr, size_t n, void* out) {
      iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
      return process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
    };
    if (symbols->values[1] == 0) {  // Py_Version came with 3.11
      const std::string v = version_in_name(path);
      *note = fmt::format("python stacks from outside: CPython {} not supported", v.empty() ? "before 3.11" : v);
      return nullptr;
    }
    if (!read(symbols->values[1] + bias, sizeof version, &version)) {
      *note = fmt::format("pid {}: its memory cannot be read ({}): the outside reader needs the same user or "
                          "CAP_SYS_PTRACE, and Yama's ptrace_scope may allow only ancestors",
                          pid, std::strerror(errno));
      return nullptr;
    }
    r->layout_ = cpython_layout(version);
    if (!r->layout_) {
      *note = fmt::format("python stacks from outside: CPython {}.{} not supported", version >> 24,
                          (version >> 16) & 0xFF);
      return nullptr;
    }
    if (symbols->values[2] == 0 || symbols->values[3] == 0 || symbols->values[4] == 0) {
      *note = fmt::format("pid {}: {} has no type symbols (PyCode_Type): stacks cannot be checked", pid, path);
      return nullptr;
    }
    r->types_ = {symbols->values[2] + bias, symbols->values[3] + bias, symbols->values[4] + bias};
    r->runtime_ = symbols->values[0] + bias;
    return r;
  }
  *note = fmt::format("pid {}: not a Python process (no _PyRuntime in {})", pid, exe.empty() ? "its executable" : exe);
  return nullptr;
}

bool PythonProcessReader::sample(std::vector<PythonThreadStack>* out) {
  const uint32_t pid = pid_;
  bool gone = false;
  const RemoteRead read = [pid, &gone](uint64_t addr, size_t n, void* dst) {
    iovec local{dst, n}, remote{reinterpret_cast<void*>(addr), n};
    const ssize_t got = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (got < 0 && (errno == ESRCH || errno == EPERM)) gone = true;
    return got == static_cast<ssize_t>(n);
  };
  *out = read_thread_stacks(*layout_, types_, runtime_, read, cache_, &torn_);
  return !gone;
}

std::vector<PythonThreadStack> sample_python_threads_once(uint32_t pid, std::string* note) {
  std::vector<PythonThreadStack> stacks;
  bool is_python = false;
  std::string why;
  auto reader = PythonProcessReader::open(pid, &why, &is_python);
  if (!reader) {
    if (is_python && note) *note = why;
    return stacks;
  }
  if (!reader->sample(&stacks) && note) *note = fmt::format("pid {}: could not be read", pid);
  return stacks;
}

}  // namespace scalescope::collect
