#include "trace/model/frame_namer.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <array>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "trace/model/elf_build_id.hpp"

namespace scalescope::trace {

FrameNamerOptions frame_namer_options_from_env() {
  FrameNamerOptions o;
  if (const char* v = std::getenv("SCALESCOPE_SYMFS"); v && *v) o.symfs = v;
  return o;
}

namespace {

std::string demangle(const char* s) {
  if (s[0] == '_' && s[1] == 'Z') {
    int status = 0;
    char* d = abi::__cxa_demangle(s, nullptr, nullptr, &status);
    if (d && status == 0) {
      std::string out(d);
      std::free(d);
      return out;
    }
    std::free(d);
  }
  return s;
}

// libdw and libelf, loaded at run time: scalescope runs (frames unnamed,
// status kNoLibdw) where elfutils is not installed.
class Libdw {
 public:
  Libdw() {
    dw_ = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    elf_ = dw_ ? dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!dw_ || !elf_) {
      error_ = "libdw.so.1 or libelf.so.1 not found";
      return;
    }
    bool ok = true;
    auto sym = [&](auto& fn, void* lib, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      ok = ok && fn != nullptr;
    };
    sym(begin, dw_, "dwfl_begin");
    sym(end, dw_, "dwfl_end");
    sym(report_begin, dw_, "dwfl_report_begin");
    sym(report_elf, dw_, "dwfl_report_elf");
    sym(report_end, dw_, "dwfl_report_end");
    sym(getelf, dw_, "dwfl_module_getelf");
    sym(addrinfo, dw_, "dwfl_module_addrinfo");
    sym(callbacks.find_debuginfo, dw_, "dwfl_standard_find_debuginfo");
    sym(callbacks.section_address, dw_, "dwfl_offline_section_address");
    sym(phdrnum, elf_, "elf_getphdrnum");
    sym(getphdr, elf_, "gelf_getphdr");
    if (!ok) error_ = "libdw.so.1 lacks a dwfl function";
  }
  ~Libdw() {
    if (elf_) dlclose(elf_);
    if (dw_) dlclose(dw_);
  }
  const std::string& error() const { return error_; }

  Dwfl_Callbacks callbacks{};
  Dwfl* (*begin)(const Dwfl_Callbacks*) = nullptr;
  void (*end)(Dwfl*) = nullptr;
  void (*report_begin)(Dwfl*) = nullptr;
  Dwfl_Module* (*report_elf)(Dwfl*, const char*, const char*, int, GElf_Addr, bool) = nullptr;
  int (*report_end)(Dwfl*, int (*)(Dwfl_Module*, void*, const char*, Dwarf_Addr, void*), void*) = nullptr;
  Elf* (*getelf)(Dwfl_Module*, GElf_Addr*) = nullptr;
  const char* (*addrinfo)(Dwfl_Module*, GElf_Addr, GElf_Off*, GElf_Sym*, GElf_Word*, Elf**, Dwarf_Addr*) = nullptr;
  int (*phdrnum)(Elf*, size_t*) = nullptr;
  GElf_Phdr* (*getphdr)(Elf*, int, GElf_Phdr*) = nullptr;

 private:
  void* dw_ = nullptr;
  void* elf_ = nullptr;
  std::string error_;
};

struct Segment {
  uint64_t offset, size, vaddr;
};

// One file of the analysing machine, by the path the trace recorded.
struct File {
  bool found = false;
  std::string resolved;  // where it was read
  std::string build_id;  // its own
  bool loaded = false;   // symbols looked at (once)
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  GElf_Addr bias = 0;
  std::vector<Segment> segments;                    // PT_LOAD: file offset -> ELF address
  std::unordered_map<uint64_t, std::string> names;  // file offset -> name ("" none)
};

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

struct FrameNamer::Impl {
  FrameNamerOptions options;
  std::unique_ptr<Libdw> libdw;
  std::unordered_map<std::string, File> files;
  size_t loaded = 0;

