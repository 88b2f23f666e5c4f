#pragma once
// The in-memory trace model: one Trace per traced process (rank), columnar
// (struct of arrays) so that analyses scan one column at a time, with one
// string table per trace. Importers and the collector's decoder fill it through
// the neutral *Record structs and Table::push(); nothing else writes columns.
//
// Timestamps are nanoseconds in the process's trace clock (CUPTI's clock for
// collector traces, the profiler's clock for imported ones). Metadata::clock
// maps them to Unix-epoch nanoseconds so that ranks and hosts line up.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace scalescope::trace {

using Timestamp = int64_t;  // ns
using StringId = uint32_t;  // index into StringTable; 0 is the empty string
inline constexpr StringId kNoString = 0;

// One interned copy of every name in a trace. Ids are dense and stable, so the
// file format stores a table of strings and columns of ids.
class StringTable {
 public:
  StringTable();
  StringId intern(std::string_view text);
  std::string_view view(StringId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }
  // Total bytes of all strings; bounds memory checks and sizes the writer.
  size_t byte_size() const { return byte_size_; }

 private:
  std::deque<std::string> strings_;  // deque: elements never move, so views stay valid
  std::unordered_map<std::string_view, StringId> index_;
  size_t byte_size_ = 0;
};

enum class MemcpyKind : uint8_t { kUnknown = 0, kHtoD, kDtoH, kDtoD, kPtoP, kHtoH };
enum class MemoryKind : uint8_t { kUnknown = 0, kPageable, kPinned, kDevice, kManaged, kArray };
enum class SyncKind : uint8_t {
  kUnknown = 0,
  kEventSynchronize,
  kStreamWaitEvent,
  kStreamSynchronize,
  kDeviceSynchronize,  // cudaDeviceSynchronize / cuCtxSynchronize
};
enum class ApiDomain : uint8_t { kRuntime = 0, kDriver, kNccl, kOther };
enum class NvtxKind : uint8_t { kRange = 0, kMark };
enum class NcclOp : uint8_t {
  kUnknown = 0,
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSend,
  kRecv,
  kSendRecv,
  kGather,
  kScatter,
  kBarrier,
};
enum class CounterMetric : uint8_t {
  kGpuUtilizationPercent = 0,
  kMemoryUtilizationPercent,
  kMemoryUsedBytes,
  kPowerWatts,
  kEnergyJoules,  // total since driver load; differences give energy of a window
  kSmClockMHz,
  kMemoryClockMHz,
  kPcieTxBytesPerSecond,
  kPcieRxBytesPerSecond,
  kNvlinkTxBytesPerSecond,
  kNvlinkRxBytesPerSecond,
  kTemperatureCelsius,
  // Why the SM clock is held below its maximum: NVML's clocks event reasons
  // bitmask (nvmlClocksEventReason*, trace::kClocksEvent* below) as a number.
  kClocksEventReasons,
  kSmClockMaxMHz,               // the highest SM clock the GPU allows (NVML max clock)
  kPowerLimitWatts,             // the enforced power limit
  kTemperatureSlowdownCelsius,  // the temperature at which the GPU slows its clocks
};
inline constexpr int kCounterMetricCount = 16;
// The bits of kClocksEventReasons (NVML's nvmlClocksEventReason* values).
inline constexpr uint64_t kClocksEventGpuIdle = 0x1;
inline constexpr uint64_t kClocksEventApplicationsClocks = 0x2;
inline constexpr uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr uint64_t kClocksEventSyncBoost = 0x10;
inline constexpr uint64_t kClocksEventSwThermalSlowdown = 0x20;
inline constexpr uint64_t kClocksEventHwThermalSlowdown = 0x40;
inline constexpr uint64_t kClocksEventHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kClocksEventDisplayClocks = 0x100;
// Scheduler state of a host thread when sampled (/proc/<pid>/task/<tid>/stat
// field 3). Linux's R is "running or runnable": the sample cannot tell them
// apart; the run-queue wait column (schedstat) can.
enum class ThreadState : uint8_t {
  kUnknown = 0,
  kRunning,   // R: on a CPU or waiting on a run queue
  kSleeping,  // S: interruptible sleep (a lock, a queue, a futex, a socket)
  kDiskWait,  // D: uninterruptible sleep, usually I/O or page faults
  kStopped,   // T, t: stopped or traced
  kZombie,    // Z, X: exited, not yet reaped
  kIdle,      // I: idle kernel thread
  kOther,     // any other letter (W, P, K ...)
};
inline constexpr int kThreadStateCount = 8;
ThreadState thread_state_from_letter(char c);
// Which process a host thread belongs to: the traced process itself, or one
// of its descendants (DataLoader workers, compile workers).
enum class ProcessRole : uint8_t { kTraced = 0, kDescendant };

