#pragma once
// Native call stacks of the host sampler's threads, where the kernel lets an
// unprivileged process use perf_event_open software events: one task-clock
// event per sampled thread (a sample after each period of that thread's own
// CPU time), PERF_SAMPLE_CALLCHAIN of user frames, a small mmap ring per
// thread read by the host sampler's thread at each tick.
//
// What the callchain is: the kernel walks the user stack by frame pointers.
// The leaf (the sampled instruction) is always right; the callers are right
// only through code built with frame pointers (Ubuntu 24.04's packages,
// CPython 3.12 there, code built with -fno-omit-frame-pointer). Through code
// without them the chain ends early or holds wrong callers; a walk that
// reaches a return address outside every executable mapping (0, an address
// on the stack) is cut there, under an outermost [stack walk cut] frame. DWARF unwinding
// (PERF_SAMPLE_STACK_USER copies) is not done: it costs kilobytes per sample.
//
// Addresses are turned into (mapped file, file offset) at once, from the
// process's /proc/<pid>/maps (re-read when an address falls outside every
// known mapping), so that DataLoader workers that exit early keep their
// frames. Names are not looked up here: drain() writes each module's path,
// build-id and mapping per process (format 1.4, trace.host_modules), and
// the analysing machine names frames offline (trace/model/frame_namer.hpp), as
// perf and Nsight do. Naming in the process cost 7-23 s at the exit of a
// PyTorch process (bench/RESULTS.md); reading build-ids costs milliseconds.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/model/trace.hpp"

struct perf_event_mmap_page;

namespace scalescope::collect {

// One PERF_RECORD_SAMPLE as PerfStacks asks for it (TID | TIME | CALLCHAIN).
// `ips` is leaf first and may hold the kernel's context markers
// (PERF_CONTEXT_USER...), which is_perf_context() tells apart.
struct PerfSample {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;  // CLOCK_MONOTONIC ns (the event's clockid)
  std::span<const uint64_t> ips;
};
bool is_perf_context(uint64_t ip);

// Parses records laid end to end, as copied out of a ring: calls on_sample for
// each sample, adds PERF_RECORD_LOST counts to *lost, skips other types.
// Returns false on a malformed record (size under 8, past the end, a sample
// shorter than its callchain); the bytes after it are not read.
bool parse_perf_records(std::span<const uint8_t> bytes, const std::function<void(const PerfSample&)>& on_sample,
                        uint64_t* lost);

// Copies the unread bytes of a perf mmap ring (its first page `meta`, then
// the data area `data` of `size` bytes, a power of two) to `out`, unwrapping,
// and marks them read. A head more than `size` ahead of the tail (which the
// kernel never writes) reads nothing and marks all read.
void drain_perf_ring(perf_event_mmap_page* meta, const uint8_t* data, uint64_t size, std::vector<uint8_t>& out);

// One executable mapping of /proc/<pid>/maps.
struct MapRange {
  uint64_t start = 0, end = 0, offset = 0;
  uint32_t module = 0;  // index given by `intern`
};
// Appends the executable mappings of maps text to `out`, sorted by start.
// File-less ones become "[anon]" (JIT code) or their bracketed name ("[vdso]").
void parse_maps(std::string_view text, std::vector<MapRange>& out,
                const std::function<uint32_t(std::string_view path)>& intern);

struct PerfStacksOptions {
  std::string proc_root = "/proc";
  double hz = 100;           // samples per second of each thread's CPU time
  uint32_t ring_pages = 2;   // data pages per thread (a sample is at most ~1 KiB)
  size_t max_threads = 256;  // events open at once (each is a descriptor and locked memory)
  size_t max_pending_samples = size_t{1} << 21;
};

class PerfStacks {
 public:
  // Opens a probe event on `probe_tid` (a thread of the calling process).
  // nullptr and *reason ("perf_event_open: Permission denied (perf_event_paranoid 4)")
  // when the kernel refuses.
  static std::unique_ptr<PerfStacks> create(PerfStacksOptions options, uint32_t probe_tid, std::string* reason);
  // Without events: for tests, which feed samples through ingest().
  static std::unique_ptr<PerfStacks> create_without_events(PerfStacksOptions options);
  ~PerfStacks();

