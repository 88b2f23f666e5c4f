#include "collect/python_outside.hpp"
#include "collect/sampler_common.hpp"

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

#include <fmt/format.h>

#include "collect/host_facts.hpp"
#include "collect/host_sampler.hpp"

namespace scalescope::collect {
namespace {

constexpr size_t kMaxStacks = 2000;           // distinct (thread, stack) pairs per process, as the bootstrap keeps
constexpr double kDiscoverEverySeconds = 0.2;  // new DataLoader workers are seen within this
constexpr int kOpenTries = 5;                   // discoveries (1 s) a process that just became Python is tried

std::string read_small_file(const std::string& path) { return read_text_file(path).value_or(std::string()); }

std::vector<uint32_t> children_of(uint32_t pid) {
  std::vector<uint32_t> out;
  const std::string task = fmt::format("/proc/{}/task", pid);
  DIR* d = opendir(task.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') parse_children(read_small_file(task + "/" + e->d_name + "/children"), out);
  closedir(d);
  return out;
}

// Kernels without task/<tid>/children files (some sandboxes): every
// process's parent, from one scan of /proc.
std::vector<std::pair<uint32_t, uint32_t>> parents_by_scan() {
  std::vector<std::pair<uint32_t, uint32_t>> out;  // (pid, ppid)
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (pid == 0 || *end) continue;
    ProcStat st;
    if (parse_proc_stat(read_small_file(fmt::format("/proc/{}/stat", pid)), &st))
      out.emplace_back(static_cast<uint32_t>(pid), st.ppid);
  }
  closedir(d);
  return out;
}

std::string exe_of(uint32_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid), ec).string();
}

// The stack's key: thread and frames, one string.
std::string stack_key(uint32_t tid, const std::vector<trace::PythonStackFrame>& frames) {
  std::string k = std::to_string(tid);
  for (const auto& f : frames) {
    k += '\0';
    k += f.file;
    k += '\0';
    k += std::to_string(f.line);
    k += '\0';
    k += f.function;
  }
  return k;
}

}  // namespace

struct OutsidePythonSampler::Process {
  std::string exe;                     // what it ran when last looked at (a fork becomes Python at exec)
  std::unique_ptr<PythonProcessReader> reader;
  bool done = false;                   // exited, or not Python and not changed since
  int open_tries = 0;                  // failed opens of the present executable
  trace::PythonStacks stacks;
  std::unordered_map<std::string, size_t> index;  // stack_key -> stacks.stacks position
  std::map<uint32_t, std::string> threads;        // native id -> name (comm), read when first seen
  uint64_t cpu_ns = 0;
  std::chrono::steady_clock::time_point first{}, last{};
};

OutsidePythonSampler::OutsidePythonSampler(OutsidePythonOptions options) : options_(std::move(options)) {}

OutsidePythonSampler::~OutsidePythonSampler() { stop(); }

void OutsidePythonSampler::start() {
  if (options_.hz <= 0 || thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { run(); });
}

void OutsidePythonSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void OutsidePythonSampler::run() {
  auto next_discovery = std::chrono::steady_clock::now();
  const auto period =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(1.0 / options_.hz));
  run_every(period, stop_, [&] {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_discovery) {
      discover();
      next_discovery = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(kDiscoverEverySeconds));
    }
    sample_all();
  });
}