std::string_view to_string(MemcpyKind kind);
std::string_view to_string(MemoryKind kind);
std::string_view to_string(SyncKind kind);
std::string_view to_string(ApiDomain domain);
std::string_view to_string(NcclOp op);
std::string_view to_string(CounterMetric metric);
std::string_view to_string(ThreadState state);
std::string_view to_string(ProcessRole role);
// Parses NCCL's and PyTorch's spellings ("AllReduce", "allreduce", "all_reduce").
NcclOp nccl_op_from_name(std::string_view name);

// ---- neutral records: what a producer knows about one event -------------

struct KernelRecord {
  Timestamp start = 0, end = 0;
  uint32_t device = 0, stream = 0;
  StringId name = kNoString;
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  uint32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t registers_per_thread = 0;
  uint32_t shared_memory_bytes = 0;  // static + dynamic
  uint32_t correlation = 0;
};

struct MemcpyRecord {
  Timestamp start = 0, end = 0;
  uint32_t device = 0, stream = 0;
  uint32_t correlation = 0;
  uint64_t bytes = 0;
  MemcpyKind kind = MemcpyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown, dst_kind = MemoryKind::kUnknown;
  bool is_async = true;
  uint32_t peer_device = 0;  // the other device of a PtoP copy
};

struct MemsetRecord {
  Timestamp start = 0, end = 0;
  uint32_t device = 0, stream = 0;
  uint32_t correlation = 0;
  uint64_t bytes = 0;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  bool is_async = true;
};

struct ApiRecord {
  Timestamp start = 0, end = 0;
  uint32_t thread = 0;
  ApiDomain domain = ApiDomain::kRuntime;
  uint32_t callback_id = 0;  // CUPTI cbid of the domain; 0 when unknown
  StringId name = kNoString;
  uint32_t correlation = 0;
  int32_t return_code = 0;
};

struct SyncRecord {
  Timestamp start = 0, end = 0;
  SyncKind kind = SyncKind::kUnknown;
  uint32_t device = 0;
  uint32_t stream = 0;  // 0 when not stream-specific
  uint64_t event = 0;   // event handle or id; 0 when none
  uint32_t thread = 0;
  uint32_t correlation = 0;
};

struct NvtxRecord {
  Timestamp start = 0, end = 0;  // end == start for marks
  NvtxKind kind = NvtxKind::kRange;
  StringId domain = kNoString;
  StringId text = kNoString;
  uint32_t thread = 0;
  int32_t device = -1;       // >= 0 for ranges projected onto a GPU (Kineto's gpu_user_annotation)
  uint32_t correlation = 0;  // links a range to what it launched, where the producer knows
  // Links a forward range to the backward range it caused (PyTorch's fwdbwd
  // flow): both rows carry the same id, the earlier one is the forward. 0: none.
  uint32_t link = 0;
};

struct NcclRecord {
  Timestamp start = 0, end = 0;  // GPU time of the collective's kernel where known
  uint32_t device = 0, stream = 0;
  NcclOp op = NcclOp::kUnknown;
  uint64_t bytes = 0;  // payload per rank (input message size)
  uint64_t count = 0;  // elements
  StringId datatype = kNoString;
  StringId algorithm = kNoString;     // RING, TREE, COLLNET_*, NVLS, PAT ...
  StringId protocol = kNoString;      // LL, LL128, SIMPLE
  StringId communicator = kNoString;  // process group name or communicator hash
  int64_t sequence = -1;              // per-communicator sequence number, -1 unknown
  int32_t group_size = -1;
  uint32_t correlation = 0;  // the kernel's correlation id
};

