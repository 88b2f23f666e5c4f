#pragma once
// Private: the tracks of an export, laid out once for the Chrome JSON and the
// Perfetto protobuf writers, so that both draw the same processes, threads,
// GPU streams and host-sampler threads with the same names and order.

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace::detail {

// Time 0 of an export: the earliest Unix-aligned event of all traces (GPU and
// API events, NVTX ranges, host samples); 0 when there is none.
int64_t export_origin(std::span<const Trace> traces);

// Track numbers (Chrome's tid) unique in the whole export. Perfetto's JSON
// importer reads pid and tid as 32-bit numbers, names threads by tid alone,
// and reserves pid 0: so a trace's process is its index + 1, host threads
// keep their OS tid (Linux tids stay below 2^22), and each GPU track and each
// host-sampler track gets a number of its own from 2^30 and 3 * 2^29 upward,
// never equal to a host thread's tid.
class TrackNumbers {
 public:
  explicit TrackNumbers(std::span<const Trace> traces);
  uint32_t next_gpu();
  uint32_t next_sampled();
  static constexpr uint32_t kGpuBase = uint32_t{1} << 30;
  static constexpr uint32_t kSampledBase = uint32_t{3} << 29;

 private:
  std::unordered_set<uint32_t> host_tids_;
  uint32_t gpu_ = kGpuBase, sampled_ = kSampledBase;
};

struct ExportTrack {
  uint32_t tid = 0;
  std::string name;
  int64_t sort_index = 0;
};

// One host thread of the host sampler (format 1.2): its samples in time order.
struct SampledThread {
  ExportTrack track;
  uint32_t pid = 0, tid = 0;       // the OS thread
  std::vector<uint32_t> rows;      // HostSampleTable rows, by time
};

// A run of consecutive host samples of one thread in one state: a sample
// covers the time since the thread's previous one.
struct HostStateSlice {
  Timestamp begin = 0, end = 0;
  ThreadState state{};
  uint64_t cpu_ns = 0, run_wait_ns = 0;
  size_t samples = 0;
  int32_t cpu = 0;  // the CPU of the last sample
};

// One trace's tracks. Perfetto nests the slices of one track and cannot show
// two that overlap without one containing the other. Work on one stream can
// overlap a little (Hopper's programmatic dependent launch starts a kernel
// before the previous one ends, by ~0.1 us), so such a slice goes on a second
// track of its stream, "GPU d stream s (overlap 1)", rather than being cut.
struct TraceTracks {
  std::string process_name;
  std::vector<ExportTrack> gpu;  // GPU streams and per-device annotation tracks
  // Per event, the tid of its track. API calls and host NVTX ranges keep
  // their OS thread's tid, except those that overlap another slice of the
  // thread without nesting: they go on a track "thread N (overlap 1)".
  std::vector<uint32_t> api_tid, kernel_tid, memcpy_tid, memset_tid, nvtx_tid;
  std::vector<ExportTrack> host_thread_names;  // Kineto's names of host threads (tid = the OS thread)
  std::vector<ExportTrack> host_overlaps;      // the overlap tracks of host threads
  std::vector<SampledThread> sampled;          // host sampler threads, then threads with stacks only
  std::unordered_map<uint64_t, size_t> sampled_of;  // (pid << 32 | tid) -> index in `sampled`

  // The state slices of one sampled thread, in time order.
  std::vector<HostStateSlice> state_slices(const Trace& t, const SampledThread& thread) const;
};

TraceTracks layout_tracks(const Trace& t, size_t index, TrackNumbers& numbers);

// Names of native frames and whole stacks of the host stack samples (format
// 1.3), made once per callsite id.
class StackLabels {
 public:
  explicit StackLabels(const Trace& t);
  const std::string& frame(uint32_t id);  // "[no user frame]" for 0, "[lost frame]" for an unknown id
  const std::string& stack(uint32_t id);  // "outer;...;leaf", at most 64 frames
  const std::unordered_map<uint32_t, size_t>& rows() const { return row_of_; }  // callsite id -> its (last) row

 private:
  const Trace& t_;
  std::unordered_map<uint32_t, size_t> row_of_;
  std::unordered_map<uint32_t, std::string> frame_, stack_;
};

}  // namespace scalescope::trace::detail