  ~Impl() {
    for (auto& [path, f] : files)
      if (f.dwfl) libdw->end(f.dwfl);
  }

  File& file(const std::string& path) {
    auto [it, inserted] = files.try_emplace(path);
    File& f = it->second;
    if (!inserted) return f;
    std::vector<std::string> candidates;
    if (!options.symfs.empty())
      candidates.push_back((options.symfs / std::filesystem::path(path).relative_path()).string());
    candidates.push_back(path);
    for (const std::string& c : candidates) {
      std::string error;
      if (auto id = elf_build_id_of_file(c.c_str(), &error)) {
        f.found = true;
        f.resolved = c;
        f.build_id = std::move(*id);
        break;
      }
    }
    return f;
  }

  bool have_libdw() {
    if (options.without_libdw) return false;
    if (!libdw) libdw = std::make_unique<Libdw>();
    return libdw->error().empty();
  }

  // Symbols of a found file: one Dwfl per file reported at bias 0, so that
  // addresses are the ELF's own.
  void load(File& f) {
    if (f.loaded) return;
    f.loaded = true;
    ++loaded;
    f.dwfl = libdw->begin(&libdw->callbacks);
    if (!f.dwfl) return;
    libdw->report_begin(f.dwfl);
    f.mod = libdw->report_elf(f.dwfl, f.resolved.c_str(), f.resolved.c_str(), -1, 0, false);
    libdw->report_end(f.dwfl, nullptr, nullptr);
    if (!f.mod) return;
    Elf* elf = libdw->getelf(f.mod, &f.bias);
    size_t n = 0;
    if (!elf || libdw->phdrnum(elf, &n) != 0) return;
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (libdw->getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        f.segments.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
  }

  // The function covering file offset `offset`; "" when none.
  const std::string& lookup(File& f, uint64_t offset) {
    auto [it, inserted] = f.names.try_emplace(offset);
    if (!inserted || !f.mod) return it->second;
    for (const Segment& s : f.segments) {
      if (offset < s.offset || offset - s.offset >= s.size) continue;
      GElf_Off off = 0;
      GElf_Sym sym;
      const char* name =
          libdw->addrinfo(f.mod, offset - s.offset + s.vaddr + f.bias, &off, &sym, nullptr, nullptr, nullptr);
      if (name) it->second = demangle(name);
      break;
    }
    return it->second;
  }
};

FrameNamer::FrameNamer(FrameNamerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}
FrameNamer::~FrameNamer() = default;

size_t FrameNamer::files_loaded() const { return impl_->loaded; }

void FrameNamer::name(Trace& t) {
  HostCallsiteTable& c = t.host_callsites;
  if (c.size() == 0) return;
  // The build-id each module had when it ran (the first row that has one).
  std::unordered_map<StringId, StringId> recorded;
  for (size_t i = 0; i < t.host_modules.size(); ++i) {
    auto [it, inserted] = recorded.try_emplace(t.host_modules.path[i], t.host_modules.build_id[i]);
    if (!inserted && t.strings.view(it->second).empty()) it->second = t.host_modules.build_id[i];
  }
  std::set<StringId> unchecked;  // modules named without a recorded build-id
  std::array<std::set<std::string_view>, 16> modules_by_status;
  for (size_t i = 0; i < c.size(); ++i) {
    FrameStatus& status = c.status[i];
    if (!t.strings.view(c.function[i]).empty()) {
      status = FrameStatus::kNamed;  // named by a 1.3 collector at exit, or by an earlier pass
      continue;
    }
    if (status != FrameStatus::kUnnamed) continue;
    const std::string_view path = t.strings.view(c.module[i]);
    auto set = [&](FrameStatus s) {
      status = s;
      modules_by_status[static_cast<size_t>(s)].insert(path);
    };
    if (path.empty()) {
      set(FrameStatus::kUnmapped);
      continue;
    }
    if (path.front() == '[') {
      set(FrameStatus::kNotAFile);
      continue;
    }
    auto rec = recorded.find(c.module[i]);
    if (rec == recorded.end()) {
      set(FrameStatus::kNoModuleRecord);
      continue;
    }
    File& f = impl_->file(std::string(path));
    if (!f.found) {
      set(FrameStatus::kModuleMissing);
      continue;
    }
    const std::string_view want = t.strings.view(rec->second);
    if (want.empty()) {
      unchecked.insert(c.module[i]);
    } else if (f.build_id != want) {
      set(FrameStatus::kBuildIdDiffers);
      continue;
    }
    if (!impl_->have_libdw()) {
      set(FrameStatus::kNoLibdw);
      continue;
    }
    impl_->load(f);
    const std::string& name = impl_->lookup(f, c.address[i]);
    if (name.empty()) {
      set(FrameStatus::kNoSymbol);
      continue;
    }
    c.function[i] = t.strings.intern(name);
    status = FrameStatus::kNamed;
  }
  // The summary: how many frames, and why the rest are unnamed (a few modules each).
  std::array<size_t, 16> count{};
  for (FrameStatus s : c.status) ++count[static_cast<size_t>(s) & 15];
  // [stack walk cut] rows are not frames.
  std::string line = fmt::format("offline: {} of {} frames named", count[size_t(FrameStatus::kNamed)],
                                 c.size() - count[size_t(FrameStatus::kWalkCut)]);
  for (FrameStatus s :
       {FrameStatus::kModuleMissing, FrameStatus::kBuildIdDiffers, FrameStatus::kNoSymbol, FrameStatus::kNoLibdw,
        FrameStatus::kNoModuleRecord, FrameStatus::kNotAFile, FrameStatus::kUnmapped}) {
    const size_t n = count[static_cast<size_t>(s)];
    if (n == 0) continue;
    line += fmt::format("; {} {}", to_string(s), n);
    const auto& mods = modules_by_status[static_cast<size_t>(s)];
    if (s == FrameStatus::kUnmapped || s == FrameStatus::kNotAFile || mods.empty()) continue;
    std::string names;
    size_t shown = 0;
    for (std::string_view m : mods) {
      if (shown++ == 3) {
        names += fmt::format(", +{}", mods.size() - 3);
        break;
      }
      names += (names.empty() ? "" : ", ") + std::string(base_name(m));
    }
    line += " (" + names + ")";
  }
  if (count[size_t(FrameStatus::kNoLibdw)] > 0 && impl_->libdw) line += " [" + impl_->libdw->error() + "]";
  if (!unchecked.empty()) line += fmt::format("; {} modules had no build-id to check", unchecked.size());
  t.meta.extra["host_stack_naming"] = line;
}

std::string frame_label(const Trace& t, size_t row) {
  const HostCallsiteTable& c = t.host_callsites;
  if (c.status[row] == FrameStatus::kWalkCut) return "[stack walk cut]";
  const std::string_view fn = t.strings.view(c.function[row]);
  if (!fn.empty()) return std::string(fn);
  const std::string_view module = base_name(t.strings.view(c.module[row]));
  std::string out =
      module.empty() ? fmt::format("0x{:x}", c.address[row]) : fmt::format("{}+0x{:x}", module, c.address[row]);
  switch (c.status[row]) {
    case FrameStatus::kModuleMissing:
    case FrameStatus::kBuildIdDiffers:
    case FrameStatus::kNoSymbol:
    case FrameStatus::kNoLibdw: out += fmt::format(" [{}]", to_string(c.status[row])); break;
    default: break;
  }
  return out;
}

void name_frames(std::vector<Trace>& traces, const FrameNamerOptions& options) {
  bool any = false;
  for (const Trace& t : traces) any = any || t.host_callsites.size() > 0;
  if (!any) return;
  FrameNamer namer(options);
  for (Trace& t : traces) namer.name(t);
}

}  // namespace scalescope::trace
