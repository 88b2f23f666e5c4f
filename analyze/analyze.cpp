// analyze_rank: one pass per table over a rank's trace, clipped to the window,
// producing small summaries. Rules and definitions: docs/kernel-classes.md.
#include "analyze/analyze.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "analyze/attribution_detail.hpp"
#include "analyze/detail.hpp"
#include "analyze/intervals.hpp"
#include "trace/model/kernel_short_name.hpp"
#include "trace/model/launcher.hpp"
#include "base/quantile.hpp"
#include "base/memory_budget.hpp"

namespace scalescope::analyze {
namespace {

using trace::Timestamp;

using detail::kLaunchGapLimitNs;
using detail::kSmallKernelNs;

// Reserves room for at most n intervals, with huge pages. Grown by push_back
// instead, a 10 M-event rank's interval lists were copied several times over
// fresh pages. n is an upper bound (rows outside the window are
// left out): reserved pages that are never written take no memory.
// Scratch lists keep their capacity between passes and ranks: advised once.
template <typename T>
void reserve_huge(std::vector<T>& v, size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n);
  trace::advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// Rows per (device, stream) of a table, counted before the pass that fills
// the per-stream interval lists so that each is reserved once. Streams are
// few and rows come in runs of one stream: the last key is checked first.
template <typename Table>
void count_streams(const Table& table, std::unordered_map<uint64_t, size_t>& rows) {
  uint64_t last = ~uint64_t{0};
  size_t* count = nullptr;
  for (size_t i = 0; i < table.size(); ++i) {
    const uint64_t key = (uint64_t{table.device[i]} << 32) | table.stream[i];
    if (key != last || !count) {
      count = &rows[key];
      last = key;
    }
    ++*count;
  }
}

trace::NcclOp op_of_kernel(std::string_view name) { return trace::nccl_op_of_kernel_name(name); }

}  // namespace

namespace detail {

bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

std::vector<KernelSummary> top_of(const std::vector<int64_t>& ns, const std::vector<int64_t>& count,
                                  const std::vector<KernelInfo>& info, const trace::StringTable& strings, size_t limit,
                                  const std::function<bool(const KernelInfo&)>& keep) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < ns.size(); ++id)
    if (count[id] > 0 && keep(info[id])) ids.push_back(id);
  const size_t n = std::min(limit, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](uint32_t a, uint32_t b) { return ns[a] > ns[b] || (ns[a] == ns[b] && a < b); });
  std::vector<KernelSummary> out;
  std::vector<std::string_view> names;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t id = ids[k];
    names.push_back(strings.view(id));
    out.push_back({std::string(strings.view(id)), {}, info[id].cls, info[id].precision, count[id], ns[id]});
  }
  const std::vector<std::string> short_names = trace::distinct_short_names(names);
  for (size_t k = 0; k < n; ++k) out[k].short_name = short_names[k];
  return out;
}

std::optional<trace::SyncKind> sync_kind_of_api(std::string_view name) {
  if (contains_ci(name, "StreamSynchronize")) return trace::SyncKind::kStreamSynchronize;
  if (contains_ci(name, "DeviceSynchronize") || contains_ci(name, "CtxSynchronize"))
    return trace::SyncKind::kDeviceSynchronize;
  if (contains_ci(name, "EventSynchronize")) return trace::SyncKind::kEventSynchronize;
  return std::nullopt;
}

}  // namespace detail

namespace {

using detail::contains_ci;
using detail::sync_kind_of_api;
using detail::top_of;

// The collector's sampling facts (collect/iteration_sampler.hpp), strings in
// the trace's metadata; a value that does not parse is left out, not guessed.
ProfilerPerturbation read_perturbation(const std::unordered_map<std::string, std::string>& extra) {
  ProfilerPerturbation p;
  auto get = [&](const char* key) -> const std::string* {
    auto it = extra.find(key);
    return it == extra.end() ? nullptr : &it->second;
  };
  auto number = [&](const char* key, double* out) {
    const std::string* v = get(key);
    if (!v) return false;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
    return ec == std::errc() && end == v->data() + v->size() && std::isfinite(*out);
  };
  if (const auto* v = get("sampling")) p.sampling = *v;
  if (p.sampling.empty()) return p;
  double seen = 0, inside = 0, outside = 0;
  if (number("iterations_seen", &seen)) p.seen = static_cast<int64_t>(seen);
  if (const auto* v = get("perturbation_text")) p.text = *v;
  if (const auto* v = get("sampling_note")) p.text = *v;
  const auto* measured = get("perturbation_measured");
  p.measured = measured && *measured == "true" && number("perturbation_pct", &p.percent) &&
               number("perturbation_ci_low_pct", &p.ci_low) && number("perturbation_ci_high_pct", &p.ci_high);
  if (p.measured && number("iterations_inside", &inside) && number("iterations_outside", &outside)) {
    p.inside = static_cast<int64_t>(inside);
    p.outside = static_cast<int64_t>(outside);
  }
  p.matters = p.measured && p.ci_low > kPerturbationMatters;
  // Repeated windows: the steady iterations run from the first traced one to
  // the last, across the detached stretches between windows, whose kernels
  // were not recorded; their GPU time counts as idle there.
  double every = 0;
  if (p.sampling == "sampled" && p.seen > 0 && number("repeat_every", &every) && every > 0)
    p.text += fmt::format(
        "; windows repeat every {:.0f} iterations: the steady analysis spans the detached "
        "iterations between them too, counted as GPU idle (analyze --window itA:itB takes one window)",
        every);
  return p;
}

// ---- one window's analyses, one function each ------------------------------
// analyze_window below calls them in order. Each takes the window and the
// results it reads explicitly; the scratch lists (detail.hpp) are handed on
// from one to the next where a later analysis reuses an earlier one's list.

// The window being analysed: [ws, we] in trace-clock ns, and its trace.
struct Window {
  const trace::Trace& t;
  Timestamp ws = 0, we = 0;
  int64_t wall = 0;
  bool in(Timestamp s, Timestamp e) const { return e >= ws && s <= we && e >= s; }
  Interval clip(Timestamp s, Timestamp e) const { return Interval{std::max(s, ws), std::min(e, we)}; }
};

}  // namespace

