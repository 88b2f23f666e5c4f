#pragma once
// Host threads from the collector's host sampler (host_threads.cpp; docs/collector.md).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

// One host thread over the window.
struct HostThreadSummary {
  uint32_t pid = 0, tid = 0;
  std::string name;
  bool is_main = false;
  trace::ProcessRole role = trace::ProcessRole::kTraced;
  int64_t samples = 0;
  std::array<int64_t, trace::kThreadStateCount> state_samples{};  // by trace::ThreadState
  int64_t cpu_ns = 0, run_wait_ns = 0;
  int64_t voluntary_switches = 0, involuntary_switches = 0;
  double busy_share = 0;      // cpu_ns / window
  std::vector<int32_t> cpus;  // CPUs it was seen on
  // Native call stacks (format 1.3, where perf_event_open was allowed): its
  // stack samples in the window, the functions they ended in (self) and the
  // whole stacks seen most often, by samples, descending.
  int64_t stack_samples = 0;
  struct Share {
    std::string what;  // a function ("module+0x1f0" when not resolved), or a stack "outer;...;leaf"
    int64_t samples = 0;
    double share = 0;  // of the thread's stack samples
  };
  std::vector<Share> top_functions;  // at most 5
  std::vector<Share> top_stacks;     // at most 3
};

// The launching (main) thread and the rest of the host in one iteration or
// over the window. Shares are of wall time; *_cores are CPU-seconds per
// second (2.0 = two cores' worth).
struct HostShares {
  int64_t wall_ns = 0;
  double main_busy = 0;                 // main thread on a CPU
  double main_run_wait = 0;             // main thread runnable but waiting for a CPU (schedstat)
  double main_sleep = 0;                // main thread sleeping (S: locks, queues, the GIL, CUDA syncs that block)
  double main_io = 0;                   // main thread in uninterruptible sleep (D: I/O, page faults)
  double main_other_threads_cores = 0;  // the traced process's other threads
  double worker_cores = 0;              // descendant processes (DataLoader workers)
  double mean_runnable = 0;             // threads in state R per sample instant (all sampled threads)
  int32_t max_runnable = 0;
  int64_t main_samples = 0;
};

struct HostIteration {
  int64_t index = 0;  // 0-based, as in IterationStats::iterations
  trace::Timestamp start = 0, end = 0;
  HostShares shares;
};

struct HostStats {
  Availability availability;
  std::string method;  // the collector's host_sampling_method ("procfs+schedstat", "procfs")
  // The collector's host_stack_sampling: how native stacks were taken, or
  // "off: <why>" (perf_event_open refused); empty for traces before 1.3.
  std::string stack_method;
  // How frames were named offline (trace/model/frame_namer.hpp: "offline: 812 of
  // 840 frames named; module missing 20 (libfoo.so)"); empty when not done.
  std::string stack_naming;
  int64_t stack_samples = 0;  // in the window, all threads
  double hz = 0;
  bool has_run_wait = false;  // run-queue wait measured (schedstat)
  int64_t samples = 0, sample_instants = 0;
  int64_t thread_count = 0, worker_processes = 0;  // threads sampled in the window; descendant processes
  uint32_t main_tid = 0;
  int32_t cores = 0;  // CPUs the traced process may run on (its affinity); 0 unknown
  HostShares window;  // over the whole window
  // Contention: sample instants with more runnable threads than cores, and
  // all sampled threads' run-queue wait in cores' worth.
  double contended_instants = 0;  // share of instants
  double run_wait_cores = 0;
  // NUMA, measured: where the main thread and all sampled threads ran.
  int32_t gpu_node = -1;
  std::vector<int32_t> main_cpus, cpus;    // distinct CPUs seen
  std::vector<int32_t> nodes;              // their NUMA nodes
  double main_on_gpu_node = -1;            // share of the main thread's samples on the GPU's node; -1 unknown
  double cpu_on_gpu_node = -1;             // share of all sampled CPU time on the GPU's node; -1 unknown
  std::vector<HostThreadSummary> threads;  // by CPU time, descending, at most 64
  std::vector<HostIteration> iterations;   // one per iteration in the window
};

}  // namespace scalescope::analyze
