#pragma once
// Private helpers shared by the analysis files.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analyze/analyze.hpp"
#include "analyze/intervals.hpp"
#include "base/quantile.hpp"

namespace scalescope::trace {
enum class InputKind : uint8_t;  // trace/import/input_detector.hpp
}

namespace scalescope::analyze::detail {

struct Detected {
  std::string source;  // "" when none found
  std::string reason;  // why none were found
  std::vector<Iteration> iterations;
};

// The columns detection reads, each in its table's row order, and the end of
// GPU activity (the last iteration's cap): the engine hands over only these,
// and the kernel columns only when nothing else marks steps.
struct IterationInputs {
  const trace::StringTable& strings;
  const trace::NvtxTable& nvtx;
  const std::vector<trace::NcclOp>& nccl_op;
  const std::vector<uint64_t>& nccl_bytes;
  const std::vector<trace::Timestamp>& nccl_start;
  const std::vector<trace::StringId>& kernel_name;
  const std::vector<trace::Timestamp>& kernel_start;
  trace::Timestamp gpu_end = 0;
};
Detected detect_iterations(const IterationInputs& inputs, const std::string& range_name);

// The detected iterations that lie wholly inside [ws, we], summarized.
IterationStats window_iterations(const Detected& detected, trace::Timestamp ws, trace::Timestamp we,
                                 double warmup_tolerance);

// Fills the statistics of `stats.iterations` (marks warm-up iterations).
void summarize_iterations(IterationStats& stats, double warmup_tolerance);

// Resolves a window against a trace: [start, end] in trace-clock ns, from the
// trace's extent (its time_span() widened by collectives and syncs), whether
// it has GPU rows (kernels, copies, sets, collectives) and its metadata (for
// errors).
std::pair<trace::Timestamp, trace::Timestamp> resolve_window(trace::Timestamp first, trace::Timestamp last,
                                                             bool gpu_rows, const trace::Metadata& meta,
                                                             const Options& options, const Detected& detected);

// The one median and quantile of every part (base/quantile.hpp).
using trace::median;
using trace::quantile;

// Whether analyze_path reads an input of this kind and number of rows
// chunk by chunk (analyze_rank_streaming, stream_analyzer.hpp) instead of
// whole: .sstrace files of more than options.stream_above_rows rows, when no
// visitor needs the Trace.
bool analyze_streaming(trace::InputKind kind, uint64_t rows, const Options& options, bool visitor);

// ---- shared by the analyses ----

inline constexpr int64_t kLaunchGapLimitNs = 1'000'000;  // longer GPU gaps are not launch latency
inline constexpr int64_t kSmallKernelNs = 10'000;

bool contains_ci(std::string_view hay, std::string_view needle);

// The job's framework, communication libraries and launcher (job.cpp). The
// MPI calls read are the rows is_mpi_call() accepts; `mpi_calls`, when given,
// receives the union of their spans inside [ws, we].
JobFacts job_facts(const trace::Trace& t, bool gpu_activity, trace::Timestamp ws, trace::Timestamp we,
                   Intervals* mpi_calls);
// An MPI_* call by name (API row, or NVTX range text).
bool is_mpi_call(std::string_view name);
// The split itself, gap by gap (idle_cover, and the streamed analysis, which
// never holds a rank's whole busy list): each gap of the GPU's busy union,
// in time order, with its launch-gap and input bits; the host waits and MPI
// calls are normalized unions read through cursors, so a caller may append
// to them, and erase what the cursors passed (trim), between gaps.
class IdleSplitter {
 public:
  IdleSplitter(trace::Timestamp span_start, trace::Timestamp span_end, const Intervals& host_waits,
               const Intervals& mpi_calls)
      : waits_(&host_waits), mpi_(&mpi_calls) {
    cover_.span_start = span_start;
    cover_.span_end = span_end;
    cover_.c.span_ns = std::max<int64_t>(0, span_end - span_start);
    if (cover_.c.span_ns == 0) cover_.c.availability = {false, "skipped: the window holds no time"};
  }
  bool empty() const { return cover_.c.span_ns == 0; }
  // A gap of busy (clipped to the span here) and its kIdleLaunchGap | kIdleInput bits.
  void add(Interval gap, unsigned bits);
  // Host waits and MPI calls that ended before every gap still to come: the
  // caller erases that many from the front of its lists, then calls trimmed().
  size_t waits_passed() const { return wait_from_; }
  size_t mpi_passed() const { return mpi_from_; }
  void trimmed() { wait_from_ = mpi_from_ = 0; }
  const IdleCover& result() const { return cover_.c; }

