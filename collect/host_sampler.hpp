#pragma once
// What every CPU thread of a traced process and of its descendant processes
// (DataLoader workers) is doing, sampled from /proc at a fixed rate on the
// sampler's own thread: scheduler state, the CPU it last ran on, on-CPU and
// run-queue time, context switches, name. /proc works in unprivileged
// containers and VMs, where perf_event_open and hardware counters are often
// refused; the trace's metadata says which method was used
// (`host_sampling_method`).
//
// Cost: per thread and sample one pread of stat and schedstat (status, for
// context switches, every `switches_every` samples) into
// reused buffers (file descriptors kept open within a budget taken from
// RLIMIT_NOFILE, so the job's own descriptors are never starved), parsing
// without allocation; new threads by one getdents64 of each process's task
// directory per sample; new child processes every `discover_every` samples
// from the task/<tid>/children files (a full /proc scan by parent pid where
// the kernel has no children files).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::collect {

class PerfStacks;

// /proc/<pid>/task/<tid>/stat, the fields the sampler uses. `comm` views the
// text (between the first '(' and the last ')': names may hold ')' and spaces).
struct ProcStat {
  char state = '?';
  uint32_t ppid = 0;
  uint64_t utime_ticks = 0, stime_ticks = 0;
  int32_t cpu = -1;  // field 39; -1 when the line is shorter (very old kernels)
  std::string_view comm;
};
// False on text that is not a stat line (empty: the thread vanished).
bool parse_proc_stat(std::string_view text, ProcStat* out);
// /proc/.../schedstat: "<on-CPU ns> <run-queue wait ns> <timeslices>".
bool parse_schedstat(std::string_view text, uint64_t* run_ns, uint64_t* wait_ns);
// /proc/.../status: voluntary_ctxt_switches and nonvoluntary_ctxt_switches.
bool parse_status_switches(std::string_view text, uint64_t* voluntary, uint64_t* involuntary);
// /proc/.../task/<tid>/children: pids separated by spaces. Appends to `out`.
void parse_children(std::string_view text, std::vector<uint32_t>& out);

struct HostSamplerOptions {
  std::string proc_root = "/proc";  // tests point it at a fake tree
  uint32_t pid = 0;                 // the traced process
  // A descendant that has its own collector (a rank under the torchrun agent)
  // is left to it, with its subtree. Asked for each descendant at each
  // discovery until it says yes. Null: none is.
  std::function<bool(uint32_t pid)> traced_elsewhere;
  uint32_t discover_every = 10;  // samples between looks for new child processes (100 ms at 100 Hz)
  uint32_t switches_every = 10;  // samples between reads of status (context switches; the costliest file)
  size_t max_open_files = 0;     // kept-open descriptors; 0: RLIMIT_NOFILE / 8, at most 384
  size_t max_pending_samples = size_t{1} << 22;  // undrained rows beyond this are dropped and counted
  // Native call stacks through perf_event_open (perf_stacks.hpp) at this
  // rate of each thread's CPU time; 0: none. Where the kernel refuses,
  // sampling goes on from /proc alone and stack_method() says why.
  double stack_hz = 0;
};

class HostSampler {
 public:
  using Clock = std::function<trace::Timestamp()>;

  // nullptr with *error when the process's /proc directory cannot be read.
  static std::unique_ptr<HostSampler> create(HostSamplerOptions options, Clock clock, std::string* error);
  ~HostSampler();

  void start(double hz);  // sampling thread; hz <= 0: nothing
  void stop();            // bounded: the thread wakes at least every 50 ms; writes the last thread rows
  // One sample of every thread (tests call it directly, never beside start()).
  void sample_once();
  // Ends every thread still alive (its last row), as stop() does.
  void finish_threads();
  // Moves the samples and thread rows taken so far into `out`, names interned
  // into `strings` (the string table `out`'s ids index). Native stack frames
  // get their names at the first drain after stop() (or at every drain
  // when the sampling thread never ran: tests).
  void drain(trace::Trace& out, trace::StringTable& strings);