  // Starts sampling a thread; false when refused or over max_threads (counted).
  bool add_thread(uint32_t pid, uint32_t tid);
  // Reads what the thread's ring still holds, then closes its event.
  void remove_thread(uint32_t tid);
  // Reads every ring. `to_trace_ns` converts the samples' CLOCK_MONOTONIC time.
  void poll(int64_t monotonic_to_trace_ns);
  // One sample (poll's parser calls it; tests call it directly).
  void ingest(const PerfSample& s, int64_t monotonic_to_trace_ns);
  // New samples, callsites (module and file offset, unnamed; names come
  // offline, trace/model/frame_namer.hpp) and the modules of each process
  // that new frames fell in (with their build-ids) into `out`. A killed
  // process keeps what earlier drains wrote.
  void drain(trace::Trace& out, trace::StringTable& strings);
  // CPU time drain() spent reading modules' build-ids (all drains).
  uint64_t modules_ns() const { return modules_ns_; }

  // "perf_event_open task-clock, frame-pointer callchains".
  std::string method() const;
  uint64_t samples() const;
  uint64_t lost() const;
  // Samples whose walk was cut at a return address outside every executable mapping.
  uint64_t walks_cut() const;
  uint64_t threads_refused() const { return threads_refused_; }
  uint64_t threads_opened() const { return threads_opened_; }

 private:
  struct Ring;
  struct ProcMaps {
    std::vector<MapRange> ranges;
    uint64_t read_poll = UINT64_MAX;  // poll count of the last read
  };
  struct Key {
    uint32_t parent, module;  // module UINT32_MAX: unmapped (raw address)
    uint64_t offset;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>{}(k.offset * 0x9E3779B97F4A7C15ull ^ (uint64_t{k.parent} << 32 | k.module));
    }
  };
  struct NewCallsite {
    uint32_t id, parent, module;
    uint64_t offset;
  };
  struct Frame {  // one frame of the sample being ingested
    uint64_t ip = 0, at = 0;
    bool mapped = false;
    MapRange map;
  };
  struct NewModule {
    uint32_t pid, module;
    uint64_t start, end, offset;  // the mapping of the first frame seen there
  };

  explicit PerfStacks(PerfStacksOptions options);
  int open_event(uint32_t tid, int* error) const;
  void read_ring(Ring& r);
  const MapRange* find_map(uint32_t pid, uint64_t ip);
  uint32_t intern_module(std::string_view path);

  PerfStacksOptions options_;
  int root_fd_ = -1;
  size_t page_size_ = 4096;
  // Owned by the sampling thread.
  std::unordered_map<uint32_t, std::unique_ptr<Ring>> rings_;
  std::unordered_map<uint32_t, ProcMaps> maps_;
  std::unordered_map<Key, uint32_t, KeyHash> callsites_;
  std::vector<uint8_t> scratch_;
  std::string maps_text_;
  uint64_t polls_ = 0;
  int64_t offset_ns_ = 0;
  uint64_t threads_refused_ = 0, threads_opened_ = 0;

  mutable std::mutex mutex_;  // what drain() takes, and the module paths
  std::vector<std::string> modules_;
  std::unordered_map<std::string, uint32_t> module_ids_;
  std::vector<NewCallsite> pending_callsites_;
  std::unordered_set<uint64_t> pid_modules_;  // (pid << 32 | module) seen
  std::vector<NewModule> pending_modules_;
  trace::HostStackSampleTable pending_samples_;
  uint64_t samples_ = 0, lost_ = 0, dropped_ = 0, walks_cut_ = 0;
  std::vector<Frame> walk_;  // ingest()'s, under mutex_

  std::vector<std::optional<std::string>> build_ids_;  // by module; drain()'s caller only
  uint64_t modules_ns_ = 0;
};

}  // namespace scalescope::collect