 private:
  struct {
    trace::Timestamp span_start = 0, span_end = 0;
    IdleCover c;
  } cover_;
  const Intervals* waits_;
  const Intervals* mpi_;
  size_t wait_from_ = 0, mpi_from_ = 0;
};
// When the launch call of the activity that ends an idle gap began: there is
// none in the trace, it began before the gap did, or after (the GPU waited on
// the host).
enum class GapLaunch : uint8_t { kNone, kBeforeGap, kAfterGap };

// The split itself, gap by gap in any order (idle_breakdown, and the streamed
// analysis, which judges a gap once the launch call ending it has been read).
class IdleGaps {
 public:
  IdleGaps(trace::Timestamp span_start, trace::Timestamp span_end, int64_t threshold_ns)
      : span_start_(span_start), span_end_(span_end) {
    b_.threshold_ns = threshold_ns;
    if (span_end <= span_start) b_.availability = {false, "skipped: the window holds no time"};
  }
  // The part of [gap_start, next) inside the span; gap_start is where the
  // GPU's last activity ended, before the span if so (the span's start when
  // none ended before).
  int64_t inside(trace::Timestamp gap_start, trace::Timestamp next) const;
  // A gap ended by the activities that begin at `next`; counted if inside() > 0.
  void gap(trace::Timestamp gap_start, trace::Timestamp next, GapLaunch launch);
  // The time after the GPU's last activity (it ended at gap_start): nothing
  // ran after it, so nothing was waited for.
  void tail(trace::Timestamp gap_start);
  const IdleBreakdown& result() const { return b_; }

 private:
  trace::Timestamp span_start_, span_end_;
  IdleBreakdown b_;
};

// The launch calls of the activities that end idle gaps, for a rank read
// chunk by chunk (the streamed analysis). The caller reads GPU rows and API
// calls in chunks taken by earliest start, judges the gaps that close before
// the next chunk's earliest start (`at`: every row and call starting before
// it has been read), then calls passed(at). A gap whose activities' calls
// are all still unread waits for finish(): such a call, if any, began after
// the gap did. Held: the GPU rows read but not passed; the calls of the
// correlation ids that rows still to come may carry (with ids that grow with
// time, the work in flight); the gaps waiting.
class ChunkedLaunches {
 public:
  // calls: whether the trace has API calls with a correlation id at all.
  explicit ChunkedLaunches(bool calls) : calls_(calls) {}
  // A GPU row that ends at or after its start.
  void gpu_row(trace::Timestamp start, uint32_t correlation) { starts_.push_back({start, correlation}); }
  // An API call with a correlation id (not 0).
  void call(uint32_t correlation, trace::Timestamp start);
  // Before judging: orders the rows read since.
  void sort();
  // The gap [gap_start, next) of `gaps`, counted now or at finish().
  void judge(IdleGaps& gaps, trace::Timestamp gap_start, trace::Timestamp next);
  // Every gap closing before `at` was judged; unread_correlation: the
  // smallest correlation id of the GPU rows not read yet.
  void passed(trace::Timestamp at, uint32_t unread_correlation);
  // After every call was read: the gaps still waiting.
  void finish();

 private:
  struct RowStart {
    trace::Timestamp start;
    uint32_t correlation;
  };
  struct Deferred {
    IdleGaps* gaps;
    trace::Timestamp gap_start, next;
    size_t unseen_begin, unseen_end;  // its correlations in unseen_
  };
  bool calls_;
  std::vector<RowStart> starts_;
  size_t sorted_ = 0;
  std::unordered_map<uint32_t, trace::Timestamp> launch_of_;  // the earliest call read per correlation id
  size_t kept_ = 0;
  std::vector<Deferred> deferred_;
  std::vector<uint32_t> unseen_;
  std::unordered_set<uint32_t> wanted_, seen_;
};

// The host sampler's tables over [ws, we] and per iteration (host_threads.cpp).
HostStats analyze_host(const trace::Trace& t, trace::Timestamp ws, trace::Timestamp we,
                       const std::vector<Iteration>& iterations);

// The NVML samples of every GPU in t.counters over [ws, we], one summary per
// device (gpu_clocks.cpp).
std::vector<GpuClockStats> sampled_gpus(const trace::Trace& t, trace::Timestamp ws, trace::Timestamp we);
// The rank's own GPU among them: the CUDA ordinal its kernels ran on most
// (`kernel_device`, -1 unknown: the only GPU the trace knows).
GpuClockStats own_gpu_clocks(const trace::Trace& t, const std::vector<GpuClockStats>& sampled, int64_t kernel_device);
// The device most kernels ran on, -1 without kernels, from the count of
// kernels per device.
int64_t busiest_device(const std::map<uint32_t, int64_t>& kernels_by_device);
// combine(): ranks without samples of their own GPU take those another rank
// of their host sampled (the same PCI bus id), then the lists are dropped.
void share_sampled_gpus(std::vector<RankAnalysis>& ranks);

}  // namespace scalescope::analyze::detail
