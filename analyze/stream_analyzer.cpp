// analyze_rank_streaming: the whole-trace analyses of analyze.cpp, computed
// from a ChunkReader in two passes (stream_analyzer.hpp says which and how).
// Every figure follows the rule of its counterpart in analyze.cpp; where the
// rule is a sum per row it is summed here too, where it is a union of
// intervals it is summed per time segment.
#include "analyze/stream_analyzer.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "analyze/attribution_stream.hpp"
#include "analyze/detail.hpp"
#include "analyze/intervals.hpp"
#include "trace/chunk_reader.hpp"
#include "trace/error.hpp"

namespace scalescope::analyze {
namespace {

using trace::Timestamp;

// The exact median of durations (>= 0) in two passes, as trace::median_in_place
// gives it: count() every value, choose(), collect() every value again, median().
// Buckets keep a value's top 13 significant bits (values below 4096 exactly),
// so the middle rank's bucket holds at most value/4096 distinct values.
class TwoPassMedian {
 public:
  static size_t bucket(int64_t d) {
    const auto u = static_cast<uint64_t>(d);
    if (u < 4096) return static_cast<size_t>(u);
    const int e = 63 - std::countl_zero(u);  // 12 or more
    return 4096 + static_cast<size_t>(e - 12) * 4096 + static_cast<size_t>((u >> (e - 12)) & 4095);
  }
  void count(int64_t d) {
    const size_t b = bucket(d);
    if (b >= counts_.size()) counts_.resize(b + 1, 0);
    ++counts_[b];
    ++n_;
  }
  void choose() {
    if (n_ == 0) return;
    const uint64_t hi = n_ / 2;
    want_[1] = locate(hi);
    want_[0] = n_ % 2 ? want_[1] : locate(hi - 1);
  }
  void collect(int64_t d) {
    if (n_ == 0) return;
    const size_t b = bucket(d);
    for (Want& w : want_)
      if (w.bucket == b) {
        ++w.values[d];
        return;  // both ranks in one bucket share its values
      }
  }
  double median() const {
    if (n_ == 0) return 0;
    const double hi = static_cast<double>(value(want_[1]));
    if (n_ % 2 == 1) return hi;
    const double lo = static_cast<double>(value(want_[0]));
    return lo == hi ? lo : lo + (hi - lo) * 0.5;
  }

 private:
  struct Want {
    size_t bucket = std::numeric_limits<size_t>::max();
    uint64_t offset = 0;                 // the rank within its bucket
    std::map<int64_t, uint64_t> values;  // filled by collect()
  };
  Want locate(uint64_t rank) const {
    uint64_t before = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      if (before + counts_[b] > rank) return Want{b, rank - before, {}};
      before += counts_[b];
    }
    return Want{};
  }
  int64_t value(const Want& w) const {
    // Both ranks in one bucket: the lower rank's values were collected into want_[0] or [1].
    const auto& values =
        w.values.empty() ? (want_[0].bucket == w.bucket ? want_[0].values : want_[1].values) : w.values;
    uint64_t seen = 0;
    for (const auto& [v, n] : values) {
      seen += n;
      if (seen > w.offset) return v;
    }
    fail("streaming median: the second pass saw fewer values than the first (the file changed?)");
  }

  std::vector<uint64_t> counts_;
  uint64_t n_ = 0;
  Want want_[2];
};

enum Category : uint8_t { kCompute = 0, kComm = 1, kCopy = 2 };

// One GPU row's span waiting for its time segment.
struct Pending {
  Timestamp start = 0, end = 0;
  uint32_t stream = 0;  // index into StreamSweep::keys
  uint8_t category = kCompute;
};

// The interval unions of analyze_breakdown and analyze_launch, summed over
// time segments [previous cut, cut): rows are added chunk by chunk, and cut()
// is called with a time no row still to come starts before.
class StreamSweep {
 public:
  uint32_t stream_index(uint32_t device, uint32_t stream) {
    const uint64_t key = (uint64_t{device} << 32) | stream;
    auto [it, fresh] = index_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
    if (fresh) {
      keys_.push_back(key);
      busy_.push_back(0);
      seen_.push_back(false);
      lists_.emplace_back();
    }
    return it->second;
  }
  // A span of the window (already clipped); empty spans are dropped, as append() drops them.
  void add(Interval iv, uint32_t stream, Category c) {
    if (iv.end <= iv.start) return;
    pending_.push_back({iv.start, iv.end, stream, c});
    seen_[stream] = true;
  }

