#include "collect/perf_stacks.hpp"
#include "collect/sampler_common.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/text_input.hpp"
#include "collect/host_facts.hpp"
#include "trace/model/elf_build_id.hpp"

namespace scalescope::collect {
namespace {

constexpr uint32_t kUnmapped = UINT32_MAX;
constexpr uint32_t kWalkCut = UINT32_MAX - 1;  // the [stack walk cut] frame's module
constexpr size_t kMaxCallsites = size_t{1} << 20;  // beyond this, new stacks are dropped and counted
constexpr uint64_t kMapsRereadPolls = 100;         // a missed address re-reads maps at most once a second

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A /proc value without its newline; empty when unreadable.
std::string read_small_file(const char* path) {
  return std::string(trace::trim(read_text_file(path, 64).value_or("")));
}

}  // namespace

bool is_perf_context(uint64_t ip) { return ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX); }

bool parse_perf_records(std::span<const uint8_t> bytes, const std::function<void(const PerfSample&)>& on_sample,
                        uint64_t* lost) {
  std::vector<uint64_t> ips;  // the ring's records are 8-byte aligned; a fuzzer's input need not be
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < sizeof(perf_event_header)) return false;
    const auto h = load<perf_event_header>(bytes.data() + pos);
    if (h.size < sizeof h || h.size > bytes.size() - pos) return false;
    const uint8_t* body = bytes.data() + pos + sizeof h;
    const size_t body_size = h.size - sizeof h;
    if (h.type == PERF_RECORD_SAMPLE) {
      // TID (u32 pid, u32 tid), TIME (u64), CALLCHAIN (u64 nr, nr x u64).
      if (body_size < 24) return false;
      const uint64_t nr = load<uint64_t>(body + 16);
      if (nr > (body_size - 24) / 8) return false;
      ips.resize(static_cast<size_t>(nr));
      if (nr) std::memcpy(ips.data(), body + 24, static_cast<size_t>(nr) * 8);
      PerfSample s;
      s.pid = load<uint32_t>(body);
      s.tid = load<uint32_t>(body + 4);
      s.time = load<uint64_t>(body + 8);
      s.ips = ips;
      on_sample(s);
    } else if (h.type == PERF_RECORD_LOST) {
      if (body_size < 16) return false;
      *lost += load<uint64_t>(body + 8);
    }
    pos += h.size;
  }
  return true;
}

void drain_perf_ring(perf_event_mmap_page* meta, const uint8_t* data, uint64_t size, std::vector<uint8_t>& out) {
  out.clear();
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  const uint64_t tail = meta->data_tail;
  const uint64_t n = head - tail;
  if (n > 0 && n <= size) {
    out.resize(static_cast<size_t>(n));
    const uint64_t at = tail & (size - 1);
    const uint64_t first = std::min(n, size - at);
    std::memcpy(out.data(), data + at, static_cast<size_t>(first));
    if (n > first) std::memcpy(out.data() + first, data, static_cast<size_t>(n - first));
  }
  __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
}

void parse_maps(std::string_view text, std::vector<MapRange>& out,
                const std::function<uint32_t(std::string_view path)>& intern) {
  const size_t first = out.size();
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // start-end perms offset dev inode [path]
    auto field = [&line]() {
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      const size_t sp = std::min(line.find(' '), line.size());
      std::string_view f = line.substr(0, sp);
      line.remove_prefix(sp);
      return f;
    };
    const std::string_view range = field(), perms = field(), offset = field();
    field();  // dev
    field();  // inode
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (perms.size() < 3 || perms[2] != 'x') continue;
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos) continue;
    auto hex = [](std::string_view s, uint64_t* v) {
      if (s.empty() || s.size() > 16) return false;
      *v = 0;
      for (char c : s) {
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) return false;
        *v = *v << 4 | uint64_t(d);
      }
      return true;
    };
    MapRange m;
    if (!hex(range.substr(0, dash), &m.start) || !hex(range.substr(dash + 1), &m.end) || !hex(offset, &m.offset) ||
        m.end <= m.start)
      continue;
    m.module = intern(line.empty() ? std::string_view("[anon]") : line);
    out.push_back(m);
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [](const MapRange& a, const MapRange& b) { return a.start < b.start; });
}

