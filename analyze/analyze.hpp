#pragma once
// Analyses of traces: pure functions of trace::Trace that return small summary
// structs (never copies of events), so many ranks fit in memory at once.
//
//   analyze::Options options;                       // whole trace, default rules
//   analyze::RankAnalysis r = analyze::analyze_rank(trace, options);
//   analyze::RunAnalysis run = analyze::combine({r, ...});  // adds stragglers
//   nlohmann::json j = analyze::to_json(run);
//
// Every analysis that lacks the event kinds it needs is marked skipped with a
// stated reason (Availability) instead of reporting a wrong number.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/attribution.hpp"
#include "analyze/hang_report.hpp"
#include "analyze/nccl_ops.hpp"
#include "trace/import/clock_alignment.hpp"
#include "trace/model/python_stacks.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

// ---- kernel classes (rules documented in docs/kernel-classes.md) ----------

enum class KernelClass : uint8_t { kCompute = 0, kCommunication, kMemory, kSynchronization };
inline constexpr int kKernelClassCount = 4;
enum class Precision : uint8_t {
  kOther = 0,     // not a GEMM/convolution we can place (elementwise, reductions, ...)
  kFp64,          // double-precision kernels
  kFp32NoTensor,  // FP32 GEMM/convolution on CUDA cores (SIMT)
  kTensorCore,    // tensor-core kernels in FP16, BF16, FP8, INT8 (HMMA/GMMA/WGMMA)
  kTf32,          // FP32 data on tensor cores as TF32 (half the BF16 peak)
};
inline constexpr int kPrecisionCount = 5;

std::string_view to_string(KernelClass c);
std::string_view to_string(Precision p);

// What the name of one kernel says about it.
struct KernelInfo {
  KernelClass cls = KernelClass::kCompute;
  Precision precision = Precision::kOther;
  bool layout_conversion = false;  // NCHW <-> NHWC transposes
  bool layout_to_nchw = false;     // ... of them, NHWC -> NCHW (the model is channels_last, an op is not)
  bool nchw_half = false;          // an NCHW-only kernel computing in fp16/bf16 (docs/kernel-classes.md)
};

// Name rules: an ordered list of (case-insensitive substring, class); the
// first match wins, built-in rules come after the user's. Precision and layout
// patterns are built in.
class KernelClassifier {
 public:
  KernelClassifier();  // the built-in rules
  // Reads a rules file: lines "<class> <substring>" (class: compute,
  // communication, memory, synchronization); '#' starts a comment. The file's
  // rules take precedence over the built-in ones. Throws Error on bad lines.
  static KernelClassifier from_file(const std::string& path);
  // The same rules from text already read; `source` names the input in errors
  // ("rules.txt:3: ..."). At most kMaxRules rules and kMaxRulesBytes of text.
  static KernelClassifier parse(std::string_view text, std::string_view source);
  static constexpr size_t kMaxRules = 10'000;
  static constexpr size_t kMaxRulesBytes = 1 << 20;
  void add_rule(std::string substring, KernelClass cls);  // user rule, before built-ins
  KernelInfo classify(std::string_view kernel_name) const;

 private:
  struct Rule {
    std::string needle;  // lower case
    KernelClass cls;
  };
  std::vector<Rule> user_rules_;
};

// ---- options and window ---------------------------------------------------

// --window START:END. Forms: "10%:90%" (of the trace span), "5s:10s" or
// "2000000:9000000" (time after the trace's first event; units ns, us, ms, s,
// a bare number is ns; kind kNanoseconds either way), "it5:it50" (iterations
// 5 to 49, 0-based, end exclusive). Both ends use the same form.
struct WindowSpec {
  enum class Kind : uint8_t { kNanoseconds = 0, kPercent, kIterations };
  Kind kind = Kind::kPercent;
  double start = 0, end = 100;
  static WindowSpec parse(std::string_view text);  // throws Error naming the text
  static constexpr double kMaxNanoseconds = 1e18;  // ~31 years: offsets stay far inside int64
  static constexpr double kMaxIterations = 1e9;
  std::string to_string() const;
};