  void cut(Timestamp at) {
    auto by_start = [](const Pending& a, const Pending& b) { return a.start < b.start; };
    // Rows before sorted_ are sorted: sort the new ones and merge.
    if (sorted_ < pending_.size()) {
      auto mid = pending_.begin() + static_cast<std::ptrdiff_t>(sorted_);
      std::sort(mid, pending_.end(), by_start);
      std::inplace_merge(pending_.begin(), mid, pending_.end(), by_start);
    }
    const auto stop = std::lower_bound(pending_.begin(), pending_.end(), at,
                                       [](const Pending& p, Timestamp t) { return p.start < t; });
    if (stop == pending_.begin()) {
      sorted_ = pending_.size();
      return;
    }
    for (Intervals* v : {&compute_, &comm_, &copy_}) v->clear();
    for (uint32_t s : touched_) lists_[s].clear();
    touched_.clear();
    tails_.clear();
    Intervals* by_category[3] = {&compute_, &comm_, &copy_};
    for (auto it = pending_.begin(); it != stop; ++it) {
      const Interval part{it->start, std::min(it->end, at)};
      by_category[it->category]->push_back(part);
      if (lists_[it->stream].empty()) touched_.push_back(it->stream);
      lists_[it->stream].push_back(part);
      if (it->end > at) tails_.push_back({at, it->end, it->stream, it->category});
    }
    // The tails start at the cut, before every row left: they go in front.
    pending_.erase(pending_.begin(), stop);
    pending_.insert(pending_.begin(), tails_.begin(), tails_.end());
    sorted_ = pending_.size();
    segment();
  }

  int64_t compute_ns = 0, communication_ns = 0, overlap_ns = 0, copy_ns = 0;
  int64_t gap_count = 0, gap_ns = 0;

  // Input starvation (analyze_input): the idle gaps of compute | comm in
  // which a host-to-device copy ended (`ends`, sorted), each counted once
  // for its part inside [span_start, span_end). The first gap opens at the
  // window's start; time after the last span is not a gap (nothing waited).
  void watch_input(const std::vector<Timestamp>* ends, Timestamp ws, Timestamp span_start, Timestamp span_end) {
    input_ends_ = ends;
    input_ws_ = ws;
    span_start_ = span_start;
    span_end_ = span_end;
  }
  int64_t starvation_ns = 0, starved_gaps = 0;

