#include "collect/host_sampler.hpp"

#include "collect/perf_stacks.hpp"
#include "collect/sampler_common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace scalescope::collect {
namespace {

// The getdents64 record (the kernel's linux_dirent64; glibc declares no type for it).
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

uint64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A decimal number at p (optional '-'); advances p. False when none.
bool parse_number(const char*& p, const char* end, int64_t* out) {
  bool neg = false;
  if (p < end && *p == '-') {
    neg = true;
    ++p;
  }
  if (p >= end || *p < '0' || *p > '9') return false;
  uint64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') v = v * 10 + uint64_t(*p++ - '0');
  *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool parse_uint(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v == 0 || v > 0xffffffffu) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// The value after `key` (which starts at a line start) in status text.
bool status_field(std::string_view text, std::string_view key, uint64_t* out) {
  size_t at = 0;
  while (true) {
    at = text.find(key, at);
    if (at == std::string_view::npos) return false;
    if (at == 0 || text[at - 1] == '\n') break;
    at += key.size();
  }
  const char* p = text.data() + at + key.size();
  const char* end = text.data() + text.size();
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  int64_t v = 0;
  if (!parse_number(p, end, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

bool parse_proc_stat(std::string_view text, ProcStat* out) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  out->comm = text.substr(open + 1, close - open - 1);
  const char* p = text.data() + close + 1;
  const char* end = text.data() + text.size();
  // Field 3 (state) follows ") ".
  while (p < end && *p == ' ') ++p;
  if (p >= end) return false;
  out->state = *p++;
  out->cpu = -1;
  // Fields 4.. as numbers: token index i is field i + 4.
  for (int field = 4; field <= 39; ++field) {
    while (p < end && *p == ' ') ++p;
    int64_t v = 0;
    if (!parse_number(p, end, &v)) return field > 15;  // ppid, utime and stime are required
    switch (field) {
      case 4: out->ppid = static_cast<uint32_t>(v); break;
      case 14: out->utime_ticks = static_cast<uint64_t>(v); break;
      case 15: out->stime_ticks = static_cast<uint64_t>(v); break;
      case 39: out->cpu = static_cast<int32_t>(v); break;
      default: break;
    }
  }
  return true;
}

bool parse_schedstat(std::string_view text, uint64_t* run_ns, uint64_t* wait_ns) {
  const char* p = text.data();
  const char* end = p + text.size();
  int64_t a = 0, b = 0;
  if (!parse_number(p, end, &a) || a < 0) return false;
  while (p < end && *p == ' ') ++p;
  if (!parse_number(p, end, &b) || b < 0) return false;
  *run_ns = static_cast<uint64_t>(a);
  *wait_ns = static_cast<uint64_t>(b);
  return true;
}

bool parse_status_switches(std::string_view text, uint64_t* voluntary, uint64_t* involuntary) {
  return status_field(text, "voluntary_ctxt_switches:", voluntary) &&
         status_field(text, "nonvoluntary_ctxt_switches:", involuntary);
}

void parse_children(std::string_view text, std::vector<uint32_t>& out) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    uint32_t pid = 0;
    if (j > i && parse_uint(text.substr(i, j - i), &pid)) out.push_back(pid);
    i = j;
  }
}

std::unique_ptr<HostSampler> HostSampler::create(HostSamplerOptions options, Clock clock, std::string* error) {
  std::unique_ptr<HostSampler> s(new HostSampler(std::move(options), std::move(clock)));
  s->root_fd_ = open(s->options_.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->root_fd_ < 0) {
    *error = s->options_.proc_root + ": " + std::strerror(errno);
    return nullptr;
  }
  const uint32_t pid = s->options_.pid;
  char path[64];
  std::snprintf(path, sizeof path, "%u/task/%u/stat", pid, pid);
  if (faccessat(s->root_fd_, path, R_OK, 0) != 0) {
    *error = s->options_.proc_root + "/" + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::snprintf(path, sizeof path, "%u/task/%u/schedstat", pid, pid);
  s->has_schedstat_ = faccessat(s->root_fd_, path, R_OK, 0) == 0;
  std::snprintf(path, sizeof path, "%u/task/%u/children", pid, pid);
  s->has_children_ = faccessat(s->root_fd_, path, R_OK, 0) == 0;
  const long hz = sysconf(_SC_CLK_TCK);
  s->ns_per_tick_ = hz > 0 ? uint64_t(1000000000 / hz) : 10000000;
  if (s->options_.max_open_files > 0) {
    s->open_budget_ = s->options_.max_open_files;
  } else {
    rlimit rl{};
    size_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? size_t(rl.rlim_cur) : 1024;
    s->open_budget_ = std::min<size_t>(384, limit / 8);
  }
  if (s->options_.discover_every == 0) s->options_.discover_every = 1;
  if (s->options_.switches_every == 0) s->options_.switches_every = 1;
  s->dents_.resize(32768);
  if (s->options_.stack_hz > 0) {
    PerfStacksOptions po;
    po.proc_root = s->options_.proc_root;
    po.hz = s->options_.stack_hz;
    std::string why;
    s->stacks_ = PerfStacks::create(std::move(po), static_cast<uint32_t>(syscall(SYS_gettid)), &why);
    s->stack_method_ = s->stacks_ ? s->stacks_->method() : "off: " + why;
  }
  Process root;
  root.pid = pid;
  s->processes_.emplace(pid, root);
  s->processes_seen_.store(1);
  return s;
}

HostSampler::HostSampler(HostSamplerOptions options, Clock clock)
    : options_(std::move(options)), clock_(std::move(clock)) {}

HostSampler::~HostSampler() {
  stop();
  for (auto& [tid, t] : threads_) close_fds(t);
  for (auto& [pid, p] : processes_)
    if (p.task_fd >= 0) close(p.task_fd);
  if (root_fd_ >= 0) close(root_fd_);
}

uint64_t HostSampler::samples_dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

ssize_t HostSampler::read_file(uint32_t pid, uint32_t tid, const char* leaf, int* fd, char* buf, size_t cap) {
  if (fd != nullptr && *fd >= 0) {
    const ssize_t n = pread(*fd, buf, cap - 1, 0);
    if (n >= 0) buf[n] = 0;
    return n;
  }
  std::snprintf(path_, sizeof path_, "%u/task/%u/%s", pid, tid, leaf);
  const int f = openat(root_fd_, path_, O_RDONLY | O_CLOEXEC);
  if (f < 0) return -1;
  const ssize_t n = pread(f, buf, cap - 1, 0);
  if (n >= 0) buf[n] = 0;
  if (fd != nullptr && open_files_ < open_budget_) {
    *fd = f;
    ++open_files_;
  } else {
    close(f);
  }
  return n;
}

void HostSampler::close_fds(Thread& t) {
  for (int* fd : {&t.fd_stat, &t.fd_sched, &t.fd_status})
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
      --open_files_;
    }
}

void HostSampler::push_thread_row(const Thread& t, const Process& p) {
  PendingThread row;
  row.row.start = t.first_seen;
  row.row.end = t.last_seen;
  row.row.pid = t.pid;
  row.row.tid = t.tid;
  row.row.parent_pid = p.ppid;
  row.row.is_main = t.tid == t.pid;
  row.row.role = p.role;
  row.name.assign(t.comm, strnlen(t.comm, sizeof t.comm));
  std::lock_guard lock(mutex_);
  pending_threads_.push_back(std::move(row));
}

void HostSampler::end_thread(Thread& t) {
  auto p = processes_.find(t.pid);
  if (p != processes_.end() && t.has_reading) push_thread_row(t, p->second);
  if (stacks_) stacks_->remove_thread(t.tid);
  close_fds(t);
}

template <class Pred>
void HostSampler::end_threads_if(Pred ended) {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (ended(it->second)) {
      end_thread(it->second);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

bool HostSampler::list_tasks(Process& p) {
  tids_.clear();
  if (p.task_fd < 0) {
    std::snprintf(path_, sizeof path_, "%u/task", p.pid);
    p.task_fd = openat(root_fd_, path_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p.task_fd < 0) return false;
  }
  if (lseek(p.task_fd, 0, SEEK_SET) != 0) return false;
  while (true) {
    const long n = syscall(SYS_getdents64, p.task_fd, dents_.data(), dents_.size());
    if (n < 0) return false;
    if (n == 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(dents_.data() + off);
      uint32_t tid = 0;
      if (parse_uint(d->name, &tid)) tids_.push_back(tid);
      off += d->reclen;
    }
  }
  return !tids_.empty();
}

void HostSampler::sample_thread(Thread& t, const Process& p, trace::Timestamp now) {
  ProcStat st;
  const ssize_t n = read_file(t.pid, t.tid, "stat", &t.fd_stat, buf_, sizeof buf_);
  if (n <= 0 || !parse_proc_stat(std::string_view(buf_, size_t(n)), &st)) return;  // vanished
  // The name views buf_, which the next reads overwrite.
  char comm[sizeof t.comm] = {};
  const size_t len = std::min(st.comm.size(), sizeof comm - 1);
  std::memcpy(comm, st.comm.data(), len);
  uint64_t cpu = (st.utime_ticks + st.stime_ticks) * ns_per_tick_, wait = 0;
  if (has_schedstat_) {
    const ssize_t m = read_file(t.pid, t.tid, "schedstat", &t.fd_sched, buf_, sizeof buf_);
    if (m <= 0 || !parse_schedstat(std::string_view(buf_, size_t(m)), &cpu, &wait)) return;
  }
  // Context switches from status, the costliest file (it also takes the
  // process's mmap lock): on a thread's first sample and every
  // switches_every-th sample; the rows between carry 0 and the next read
  // carries the switches since the last one.
  uint64_t vol = t.vol, invol = t.invol;
  const bool read_switches = !t.has_reading || ticks_.load(std::memory_order_relaxed) % options_.switches_every == 0;
  if (read_switches) {
    const ssize_t k = read_file(t.pid, t.tid, "status", &t.fd_status, buf_, sizeof buf_);
    if (k <= 0 || !parse_status_switches(std::string_view(buf_, size_t(k)), &vol, &invol)) return;
  }

  const bool first = !t.has_reading;
  auto delta = [&](uint64_t now_v, uint64_t last) -> uint64_t {
    if (first) return t.born_after_start ? now_v : 0;
    return now_v >= last ? now_v - last : 0;  // a reused tid starts again from 0
  };
  trace::HostSampleRecord r;
  r.time = now;
  r.pid = t.pid;
  r.tid = t.tid;
  r.state = trace::thread_state_from_letter(st.state);
  r.cpu = st.cpu;
  r.cpu_ns = delta(cpu, t.cpu_ns);
  r.run_wait_ns = delta(wait, t.wait_ns);
  r.voluntary_switches = static_cast<uint32_t>(std::min<uint64_t>(delta(vol, t.vol), UINT32_MAX));
  r.involuntary_switches = static_cast<uint32_t>(std::min<uint64_t>(delta(invol, t.invol), UINT32_MAX));
  t.cpu_ns = cpu;
  t.wait_ns = wait;
  t.vol = vol;
  t.invol = invol;
  t.last_seen = now;
  t.seen_tick = ticks_.load(std::memory_order_relaxed) + 1;
  t.has_reading = true;
  const bool renamed = std::memcmp(t.comm, comm, sizeof comm) != 0;
  if (renamed) std::memcpy(t.comm, comm, sizeof comm);
  if (t.tid == t.pid) processes_[t.pid].ppid = st.ppid;
  if (first || renamed) push_thread_row(t, p);
  std::lock_guard lock(mutex_);
  if (pending_samples_.size() >= options_.max_pending_samples) {
    ++dropped_;
    return;
  }
  pending_samples_.push(r);
}

void HostSampler::add_descendant(uint32_t pid, uint32_t ppid) {
  if (processes_.count(pid)) return;
  Process p;
  p.pid = pid;
  p.ppid = ppid;
  p.role = trace::ProcessRole::kDescendant;
  p.first_tick = ticks_.load(std::memory_order_relaxed);
  p.new_after_start = p.first_tick > 0;
  processes_.emplace(pid, p);
  processes_seen_.fetch_add(1, std::memory_order_relaxed);
}

void HostSampler::exclude(uint32_t pid, trace::Timestamp) {
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.excluded) return;
  it->second.excluded = true;
  end_threads_if([pid](const Thread& t) { return t.pid == pid; });
  if (it->second.task_fd >= 0) {
    close(it->second.task_fd);
    it->second.task_fd = -1;
  }
}

void HostSampler::discover_by_scan() {
  // (pid, ppid) of every process on the machine; then descendants by chain.
  std::vector<std::pair<uint32_t, uint32_t>> all;
  const int dir = openat(root_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  while (true) {
    const long n = syscall(SYS_getdents64, dir, dents_.data(), dents_.size());
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(dents_.data() + off);
      off += d->reclen;
      uint32_t pid = 0;
      if (!parse_uint(d->name, &pid)) continue;
      std::snprintf(path_, sizeof path_, "%u/stat", pid);
      const int f = openat(root_fd_, path_, O_RDONLY | O_CLOEXEC);
      if (f < 0) continue;
      const ssize_t m = pread(f, buf_, sizeof buf_ - 1, 0);
      close(f);
      ProcStat st;
      if (m > 0 && parse_proc_stat(std::string_view(buf_, size_t(m)), &st)) all.emplace_back(pid, st.ppid);
    }
  }
  close(dir);
  for (bool added = true; added;) {
    added = false;
    for (auto [pid, ppid] : all) {
      auto parent = processes_.find(ppid);
      if (parent == processes_.end() || parent->second.excluded || processes_.count(pid)) continue;
      add_descendant(pid, ppid);
      added = true;
    }
  }
}

void HostSampler::discover(trace::Timestamp now) {
  if (has_children_) {
    // Breadth first from every sampled process: each thread's children file.
    std::vector<uint32_t>& work = scratch_pids_;
    work.clear();
    for (const auto& [pid, p] : processes_)
      if (!p.excluded) work.push_back(pid);
    std::vector<uint32_t> children;
    for (size_t w = 0; w < work.size(); ++w) {
      auto it = processes_.find(work[w]);
      if (it == processes_.end() || !list_tasks(it->second)) continue;
      const std::vector<uint32_t> tids = tids_;
      for (uint32_t tid : tids) {
        children.clear();
        const ssize_t n = read_file(work[w], tid, "children", nullptr, buf_, sizeof buf_);
        if (n > 0) parse_children(std::string_view(buf_, size_t(n)), children);
        for (uint32_t c : children)
          if (!processes_.count(c)) {
            add_descendant(c, work[w]);
            work.push_back(c);
          }
      }
    }
  } else {
    discover_by_scan();
  }
  if (options_.traced_elsewhere) {
    scratch_pids_.clear();
    for (const auto& [pid, p] : processes_)
      if (p.role == trace::ProcessRole::kDescendant && !p.excluded && options_.traced_elsewhere(pid))
        scratch_pids_.push_back(pid);
    for (uint32_t pid : scratch_pids_) exclude(pid, now);
  }
}

void HostSampler::sample_once() {
  const trace::Timestamp now = clock_();
  const uint64_t tick = ticks_.load(std::memory_order_relaxed);
  if (tick % options_.discover_every == 0) discover(now);
  std::vector<uint32_t> gone;
  for (auto& [pid, p] : processes_) {
    if (p.excluded) continue;
    if (!list_tasks(p)) {
      gone.push_back(pid);
      continue;
    }
    for (uint32_t tid : tids_) {
      auto [it, inserted] = threads_.try_emplace(tid);
      Thread& t = it->second;
      if (inserted) {
        t.pid = pid;
        t.tid = tid;
        t.first_seen = now;
        // A thread that appears after its process's first sample, or in a
        // process that started after the sampler, was born since: its
        // counters count from zero, so its first reading is its delta.
        t.born_after_start = p.new_after_start || tick > p.first_tick;
        threads_seen_.fetch_add(1, std::memory_order_relaxed);
        if (stacks_) stacks_->add_thread(pid, tid);
      } else if (t.pid != pid) {
        continue;  // listed under two processes (a tid reused across a fork): keep the first
      }
      sample_thread(t, p, now);
    }
  }
  // Threads not sampled now ended (or could not be read: they vanished mid-read).
  end_threads_if([mark = tick + 1](const Thread& t) { return t.seen_tick != mark; });
  for (uint32_t pid : gone) {
    auto it = processes_.find(pid);
    if (it->second.task_fd >= 0) close(it->second.task_fd);
    if (it->second.role == trace::ProcessRole::kTraced) {
      it->second.task_fd = -1;  // the traced process itself stays (a fake tree may bring it back)
      continue;
    }
    processes_.erase(it);
  }
  if (stacks_) stacks_->poll(clock_() - static_cast<int64_t>(monotonic_now()));
  ticks_.store(tick + 1, std::memory_order_relaxed);
}

uint64_t HostSampler::stack_samples() const { return stacks_ ? stacks_->samples() : 0; }
uint64_t HostSampler::stack_samples_lost() const { return stacks_ ? stacks_->lost() : 0; }
uint64_t HostSampler::stack_threads_refused() const { return stacks_ ? stacks_->threads_refused() : 0; }
uint64_t HostSampler::stack_walks_cut() const { return stacks_ ? stacks_->walks_cut() : 0; }
uint64_t HostSampler::stack_modules_ns() const { return stacks_ ? stacks_->modules_ns() : 0; }

void HostSampler::finish_threads() {
  for (auto& [tid, t] : threads_) end_thread(t);
  threads_.clear();
}

void HostSampler::start(double hz) {
  if (hz <= 0 || thread_.joinable()) return;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / hz));
  thread_ = std::thread([this, period] {
    run_every(period, stop_, [this] {
      sample_once();
      cpu_ns_.store(thread_cpu_now(), std::memory_order_relaxed);
    });
    finish_threads();
    cpu_ns_.store(thread_cpu_now(), std::memory_order_relaxed);
  });
}

void HostSampler::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void HostSampler::drain(trace::Trace& out, trace::StringTable& strings) {
  if (stacks_) stacks_->drain(out, strings);
  std::lock_guard lock(mutex_);
  for (auto& t : pending_threads_) {
    t.row.name = strings.intern(t.name);
    out.host_threads.push(t.row);
  }
  pending_threads_.clear();
  move_rows_to_end(out.host_samples, pending_samples_);
}

}  // namespace scalescope::collect