// ---- the sampler -----------------------------------------------------------

struct PerfStacks::Ring {
  int fd = -1;
  void* base = nullptr;
  size_t length = 0;
  uint64_t data_size = 0;
};

PerfStacks::PerfStacks(PerfStacksOptions options) : options_(std::move(options)) {
  const long ps = sysconf(_SC_PAGESIZE);
  page_size_ = ps > 0 ? size_t(ps) : 4096;
  if (options_.ring_pages == 0 || (options_.ring_pages & (options_.ring_pages - 1)) != 0) options_.ring_pages = 2;
  if (options_.hz <= 0) options_.hz = 100;
  root_fd_ = open(options_.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

std::unique_ptr<PerfStacks> PerfStacks::create_without_events(PerfStacksOptions options) {
  return std::unique_ptr<PerfStacks>(new PerfStacks(std::move(options)));
}

std::unique_ptr<PerfStacks> PerfStacks::create(PerfStacksOptions options, uint32_t probe_tid, std::string* reason) {
  std::unique_ptr<PerfStacks> s(new PerfStacks(std::move(options)));
  int error = 0;
  const int fd = s->open_event(probe_tid, &error);
  if (fd < 0) {
    *reason = std::string("perf_event_open: ") + std::strerror(error);
    const std::string paranoid = read_small_file("/proc/sys/kernel/perf_event_paranoid");
    if (!paranoid.empty()) *reason += " (perf_event_paranoid " + paranoid + ")";
    return nullptr;
  }
  close(fd);
  return s;
}

PerfStacks::~PerfStacks() {
  for (auto& [tid, r] : rings_) {
    if (r->base) munmap(r->base, r->length);
    if (r->fd >= 0) close(r->fd);
  }
  if (root_fd_ >= 0) close(root_fd_);
}

int PerfStacks::open_event(uint32_t tid, int* error) const {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;  // the thread's own CPU time: samples say where it goes
  a.sample_period = std::max<uint64_t>(1000, static_cast<uint64_t>(1e9 / options_.hz));
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  a.exclude_kernel = 1;  // what perf_event_paranoid 2 (the common default) allows
  a.exclude_hv = 1;
  a.exclude_callchain_kernel = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.watermark = 1;  // nobody waits on the descriptor: wake no one
  a.wakeup_watermark = static_cast<uint32_t>(options_.ring_pages * page_size_);
  const long fd = syscall(SYS_perf_event_open, &a, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) *error = errno;
  return static_cast<int>(fd);
}

bool PerfStacks::add_thread(uint32_t pid, uint32_t tid) {
  (void)pid;
  if (rings_.count(tid)) return true;
  if (rings_.size() >= options_.max_threads) {
    ++threads_refused_;
    return false;
  }
  int error = 0;
  const int fd = open_event(tid, &error);
  if (fd < 0) {
    ++threads_refused_;
    return false;
  }
  auto r = std::make_unique<Ring>();
  r->fd = fd;
  r->data_size = options_.ring_pages * page_size_;
  r->length = page_size_ + r->data_size;
  r->base = mmap(nullptr, r->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (r->base == MAP_FAILED) {  // over perf_event_mlock_kb and RLIMIT_MEMLOCK
    close(fd);
    ++threads_refused_;
    return false;
  }
  ++threads_opened_;
  rings_.emplace(tid, std::move(r));
  return true;
}

void PerfStacks::read_ring(Ring& r) {
  auto* meta = static_cast<perf_event_mmap_page*>(r.base);
  drain_perf_ring(meta, static_cast<const uint8_t*>(r.base) + page_size_, r.data_size, scratch_);
  if (scratch_.empty()) return;
  uint64_t lost = 0;
  parse_perf_records(
      scratch_, [this](const PerfSample& s) { ingest(s, offset_ns_); }, &lost);
  if (lost) {
    std::lock_guard lock(mutex_);
    lost_ += lost;
  }
}

void PerfStacks::remove_thread(uint32_t tid) {
  auto it = rings_.find(tid);
  if (it == rings_.end()) return;
  read_ring(*it->second);
  munmap(it->second->base, it->second->length);
  close(it->second->fd);
  rings_.erase(it);
}

void PerfStacks::poll(int64_t monotonic_to_trace_ns) {
  offset_ns_ = monotonic_to_trace_ns;
  ++polls_;
  for (auto& [tid, r] : rings_) read_ring(*r);
}

uint32_t PerfStacks::intern_module(std::string_view path) {
  // Called with mutex_ held (find_map's caller, ingest, holds it).
  auto [it, inserted] = module_ids_.try_emplace(std::string(path), static_cast<uint32_t>(modules_.size()));
  if (inserted) modules_.emplace_back(path);
  return it->second;
}

const MapRange* PerfStacks::find_map(uint32_t pid, uint64_t ip) {
  ProcMaps& pm = maps_[pid];
  auto lookup = [&]() -> const MapRange* {
    auto it = std::upper_bound(pm.ranges.begin(), pm.ranges.end(), ip,
                               [](uint64_t v, const MapRange& m) { return v < m.start; });
    if (it == pm.ranges.begin()) return nullptr;
    --it;
    return ip < it->end ? &*it : nullptr;
  };
  if (const MapRange* m = lookup()) return m;
  if (pm.read_poll != UINT64_MAX && polls_ - pm.read_poll < kMapsRereadPolls) return nullptr;
  pm.read_poll = polls_;
  pm.ranges.clear();
  char path[32];
  std::snprintf(path, sizeof path, "%u/maps", pid);
  const int fd = root_fd_ >= 0 ? openat(root_fd_, path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return nullptr;
  maps_text_.clear();
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) maps_text_.append(buf, size_t(n));
  close(fd);
  parse_maps(maps_text_, pm.ranges, [this](std::string_view p) { return intern_module(p); });
  return lookup();
}

void PerfStacks::ingest(const PerfSample& s, int64_t monotonic_to_trace_ns) {
  std::lock_guard lock(mutex_);
  ++samples_;
  if (pending_samples_.size() >= options_.max_pending_samples) {
    ++dropped_;
    return;
  }
  // Leaf first: the sampled instruction, then return addresses (looked up one
  // byte back: the call, not what follows). The kernel walks frame pointers;
  // through code built without them it follows whatever the register held,
  // and the chain ends in "return addresses" that are 0 or point into the
  // stack. The walk is cut at the first return address outside every
  // executable mapping: it and all beyond it are dropped, and an outermost
  // [stack walk cut] frame (FrameStatus::kWalkCut) says the stack is partial.
  // The leaf is kept wherever it is (JIT code mapped since maps was read).
  walk_.clear();
  bool cut = false;
  for (uint64_t ip : s.ips) {
    if (is_perf_context(ip)) continue;
    const bool leaf = walk_.empty();
    const uint64_t at = leaf || ip == 0 ? ip : ip - 1;
    const MapRange* m = leaf || ip != 0 ? find_map(s.pid, at) : nullptr;
    if (!leaf && !m) {
      cut = true;
      break;
    }
    Frame f;
    f.ip = ip;
    f.at = at;
    f.mapped = m != nullptr;
    if (m) f.map = *m;  // a copy: the next find_map may read maps again
    walk_.push_back(f);
  }
  // Outermost frame first into the prefix tree.
  uint32_t parent = 0;
  auto child = [&](const Key& key) {
    auto found = callsites_.find(key);
    if (found == callsites_.end()) {
      if (callsites_.size() >= kMaxCallsites) return false;
      const auto id = static_cast<uint32_t>(callsites_.size() + 1);
      found = callsites_.emplace(key, id).first;
      pending_callsites_.push_back({id, parent, key.module, key.offset});
    }
    parent = found->second;
    return true;
  };
  if (cut) {
    ++walks_cut_;
    if (!child(Key{0, kWalkCut, 0})) return void(++dropped_);
  }
  for (auto it = walk_.rbegin(); it != walk_.rend(); ++it) {
    const MapRange* m = it->mapped ? &it->map : nullptr;
    if (m && pid_modules_.insert(uint64_t{s.pid} << 32 | m->module).second)
      pending_modules_.push_back({s.pid, m->module, m->start, m->end, m->offset});
    const Key key = m ? Key{parent, m->module, it->at - m->start + m->offset} : Key{parent, kUnmapped, it->ip};
    if (!child(key)) return void(++dropped_);
  }
  pending_samples_.push(
      {static_cast<trace::Timestamp>(static_cast<int64_t>(s.time) + monotonic_to_trace_ns), s.pid, s.tid, parent});
}

void PerfStacks::drain(trace::Trace& out, trace::StringTable& strings) {
  std::vector<NewCallsite> callsites;
  std::vector<NewModule> new_modules;
  std::vector<std::string> modules;
  {
    std::lock_guard lock(mutex_);
    callsites.swap(pending_callsites_);
    new_modules.swap(pending_modules_);
    if (!callsites.empty() || !new_modules.empty()) modules = modules_;
    move_rows_to_end(out.host_stack_samples, pending_samples_);
  }
  for (const NewCallsite& c : callsites) {
    if (c.module == kWalkCut) {
      out.host_callsites.push({c.id, c.parent, trace::kNoString, trace::kNoString, 0, trace::FrameStatus::kWalkCut});
      continue;
    }
    const bool mapped = c.module != kUnmapped && c.module < modules.size();
    const auto status = !mapped                                                          ? trace::FrameStatus::kUnmapped
                        : !modules[c.module].empty() && modules[c.module].front() == '[' ? trace::FrameStatus::kNotAFile
                                                                                         : trace::FrameStatus::kUnnamed;
    out.host_callsites.push({c.id, c.parent, trace::kNoString,
                             mapped ? strings.intern(modules[c.module]) : trace::kNoString, c.offset, status});
  }
  if (new_modules.empty()) return;
  // Each module's build-id, once: the ELF's notes, a few small reads (the
  // mapped file itself through map_files where the kernel lets us, so that a
  // file replaced on disk since is not mistaken for it).
  const uint64_t cpu0 = thread_cpu_now();
  for (const NewModule& m : new_modules) {
    if (m.module >= modules.size()) continue;
    const std::string& path = modules[m.module];
    if (build_ids_.size() <= m.module) build_ids_.resize(m.module + 1);
    std::optional<std::string>& id = build_ids_[m.module];
    if (!id && !path.empty() && path.front() != '[') {
      std::string error;
      char range[64];
      std::snprintf(range, sizeof range, "/map_files/%llx-%llx", static_cast<unsigned long long>(m.start),
                    static_cast<unsigned long long>(m.end));
      id = trace::elf_build_id_of_file((options_.proc_root + "/" + std::to_string(m.pid) + range).c_str(), &error);
      if (!id) id = trace::elf_build_id_of_file(path.c_str(), &error);
      if (!id) id = std::string();  // unreadable: named unchecked, or reported missing, offline
    }
    out.host_modules.push(
        {m.pid, strings.intern(path), id ? strings.intern(*id) : trace::kNoString, m.start, m.end, m.offset});
  }
  modules_ns_ += thread_cpu_now() - cpu0;
}

std::string PerfStacks::method() const { return "perf_event_open task-clock, frame-pointer callchains"; }
uint64_t PerfStacks::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

uint64_t PerfStacks::walks_cut() const {
  std::lock_guard lock(mutex_);
  return walks_cut_;
}

uint64_t PerfStacks::lost() const {
  std::lock_guard lock(mutex_);
  return lost_ + dropped_;
}

}  // namespace scalescope::collect