struct Options {
  std::optional<WindowSpec> window;  // none: the whole trace
  std::string iteration_range;       // NVTX range name marking one iteration; "" = automatic
  KernelClassifier classifier;
  int top_kernels = 200;          // kernel names kept per rank (for top lists and diff)
  double warmup_tolerance = 0.5;  // an early iteration longer than (1+tol) x steady median is warm-up
  bool attribution = true;        // GPU time by operator and range (attribution.hpp); off to measure its cost
  // Align the hosts' clocks from matched collectives before stragglers are
  // measured (trace/import/clock_alignment.hpp); false: estimate and report only.
  bool align_clocks = true;
  // analyze_path reads an .sstrace rank of more rows than this chunk by chunk
  // (analyze_rank_streaming: memory bounded whatever its length, the same
  // figures); smaller ones whole, which costs less: the streamed passes
  // decode every chunk three to five times and hold about 230 MiB with
  // attribution, what reading 2.5 M rows whole takes (bench/RESULTS.md).
  // 0: every .sstrace rank streamed.
  uint64_t stream_above_rows = 4'000'000;
};

// Why an analysis has no figures: e.g. "skipped: the trace has no host facts
// (imported from PyTorch profiler)".
struct Availability {
  bool available = true;
  std::string reason;  // empty when available
};

// ---- results --------------------------------------------------------------

struct StreamUtilization {
  uint32_t device = 0, stream = 0;
  int64_t busy_ns = 0;  // union of this stream's GPU activity inside the window
  double fraction = 0;  // busy / window wall time
};

// Compute + exposed communication + copies/sets + idle == wall_ns exactly.
// Priority where activities overlap: compute, then communication, then copies.
struct RankBreakdown {
  Availability availability;
  trace::Timestamp window_start = 0, window_end = 0;
  int64_t wall_ns = 0;
  int64_t compute_ns = 0;
  int64_t exposed_communication_ns = 0;  // communication not under any compute
  int64_t copy_ns = 0;                   // copies, sets and memory kernels not under compute/communication
  int64_t idle_ns = 0;
  int64_t communication_ns = 0;  // all communication time (union)
  int64_t overlap_ns = 0;        // communication hidden under compute
  double overlap_fraction = 0;   // overlap / communication (0 when none)
  std::vector<StreamUtilization> streams;
};

struct Iteration {
  trace::Timestamp start = 0, end = 0;
  bool warmup = false;
};

struct IterationStats {
  Availability availability;
  std::string source;                 // "nvtx:ProfilerStep#", "range:<name>", "detected:<pattern>"
  std::vector<Iteration> iterations;  // in the window, in time order
  // The number of iterations[0] among all detected iterations: what
  // --window itA:itB counts (a step begun before the trace's first event is
  // one of those, not of this list).
  int64_t first_number = 0;
  int64_t count = 0;
  int64_t warmup_count = 0;
  double median_ns = 0, p95_ns = 0, mean_ns = 0, cv = 0;          // all iterations
  double steady_median_ns = 0, steady_p95_ns = 0, steady_cv = 0;  // without warm-up
};

// One collective as this rank saw it: enough to match it across ranks.
struct CollectiveArrival {
  trace::StringId communicator = trace::kNoString;  // in the rank's own string table
  std::string communicator_name;                    // filled only for the matching key
  trace::NcclOp op = trace::NcclOp::kUnknown;
  int64_t sequence = -1;        // from the trace, or order of occurrence per (communicator, op)
  int64_t arrival_unix_ns = 0;  // kernel start, on the Unix clock
  int64_t end_unix_ns = 0;
  bool warmup = false;  // started before the rank's first steady iteration
};

struct LaunchStats {
  Availability availability;
  int64_t kernel_count = 0;
  int64_t kernel_ns = 0;  // sum of kernel durations
  int64_t launch_api_count = 0;
  int64_t launch_api_ns = 0;  // CPU time in cudaLaunchKernel & co
  double median_kernel_ns = 0;
  double median_launch_ns = 0;
  int64_t gpu_gap_ns = 0;  // idle time between kernels inside busy stretches (gaps < 1 ms)
  int64_t gap_count = 0;
  double small_kernel_fraction = 0;  // kernels shorter than 10 us
  bool launch_bound = false;         // median launch >= median kernel and gaps >= 10% of window
  double gap_fraction = 0;           // gpu_gap_ns / window wall
};

struct CopyGroup {
  trace::MemcpyKind kind = trace::MemcpyKind::kUnknown;
  trace::MemoryKind src_kind = trace::MemoryKind::kUnknown, dst_kind = trace::MemoryKind::kUnknown;
  int64_t count = 0;
  uint64_t bytes = 0;
  int64_t time_ns = 0;
  double bandwidth_gbps = 0;  // GB/s (1e9 bytes) over summed copy time
  int64_t sync_count = 0;     // synchronous (not async) copies
  int64_t sync_ns = 0;
};