struct CounterRecord {
  Timestamp time = 0;
  uint32_t device = 0;
  CounterMetric metric = CounterMetric::kGpuUtilizationPercent;
  double value = 0;
};

// One host thread seen by the collector's host sampler. A writer may write
// several rows for one thread as it learns more (a later name, a later last
// sighting); readers keep the last row of each (pid, tid, start).
struct HostThreadRecord {
  Timestamp start = 0, end = 0;  // first and last sample that saw the thread
  uint32_t pid = 0, tid = 0;
  uint32_t parent_pid = 0;    // of the process
  StringId name = kNoString;  // comm (15 bytes at most)
  uint8_t is_main = 0;        // tid == pid
  ProcessRole role = ProcessRole::kTraced;
};

// One sample of one host thread. The deltas cover the time since the
// thread's previous sample (since its start for a thread born after the
// sampler started; 0 for the first sample of a thread that was already there).
struct HostSampleRecord {
  Timestamp time = 0;
  uint32_t pid = 0, tid = 0;
  ThreadState state = ThreadState::kUnknown;
  int32_t cpu = -1;                   // CPU it last ran on (stat field 39)
  uint64_t cpu_ns = 0;                // on-CPU time (schedstat; else utime+stime ticks)
  uint64_t run_wait_ns = 0;           // waiting on a run queue (schedstat; 0 without it)
  uint32_t voluntary_switches = 0;    // it blocked
  uint32_t involuntary_switches = 0;  // it was preempted
};

// One frame of a sampled native call stack, stored as a node of a prefix tree
// (format 1.3): callsite `id` is `function` called from callsite `parent` (0:
// the outermost frame). A stack sampled a thousand times is stored once.
// Whether a frame has a name, and why not (format 1.4). The collector writes
// kUnnamed (or kUnmapped, kNotAFile); trace/model/frame_namer.hpp names frames
// offline, on the analysing machine, and sets the rest.
enum class FrameStatus : uint8_t {
  kUnnamed = 0,         // not looked up (as written; 1.3 files named at exit keep their function)
  kNamed = 1,           // function holds the symbol covering the address
  kUnmapped = 2,        // the address fell in no mapped file
  kNotAFile = 3,        // JIT code ("[anon]"), "[vdso]": no file to read names from
  kModuleMissing = 4,   // the module's file is not on the analysing machine (or unreadable)
  kBuildIdDiffers = 5,  // a file is there but its build-id is not the one that ran
  kNoSymbol = 6,        // the file is the right one but no symbol covers the address
  kNoLibdw = 7,         // libdw.so.1 could not be loaded where the trace was analysed
  kNoModuleRecord = 8,  // the trace holds no host_modules row for the module (1.3 files)
  // Not a frame: the outermost row of a stack whose frame-pointer walk the
  // collector cut at a return address outside every executable mapping.
  kWalkCut = 9,
};
std::string_view to_string(FrameStatus s);

// 1.3: `address` is in the module's ELF address space once named, the file
// offset before. 1.4: the file offset in the module (mapped frames) or the
// raw address (unmapped) always; names come offline from host_modules.
struct HostCallsiteRecord {
  uint32_t id = 0;                             // 1-based, unique within a trace
  uint32_t parent = 0;                         // 0: outermost frame
  StringId function = kNoString;               // demangled symbol; empty when not resolved
  StringId module = kNoString;                 // the mapped file ("[anon]", "[vdso]"); empty when unmapped
  uint64_t address = 0;                        // file offset in the module; the raw address when unmapped
  FrameStatus status = FrameStatus::kUnnamed;  // format 1.4
};