// Who the rank is: identity, node facts, the collector's sampling facts,
// and the data lost while tracing.
void detail::describe_rank(const trace::Trace& t, bool gpu_activity, RankAnalysis& r) {
  r.rank = t.meta.rank;
  r.label = t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : std::string("rank ?");
  r.source = t.meta.source;
  r.hostname = t.meta.hostname;
  r.pid = t.meta.pid;
  r.process_groups = t.meta.process_groups;
  r.world_size = t.meta.world_size;
  auto extra_int = [&](const char* key) {
    auto it = t.meta.extra.find(key);
    int32_t v = -1;
    if (it != t.meta.extra.end()) {
      auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
      if (ec != std::errc() || p != it->second.data() + it->second.size() || v < 0) v = -1;
    }
    return v;
  };
  r.node_rank = extra_int("node_rank");
  r.node_count = extra_int("node_count");
  if (auto it = t.meta.extra.find("node_list"); it != t.meta.extra.end()) r.node_list = it->second;
  r.perturbation = read_perturbation(t.meta.extra);
  r.gpu_activity = gpu_activity;
  for (int p = 0; p < trace::kProblemCount; ++p) {
    const auto problem = static_cast<trace::Problem>(p);
    if (trace::severity_of(problem) == trace::Severity::kDataLoss && t.problems.get(problem) > 0)
      r.data_loss.push_back(fmt::format("{} x{}", trace::to_string(problem), t.problems.get(problem)));
  }
}

// The detected iterations that lie wholly inside the window, summarized.
IterationStats detail::window_iterations(const Detected& detected, Timestamp ws, Timestamp we,
                                         double warmup_tolerance) {
  IterationStats st;
  if (detected.iterations.empty()) {
    st.availability = {false, "skipped: " + detected.reason};
    return st;
  }
  st.source = detected.source;
  for (size_t i = 0; i < detected.iterations.size(); ++i) {
    const Iteration& it = detected.iterations[i];
    if (it.start < ws || it.end > we) continue;
    if (st.iterations.empty()) st.first_number = static_cast<int64_t>(i);
    st.iterations.push_back(it);
  }
  if (st.iterations.empty())
    st.availability = {false, fmt::format("skipped: none of the {} iterations ({}) lies inside the window",
                                          detected.iterations.size(), detected.source)};
  else detail::summarize_iterations(st, warmup_tolerance);
  return st;
}

namespace {

// The per-stream lists of one window: scratch.streams holds one slice per
// (device, stream), sized by a counting pass so that each is reserved once.
// add() appends to one stream's slice, merging as append() does.
class StreamSlices {
 public:
  StreamSlices(const trace::Trace& t, detail::WindowScratch& scratch)
      : streams_(scratch.streams), slots_(scratch.slots) {
    std::unordered_map<uint64_t, size_t> stream_rows;
    count_streams(t.kernels, stream_rows);
    count_streams(t.nccl, stream_rows);
    count_streams(t.memcpys, stream_rows);
    count_streams(t.memsets, stream_rows);
    slots_.clear();
    size_t rows = 0;
    for (const auto& [key, n] : stream_rows) {
      slots_[key] = {rows, rows};
      rows += n;
    }
    reserve_huge(streams_, rows);
    // Not cleared first: only rows past what an earlier pass left are zeroed.
    streams_.resize(rows);
  }