struct CopyStats {
  Availability availability;
  std::vector<CopyGroup> groups;  // sorted by time, descending
  int64_t memset_count = 0;
  int64_t memset_ns = 0;
  uint64_t host_to_device_bytes = 0;
  uint64_t pageable_bytes = 0;  // host-side pageable bytes of HtoD/DtoH
  int64_t pageable_ns = 0;
  int64_t pageable_host_ns = 0;  // the calling threads' time in those copies' API calls
  double pageable_fraction = 0;  // of HtoD/DtoH bytes
  int64_t sync_copy_count = 0;   // synchronous copies in the window
  int64_t sync_copy_ns = 0;
};

struct SyncGroup {
  trace::SyncKind kind = trace::SyncKind::kUnknown;
  int64_t count = 0;
  int64_t total_ns = 0;
};

struct SyncStats {
  Availability availability;
  std::vector<SyncGroup> groups;
  int64_t host_sync_ns = 0;  // stream + device + event synchronize (not StreamWaitEvent: no host wait)
  double fraction = 0;       // host_sync_ns / window wall
};

struct KernelSummary {
  std::string name;        // the full name, as the trace has it
  std::string short_name;  // trace::distinct_short_names over the list it is in: rows never read alike
  KernelClass cls = KernelClass::kCompute;
  Precision precision = Precision::kOther;
  int64_t count = 0;
  int64_t total_ns = 0;
};

struct PrecisionStats {
  Availability availability;
  int64_t kernel_ns = 0;                                                            // all kernel time in the window
  std::array<int64_t, kPrecisionCount> ns{};                                        // indexed by Precision
  double fp64_fraction = 0, fp32_no_tensor_fraction = 0, tensor_core_fraction = 0;  // of kernel_ns
  double tf32_fraction = 0;                                                         // of kernel_ns
  std::vector<KernelSummary> top_fp32;  // biggest FP32 non-tensor-core GEMM/conv kernels
  std::vector<KernelSummary> top_fp64;
};

struct LayoutStats {
  Availability availability;
  int64_t conversion_count = 0;
  int64_t conversion_ns = 0;
  int64_t to_nchw_ns = 0;  // NHWC -> NCHW conversions: data is already channels_last
  double fraction = 0;     // of kernel time in the window
  // Half-precision kernels that exist only for NCHW data (batch norm,
  // depthwise convolution): the NHWC tensor-core path not taken.
  int64_t nchw_half_count = 0;
  int64_t nchw_half_ns = 0;
  double nchw_half_fraction = 0;  // of kernel time in the window
  std::vector<KernelSummary> top_nchw_half;
  std::vector<KernelSummary> top;
};

struct InputStats {
  Availability availability;
  int64_t iterations = 0;
  int64_t starved_iterations = 0;  // iterations whose first compute waited behind an HtoD copy
  int64_t starvation_ns = 0;       // GPU idle from iteration start to first compute, while waiting for input
  int64_t compute_ns = 0;
  double fraction = 0;  // starvation / summed iteration time
};

// ---- the job: what program the trace shows (docs/advisor.md) ---------------

// The framework whose operators the trace shows: the advisor's fixes name its
// API (a DataLoader fix means nothing to a CUDA C program).
enum class Framework : uint8_t {
  kUnknown = 0,  // no GPU work and no framework operators
  kPyTorch,      // a PyTorch-profiler trace, or aten::/ProfilerStep# ranges
  kCuda,         // GPU work without a framework's operators (CUDA C/C++, Fortran, ...)
};
std::string_view to_string(Framework f);

// Framework, communication libraries and launcher, read from the trace.
struct JobFacts {
  Framework framework = Framework::kUnknown;
  bool nccl = false;     // NCCL collectives or NCCL kernels
  bool mpi = false;      // MPI_* calls (CUDA API rows, or NVTX ranges as nsys's MPI tracing writes them)
  std::string launcher;  // trace::Metadata::launcher: "torchrun", "slurm", "mpi", "" (unknown)
  int64_t mpi_calls = 0;  // MPI_* calls in the window
  int64_t mpi_ns = 0;     // the union of their time in the window
  std::string evidence;   // what decided it: "4,210 aten:: operator ranges", "MPI_Send x10, MPI_Recv x5 (NVTX)"
};