// One module (mapped file) that sampled frames of one process fell in
// (format 1.4): what offline naming needs to find the same file again and
// to tell a different one. The executable mapping where its first frame fell.
struct HostModuleRecord {
  uint32_t pid = 0;
  StringId path = kNoString;            // as in /proc/<pid>/maps (HostCallsiteRecord::module)
  StringId build_id = kNoString;        // lowercase hex of the ELF's NT_GNU_BUILD_ID note; empty: none or unreadable
  uint64_t map_start = 0, map_end = 0;  // the mapping's addresses in the process
  uint64_t map_offset = 0;              // its file offset: load base = map_start - map_offset
};

// One native call stack sample of one host thread (format 1.3): its leaf
// callsite, taken after `time`'s period of that thread's on-CPU time.
struct HostStackSampleRecord {
  Timestamp time = 0;
  uint32_t pid = 0, tid = 0;
  uint32_t callsite = 0;  // leaf frame (HostCallsiteRecord::id); 0: no user frame
};

// ---- columnar tables ------------------------------------------------------

// What every table does with whole rows: push a Record, read row i back as
// one, reserve room for n. One definition for all tables, over their column
// lists (table_columns.hpp), in trace.cpp.
template <typename Table, typename Record>
struct Rows {
  void push(const Record& r);
  Record row(size_t i) const;
  void reserve(size_t n);
};

struct KernelTable : Rows<KernelTable, KernelRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> device, stream;
  std::vector<StringId> name;
  std::vector<uint32_t> grid_x, grid_y, grid_z;
  std::vector<uint32_t> block_x, block_y, block_z;
  std::vector<uint32_t> registers_per_thread, shared_memory_bytes;
  std::vector<uint32_t> correlation;

  size_t size() const { return start.size(); }
};

struct MemcpyTable : Rows<MemcpyTable, MemcpyRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> device, stream, correlation;
  std::vector<uint64_t> bytes;
  std::vector<MemcpyKind> kind;
  std::vector<MemoryKind> src_kind, dst_kind;
  std::vector<uint8_t> is_async;
  std::vector<uint32_t> peer_device;

  size_t size() const { return start.size(); }
};

struct MemsetTable : Rows<MemsetTable, MemsetRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> device, stream, correlation;
  std::vector<uint64_t> bytes;
  std::vector<MemoryKind> dst_kind;
  std::vector<uint8_t> is_async;

  size_t size() const { return start.size(); }
};

struct ApiTable : Rows<ApiTable, ApiRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> thread;
  std::vector<ApiDomain> domain;
  std::vector<uint32_t> callback_id;
  std::vector<StringId> name;
  std::vector<uint32_t> correlation;
  std::vector<int32_t> return_code;

  size_t size() const { return start.size(); }
};

struct SyncTable : Rows<SyncTable, SyncRecord> {
  std::vector<Timestamp> start, end;
  std::vector<SyncKind> kind;
  std::vector<uint32_t> device, stream;
  std::vector<uint64_t> event;
  std::vector<uint32_t> thread, correlation;

  size_t size() const { return start.size(); }
};

struct NvtxTable : Rows<NvtxTable, NvtxRecord> {
  std::vector<Timestamp> start, end;
  std::vector<NvtxKind> kind;
  std::vector<StringId> domain, text;
  std::vector<uint32_t> thread;
  std::vector<int32_t> device;
  std::vector<uint32_t> correlation;
  std::vector<uint32_t> link;

  size_t size() const { return start.size(); }
};

struct NcclTable : Rows<NcclTable, NcclRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> device, stream;
  std::vector<NcclOp> op;
  std::vector<uint64_t> bytes, count;
  std::vector<StringId> datatype, algorithm, protocol, communicator;
  std::vector<int64_t> sequence;
  std::vector<int32_t> group_size;
  std::vector<uint32_t> correlation;

  size_t size() const { return start.size(); }
};

struct CounterTable : Rows<CounterTable, CounterRecord> {
  std::vector<Timestamp> time;
  std::vector<uint32_t> device;
  std::vector<CounterMetric> metric;
  std::vector<double> value;

  size_t size() const { return time.size(); }
};

