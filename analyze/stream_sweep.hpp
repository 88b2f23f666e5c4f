#pragma once
// The interval unions of the chunked engine (stream_analyzer.cpp), summed
// time segment by time segment: the breakdown's compute, communication,
// overlap and copy time, per-stream busy time, the launch gaps, input
// starvation and both splits of idle time by cause.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "analyze/intervals.hpp"

namespace scalescope::analyze::detail {

using trace::Timestamp;

enum Category : uint8_t { kCompute = 0, kComm = 1, kCopy = 2 };

// One GPU row's span waiting for its time segment.
struct Pending {
  Timestamp start = 0, end = 0;
  uint32_t stream = 0;  // index into StreamSweep::keys
  uint8_t category = kCompute;
};

// The interval unions of the breakdown and the launch gaps, summed over
// time segments [previous cut, cut) for one or more windows at once (the
// whole trace and its steady iterations): rows are added chunk by chunk,
// clipped to the hull of the windows, and cut() is called with a time no row
// still to come starts before. Each segment's unions are built once; a window
// narrower than the hull sums them clipped to it (clipping a union gives the
// union of the clipped rows).
class StreamSweep {
 public:
  static constexpr size_t kPieceRows = size_t{1} << 14;
  // calls: whether the trace has API calls with a correlation id (launches).
  StreamSweep(Timestamp lo, Timestamp hi, bool calls) : lo_(lo), hi_(hi), launches_(calls) {}
  // A window [ws, we] inside [lo, hi]. Input starvation counts
  // the idle gaps of its compute | comm in which a host-to-device copy ended,
  // each once for its part inside [span_start, span_end). Its first gap opens
  // at ws; time after its last span is not a gap (nothing waited).
  size_t add_window(Timestamp ws, Timestamp we, Timestamp span_start, Timestamp span_end);

  // The split of window w's idle time by cause (IdleCover), made
  // gap by gap as the sweep closes them. Its MPI calls (few: the job's facts
  // hold them whole) are given before the rows; its host waits as their
  // chunks are read, in the same order of first start as the GPU chunks, so
  // that every wait that starts before a cut is known when the gaps before
  // it are split.
  void mpi_calls(size_t w, Intervals calls) { windows_[w].cover->mpi = std::move(calls); }
  void host_wait(size_t w, Interval iv) {
    Cover& c = *windows_[w].cover;
    c.waits.push_back(iv);
    c.waits_sorted = false;
  }
  // After the last cut: the gap after the last span, and the gaps whose
  // compute | communication gap never closed (no input gap: nothing waited).
  IdleCover idle_cover(size_t w);

  // The split of window w's idle time into host wait, kernel wait and other
  // (IdleBreakdown), judged gap by gap as the sweep closes them;
  // after the last cut, and after every API call was read (launch_call).
  IdleBreakdown idle_breakdown(size_t w);
  // Every GPU row that ends at or after its start (sweep_rows), and every API
  // call with a correlation id, read in the order of the cuts.
  void gpu_row(Timestamp start, uint32_t correlation) { launches_.gpu_row(start, correlation); }
  void launch_call(uint32_t correlation, Timestamp start) { launches_.call(correlation, start); }

  uint32_t stream_index(uint32_t device, uint32_t stream);
  // A span clipped to [lo, hi]; empty spans are dropped, as append() drops them.
  void add(Interval iv, uint32_t stream, Category c) {
    if (iv.end <= iv.start) return;
    pending_.push_back({iv.start, iv.end, stream, c});
  }
  // When an input copy of window w ended (its end clipped to w), given before
  // the cut past it: a copy that ends in a gap starts before the gap closes,
  // so its chunk is read before the segment that closes the gap. Ends before
  // the gap being looked at are dropped (gaps come in time order): what stays
  // is the copies not yet ended, bounded as the pending rows are.
  void input_end(size_t w, Timestamp x) { windows_[w].input_ends.push(x); }

  // Rows that start before `at` are summed, in pieces of at most about
  // kPieceRows rows (each cut at the next row's start, which the rows after
  // it cannot precede), so that the unions' lists stay small however many
  // rows a chunk holds; rows reaching past a piece's cut stay, cut there.
  // unread_correlation: the smallest correlation id of the GPU rows not read yet.
  void cut(Timestamp at, uint32_t unread_correlation);

  struct Sums {
    int64_t compute_ns = 0, communication_ns = 0, overlap_ns = 0, copy_ns = 0;
    int64_t gap_count = 0, gap_ns = 0;
    int64_t starvation_ns = 0, starved_gaps = 0;
  };
  const Sums& sums(size_t w) const { return windows_[w].sums; }

  std::vector<StreamUtilization> streams(size_t w, int64_t wall) const;

 private:
  // Gaps of the busy union wait here until the gap of compute | communication
  // that holds them closes, which says whether they are input gaps; then
  // they are split by the host waits and MPI calls covering them.
  struct Cover {
    Cover(Timestamp span_start, Timestamp span_end)
        : split(span_start, span_end, waits, mpi), breakdown(span_start, span_end, kKernelWaitThresholdNs) {}
    Intervals waits, mpi;
    bool waits_sorted = true;
    std::vector<std::pair<Interval, unsigned>> gaps;  // in time order, launch bit set; [gaps_from, end) waiting
    size_t gaps_from = 0;
    IdleSplitter split;
    IdleGaps breakdown;
  };
  // Splits the waiting gaps that end by `to`, input gaps if `input` and they
  // start at `from` or later (a gap of busy lies in one gap of compute |
  // communication).
  static void split_gaps(Cover& c, Timestamp to, bool input, Timestamp from);

  struct Window {
    Timestamp ws = 0, we = 0, span_start = 0, span_end = 0;
    Sums sums;
    std::vector<int64_t> busy;  // per stream; > 0: a span of it lies in the window
    bool cc_open = false, open = false;
    Interval cc_cur, cur;
    std::priority_queue<Timestamp, std::vector<Timestamp>, std::greater<>> input_ends;
    std::unique_ptr<Cover> cover;  // its lists stay put while windows_ grows
  };

  // A normalized union clipped to [a, b]: a run of it, its ends cut.
  static void clip(Intervals& v, Timestamp a, Timestamp b);
  static int64_t clipped_total(const Intervals& v, Timestamp a, Timestamp b);

  // One segment's unions: every sum of the breakdown is additive over
  // disjoint time segments; the launch gaps carry their open span across.
  void segment();

  void sum(Window& w, const Intervals& compute, const Intervals& comm, const Intervals& copy);

  // A gap of busy closed: the idle breakdown's (each row starting at `next` has been read).
  void judge(Window& w, Timestamp gap_start, Timestamp next) {
    if (w.cover->breakdown.inside(gap_start, next) > 0) launches_.judge(w.cover->breakdown, gap_start, next);
  }

  // A gap of compute | communication closed: input starvation's, and the
  // idle split's input bit for the gaps of busy inside it.
  static void idle(Window& w, Timestamp from, Timestamp to);

  Timestamp lo_, hi_;
  std::vector<Window> windows_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<uint64_t> keys_;
  std::vector<Intervals> lists_;
  std::vector<uint32_t> touched_;
  std::vector<Pending> pending_, tails_;
  ChunkedLaunches launches_;
  size_t sorted_ = 0;
  Intervals compute_, comm_, copy_, compute_comm_, merge_, w_compute_, w_comm_, w_copy_;
};

}  // namespace scalescope::analyze::detail