// GPU idle time split by the host-side explanations that cover it, so that
// savings carved out of the same idle time are combined over the timeline
// (the union of their intervals), not summed. by_causes[set] is the idle time
// covered by exactly that set of IdleCause bits (0: by none).
enum IdleCause : unsigned {
  kIdleLaunchGap = 1,  // a gap under 1 ms between GPU activities (launch-bound's gaps)
  kIdleHostSync = 2,   // the host inside a synchronize call (host-sync)
  kIdleInput = 4,      // a gap that ends with a host-to-device copy (input-starvation's gaps)
  kIdleMpi = 8,        // the host inside an MPI_* call (host-communication)
};
inline constexpr unsigned kIdleCauseSets = 16;
struct IdleCover {
  Availability availability;
  int64_t span_ns = 0;  // the iterations' span (the window without iterations)
  int64_t idle_ns = 0;  // GPU idle inside it: no kernel, copy, set or collective
  std::array<int64_t, kIdleCauseSets> by_causes{};
  // Idle time covered by at least one cause of `causes` (a set of IdleCause bits).
  int64_t covered_ns(unsigned causes) const;
};

// GPU idle time inside the iterations, split the way Holistic Trace
// Analysis' idle-time breakdown splits it (docs/idle-time.md, "Idle time
// breakdown"). Each idle gap of the GPU (no kernel, copy, set or collective
// on any stream) is judged by the activity that ends it: host wait when that
// activity's launch call began after the gap began (the GPU waited for the
// host), else kernel wait when the gap is shorter than the threshold (the
// launch was queued: the cost of going from one kernel to the next), else
// other. host_wait_ns + kernel_wait_ns + other_ns == idle_ns ==
// IdleCover::idle_ns.
inline constexpr int64_t kKernelWaitThresholdNs = 30'000;  // HTA's consecutive_kernel_delay (30 us)
struct IdleBreakdown {
  Availability availability;
  int64_t threshold_ns = kKernelWaitThresholdNs;
  int64_t idle_ns = 0;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  int64_t host_wait_gaps = 0, kernel_wait_gaps = 0, other_gaps = 0;
  int64_t unlaunched_gaps = 0;  // gaps ended by an activity with no launch call in the trace (judged by length)
};

// The collector's self-measured perturbation (sampled windows by iteration,
// docs/collector.md): how much longer iterations inside traced windows took
// than iterations while CUPTI was detached, from the trace's metadata.
struct ProfilerPerturbation {
  std::string sampling;  // "sampled", "full", "windows", or "" (not the collector, or an older one)
  bool measured = false;
  double percent = 0, ci_low = 0, ci_high = 0;
  int64_t inside = 0, outside = 0, seen = 0;
  std::string text;  // the collector's sentence (or why not measured, or the no-marker note);
                     // with --repeat-every, plus a note that the steady analysis spans the
                     // detached stretches between windows
  // The interval's lower bound is above kPerturbationMatters: figures read
  // from CPU-side timing (launch gaps, idle gaps, host syncs) are inflated.
  bool matters = false;
};
inline constexpr double kPerturbationMatters = 5.0;  // percent, the same as collect::kPerturbationThresholdPercent

struct NumaStats {
  Availability availability;
  int32_t gpu_node = -1;
  std::vector<int32_t> cpu_nodes;  // nodes of the CPUs the process may run on
  std::vector<trace::NumaPages> memory_nodes;
  std::string memory_policy;
  bool cpus_cross_node = false;       // may run on CPUs off the GPU's node
  double remote_memory_fraction = 0;  // share of pages off the GPU's node
};

// ---- GPU clocks and throttling (the collector's NVML samples, gpu_clocks.cpp) ----