void OutsidePythonSampler::discover() {
  std::vector<uint32_t> tree{options_.root_pid};
  const bool children_files =
      std::filesystem::exists(fmt::format("/proc/{0}/task/{0}/children", options_.root_pid));
  const auto parents = children_files ? std::vector<std::pair<uint32_t, uint32_t>>() : parents_by_scan();
  for (size_t i = 0; i < tree.size() && tree.size() < 4096; ++i) {
    std::vector<uint32_t> children;
    if (children_files) {
      children = children_of(tree[i]);
    } else {
      for (const auto& [pid, ppid] : parents)
        if (ppid == tree[i]) children.push_back(pid);
    }
    for (uint32_t c : children)
      if (std::find(tree.begin(), tree.end(), c) == tree.end()) tree.push_back(c);
  }
  std::lock_guard lock(mutex_);
  for (uint32_t pid : tree) {
    auto& p = processes_[pid];
    if (!p) p = std::make_unique<Process>();
    if (p->reader) continue;
    const std::string exe = exe_of(pid);
    if (exe.empty() || (p->done && exe == p->exe)) continue;
    if (exe != p->exe) p->open_tries = 0;
    p->exe = exe;
    // Just after exec the new image may not be mapped yet (the link to the
    // executable changes first): a failed open is tried again a few times.
    p->done = ++p->open_tries >= kOpenTries;
    std::string note;
    bool is_python = false;
    p->reader = PythonProcessReader::open(pid, &note, &is_python);
    if (p->reader) {
      p->done = false;
      auto& s = p->stacks;
      s.file_name = fmt::format("{}{}-{}.json", trace::kPythonStacksPrefix, options_.hostname, pid);
      s.pid = pid;
      s.hostname = options_.hostname;
      s.hz = options_.hz;
      s.state = fmt::format("on throughout, read from outside (CPython 3.{})", p->reader->version_minor());
      ProcStat st;
      const std::string stat = read_small_file(fmt::format("/proc/{}/stat", pid));
      if (parse_proc_stat(stat, &st)) s.ppid = st.ppid;
    } else if (is_python && std::find(notes_.begin(), notes_.end(), note) == notes_.end()) {
      notes_.push_back(note);
    }
  }
}

void OutsidePythonSampler::sample_all() {
  std::lock_guard lock(mutex_);
  std::vector<PythonThreadStack> got;
  for (auto& [pid, p] : processes_) {
    if (!p->reader || p->done) continue;
    const uint64_t cpu0 = thread_cpu_now();
    const auto now = std::chrono::steady_clock::now();
    if (!p->reader->sample(&got)) {
      p->done = true;
      continue;
    }
    if (p->stacks.samples == 0) p->first = now;
    p->last = now;
    auto& s = p->stacks;
    ++s.samples;
    for (auto& t : got) {
      ++s.thread_samples;
      if (t.truncated) ++s.truncated;
      const std::string key = stack_key(t.native_id, t.frames);
      auto it = p->index.find(key);
      if (it != p->index.end()) {
        ++s.stacks[it->second].samples;
      } else if (s.stacks.size() < kMaxStacks) {
        p->index.emplace(key, s.stacks.size());
        s.stacks.push_back({t.native_id, 1, std::move(t.frames)});
        if (!p->threads.contains(t.native_id)) {
          std::string name = read_small_file(fmt::format("/proc/{}/task/{}/comm", pid, t.native_id));
          while (!name.empty() && name.back() == '\n') name.pop_back();
          p->threads[t.native_id] = std::move(name);
        }
      } else {
        ++s.dropped;
      }
    }
    p->cpu_ns += thread_cpu_now() - cpu0;
  }
}

std::vector<trace::PythonStacks> OutsidePythonSampler::results() const {
  std::lock_guard lock(mutex_);
  std::vector<trace::PythonStacks> out;
  for (const auto& [pid, p] : processes_) {
    if (!p->reader || p->stacks.samples == 0) continue;
    trace::PythonStacks s = p->stacks;
    // One sample's period added: n samples cover n periods, not n - 1.
    s.window_seconds = std::chrono::duration<double>(p->last - p->first).count() + 1.0 / options_.hz;
    s.sampler_cpu_per_second = static_cast<double>(p->cpu_ns) / 1e9 / s.window_seconds;
    for (const auto& [tid, name] : p->threads) s.threads.push_back({tid, name, tid == pid});
    std::stable_sort(s.threads.begin(), s.threads.end(),
                     [](const auto& a, const auto& b) { return a.is_main > b.is_main; });
    std::stable_sort(s.stacks.begin(), s.stacks.end(), [](const auto& a, const auto& b) { return a.samples > b.samples; });
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> OutsidePythonSampler::notes() const {
  std::lock_guard lock(mutex_);
  return notes_;
}

}  // namespace scalescope::collect