struct HostThreadTable : Rows<HostThreadTable, HostThreadRecord> {
  std::vector<Timestamp> start, end;
  std::vector<uint32_t> pid, tid, parent_pid;
  std::vector<StringId> name;
  std::vector<uint8_t> is_main;
  std::vector<ProcessRole> role;

  size_t size() const { return start.size(); }
};

struct HostSampleTable : Rows<HostSampleTable, HostSampleRecord> {
  std::vector<Timestamp> time;
  std::vector<uint32_t> pid, tid;
  std::vector<ThreadState> state;
  std::vector<int32_t> cpu;
  std::vector<uint64_t> cpu_ns, run_wait_ns;
  std::vector<uint32_t> voluntary_switches, involuntary_switches;

  size_t size() const { return time.size(); }
};

struct HostCallsiteTable : Rows<HostCallsiteTable, HostCallsiteRecord> {
  std::vector<uint32_t> id, parent;
  std::vector<StringId> function, module;
  std::vector<uint64_t> address;
  std::vector<FrameStatus> status;  // format 1.4

  size_t size() const { return id.size(); }
};

struct HostModuleTable : Rows<HostModuleTable, HostModuleRecord> {
  std::vector<uint32_t> pid;
  std::vector<StringId> path, build_id;
  std::vector<uint64_t> map_start, map_end, map_offset;

  size_t size() const { return pid.size(); }
};

struct HostStackSampleTable : Rows<HostStackSampleTable, HostStackSampleRecord> {
  std::vector<Timestamp> time;
  std::vector<uint32_t> pid, tid, callsite;

  size_t size() const { return time.size(); }
};

// ---- metadata -------------------------------------------------------------

struct DeviceInfo {
  uint32_t id = 0;         // CUDA device ordinal in this process
  std::string name;        // "NVIDIA H200"
  std::string uuid;        // "GPU-xxxxxxxx-..."; empty when unknown
  std::string pci_bus_id;  // "0000:19:00.0"; empty when unknown
  int32_t numa_node = -1;  // -1 when unknown
  uint32_t sm_count = 0;
  uint64_t memory_bytes = 0;
  int32_t compute_major = 0, compute_minor = 0;
};

// Bytes of this process's pages on one NUMA node (from /proc/self/numa_maps).
struct NumaPages {
  int32_t node = 0;
  uint64_t bytes = 0;
};

// One (trace clock, Unix time) pair; the collector writes one at start and one
// at end so that drift between the two clocks can be corrected linearly.
struct ClockAnchor {
  Timestamp trace_ns = 0;
  int64_t unix_ns = 0;
};

// One process group of the job, as torch.distributed names it: from a
// PyTorch-profiler trace's distributedInfo.pg_config, or from the Python
// bootstrap's record of a profiled process.
struct ProcessGroup {
  std::string name;            // torch's name ("0", "1", ...): Kineto's NCCL ranges carry it
  std::string description;     // "default_pg", or the group_desc given to new_group; may be empty
  std::string backend;         // "nccl", "cuda:nccl", "gloo"; may be empty
  std::vector<int32_t> ranks;  // global ranks, ascending
  bool operator==(const ProcessGroup&) const = default;
};
inline constexpr size_t kMaxProcessGroups = 4096;         // more is read as a broken record
inline constexpr size_t kMaxProcessGroupRanks = 1 << 20;  // ranks of one group

struct Metadata {
  std::string source;            // "collector", "kineto", "synthetic"
  std::string producer_version;  // version of the collector or importer
  std::string hostname;
  uint32_t pid = 0;
  int32_t rank = -1, local_rank = -1, world_size = -1;  // -1 unknown
  std::string launcher;                                 // "torchrun", "slurm", "mpi", "" (from the environment)
  std::string command_line;
  std::vector<uint32_t> cpu_affinity;  // CPUs the process may run on
  std::vector<int32_t> cpu_numa_node;  // NUMA node of each CPU id (index = cpu), -1 unknown
  std::string memory_policy;           // "default", "bind:0", "interleave:0-1", ...
  std::vector<NumaPages> pages_at_start, pages_at_end;
  std::vector<DeviceInfo> devices;
  std::vector<ClockAnchor> clock;
  std::vector<ProcessGroup> process_groups;  // this process's view of the job's groups; empty when unknown
  std::unordered_map<std::string, std::string> extra;  // producer facts that have no column (free-form, small)