// One GPU's NVML samples over a window: its SM clock against the highest the
// GPU allows, why the clock was held down, and its temperature and power
// against their limits. Clock figures are of the samples taken while the GPU
// was not idle (NVML's GPU-idle reason unset), where reasons are recorded:
// an idle GPU lowers its clock without losing time.
struct GpuClockStats {
  Availability availability;
  uint32_t device = 0;     // CUDA ordinal in the trace that holds the samples
  std::string pci_bus_id;  // "" unknown
  // "" when the rank's own trace holds the samples; else the label of the
  // rank whose trace does (one sampler per node, in local rank 0).
  std::string sampled_by;
  int64_t clock_samples = 0;  // SM clock samples used (not idle)
  double sm_clock_median_mhz = 0, sm_clock_min_mhz = 0;
  double sm_clock_max_mhz = 0;  // the GPU's highest SM clock; 0: not recorded
  double clock_ratio = 0;       // median / max; 0 when the max is not recorded
  // Shares of the clocks-event-reason samples (the GPU not idle) with each
  // reason set; reason_samples 0: the collector did not record reasons.
  int64_t reason_samples = 0;
  double power_cap_share = 0;     // software power cap
  double thermal_share = 0;       // software or hardware thermal slowdown
  double hw_slowdown_share = 0;   // hardware slowdown or power brake
  double sync_boost_share = 0;    // held to the slowest GPU of its sync-boost group
  double app_clocks_share = 0;    // application clocks set below the maximum
  double throttled_share = 0;     // any of the five
  double temperature_median_c = 0, temperature_max_c = 0;
  double temperature_slowdown_c = 0;  // 0: not recorded
  double power_median_w = 0, power_max_w = 0;
  double power_limit_w = 0;  // 0: not recorded
};

// ---- host threads (the collector's host sampler, docs/collector.md) ---------

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

// ---- Python stacks (the Python bootstrap's sampler, python-stacks-*.json) ---

// One frame where Python samples ended (the leaf), with its share.
struct PythonHotFrame {
  std::string where;  // "dataset.py:41 __getitem__" (the file's base name)
  std::string file;   // the whole path, as the interpreter named it
  int32_t line = 0;
  std::string function;
  int64_t samples = 0;
  double share = 0;  // of the thread's (or the workers') samples
  // The stack that ended here most often, outermost first:
  // "train.py:80 main;loader.py:12 __next__;dataset.py:41 __getitem__".
  std::string callers;
};

// One thread of the rank's process or of one of its forked workers.
struct PythonThreadFrames {
  uint32_t pid = 0, tid = 0;
  std::string name;
  bool is_main = false;  // its process's main thread
  bool worker = false;   // of a process forked by the rank's (a DataLoader worker)
  int64_t samples = 0;
  std::vector<PythonHotFrame> top;  // by samples, at most PythonFrames::kTop
};

// The rank's Python stacks over its windows: wall-time samples of every
// Python thread of the rank's process and of its forked workers.
struct PythonFrames {
  static constexpr size_t kTop = 5;
  Availability availability{false, "no Python stacks (not a run directory, or none sampled)"};
  double hz = 0;
  int32_t processes = 0, worker_processes = 0;
  int64_t samples = 0;  // thread samples, all processes
  int64_t dropped = 0, truncated = 0;
  double sampler_cpu_per_second = 0;  // the most of any of its processes
  std::vector<std::string> problems;  // a sampler that failed: "pid 12: failed: RuntimeError: ..."
  std::vector<PythonThreadFrames> threads;  // the rank's main thread first, then by samples
  // Every worker process's main thread together (the one running the fetch
  // loop): where the workers' time went.
  int64_t worker_samples = 0;
  std::vector<PythonHotFrame> workers_top;
  const PythonThreadFrames* main_thread() const;  // the rank's process's main thread, or null
};

// The rank's (hostname, pid) Python stacks and its forked workers' (ppid ==
// pid), from the files of its run directory.
PythonFrames summarize_python_stacks(const std::vector<trace::PythonStacks>& files, const std::string& hostname,
                                     uint32_t pid);

struct ClassTotal {
  KernelClass cls = KernelClass::kCompute;
  int64_t count = 0;
  int64_t total_ns = 0;
};