  // Rows come in runs of one stream: the last slot is checked first.
  void add(uint32_t device, uint32_t stream, Interval iv) {
    const uint64_t key = (uint64_t{device} << 32) | stream;
    if (key != last_key_ || !last_slot_) {
      last_slot_ = &slots_.at(key);
      last_key_ = key;
    }
    if (iv.end <= iv.start) return;
    detail::StreamSlot& sl = *last_slot_;
    if (sl.end > sl.begin) {
      Interval& back = streams_[sl.end - 1];
      if (iv.start >= back.start && iv.start <= back.end) {
        back.end = std::max(back.end, iv.end);
        return;
      }
    }
    streams_[sl.end++] = iv;
  }

 private:
  Intervals& streams_;
  std::unordered_map<uint64_t, detail::StreamSlot>& slots_;
  uint64_t last_key_ = ~uint64_t{0};
  detail::StreamSlot* last_slot_ = nullptr;
};

// Clears the class lists and reserves them for every row that may fall in.
void prepare_class_lists(const trace::Trace& t, detail::WindowScratch& scratch) {
  const size_t kernels = t.kernels.size();
  for (Intervals* v : {&scratch.compute, &scratch.comm, &scratch.copy}) v->clear();
  reserve_huge(scratch.compute, kernels);
  reserve_huge(scratch.comm, kernels + t.nccl.size());
  reserve_huge(scratch.copy, kernels + t.memcpys.size() + t.memsets.size());
}

// Time per kernel name (indexed by StringId), for the top lists.
struct NameTotals {
  std::vector<int64_t> ns, count;
};

// The kernels in the window: class lists, per-stream lists, per-class and
// per-name totals, precision and layout sums, and each kernel's duration
// (scratch.kernel_durations, for the launch analysis).
void scan_kernels(const Window& w, const std::vector<KernelInfo>& info, detail::WindowScratch& scratch,
                  StreamSlices& streams, NameTotals& names, RankAnalysis& r) {
  std::vector<int64_t>& kernel_durations = scratch.kernel_durations;
  kernel_durations.clear();
  reserve_huge(kernel_durations, w.t.kernels.size());
  PrecisionStats& prec = r.precision;
  LayoutStats& layout = r.layout;
  const auto& k = w.t.kernels;
  for (size_t i = 0; i < k.size(); ++i) {
    if (!w.in(k.start[i], k.end[i])) continue;
    const Interval iv = w.clip(k.start[i], k.end[i]);
    const int64_t d = iv.end - iv.start;
    const KernelInfo& ki = info[k.name[i]];
    switch (ki.cls) {
      case KernelClass::kCompute: append(scratch.compute, iv); break;
      case KernelClass::kCommunication:
      case KernelClass::kSynchronization: append(scratch.comm, iv); break;  // waiting on other streams/ranks
      case KernelClass::kMemory: append(scratch.copy, iv); break;
    }
    streams.add(k.device[i], k.stream[i], iv);
    names.ns[k.name[i]] += d;
    names.count[k.name[i]] += 1;
    auto& ct = r.classes[static_cast<int>(ki.cls)];
    ct.count += 1;
    ct.total_ns += d;
    kernel_durations.push_back(d);
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
  for (int c = 0; c < kKernelClassCount; ++c) r.classes[c].cls = static_cast<KernelClass>(c);
}

// NCCL collectives in the window: communication time.
void scan_nccl(const Window& w, detail::WindowScratch& scratch, StreamSlices& streams) {
  const auto& nc = w.t.nccl;
  for (size_t i = 0; i < nc.size(); ++i) {
    if (!w.in(nc.start[i], nc.end[i])) continue;
    const Interval iv = w.clip(nc.start[i], nc.end[i]);
    append(scratch.comm, iv);
    streams.add(nc.device[i], nc.stream[i], iv);
  }
}

// Copies and sets in the window: groups by kind, pageable and synchronous
// copies, and their time in the copy list.
CopyStats analyze_copies(const Window& w, detail::WindowScratch& scratch, StreamSlices& streams) {
  CopyStats cp;
  const trace::Trace& t = w.t;
  detail::CopyGroups groups;
  std::unordered_set<uint32_t> pageable_correlations;
  uint64_t host_bytes = 0;
  const auto& m = t.memcpys;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!w.in(m.start[i], m.end[i])) continue;
    const Interval iv = w.clip(m.start[i], m.end[i]);
    const int64_t d = iv.end - iv.start;
    append(scratch.copy, iv);
    streams.add(m.device[i], m.stream[i], iv);
    detail::account_copy(m, i, d, groups, cp, host_bytes, pageable_correlations);
  }
  // A pageable copy is staged through a bounce buffer while the calling
  // thread waits, so the host can lose more time in the call than the GPU
  // spends copying (2.2x on the H200 study's pageable DataLoader runs).
  if (!pageable_correlations.empty()) {
    const auto& a = t.api;
    for (size_t i = 0; i < a.size(); ++i)
      if (pageable_correlations.count(a.correlation[i]) && w.in(a.start[i], a.end[i])) {
        const Interval iv = w.clip(a.start[i], a.end[i]);
        cp.pageable_host_ns += iv.end - iv.start;
      }
  }
  const auto& s = t.memsets;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!w.in(s.start[i], s.end[i])) continue;
    const Interval iv = w.clip(s.start[i], s.end[i]);
    append(scratch.copy, iv);
    streams.add(s.device[i], s.stream[i], iv);
    cp.memset_count += 1;
    cp.memset_ns += iv.end - iv.start;
  }
  detail::finish_copies(cp, groups, host_bytes, m.size() + s.size() > 0);
  return cp;
}