  // Maps a trace-clock timestamp to Unix-epoch ns using the anchors (linear
  // between the first and last; identity offset 0 when there are none).
  int64_t to_unix_ns(Timestamp t) const;
};

// ---- problems: counted, not thrown ----------------------------------------

enum class Severity : uint8_t { kInfo = 0, kError, kDataLoss };

// Append only: the numeric values are stored in trace files.
enum class Problem : uint16_t {
  kTornTail = 0,          // file ended inside a chunk (writer killed)
  kChecksumMismatch,      // a chunk failed its checksum and was skipped
  kUnknownChunk,          // a chunk type this reader does not know (newer minor version)
  kDroppedRecords,        // collector buffer pool full
  kCuptiError,            // a CUPTI call failed
  kMalformedEvent,        // importer: an event missing required fields
  kUnknownEvent,          // importer: an event category we do not map
  kUnmatchedCorrelation,  // a GPU event with no API call of the same correlation id
  kNegativeDuration,      // end < start, clamped
  kNvmlUnavailable,       // counters not sampled
  kClockAnchorMissing,    // no clock anchor: ranks may not line up
  kCorruptChunk,          // a chunk passed its checksum but its content is invalid; skipped
  kIncompleteRecord,      // collector: a GPU record CUPTI handed over unfinished (timestamp 0); left out
  kEndMissing,            // format >= 1.1 file without its end record: cut at a chunk boundary (writer killed)
  kEndNotRecorded,        // format 1.0 file: written before end records existed; completeness unknown
  kRunIncomplete,         // run directory: a rank file its manifest lists is missing or shorter/different
  kRunNoManifest,         // run directory without manifest (older build, or its writer died before the end)
  kInvalidUtf8,           // importer: invalid UTF-8 bytes replaced by U+FFFD
  kCount_,
};
inline constexpr int kProblemCount = static_cast<int>(Problem::kCount_);

// A GPU record CUPTI handed over before the work finished (a forced flush
// gives it timestamp 0): the collector's decoder and the reader leave such
// rows out and count them as kIncompleteRecord.
constexpr bool unfinished_span(Timestamp start, Timestamp end) { return start == 0 || end == 0 || end < start; }

Severity severity_of(Problem p);
// A severity as CSV, SQLite and `stats` show it: "info", "error", "data loss".
std::string_view severity_name(Severity s);
std::string_view to_string(Problem p);
// One sentence for a person: what happened and what it cost (e.g. for kEndMissing
// "torn: the file ends at a chunk boundary without its end record; ...").
std::string_view describe(Problem p);

struct ProblemCounts {
  std::array<uint64_t, kProblemCount> counts{};
  void add(Problem p, uint64_t n = 1) { counts[static_cast<int>(p)] += n; }
  uint64_t get(Problem p) const { return counts[static_cast<int>(p)]; }
  bool any_data_loss() const;
};

// ---- the trace ------------------------------------------------------------

struct Trace {
  Metadata meta;
  StringTable strings;
  KernelTable kernels;
  MemcpyTable memcpys;
  MemsetTable memsets;
  ApiTable api;
  SyncTable syncs;
  NvtxTable nvtx;
  NcclTable nccl;
  CounterTable counters;
  HostThreadTable host_threads;             // format 1.2
  HostSampleTable host_samples;             // format 1.2
  HostCallsiteTable host_callsites;         // format 1.3
  HostStackSampleTable host_stack_samples;  // format 1.3
  HostModuleTable host_modules;             // format 1.4
  ProblemCounts problems;

  size_t event_count() const;
  // No row in any table: also none of the host tables that event_count()
  // leaves out (threads, callsites, stack samples, modules), which a batch
  // may hold alone.
  bool empty() const;
  // [first start, last end] over all GPU and API events; {0,0} when empty.
  std::pair<Timestamp, Timestamp> time_span() const;
};

}  // namespace scalescope::trace