// Everything about one rank; small (summaries and top lists only).
struct RankAnalysis {
  int32_t rank = -1;
  std::string label;   // file name or "rank N"
  std::string source;  // Metadata::source
  std::string hostname;
  uint32_t pid = 0;  // the traced process's
  std::vector<trace::ProcessGroup> process_groups;  // torch.distributed's, where the trace or run knows them
  // From the launcher's environment (the collector's meta.extra): node id,
  // node count and Slurm's node list; -1 / "" unknown.
  int32_t world_size = -1;
  int32_t node_rank = -1;
  int32_t node_count = -1;
  std::string node_list;
  RankBreakdown breakdown;
  IterationStats iterations;
  LaunchStats launch;
  CopyStats copies;
  SyncStats sync;
  PrecisionStats precision;
  LayoutStats layout;
  InputStats input;
  JobFacts job;
  IdleCover idle_cover;
  IdleBreakdown idle_breakdown;
  NumaStats numa;
  HostStats host;
  PythonFrames python;  // the Python bootstrap's stacks; read by analyze_path from a run directory
  GpuClockStats gpu_clocks;  // the rank's own GPU
  // Every GPU this trace sampled (a node's local rank 0 samples the node's
  // GPUs): combine() gives each rank of the host its own GPU's, then drops them.
  std::vector<GpuClockStats> sampled_gpus;
  ProfilerPerturbation perturbation;
  Attribution attribution;  // GPU time by operator, module and range (attribution.hpp)
  std::array<ClassTotal, kKernelClassCount> classes{};
  std::vector<KernelSummary> top_kernels;      // by total time, at most Options::top_kernels
  std::vector<CollectiveArrival> collectives;  // for straggler matching (compact)
  // NCCL collectives by operation and message size, whole trace (nccl_ops.hpp;
  // none in the steady pass).
  NcclOpStats nccl_ops;
  // The trace's problems of severity data loss ("torn_tail x1",
  // "checksum_mismatch x2"): the figures cover only what could be read.
  std::vector<std::string> data_loss;
  // Any kernel, copy, set or collective in the trace (whole trace, not window).
  bool gpu_activity = false;
  // Without --window, and with iterations found: the same analysis over the
  // steady iterations only (from the first iteration after warm-up to the
  // end of the last one). The advisor judges that, so a one-off cost (start-up,
  // cuDNN autotuning in step 0: 48,264 layout conversions on H200, none after)
  // is not taken for a per-step one, and a per-step cost is not diluted by
  // start-up time. Null when a window was given or no iteration was found.
  std::shared_ptr<const RankAnalysis> steady;
  int64_t steady_first_iteration = -1;  // 0-based index of its first iteration (it<first>:it<end>)
  int64_t steady_end_iteration = -1;    // one past its last
  // The rank's position in input order (files in list_trace_inputs order, the
  // processes of one file in its order), as analyze_path's visitor was told.
  size_t input_index = 0;
};

struct RankLateness {
  int32_t rank = -1;
  int64_t total_late_ns = 0;  // summed lateness over matched collectives
  int64_t max_late_ns = 0;
  double late_per_iteration_ns = 0;
  int64_t times_last = 0;  // collectives where this rank arrived last
  // The same over the collectives no rank reached in a warm-up iteration: one
  // wait at start-up (a slow first batch, a compile) must not outweigh a
  // steady lateness every step.
  int64_t steady_late_ns = 0;
  int64_t steady_times_last = 0;
  double steady_late_per_iteration_ns = 0;  // steady_late_ns / steady iterations
};

struct StragglerStats {
  Availability availability;
  int64_t matched_collectives = 0;
  int64_t unmatched_collectives = 0;
  int64_t total_wait_ns = 0;               // summed (latest - earliest) arrival
  int64_t steady_matched_collectives = 0;  // matched, reached by no rank in a warm-up iteration
  std::string ranked_by;                   // "steady iterations" (steady_late_ns) or "whole window" (total_late_ns)
  std::vector<RankLateness> ranks;         // latest first, by steady_late_ns where steady collectives exist
  int32_t slowest_rank = -1;               // longest median iteration
  double slowest_rank_median_ns = 0;
  double fastest_rank_median_ns = 0;
};

// ---- nodes: a multi-node run grouped by host --------------------------------

struct NodeSummary {
  std::string hostname;
  int32_t node_rank = -1;  // the launcher's node id, -1 unknown
  std::vector<int32_t> ranks;
  // Means over the node's ranks that have a breakdown (ns).
  double wall_ns = 0, compute_ns = 0, exposed_communication_ns = 0, copy_ns = 0, idle_ns = 0;
  double steady_median_iteration_ns = 0;  // of the node's slowest rank; 0 without iterations
  int64_t late_ns = 0;                    // its ranks' summed lateness at matched collectives
  int64_t steady_late_ns = 0;             // ... at those reached in steady iterations only
  int64_t times_last = 0;
};

// One communicator: does it span hosts (inter-node) or not (intra-node)?
struct CommunicatorSummary {
  std::string name;  // "" for collectives known only by their kernels
  // The process group it serves (process_group_of): "" when no rank's trace
  // or run names one. group: its description ("default_pg") or else its name.
  std::string group, group_name, backend;
  std::vector<int32_t> group_ranks;
  int32_t ranks = 0, hosts = 0;
  bool inter_node = false;
  int64_t collectives = 0;  // distinct collectives seen
  int64_t time_ns = 0;      // collective kernel time summed over its ranks
};