// Busy time per stream, from the slices of scratch.streams (normalized in place).
std::vector<StreamUtilization> stream_utilization(const Window& w, detail::WindowScratch& scratch) {
  std::vector<StreamUtilization> out;
  for (auto& [key, sl] : scratch.slots) {
    if (sl.end == sl.begin) continue;  // no row of it lies in the window
    const size_t n = normalize_range(scratch.streams.data() + sl.begin, sl.end - sl.begin, scratch.merge);
    StreamUtilization su;
    su.device = static_cast<uint32_t>(key >> 32);
    su.stream = static_cast<uint32_t>(key & 0xffffffffu);
    su.busy_ns = total(scratch.streams.data() + sl.begin, n);
    su.fraction = w.wall > 0 ? static_cast<double>(su.busy_ns) / static_cast<double>(w.wall) : 0;
    out.push_back(su);
  }
  std::sort(out.begin(), out.end(), [](const StreamUtilization& x, const StreamUtilization& y) {
    return std::tie(x.device, x.stream) < std::tie(y.device, y.stream);
  });
  return out;
}

// Busy/idle breakdown and compute/communication overlap. Normalizes the
// class lists and, once the streams' busy times are summed, leaves
// compute | comm in scratch.streams (it has room: every span of compute and
// comm came from one of its rows), which the later analyses read.
RankBreakdown analyze_breakdown(const Window& w, detail::WindowScratch& scratch) {
  normalize(scratch.compute, scratch.merge);
  normalize(scratch.comm, scratch.merge);
  normalize(scratch.copy, scratch.merge);
  RankBreakdown b;
  b.window_start = w.ws;
  b.window_end = w.we;
  b.wall_ns = w.wall;
  b.streams = stream_utilization(w, scratch);
  Intervals& compute_comm = scratch.streams;
  unite(scratch.compute, scratch.comm, compute_comm);
  b.compute_ns = total(scratch.compute);
  b.communication_ns = total(scratch.comm);
  b.overlap_ns = intersection_length(scratch.comm, scratch.compute);
  b.copy_ns = total(scratch.copy) - intersection_length(scratch.copy, compute_comm);
  detail::finish_breakdown(b, trace::has_gpu_activity(w.t));
  return b;
}

// Launch overhead: short GPU gaps, kernel and launch-call durations.
// Reads compute | comm (scratch.streams) and the kernels' durations; the
// latter's list then holds the launch calls' durations.
LaunchStats analyze_launch(const Window& w, detail::WindowScratch& scratch, int64_t kernel_ns) {
  LaunchStats ls;
  const trace::Trace& t = w.t;
  // Gaps between the spans of compute | comm | copy (not built: one list less).
  const auto [gap_count, gap_ns] = union_gaps(scratch.streams, scratch.copy, kLaunchGapLimitNs);
  ls.gap_count = gap_count;
  ls.gpu_gap_ns = gap_ns;
  std::vector<int64_t>& kernel_durations = scratch.kernel_durations;
  ls.kernel_count = static_cast<int64_t>(kernel_durations.size());
  ls.kernel_ns = kernel_ns;
  int64_t small = 0;
  for (int64_t d : kernel_durations) small += d < kSmallKernelNs ? 1 : 0;
  ls.median_kernel_ns = trace::median_in_place(kernel_durations);
  std::vector<int8_t> is_launch(t.strings.size(), -1);
  // The kernels' durations are done with: their list holds the launches'.
  std::vector<int64_t>& launch_durations = kernel_durations;
  launch_durations.clear();
  reserve_huge(launch_durations, t.api.size());
  const auto& a = t.api;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.domain[i] != trace::ApiDomain::kRuntime && a.domain[i] != trace::ApiDomain::kDriver) continue;
    int8_t& l = is_launch[a.name[i]];
    if (l < 0) l = contains_ci(t.strings.view(a.name[i]), "launch") ? 1 : 0;
    if (!l || !w.in(a.start[i], a.end[i])) continue;
    const Interval iv = w.clip(a.start[i], a.end[i]);
    ls.launch_api_count += 1;
    ls.launch_api_ns += iv.end - iv.start;
    launch_durations.push_back(iv.end - iv.start);
  }
  ls.median_launch_ns = trace::median_in_place(launch_durations);
  detail::finish_launch(ls, small, w.wall, t.kernels.size() > 0);
  return ls;
}

