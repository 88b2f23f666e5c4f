#pragma once
// Clock alignment across hosts, from the trace itself. Every process maps its
// trace clock to Unix time with its own host's CLOCK_REALTIME (the collector's
// clock anchors); on several hosts those clocks differ by microseconds to
// milliseconds (NTP), and drift apart over a long run. A collective ends at
// nearly the same instant on every rank of its communicator (no rank can
// finish before the last rank's data arrived), so the differences of matched
// collectives' end times measure each host's clock against a reference host.
//
//   std::vector<Trace> ranks = load_run("job.ssrun");    // aligned by default
//   ClockAlignment a = align_clocks(ranks);              // or by hand
//   for (const HostClock& h : a.hosts) ... h.offset_ns, h.drift_ppm, h.uncertainty_ns
//
// Method (docs/multinode.md): per host, the median end of each collective over
// its ranks; per collective, that host's median minus the reference host's;
// the differences within 100 us of the densest band (others are wrong matches);
// through them a robust line against time (Siegel's repeated-median slope over
// the points, or Theil-Sen over the medians of up to 512 time-ordered bins for
// long runs; then the median intercept). The slope is kept
// only where it shrinks the residuals' spread to two thirds or less.
// Hosts with no collective shared with the reference are aligned through a
// host that has one (breadth first). Processes of one host share its clock and
// are never shifted against each other.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// One collective as one rank saw it, reduced to what matching needs.
struct CollectiveEnd {
  uint64_t key = 0;         // collective_key(): equal on every rank of one collective
  int64_t end_unix_ns = 0;  // on this rank's host clock
};

// The collectives of one rank (16 bytes each) and the host whose clock they read.
struct RankCollectives {
  std::string hostname;  // "" unknown: then the process counts as a host of its own
  int32_t rank = -1;
  std::vector<CollectiveEnd> ends;
};

// A collective's identity across ranks: communicator name, op and sequence
// number (the trace's, or the order of occurrence per communicator and op).
uint64_t collective_key(std::string_view communicator, NcclOp op, int64_t sequence);

// The rank's collectives: the NCCL table, or where it is empty the kernels
// whose name says NCCL (ncclDevKernel_AllReduce_...), in start order.
RankCollectives collectives_of(const Trace& trace);

// The op a NCCL kernel's name spells: ncclDevKernel_AllReduce_Sum_f32_RING_LL,
// ncclKernel_AllGather_..., ncclAllReduceRingLLKernel_sum_f32. kUnknown otherwise.
NcclOp nccl_op_of_kernel_name(std::string_view name);

enum class HostClockStatus : uint8_t {
  kReference = 0,  // the host the others are measured against (the lowest rank's)
  kAligned,        // shifted by the estimate
  kAgrees,         // estimated, but within the noise or the threshold: left alone
  kUnmatched,      // shares too few collectives with any aligned host: left alone
  kDisabled,       // alignment turned off (--no-align-clocks): estimate only, not applied
};
std::string_view to_string(HostClockStatus status);

struct HostClock {
  std::string hostname;
  HostClockStatus status = HostClockStatus::kUnmatched;
  std::string measured_against;  // the host the collectives were compared with ("" for the reference)
  int32_t first_rank = -1;       // lowest rank on the host, -1 unknown
  int32_t rank_count = 0;        // processes (traces) on the host
  // The host's clock minus the reference's at reference_unix_ns, and its
  // change per second of run in parts per million (1 ppm = 1 us per s).
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t reference_unix_ns = 0;  // the median time of the matched collectives
  double uncertainty_ns = 0;      // standard error of offset_ns (from the residuals' spread)
  double spread_ns = 0;           // robust standard deviation of one collective's residual
  int64_t matched = 0;            // collectives compared (inliers of the fit)
  int64_t rejected = 0;           // matched by key but off the band of the others (a wrong match)
  int64_t span_ns = 0;            // time from the first to the last compared collective

  // What to subtract from this host's Unix time `unix_ns` to read the
  // reference clock: offset + drift x (t - reference time).
  int64_t correction_at(int64_t unix_ns) const;
  bool applied() const { return status == HostClockStatus::kAligned; }
};

struct ClockAlignment {
  std::vector<HostClock> hosts;  // the reference first, then by first rank, then by name
  bool any_applied() const;
  const HostClock* find(std::string_view hostname) const;
};

struct AlignOptions {
  bool apply = true;  // false: estimate and report, change nothing (status kDisabled)
  // A host whose correction stays under max(this, 3 x uncertainty) over the
  // run is left alone: NTP/PTP already did the job, and shifting by noise
  // would only add noise.
  int64_t agree_threshold_ns = 2'000;
  int64_t min_matches = 3;  // fewer shared collectives: kUnmatched
};

// Estimates each host's clock against the host of ranks[0] (pass ranks in
// rank order). No effect on its input. One host: a single kReference entry.
ClockAlignment estimate_clock_alignment(const std::vector<RankCollectives>& ranks, const AlignOptions& options = {});

// Rewrites meta.clock so that to_unix_ns() reads the reference clock (a
// linear correction stays linear between anchors), and notes it in
// meta.extra["clock_correction"]. No effect unless host.applied().
void apply_clock_correction(Trace& trace, const HostClock& host);

// estimate_clock_alignment over the traces' collectives, then
// apply_clock_correction to each trace of an aligned host.
ClockAlignment align_clocks(std::vector<Trace>& traces, const AlignOptions& options = {});

}  // namespace scalescope::trace