struct NodeStats {
  Availability availability;                       // skipped for one host with none missing
  std::vector<NodeSummary> nodes;                  // by node id, then first rank
  std::vector<CommunicatorSummary> communicators;  // by time, descending
  int64_t intra_node_collectives = 0, inter_node_collectives = 0;
  int64_t intra_node_ns = 0, inter_node_ns = 0;
  std::string slowest_node;     // most lateness per rank; else longest steady iteration
  std::string slowest_node_by;  // "lateness at collectives" or "steady median iteration"
  int32_t expected_nodes = -1;  // from the launcher's environment (SLURM_NNODES, WORLD_SIZE / LOCAL_WORLD_SIZE, ...)
  int32_t expected_ranks = -1;  // the world size
  std::vector<std::string> missing_nodes;  // names from SLURM_JOB_NODELIST, else "node N", else "N nodes"
  std::vector<int32_t> missing_ranks;
};

// Slurm's compressed host list: "gpu[01-03,7],login1" -> gpu01 gpu02 gpu03
// gpu7 login1. Throws Error on malformed text; at most 65,536 names.
std::vector<std::string> expand_slurm_hostlist(std::string_view text);

struct RunAnalysis {
  std::vector<RankAnalysis> ranks;
  StragglerStats stragglers;
  trace::ClockAlignment clocks;  // per host: offset, drift and uncertainty against the reference host
  NodeStats nodes;
  NcclOpStats nccl_ops;  // every rank's NCCL collectives by operation and message size
  // Labels of processes left out of `ranks`: no rank and no GPU activity
  // while other processes have some (a launcher that loaded CUDA, such as the
  // torchrun agent). Counted as a rank they would skew "N of M ranks".
  std::vector<std::string> left_out;
  HangReport hang;  // from a run directory's hang dumps (control/hang/); hang.dumps == 0 when none
};

// ---- entry points ---------------------------------------------------------

// Analyses one rank's trace. The window is resolved against this trace. The
// engine is the one that reads an .sstrace file chunk by chunk
// (stream_analyzer.hpp), with the trace read in place as slices of its tables
// of a file chunk's size.
RankAnalysis analyze_rank(const trace::Trace& trace, const Options& options);
// Matches collectives across ranks (communicator + sequence, else order of
// occurrence per communicator and op) and finds stragglers. Drops the ranks'
// collective lists afterwards to keep the result small.
// With align_clocks, collective times of hosts whose clocks differ are first
// moved onto the reference host's clock (RunAnalysis::clocks says by how much).
RunAnalysis combine(std::vector<RankAnalysis> ranks, bool align_clocks = true);

// When `input` is a run directory: each rank's summarize_python_stacks over
// its python-stacks-*.json files (a file that cannot be read is a warning on
// stderr naming it). The run pipeline (analyze_path, analyze_traces) calls it.
void add_python_stacks(std::vector<RankAnalysis>& ranks, const std::filesystem::path& input);

// Analyses every rank of a path: a .sstrace file, a .ssrun run directory, a
// Kineto .json/.json.gz, or a directory of Kineto traces. Ranks are loaded and
// analysed `threads` at a time (0: up to 4, fewer on small machines), and each
// trace is dropped once summarized, so memory stays bounded by a few traces.
// Errors name the file.
// on_file_done: after each file, (files done, files in all), one call at a time.
// visit: when given, called for each rank right after its analysis, with its
// trace as read (clocks not moved) and its analysis (not yet numbered,
// labelled or combined), before the trace is dropped: a caller that draws
// events (the HTML report) takes what it draws there, so that it shows the
// very analysis `scalescope analyze` prints without holding every trace.
// Calls come one at a time, in input order (input_index 0, 1, ...; the
// rank's RankAnalysis::input_index in the result); a loaded rank waits for
// its turn, so at most `threads` traces are in memory.
using RankVisitor = std::function<void(size_t input_index, const trace::Trace&, const RankAnalysis&)>;
RunAnalysis analyze_path(const std::filesystem::path& path, const Options& options, unsigned threads = 0,
                         const std::function<void(size_t, size_t)>& on_file_done = {}, const RankVisitor& visit = {});
// analyze_path for traces already in memory (the C ABI's run, the demo's, a
// test's): the same pipeline, with traces[i] as one input labelled
// file_names[i]. input: the path they were read from, if any (a run
// directory's Python stacks and records are read from it, as analyze_path
// does); visit: as analyze_path's.
RunAnalysis analyze_traces(const std::vector<trace::Trace>& traces, const std::vector<std::string>& file_names,
                           const Options& options, const std::filesystem::path& input = {}, unsigned threads = 0,
                           const RankVisitor& visit = {});