  std::vector<StreamUtilization> streams(int64_t wall) const {
    std::vector<StreamUtilization> out;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!seen_[i]) continue;  // no span of it lies in the window
      StreamUtilization su;
      su.device = static_cast<uint32_t>(keys_[i] >> 32);
      su.stream = static_cast<uint32_t>(keys_[i] & 0xffffffffu);
      su.busy_ns = busy_[i];
      su.fraction = wall > 0 ? static_cast<double>(su.busy_ns) / static_cast<double>(wall) : 0;
      out.push_back(su);
    }
    std::sort(out.begin(), out.end(), [](const StreamUtilization& x, const StreamUtilization& y) {
      return std::tie(x.device, x.stream) < std::tie(y.device, y.stream);
    });
    return out;
  }
  size_t pending() const { return pending_.size(); }

 private:
  // One segment's unions: every sum of analyze_breakdown is additive over
  // disjoint time segments; the launch gaps carry their open span across.
  void segment() {
    normalize(compute_, merge_);
    normalize(comm_, merge_);
    normalize(copy_, merge_);
    compute_ns += total(compute_);
    communication_ns += total(comm_);
    overlap_ns += intersection_length(comm_, compute_);
    unite(compute_, comm_, compute_comm_);
    copy_ns += total(copy_) - intersection_length(copy_, compute_comm_);
    for (uint32_t s : touched_) {
      Intervals& v = lists_[s];
      normalize(v, merge_);
      busy_[s] += total(v);
    }
    for (const Interval& iv : compute_comm_) {
      if (!cc_open_) {
        idle(input_ws_, iv.start);
        cc_cur_ = iv;
        cc_open_ = true;
      } else if (iv.start <= cc_cur_.end) {
        cc_cur_.end = std::max(cc_cur_.end, iv.end);
      } else {
        idle(cc_cur_.end, iv.start);
        cc_cur_ = iv;
      }
    }
    // union_gaps(compute_comm, copy) with its open span kept between segments.
    const Intervals& a = compute_comm_;
    const Intervals& b = copy_;
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      const Interval& next = j == b.size() || (i < a.size() && a[i].start < b[j].start) ? a[i++] : b[j++];
      if (!open_) {
        cur_ = next;
        open_ = true;
      } else if (next.start <= cur_.end) {
        cur_.end = std::max(cur_.end, next.end);
      } else {
        const int64_t gap = next.start - cur_.end;
        if (gap < detail::kLaunchGapLimitNs) {
          ++gap_count;
          gap_ns += gap;
        }
        cur_ = next;
      }
    }
  }

  void idle(Timestamp from, Timestamp to) {
    if (!input_ends_) return;
    const auto x = std::lower_bound(input_ends_->begin(), input_ends_->end(), from);
    if (x == input_ends_->end() || *x >= to) return;  // no copy ended in it
    const int64_t inside = std::min(to, span_end_) - std::max(from, span_start_);
    if (inside <= 0) return;
    starvation_ns += inside;
    starved_gaps += 1;
  }

  const std::vector<Timestamp>* input_ends_ = nullptr;
  Timestamp input_ws_ = 0, span_start_ = 0, span_end_ = 0;
  bool cc_open_ = false;
  Interval cc_cur_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<uint64_t> keys_;
  std::vector<int64_t> busy_;
  std::vector<bool> seen_;
  std::vector<Intervals> lists_;
  std::vector<uint32_t> touched_;
  std::vector<Pending> pending_, tails_;
  size_t sorted_ = 0;
  Intervals compute_, comm_, copy_, compute_comm_, merge_;
  bool open_ = false;
  Interval cur_;
};

// What pass 1 learns of one table chunk.
struct ChunkFacts {
  bool gpu = false;  // has a kernel, collective, copy or set span in the window
  bool api = false;
  bool kernels = false;  // has kernel rows (iteration detection's last resort reads them)
  Timestamp first = std::numeric_limits<Timestamp>::max();  // earliest start of its GPU spans
};

}  // namespace