  // "procfs+schedstat" (on-CPU and run-queue ns from schedstat) or "procfs"
  // (on-CPU time from stat's clock ticks, no run-queue wait).
  std::string_view method() const { return has_schedstat_ ? "procfs+schedstat" : "procfs"; }
  // How native stacks were sampled, or "off: <why>" (perf_event_open refused,
  // or stack_hz 0). Stack samples and their callsites come out of drain().
  const std::string& stack_method() const { return stack_method_; }
  uint64_t stack_samples() const;
  uint64_t stack_samples_lost() const;
  uint64_t stack_threads_refused() const;
  uint64_t stack_walks_cut() const;  // samples whose frame-pointer walk was cut (perf_stacks.hpp)
  uint64_t stack_modules_ns() const;  // reading build-ids at drains (names come offline)
  // Tests: the stack sampler (null when off).
  PerfStacks* stacks() { return stacks_.get(); }
  // "children" (task/<tid>/children) or "scan" (all of /proc by parent pid).
  std::string_view discovery() const { return has_children_ ? "children" : "scan"; }
  uint64_t thread_cpu_ns() const { return cpu_ns_.load(std::memory_order_relaxed); }
  uint64_t samples_taken() const { return ticks_.load(std::memory_order_relaxed); }
  uint64_t threads_seen() const { return threads_seen_.load(std::memory_order_relaxed); }
  uint64_t processes_seen() const { return processes_seen_.load(std::memory_order_relaxed); }
  uint64_t samples_dropped() const;

 private:
  struct Thread {
    uint32_t pid = 0, tid = 0;
    int fd_stat = -1, fd_sched = -1, fd_status = -1;
    uint64_t cpu_ns = 0, wait_ns = 0, vol = 0, invol = 0;  // last readings
    trace::Timestamp first_seen = 0, last_seen = 0;
    char comm[16] = {};
    uint64_t seen_tick = 0;
    bool has_reading = false;
    bool born_after_start = false;
  };
  struct Process {
    uint32_t pid = 0, ppid = 0;
    int task_fd = -1;
    trace::ProcessRole role = trace::ProcessRole::kTraced;
    bool excluded = false;  // traced elsewhere (its own collector)
    bool new_after_start = false;
    uint64_t first_tick = 0;  // the sample that first listed it
  };

  HostSampler(HostSamplerOptions options, Clock clock);
  void discover(trace::Timestamp now);
  void discover_by_scan();
  void add_descendant(uint32_t pid, uint32_t ppid);
  void exclude(uint32_t pid, trace::Timestamp now);
  bool list_tasks(Process& p);
  void sample_thread(Thread& t, const Process& p, trace::Timestamp now);
  ssize_t read_file(uint32_t pid, uint32_t tid, const char* leaf, int* fd, char* buf, size_t cap);
  void end_thread(Thread& t);
  template <class Pred>
  void end_threads_if(Pred ended);  // ends and forgets each thread `ended` picks
  void close_fds(Thread& t);
  void push_thread_row(const Thread& t, const Process& p);

  HostSamplerOptions options_;
  Clock clock_;
  int root_fd_ = -1;
  bool has_schedstat_ = false, has_children_ = false;
  uint64_t ns_per_tick_ = 10000000;
  size_t open_budget_ = 0, open_files_ = 0;

  // Owned by the sampling thread (or sample_once's caller).
  std::unordered_map<uint32_t, Process> processes_;
  std::unordered_map<uint32_t, Thread> threads_;
  std::vector<uint32_t> tids_;  // reused: one task listing
  std::vector<uint32_t> scratch_pids_;
  std::vector<char> dents_;
  char buf_[4096] = {};
  char path_[96] = {};

  mutable std::mutex mutex_;  // guards what drain() takes
  trace::HostSampleTable pending_samples_;
  struct PendingThread {
    trace::HostThreadRecord row;
    std::string name;
  };
  std::vector<PendingThread> pending_threads_;
  uint64_t dropped_ = 0;

  std::atomic<uint64_t> ticks_{0}, threads_seen_{0}, processes_seen_{0}, cpu_ns_{0};
  std::atomic<bool> stop_{false};
  std::unique_ptr<PerfStacks> stacks_;  // sampling thread, and drain()
  std::string stack_method_ = "off";
  std::thread thread_;
};

}  // namespace scalescope::collect