// Synchronization: CUPTI's records, else the runtime/driver calls by name.
// host_waits receives the spans of the host's waits (normalized).
SyncStats analyze_sync(const Window& w, Intervals& host_waits) {
  SyncStats sy;
  const trace::Trace& t = w.t;
  host_waits.clear();
  std::map<trace::SyncKind, SyncGroup> groups;
  auto add = [&](trace::SyncKind kind, Interval iv) {
    SyncGroup& g = groups[kind];
    g.kind = kind;
    g.count += 1;
    g.total_ns += iv.end - iv.start;
    if (kind != trace::SyncKind::kStreamWaitEvent) {
      sy.host_sync_ns += iv.end - iv.start;
      host_waits.push_back(iv);
    }
  };
  const auto& s = t.syncs;
  for (size_t i = 0; i < s.size(); ++i)
    if (w.in(s.start[i], s.end[i])) add(s.kind[i], w.clip(s.start[i], s.end[i]));
  if (s.size() == 0) {
    // No CUPTI synchronization records: fall back to the runtime/driver calls.
    std::vector<int8_t> kind_of(t.strings.size(), -1);
    const auto& a = t.api;
    for (size_t i = 0; i < a.size(); ++i) {
      int8_t& kk = kind_of[a.name[i]];
      if (kk < 0) {
        auto sk = sync_kind_of_api(t.strings.view(a.name[i]));
        kk = sk ? static_cast<int8_t>(*sk) : 0;
      }
      if (kk > 0 && w.in(a.start[i], a.end[i])) add(static_cast<trace::SyncKind>(kk), w.clip(a.start[i], a.end[i]));
    }
  }
  normalize(host_waits);
  detail::finish_sync(sy, groups, w.wall, s.size() + t.api.size() > 0);
  return sy;
}

}  // namespace

// Precision and layout shares from the sums scan_kernels made, and the top
// lists by name.
void detail::finish_kernel_tables(bool no_kernels, const trace::StringTable& strings, const Options& o,
                                  const std::vector<KernelInfo>& info, const std::vector<int64_t>& ns,
                                  const std::vector<int64_t>& count, RankAnalysis& r) {
  PrecisionStats& prec = r.precision;
  LayoutStats& layout = r.layout;
  if (no_kernels) {
    prec.availability = {false, "skipped: the trace has no kernels"};
    layout.availability = {false, "skipped: the trace has no kernels"};
  }
  if (prec.kernel_ns > 0) {
    const double kn = static_cast<double>(prec.kernel_ns);
    prec.fp64_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp64)]) / kn;
    prec.fp32_no_tensor_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp32NoTensor)]) / kn;
    prec.tensor_core_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTensorCore)]) / kn;
    prec.tf32_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTf32)]) / kn;
    layout.fraction = static_cast<double>(layout.conversion_ns) / kn;
    layout.nchw_half_fraction = static_cast<double>(layout.nchw_half_ns) / kn;
  }
  prec.top_fp32 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp32NoTensor; });
  prec.top_fp64 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp64; });
  layout.top = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.layout_conversion; });
  layout.top_nchw_half = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.nchw_half; });
  r.top_kernels = top_of(ns, count, info, strings, static_cast<size_t>(std::max(0, o.top_kernels)),
                         [](const KernelInfo&) { return true; });
}

void detail::finish_breakdown(RankBreakdown& b, bool rows) {
  if (!rows) b.availability = {false, "skipped: the trace has no GPU activity (kernels, copies, sets or collectives)"};
  b.exposed_communication_ns = b.communication_ns - b.overlap_ns;
  b.idle_ns = b.wall_ns - b.compute_ns - b.exposed_communication_ns - b.copy_ns;
  b.overlap_fraction =
      b.communication_ns > 0 ? static_cast<double>(b.overlap_ns) / static_cast<double>(b.communication_ns) : 0;
}

void detail::finish_launch(LaunchStats& ls, int64_t small, int64_t wall, bool rows) {
  ls.small_kernel_fraction =
      ls.kernel_count > 0 ? static_cast<double>(small) / static_cast<double>(ls.kernel_count) : 0;
  ls.gap_fraction = wall > 0 ? static_cast<double>(ls.gpu_gap_ns) / static_cast<double>(wall) : 0;
  if (!rows) {
    ls.availability = {false, "skipped: the trace has no kernels"};
    return;
  }
  const bool cpu_slower =
      ls.launch_api_count > 0 ? ls.median_launch_ns >= 0.5 * ls.median_kernel_ns : ls.small_kernel_fraction >= 0.5;
  ls.launch_bound = ls.gap_fraction >= 0.10 && cpu_slower;
}

void detail::finish_copies(CopyStats& cp, CopyGroups& groups, uint64_t host_bytes, bool rows) {
  for (auto& [key, g] : groups) {
    g.bandwidth_gbps = g.time_ns > 0 ? static_cast<double>(g.bytes) / static_cast<double>(g.time_ns) : 0;
    cp.groups.push_back(g);
  }
  std::sort(cp.groups.begin(), cp.groups.end(),
            [](const CopyGroup& a, const CopyGroup& b) { return a.time_ns > b.time_ns; });
  cp.pageable_fraction = host_bytes > 0 ? static_cast<double>(cp.pageable_bytes) / static_cast<double>(host_bytes) : 0;
  if (!rows) cp.availability = {false, "skipped: the trace has no memory copies or sets"};
}