RankAnalysis analyze_rank_streaming(const std::filesystem::path& path, const Options& o) {
  if (o.window)
    fail("{}: the streaming analysis covers the whole trace; --window needs the whole-trace analysis", path.string());
  trace::ChunkReader reader = trace::ChunkReader::open(path);
  const trace::Trace& head = reader.head();
  const size_t names = head.strings.size();

  RankAnalysis r;
  std::vector<KernelInfo> info(names);
  std::vector<uint8_t> classified(names, 0);
  std::vector<int64_t> name_ns(names, 0), name_count(names, 0);
  std::vector<int8_t> is_launch(names, -1), sync_kind(names, -1);
  auto kernel_info = [&](trace::StringId id) -> const KernelInfo& {
    if (!classified[id]) {
      classified[id] = 1;
      info[id] = o.classifier.classify(head.strings.view(id));
    }
    return info[id];
  };
  auto launch = [&](trace::StringId id) {
    int8_t& l = is_launch[id];
    if (l < 0) l = detail::contains_ci(head.strings.view(id), "launch") ? 1 : 0;
    return l > 0;
  };

  // ---- pass 1: sums per row, the trace's span, median histograms ----------
  uint64_t kernel_rows = 0, memcpy_rows = 0, memset_rows = 0, nccl_rows = 0, sync_rows = 0, api_rows = 0;
  Timestamp span_lo = std::numeric_limits<Timestamp>::max(), span_hi = std::numeric_limits<Timestamp>::min();
  Timestamp extra_lo = std::numeric_limits<Timestamp>::max(), extra_hi = std::numeric_limits<Timestamp>::min();
  bool extra_any = false;  // nccl or sync rows: Trace::time_span() leaves them out
  int64_t small_kernels = 0;
  TwoPassMedian kernel_median, launch_median;
  PrecisionStats& prec = r.precision;
  LayoutStats& layout = r.layout;
  CopyStats& cp = r.copies;
  std::map<std::tuple<trace::MemcpyKind, trace::MemoryKind, trace::MemoryKind>, CopyGroup> copy_groups;
  std::unordered_set<uint32_t> pageable_correlations;
  uint64_t host_bytes = 0;
  std::map<trace::SyncKind, SyncGroup> sync_groups;
  SyncStats& sy = r.sync;
  auto add_sync = [&](trace::SyncKind kind, int64_t d) {
    SyncGroup& g = sync_groups[kind];
    g.kind = kind;
    g.count += 1;
    g.total_ns += d;
    if (kind != trace::SyncKind::kStreamWaitEvent) sy.host_sync_ns += d;
  };
  LaunchStats& ls = r.launch;
  std::vector<ChunkFacts> facts(reader.chunk_count());
  // The rows that iteration detection, the collective list and the host
  // analysis read, kept whole in file order so that the whole-trace code runs
  // on them unchanged: NVTX ranges that can mark steps, every collective (the
  // list holds one entry each anyway), communication kernels (the list when
  // there are no NCCL rows) and the host sampler's tables. Their size is that
  // of the results they make, not the rank's event count.
  std::vector<Timestamp> htod_ends;  // input starvation: when each input copy ended
  trace::Trace kept;
  kept.meta = head.meta;
  kept.strings = head.strings;
  Timestamp gpu_end = 0;
  std::vector<int8_t> step_range(names, -1), op_domain(names, -1);
  auto marks_steps = [&](trace::StringId id) {
    int8_t& m = step_range[id];
    if (m < 0) {
      const std::string_view text = head.strings.view(id);
      m = (o.iteration_range.empty() ? text.starts_with("ProfilerStep#") : text == o.iteration_range) ? 1 : 0;
    }
    return m > 0;
  };
  auto is_op_domain = [&](trace::StringId id) {
    int8_t& m = op_domain[id];
    if (m < 0) {
      const std::string_view d = head.strings.view(id);
      m = d == "cpu_op" || d == "python_function";
    }
    return m > 0;
  };
  trace::Trace batch;
  auto span = [&](const std::vector<Timestamp>& s, const std::vector<Timestamp>& e) {
    for (Timestamp t : s) span_lo = std::min(span_lo, t);
    for (Timestamp t : e) span_hi = std::max(span_hi, t);
  };
  auto widen = [&](const std::vector<Timestamp>& s, const std::vector<Timestamp>& e) {
    for (size_t i = 0; i < s.size(); ++i) {
      extra_lo = std::min(extra_lo, s[i]);
      extra_hi = std::max(extra_hi, e[i]);
      extra_any = true;
    }
  };
  // Rows of the whole-trace window: the window is the span of these very
  // tables, so a row lies in it exactly when it does not end before it starts.
  // Their extent is checked against the window once it is known.
  Timestamp rows_lo = std::numeric_limits<Timestamp>::max(), rows_hi = std::numeric_limits<Timestamp>::min();
  auto in_rows = [&](Timestamp s, Timestamp e) {
    rows_lo = std::min(rows_lo, s);
    rows_hi = std::max(rows_hi, e);
  };
  auto gpu_first = [&](ChunkFacts& f, Timestamp s, Timestamp e) {
    f.gpu = true;
    f.first = std::min(f.first, s);
    in_rows(s, e);
  };
  for (size_t c = 0; c < reader.chunk_count(); ++c) {
    reader.read(c, batch);
    ChunkFacts& f = facts[c];
    const auto& k = batch.kernels;
    kernel_rows += k.size();
    f.kernels = k.size() > 0;
    span(k.start, k.end);
    for (size_t i = 0; i < k.size(); ++i) {
      gpu_end = std::max(gpu_end, k.end[i]);
      if (kernel_info(k.name[i]).cls == KernelClass::kCommunication) kept.kernels.push(k.row(i));
      if (k.end[i] < k.start[i]) continue;
      const int64_t d = k.end[i] - k.start[i];
      gpu_first(f, k.start[i], k.end[i]);
      const KernelInfo& ki = kernel_info(k.name[i]);
      name_ns[k.name[i]] += d;
      name_count[k.name[i]] += 1;
      auto& ct = r.classes[static_cast<int>(ki.cls)];
      ct.count += 1;
      ct.total_ns += d;
      ls.kernel_count += 1;
      small_kernels += d < detail::kSmallKernelNs ? 1 : 0;
      kernel_median.count(d);
      prec.kernel_ns += d;
      prec.ns[static_cast<int>(ki.precision)] += d;
      if (ki.layout_conversion) {
        layout.conversion_count += 1;
        layout.conversion_ns += d;
        if (ki.layout_to_nchw) layout.to_nchw_ns += d;
      }
      if (ki.nchw_half) {
        layout.nchw_half_count += 1;
        layout.nchw_half_ns += d;
      }
    }
    const auto& m = batch.memcpys;
    memcpy_rows += m.size();
    span(m.start, m.end);
    for (size_t i = 0; i < m.size(); ++i) {
      gpu_end = std::max(gpu_end, m.end[i]);
      if (m.end[i] < m.start[i]) continue;
      const int64_t d = m.end[i] - m.start[i];
      gpu_first(f, m.start[i], m.end[i]);
      if (m.kind[i] == trace::MemcpyKind::kHtoD) htod_ends.push_back(m.end[i]);
      detail::account_copy(m, i, d, copy_groups, cp, host_bytes, pageable_correlations);
    }
    const auto& ms = batch.memsets;
    memset_rows += ms.size();
    span(ms.start, ms.end);
    for (size_t i = 0; i < ms.size(); ++i) {
      gpu_end = std::max(gpu_end, ms.end[i]);
      if (ms.end[i] < ms.start[i]) continue;
      gpu_first(f, ms.start[i], ms.end[i]);
      cp.memset_count += 1;
      cp.memset_ns += ms.end[i] - ms.start[i];
    }
    const auto& nc = batch.nccl;
    nccl_rows += nc.size();
    widen(nc.start, nc.end);
    for (size_t i = 0; i < nc.size(); ++i) {
      gpu_end = std::max(gpu_end, nc.end[i]);
      kept.nccl.push(nc.row(i));
      if (nc.end[i] >= nc.start[i]) gpu_first(f, nc.start[i], nc.end[i]);
    }
    const auto& nv = batch.nvtx;
    for (size_t i = 0; i < nv.size(); ++i)
      if (nv.kind[i] == trace::NvtxKind::kRange &&
          (marks_steps(nv.text[i]) || (nv.device[i] < 0 && !is_op_domain(nv.domain[i]))))
        kept.nvtx.push(nv.row(i));
    for (size_t i = 0; i < batch.host_threads.size(); ++i) kept.host_threads.push(batch.host_threads.row(i));
    for (size_t i = 0; i < batch.host_samples.size(); ++i) kept.host_samples.push(batch.host_samples.row(i));
    for (size_t i = 0; i < batch.host_callsites.size(); ++i) kept.host_callsites.push(batch.host_callsites.row(i));
    for (size_t i = 0; i < batch.host_stack_samples.size(); ++i)
      kept.host_stack_samples.push(batch.host_stack_samples.row(i));
    const auto& s = batch.syncs;
    sync_rows += s.size();
    widen(s.start, s.end);
    for (size_t i = 0; i < s.size(); ++i)
      if (s.end[i] >= s.start[i]) {
        in_rows(s.start[i], s.end[i]);
        add_sync(s.kind[i], s.end[i] - s.start[i]);
      }
    const auto& a = batch.api;
    api_rows += a.size();
    span(a.start, a.end);
    f.api = a.size() > 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a.end[i] >= a.start[i]) in_rows(a.start[i], a.end[i]);
      if (a.domain[i] != trace::ApiDomain::kRuntime && a.domain[i] != trace::ApiDomain::kDriver) continue;
      if (!launch(a.name[i]) || a.end[i] < a.start[i]) continue;
      const int64_t d = a.end[i] - a.start[i];
      ls.launch_api_count += 1;
      ls.launch_api_ns += d;
      launch_median.count(d);
    }
  }
  // The window: Trace::time_span(), widened by collectives and syncs
  // (detail::resolve_window without --window).
  Timestamp ws = span_lo, we = span_hi;
  if (span_lo > span_hi) ws = we = 0;
  if (extra_any) {
    const bool any = ws != 0 || we != 0;
    ws = any ? std::min(ws, extra_lo) : extra_lo;
    we = any ? std::max(we, extra_hi) : extra_hi;
  }
  const int64_t wall = std::max<int64_t>(0, we - ws);
  // Only a trace with events at time 0 can have rows outside the window
  // (time_span() then reads as empty): pass 1 summed them; refuse.
  if (rows_lo <= rows_hi && (rows_lo < ws || rows_hi > we))
    fail("{}: events lie outside the trace's span (timestamps at 0?); the streaming analysis cannot take it",
         path.string());
  auto clip = [&](Timestamp s, Timestamp e) { return Interval{std::max(s, ws), std::min(e, we)}; };

  // ---- iterations, as detail::detect_iterations finds them -----------------
  // Ranges and collectives first; only when neither marks steps does the
  // detection need every kernel's name and start (12 bytes per kernel, the
  // one state here that grows with the trace: the repeating-kernel search
  // compares each name's gaps with their median). They are read in one more
  // pass, in file order, and freed once detection is done.
  if (gpu_end == 0) gpu_end = span_lo > span_hi ? 0 : span_hi;  // as gpu_end(): time_span().second
  detail::Detected detected;
  {
    std::vector<trace::StringId> kernel_name;
    std::vector<Timestamp> kernel_start;
    auto detect = [&] {
      return detail::detect_iterations(detail::IterationInputs{kept.strings, kept.nvtx, kept.nccl.op, kept.nccl.bytes,
                                                               kept.nccl.start, kernel_name, kernel_start, gpu_end},
                                       o.iteration_range);
    };
    detected = detect();
    if (detected.iterations.empty() && kernel_rows > 0) {
      kernel_name.reserve(kernel_rows);
      kernel_start.reserve(kernel_rows);
      for (size_t c = 0; c < facts.size(); ++c) {
        if (!facts[c].kernels) continue;
        reader.read(c, batch);
        kernel_name.insert(kernel_name.end(), batch.kernels.name.begin(), batch.kernels.name.end());
        kernel_start.insert(kernel_start.end(), batch.kernels.start.begin(), batch.kernels.start.end());
      }
      detected = detect();
    }
  }
  r.iterations = detail::window_iterations(detected, ws, we, o.warmup_tolerance);
  const bool by_iterations = r.iterations.count > 0;
  for (Timestamp& x : htod_ends) x = std::min(x, we);
  std::sort(htod_ends.begin(), htod_ends.end());
  kernel_median.choose();
  launch_median.choose();

  // ---- pass 2: GPU chunks in time order; API calls that needed pass 1 ----
  std::vector<size_t> order;
  for (size_t c = 0; c < facts.size(); ++c)
    if (facts[c].gpu) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return facts[x].first < facts[y].first; });
  StreamSweep sweep;
  sweep.watch_input(&htod_ends, ws, by_iterations ? r.iterations.iterations.front().start : ws,
                    by_iterations ? r.iterations.iterations.back().end : we);
  for (size_t n = 0; n < order.size(); ++n) {
    reader.read(order[n], batch);
    const auto& k = batch.kernels;
    for (size_t i = 0; i < k.size(); ++i) {
      if (k.end[i] < k.start[i]) continue;
      const Interval iv = clip(k.start[i], k.end[i]);
      kernel_median.collect(iv.end - iv.start);
      const KernelClass cls = kernel_info(k.name[i]).cls;
      const Category c = cls == KernelClass::kCompute ? kCompute : cls == KernelClass::kMemory ? kCopy : kComm;
      sweep.add(iv, sweep.stream_index(k.device[i], k.stream[i]), c);
    }
    const auto& nc = batch.nccl;
    for (size_t i = 0; i < nc.size(); ++i)
      if (nc.end[i] >= nc.start[i])
        sweep.add(clip(nc.start[i], nc.end[i]), sweep.stream_index(nc.device[i], nc.stream[i]), kComm);
    const auto& m = batch.memcpys;
    for (size_t i = 0; i < m.size(); ++i)
      if (m.end[i] >= m.start[i])
        sweep.add(clip(m.start[i], m.end[i]), sweep.stream_index(m.device[i], m.stream[i]), kCopy);
    const auto& ms = batch.memsets;
    for (size_t i = 0; i < ms.size(); ++i)
      if (ms.end[i] >= ms.start[i])
        sweep.add(clip(ms.start[i], ms.end[i]), sweep.stream_index(ms.device[i], ms.stream[i]), kCopy);
    // No row of a later chunk starts before that chunk's first start.
    sweep.cut(n + 1 < order.size() ? facts[order[n + 1]].first : std::numeric_limits<Timestamp>::max());
  }
  const bool sync_from_api = sync_rows == 0;
  for (size_t c = 0; c < facts.size(); ++c) {
    if (!facts[c].api) continue;
    reader.read(c, batch);
    const auto& a = batch.api;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a.end[i] < a.start[i]) continue;
      const int64_t d = a.end[i] - a.start[i];
      if (!pageable_correlations.empty() && pageable_correlations.count(a.correlation[i])) cp.pageable_host_ns += d;
      if ((a.domain[i] == trace::ApiDomain::kRuntime || a.domain[i] == trace::ApiDomain::kDriver) && launch(a.name[i]))
        launch_median.collect(d);
      if (sync_from_api) {
        int8_t& kk = sync_kind[a.name[i]];
        if (kk < 0) {
          auto sk = detail::sync_kind_of_api(head.strings.view(a.name[i]));
          kk = sk ? static_cast<int8_t>(*sk) : 0;
        }
        if (kk > 0) add_sync(static_cast<trace::SyncKind>(kk), d);
      }
    }
  }

  // ---- the results, as analyze_window states them ------------------------
  detail::describe_rank(head, kernel_rows + memcpy_rows + memset_rows + nccl_rows > 0, r);
  for (int c = 0; c < kKernelClassCount; ++c) r.classes[c].cls = static_cast<KernelClass>(c);

  for (auto& [key, g] : copy_groups) {
    g.bandwidth_gbps = g.time_ns > 0 ? static_cast<double>(g.bytes) / static_cast<double>(g.time_ns) : 0;
    cp.groups.push_back(g);
  }
  std::sort(cp.groups.begin(), cp.groups.end(),
            [](const CopyGroup& a, const CopyGroup& b) { return a.time_ns > b.time_ns; });
  cp.pageable_fraction = host_bytes > 0 ? static_cast<double>(cp.pageable_bytes) / static_cast<double>(host_bytes) : 0;
  if (memcpy_rows == 0 && memset_rows == 0)
    cp.availability = {false, "skipped: the trace has no memory copies or sets"};

  RankBreakdown& b = r.breakdown;
  b.window_start = ws;
  b.window_end = we;
  b.wall_ns = wall;
  b.streams = sweep.streams(wall);
  if (kernel_rows == 0 && nccl_rows == 0 && memcpy_rows == 0 && memset_rows == 0)
    b.availability = {false, "skipped: the trace has no GPU activity (kernels, copies, sets or collectives)"};
  b.compute_ns = sweep.compute_ns;
  b.communication_ns = sweep.communication_ns;
  b.overlap_ns = sweep.overlap_ns;
  b.exposed_communication_ns = b.communication_ns - b.overlap_ns;
  b.copy_ns = sweep.copy_ns;
  b.idle_ns = wall - b.compute_ns - b.exposed_communication_ns - b.copy_ns;
  b.overlap_fraction =
      b.communication_ns > 0 ? static_cast<double>(b.overlap_ns) / static_cast<double>(b.communication_ns) : 0;

  ls.gap_count = sweep.gap_count;
  ls.gpu_gap_ns = sweep.gap_ns;
  ls.kernel_ns = prec.kernel_ns;
  ls.small_kernel_fraction =
      ls.kernel_count > 0 ? static_cast<double>(small_kernels) / static_cast<double>(ls.kernel_count) : 0;
  ls.median_kernel_ns = kernel_median.median();
  ls.median_launch_ns = launch_median.median();
  ls.gap_fraction = wall > 0 ? static_cast<double>(ls.gpu_gap_ns) / static_cast<double>(wall) : 0;
  if (kernel_rows == 0) {
    ls.availability = {false, "skipped: the trace has no kernels"};
  } else {
    const bool cpu_slower =
        ls.launch_api_count > 0 ? ls.median_launch_ns >= 0.5 * ls.median_kernel_ns : ls.small_kernel_fraction >= 0.5;
    ls.launch_bound = ls.gap_fraction >= 0.10 && cpu_slower;
  }

  if (sync_from_api && api_rows == 0)
    sy.availability = {false, "skipped: the trace has no synchronization records and no CUDA API calls"};
  for (auto& [kind, g] : sync_groups) sy.groups.push_back(g);
  sy.fraction = wall > 0 ? static_cast<double>(sy.host_sync_ns) / static_cast<double>(wall) : 0;

  detail::finish_kernel_tables(kernel_rows == 0, head.strings, o, info, name_ns, name_count, r);
  InputStats& in = r.input;  // as analyze_input states it
  in.iterations = r.iterations.count;
  in.compute_ns = b.compute_ns;
  in.starvation_ns = sweep.starvation_ns;
  in.starved_iterations = sweep.starved_gaps;
  {
    const Timestamp span_start = by_iterations ? r.iterations.iterations.front().start : ws;
    const Timestamp span_end = by_iterations ? r.iterations.iterations.back().end : we;
    const int64_t denom = by_iterations ? std::max<int64_t>(1, span_end - span_start) : wall;
    in.fraction = denom > 0 ? static_cast<double>(in.starvation_ns) / static_cast<double>(denom) : 0;
  }
  if (htod_ends.empty()) in.availability = {false, "skipped: no host-to-device copies in the window"};
  else if (b.compute_ns == 0) in.availability = {false, "skipped: no compute kernels in the window"};
  r.numa = detail::analyze_numa(head.meta);
  r.host = detail::analyze_host(kept, ws, we, r.iterations.iterations);
  if (kept.nccl.size() > 0) kept.kernels = {};  // the list reads NCCL's records then
  r.collectives = detail::collective_arrivals(kept, ws, we, info, r.iterations.iterations);
  // Attribution over the whole trace: its own passes over the chunks (attribution_stream.hpp).
  if (o.attribution) {
    r.attribution = std::move(stream_attribution(reader, {{ws, we, true, &r.iterations.iterations}}, info).front());
  } else {
    r.attribution.available = false;
    r.attribution.reason = "skipped: turned off (--no-attribution)";
  }
  return r;
}

}  // namespace scalescope::analyze