// The trace files analyze_path would read, in order.
std::vector<std::filesystem::path> list_trace_inputs(const std::filesystem::path& path);

// Single analyses (public for tests and the report).
std::vector<KernelInfo> classify_names(const trace::Trace& trace, const KernelClassifier& classifier);
// analyze_rank's iterations (attribution left out).
IterationStats find_iterations(const trace::Trace& trace, const Options& options);
StragglerStats find_stragglers(const std::vector<RankAnalysis>& ranks);
// Needs the ranks' collectives (before combine() drops them).
NodeStats find_nodes(const std::vector<RankAnalysis>& ranks, const StragglerStats& stragglers);

// ---- diff of two runs -----------------------------------------------------

struct Delta {
  std::string what;     // "compute", "kernel class: communication", kernel name, "copies HtoD pageable->device"
  double a = 0, b = 0;  // per-rank mean, ns (or bytes for *_bytes rows)
  double delta = 0;     // b - a
  double ratio = 0;     // b / a (0 when a == 0)
};

// Figures are per steady iteration when both runs have iterations (each
// rank's steady analysis, else its window, divided by its iteration count;
// then the mean over ranks), so runs of different lengths compare step for
// step; else per rank over the whole window (`basis` says which).
struct RunDiff {
  std::string basis;               // "per steady iteration" or "per rank, whole window"
  std::vector<Delta> breakdown;    // compute, exposed communication, copies, idle, overlap, wall
  std::vector<Delta> classes;      // kernel time by class and by precision
  std::vector<Delta> top_kernels;  // largest absolute deltas
  std::vector<Delta> copies;       // time and bytes by kind and memory kinds
  std::vector<Delta> changes;      // the named changes the verdict picks from, largest first
  std::vector<std::string> added_kernels;    // in B's kernel list, not in A's (by time in B, at most `top`)
  std::vector<std::string> removed_kernels;  // in A's, not in B's
  Delta iteration;                 // steady median iteration time
  std::string verdict;             // "B is 19.6 % faster per step (88.0 ms -> 70.7 ms): ..."
  std::string note;                // e.g. which side lacks iterations
};

RunDiff diff(const RunAnalysis& a, const RunAnalysis& b, int top = 15);

// ---- JSON (nlohmann::json) -------------------------------------------------

void to_json(nlohmann::json& j, const Availability& v);
void to_json(nlohmann::json& j, const RankBreakdown& v);
void to_json(nlohmann::json& j, const IterationStats& v);
void to_json(nlohmann::json& j, const LaunchStats& v);
void to_json(nlohmann::json& j, const CopyStats& v);
void to_json(nlohmann::json& j, const SyncStats& v);
void to_json(nlohmann::json& j, const PrecisionStats& v);
void to_json(nlohmann::json& j, const LayoutStats& v);
void to_json(nlohmann::json& j, const NcclOpStats& v);
void to_json(nlohmann::json& j, const InputStats& v);
void to_json(nlohmann::json& j, const ProfilerPerturbation& v);
void to_json(nlohmann::json& j, const JobFacts& v);
void to_json(nlohmann::json& j, const IdleCover& v);
void to_json(nlohmann::json& j, const IdleBreakdown& v);
void to_json(nlohmann::json& j, const NumaStats& v);
void to_json(nlohmann::json& j, const GpuClockStats& v);
void to_json(nlohmann::json& j, const HostShares& v);
void to_json(nlohmann::json& j, const HostStats& v);
void to_json(nlohmann::json& j, const PythonHotFrame& v);
void to_json(nlohmann::json& j, const PythonFrames& v);
void to_json(nlohmann::json& j, const KernelSummary& v);
void to_json(nlohmann::json& j, const AttributionRow& v);
void to_json(nlohmann::json& j, const Attribution& v);
void to_json(nlohmann::json& j, const RankAnalysis& v);
void to_json(nlohmann::json& j, const StragglerStats& v);
void to_json(nlohmann::json& j, const NodeStats& v);
void to_json(nlohmann::json& j, const HangReport& v);
void to_json(nlohmann::json& j, const RunAnalysis& v);
void to_json(nlohmann::json& j, const Delta& v);
void to_json(nlohmann::json& j, const RunDiff& v);

}  // namespace scalescope::analyze