void detail::finish_sync(SyncStats& sy, const std::map<trace::SyncKind, SyncGroup>& groups, int64_t wall, bool rows) {
  if (!rows) sy.availability = {false, "skipped: the trace has no synchronization records and no CUDA API calls"};
  for (const auto& [kind, g] : groups) sy.groups.push_back(g);
  sy.fraction = wall > 0 ? static_cast<double>(sy.host_sync_ns) / static_cast<double>(wall) : 0;
}

std::pair<Timestamp, Timestamp> detail::input_span(const IterationStats& its, Timestamp ws, Timestamp we) {
  if (its.count > 0) return {its.iterations.front().start, its.iterations.back().end};
  return {ws, we};
}

void detail::finish_input(InputStats& in, const IterationStats& its, Timestamp ws, Timestamp we, bool any_htod,
                          int64_t compute_ns) {
  in.iterations = its.count;
  in.compute_ns = compute_ns;
  const auto [span_start, span_end] = input_span(its, ws, we);
  const int64_t denom = its.count > 0 ? std::max<int64_t>(1, span_end - span_start) : std::max<int64_t>(0, we - ws);
  in.fraction = denom > 0 ? static_cast<double>(in.starvation_ns) / static_cast<double>(denom) : 0;
  if (!any_htod) in.availability = {false, "skipped: no host-to-device copies in the window"};
  else if (compute_ns == 0) in.availability = {false, "skipped: no compute kernels in the window"};
}

namespace {

// Input starvation: an HtoD copy that ends while no compute or communication
// runs marks that idle gap as waiting for input; the whole gap counts (an
// upper bound). With iterations, only the part of a gap inside them counts,
// as the share is of iteration time (start-up before the first step is not
// waiting for a batch; counted, it made shares above 100 %).
// `gaps` receives the counted part of each such gap.
InputStats analyze_input(const Window& w, const Intervals& compute_comm,
                         const IterationStats& iterations, int64_t compute_ns, Intervals& gaps_out) {
  InputStats in;
  gaps_out.clear();
  const auto [span_start, span_end] = detail::input_span(iterations, w.ws, w.we);
  bool any_htod = false;
  std::set<size_t> gaps;
  const auto& m = w.t.memcpys;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::MemcpyKind::kHtoD || !w.in(m.start[i], m.end[i])) continue;
    any_htod = true;
    const Timestamp x = std::min(m.end[i], w.we);
    auto next = std::upper_bound(compute_comm.begin(), compute_comm.end(), x,
                                 [](Timestamp v, const Interval& iv) { return v < iv.start; });
    if (next == compute_comm.end()) continue;  // nothing ran after it: not a wait
    const size_t idx = static_cast<size_t>(next - compute_comm.begin());
    const Timestamp gap_start = idx == 0 ? w.ws : std::max(w.ws, compute_comm[idx - 1].end);
    if (idx > 0 && compute_comm[idx - 1].end > x) continue;  // ended under running work
    const int64_t inside = std::min(next->start, span_end) - std::max(gap_start, span_start);
    if (inside <= 0 || !gaps.insert(idx).second) continue;
    in.starvation_ns += inside;
    gaps_out.push_back({std::max(gap_start, span_start), std::min(next->start, span_end)});
  }
  normalize(gaps_out);
  in.starved_iterations = static_cast<int64_t>(gaps.size());
  detail::finish_input(in, iterations, w.ws, w.we, any_htod, compute_ns);
  return in;
}

}  // namespace

// NUMA placement of the process's CPUs and memory against the GPU's node.
NumaStats detail::analyze_numa(const trace::Metadata& meta) {
  NumaStats nu;
  int32_t gpu_node = -1;
  for (const auto& d : meta.devices)
    if (d.numa_node >= 0) {
      gpu_node = d.numa_node;
      break;
    }
  if (meta.cpu_affinity.empty() || meta.cpu_numa_node.empty()) {
    nu.availability = {false, meta.source == "kineto"
                                  ? "skipped: the trace has no host facts (imported from PyTorch profiler)"
                                  : "skipped: the trace has no CPU affinity or CPU NUMA map"};
    return nu;
  }
  if (gpu_node < 0) {
    nu.availability = {false, "skipped: the NUMA node of the GPU is unknown"};
    return nu;
  }
  nu.gpu_node = gpu_node;
  std::set<int32_t> nodes;
  for (uint32_t cpu : meta.cpu_affinity)
    if (cpu < meta.cpu_numa_node.size() && meta.cpu_numa_node[cpu] >= 0) nodes.insert(meta.cpu_numa_node[cpu]);
  nu.cpu_nodes.assign(nodes.begin(), nodes.end());
  nu.cpus_cross_node = std::any_of(nodes.begin(), nodes.end(), [&](int32_t n) { return n != gpu_node; });
  nu.memory_nodes = meta.pages_at_end.empty() ? meta.pages_at_start : meta.pages_at_end;
  nu.memory_policy = meta.memory_policy;
  uint64_t all = 0, remote = 0;
  for (const auto& p : nu.memory_nodes) {
    all += p.bytes;
    if (p.node != gpu_node) remote += p.bytes;
  }
  nu.remote_memory_fraction = all > 0 ? static_cast<double>(remote) / static_cast<double>(all) : 0;
  return nu;
}

namespace {

}  // namespace

// A window past this rank's end (or inside a gap of zero length) leaves no
// time to share out: say so instead of printing zeros.
static std::string empty_window_reason(const WindowSpec& w) {
  return fmt::format("skipped: the window {} holds no time of this rank's trace", w.to_string());
}

void detail::mark_empty_window(const Options& o, int64_t wall, RankAnalysis& r) {
  if (!o.window || wall != 0) return;
  const std::string why = empty_window_reason(*o.window);
  for (Availability* a :
       {&r.breakdown.availability, &r.launch.availability, &r.copies.availability, &r.sync.availability,
        &r.precision.availability, &r.layout.availability, &r.input.availability, &r.idle_cover.availability,
        &r.idle_breakdown.availability})
    if (a->available) *a = {false, why};
}

void detail::mark_empty_window(const Options& o, int64_t wall, Attribution& a) {
  if (!o.window || wall != 0 || !a.available) return;
  a.available = false;
  a.reason = empty_window_reason(*o.window);
}

namespace {

// GPU time by operator, module and range.
Attribution window_attribution(const Window& w, const Options& o, const detail::LaunchPaths* paths,
                               const std::vector<Iteration>& iterations, const std::vector<KernelInfo>& info) {
  Attribution a;
  if (paths) {
    a = detail::summarize_attribution(w.t, *paths, w.ws, w.we, !o.window.has_value(), iterations, info);
  } else {
    a.available = false;
    a.reason = "skipped: turned off (--no-attribution)";
  }
  detail::mark_empty_window(o, w.wall, a);
  return a;
}

}  // namespace

// Collectives for straggler matching, in start order: NCCL's records, else
// the communication kernels. Sequence numbers count over the whole trace.
std::vector<CollectiveArrival> detail::collective_arrivals(const trace::Trace& t, Timestamp ws, Timestamp we,
                                                           const std::vector<KernelInfo>& info,
                                                           const std::vector<Iteration>& iterations) {
  const Window w{t, ws, we, std::max<int64_t>(0, we - ws)};
  std::vector<CollectiveArrival> out;
  std::map<std::pair<trace::StringId, trace::NcclOp>, int64_t> occurrence;
  // Collectives before the first steady iteration belong to the warm-up.
  Timestamp steady_start = std::numeric_limits<Timestamp>::min();
  for (const Iteration& it : iterations)
    if (!it.warmup) {
      steady_start = it.start;
      break;
    }
  auto push = [&](trace::StringId comm_id, trace::NcclOp op, int64_t seq, Timestamp s, Timestamp e) {
    int64_t& n = occurrence[{comm_id, op}];
    const int64_t sequence = seq >= 0 ? seq : n;
    ++n;
    if (!w.in(s, e)) return;
    CollectiveArrival c;
    c.communicator = comm_id;
    c.op = op;
    c.sequence = sequence;
    c.arrival_unix_ns = t.meta.to_unix_ns(s);
    c.end_unix_ns = t.meta.to_unix_ns(e);
    c.warmup = s < steady_start;
    out.push_back(c);
  };
  const auto& nc = t.nccl;
  const auto& k = t.kernels;
  if (nc.size() > 0) {
    std::vector<uint32_t> order(nc.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return nc.start[x] < nc.start[y]; });
    for (uint32_t i : order) push(nc.communicator[i], nc.op[i], nc.sequence[i], nc.start[i], nc.end[i]);
  } else {
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < k.size(); ++i)
      if (info[k.name[i]].cls == KernelClass::kCommunication) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return k.start[x] < k.start[y]; });
    for (uint32_t i : order) push(trace::kNoString, op_of_kernel(t.strings.view(k.name[i])), -1, k.start[i], k.end[i]);
  }
  std::set<trace::StringId> comms;
  for (const auto& c : out) comms.insert(c.communicator);
  std::unordered_map<trace::StringId, std::string> names;
  for (trace::StringId id : comms) names[id] = std::string(t.strings.view(id));
  for (auto& c : out) c.communicator_name = names[c.communicator];
  return out;
}

namespace {

// One analysis of one window (the whole trace without --window): the
// analyses above in order. The GPU tables are scanned once into the
// scratch's lists, which the breakdown, launch and input analyses then read.
RankAnalysis analyze_window(const trace::Trace& t, const Options& o, const detail::LaunchPaths* paths,
                            detail::WindowScratch& scratch) {
  RankAnalysis r;
  detail::describe_rank(t, trace::has_gpu_activity(t), r);
  const std::vector<KernelInfo> info = classify_names(t, o.classifier);
  const detail::Detected detected = detail::detect_iterations(t, o.iteration_range);
  const auto [ws, we] = detail::resolve_window(t, o, detected);
  const Window w{t, ws, we, std::max<int64_t>(0, we - ws)};
  r.iterations = detail::window_iterations(detected, w.ws, w.we, o.warmup_tolerance);

  prepare_class_lists(t, scratch);
  StreamSlices streams(t, scratch);
  NameTotals names{std::vector<int64_t>(t.strings.size(), 0), std::vector<int64_t>(t.strings.size(), 0)};
  scan_kernels(w, info, scratch, streams, names, r);
  scan_nccl(w, scratch, streams);
  r.copies = analyze_copies(w, scratch, streams);
  r.breakdown = analyze_breakdown(w, scratch);  // scratch.streams: compute | comm from here on
  r.launch = analyze_launch(w, scratch, r.precision.kernel_ns);
  Intervals host_waits, input_gaps, mpi_calls, busy;
  r.sync = analyze_sync(w, host_waits);
  detail::finish_kernel_tables(t.kernels.size() == 0, t.strings, o, info, names.ns, names.count, r);
  r.input = analyze_input(w, scratch.streams, r.iterations, r.breakdown.compute_ns, input_gaps);
  r.job = detail::job_facts(t, r.gpu_activity, w.ws, w.we, &mpi_calls);
  unite(scratch.streams, scratch.copy, busy);
  // Both splits of idle time cover the iterations' span, as input starvation does.
  const auto [span_start, span_end] = detail::input_span(r.iterations, w.ws, w.we);
  r.idle_cover = detail::idle_cover(busy, span_start, span_end, host_waits, input_gaps, mpi_calls);
  if (!r.breakdown.availability.available) r.idle_cover.availability = r.breakdown.availability;
  r.idle_breakdown = detail::idle_breakdown(t, busy, span_start, span_end, kKernelWaitThresholdNs);
  if (!r.breakdown.availability.available) r.idle_breakdown.availability = r.breakdown.availability;
  r.numa = detail::analyze_numa(t.meta);
  r.host = detail::analyze_host(t, w.ws, w.we, r.iterations.iterations);
  r.sampled_gpus = detail::sampled_gpus(t, w.ws, w.we);
  r.gpu_clocks = detail::own_gpu_clocks(t, r.sampled_gpus, detail::main_kernel_device(t.kernels.device));
  detail::mark_empty_window(o, w.wall, r);
  r.attribution = window_attribution(w, o, paths, r.iterations.iterations, info);
  r.collectives = detail::collective_arrivals(t, w.ws, w.we, info, r.iterations.iterations);
  return r;
}

}  // namespace

RankAnalysis analyze_rank(const trace::Trace& t, const Options& o) {
  detail::WindowScratch scratch;
  return detail::analyze_rank(t, o, scratch);
}

RankAnalysis detail::analyze_rank(const trace::Trace& t, const Options& o, WindowScratch& scratch) {
  // The first analysis's working sets (intervals, per-kernel durations) are
  // freed before the second one starts, so the steady pass adds time, not
  // peak memory.
  // Which ranges launched each kernel does not depend on the window: found once.
  const std::shared_ptr<const detail::LaunchPaths> paths = o.attribution ? detail::launch_paths(t) : nullptr;
  RankAnalysis r = analyze_window(t, o, paths.get(), scratch);
  // ---- the steady iterations, for the advisor (see RankAnalysis::steady) ----
  if (!o.window && r.iterations.availability.available && !r.iterations.iterations.empty()) {
    const auto& its = r.iterations.iterations;  // all detected iterations: the window is the whole trace
    size_t first = 0;
    while (first < its.size() && its[first].warmup) ++first;
    if (first < its.size()) {
      // In --window's numbering (all detected iterations), which a step
      // begun before the trace's first event shifts from the table's.
      const auto base = static_cast<size_t>(r.iterations.first_number);
      first += base;
      Options steady_options = o;
      steady_options.window = WindowSpec{WindowSpec::Kind::kIterations, static_cast<double>(first),
                                         static_cast<double>(base + its.size())};
      RankAnalysis steady = analyze_window(t, steady_options, paths.get(), scratch);
      steady.collectives.clear();  // stragglers are matched over the whole trace
      steady.collectives.shrink_to_fit();
      r.steady = std::make_shared<const RankAnalysis>(std::move(steady));
      r.steady_first_iteration = static_cast<int64_t>(first);
      r.steady_end_iteration = static_cast<int64_t>(base + its.size());
    }
  }
  return r;
}

}  // namespace scalescope::analyze
