// The one analysis engine of a rank (analyze_rank, analyze_rank_streaming):
// the rank's chunks read in a few passes (stream_analyzer.hpp says which and
// how). What is a sum per row is summed per row (window_figures.hpp); what
// is a union of intervals is summed per time segment (stream_sweep.hpp);
// medians take two passes (two_pass_median.hpp); each analysis's own file
// (breakdown.cpp, launch.cpp, copies.cpp, ...) derives its figures from those sums.
#include "analyze/stream_analyzer.hpp"

#include <algorithm>
#include <limits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "analyze/attribution_stream.hpp"
#include "analyze/detail.hpp"
#include "analyze/intervals.hpp"
#include "analyze/stream_sweep.hpp"
#include "analyze/window_figures.hpp"
#include "trace/model/chunk_reader.hpp"
#include "base/error.hpp"

namespace scalescope::analyze {
namespace {

using trace::Timestamp;
using detail::StreamSweep;
using detail::kCompute;
using detail::kComm;
using detail::kCopy;
using detail::host_wait;
using detail::launch_domain;
using detail::Names;
using detail::TableRows;
using detail::WindowFigures;

// What pass 1 learns of one table chunk (a chunk holds one table's rows).
struct ChunkFacts {
  bool gpu = false;       // has a kernel, collective, copy or set span (end >= start)
  bool kernels = false;   // has kernel rows (iteration detection's last resort reads them)
  bool syncs = false;     // has synchronization rows
  bool api = false;       // has API calls
  bool launches = false;  // has launch calls of the runtime or driver (the launch median reads them)
  Timestamp first = std::numeric_limits<Timestamp>::max();  // earliest start of its GPU spans
  // Earliest start of its host waits: synchronization rows
  // other than StreamWaitEvent, or such API calls (read when there are no rows).
  Timestamp wait_first = std::numeric_limits<Timestamp>::max();
  Timestamp api_wait_first = std::numeric_limits<Timestamp>::max();
  // Earliest start of its API calls with a correlation id (the idle
  // breakdown's launch calls), and the smallest correlation id of its GPU spans.
  Timestamp call_first = std::numeric_limits<Timestamp>::max();
  uint32_t min_correlation = std::numeric_limits<uint32_t>::max();
};


// A GPU chunk's spans into the sweep, clipped to its hull [lo, hi];
// `category(i)` is row i's.
void sweep_rows(const Chunk& batch, Names& names, StreamSweep& sweep, Timestamp lo, Timestamp hi) {
  auto rows = [&](const auto& t, auto&& category) {
    for (size_t i : batch.of(t)) {
      if (t.end[i] < t.start[i]) continue;
      sweep.gpu_row(t.start[i], t.correlation[i]);
      if (t.end[i] >= lo && t.start[i] <= hi)
        sweep.add({std::max(t.start[i], lo), std::min(t.end[i], hi)}, sweep.stream_index(t.device[i], t.stream[i]),
                  category(i));
    }
  };
  const auto& k = batch->kernels;
  rows(k, [&](size_t i) {
    const KernelClass cls = names.kernel(k.name[i]).cls;
    return cls == KernelClass::kCompute ? kCompute : cls == KernelClass::kMemory ? kCopy : kComm;
  });
  rows(batch->nccl, [](size_t) { return kComm; });
  rows(batch->memcpys, [](size_t) { return kCopy; });
  rows(batch->memsets, [](size_t) { return kCopy; });
}

// The analysis of one rank, in the steps its chunks are read in:
//   first_pass       what every window needs, and the whole trace's sums;
//   detect           the iterations;
//   resolve_windows  the window, and the steady iterations' one;
//   sweep            GPU and host chunks in time order: the interval unions
//                    and both splits of idle time;
//   late_sums        the API (and sync) chunks: what needs every GPU row first;
//   collect_medians  the values of the medians not collected yet;
//   results          each window's figures, attribution and the collectives.
class RankEngine {
 public:
  RankEngine(ChunkSource& chunks, const Options& o)
      : chunks_(chunks),
        o_(o),
        head_(chunks.head()),
        name_count_(head_.strings.size()),
        names_(head_.strings, o.classifier),
        sum_first_(!o.window),
        main_(name_count_, std::numeric_limits<Timestamp>::min(), std::numeric_limits<Timestamp>::max()),
        facts_(chunks.count()),
        step_range_(name_count_, -1),
        op_domain_(name_count_, -1),
        mpi_name_(name_count_, -1) {}

  RankAnalysis run(const std::function<void(trace::Trace&)>& name_frames) {
    first_pass();
    detect();
    resolve_windows();
    sweep();
    late_sums();
    collect_medians();
    return results(name_frames);
  }

 private:
  static constexpr Timestamp kNever = std::numeric_limits<Timestamp>::max();

  // ---- pass 1: what every window needs; the whole trace's sums -------------
  // Without --window the whole-trace window is the span of the rows summed,
  // so they are summed here, before it is known (checked in resolve_windows).
  // The rows that iteration detection, the collective list and the host
  // analysis read are kept whole (kept_) in file order, so that the
  // whole-trace code runs on them unchanged: NVTX ranges that can mark steps,
  // every collective (the list holds one entry each anyway), communication
  // kernels (the list when there are no NCCL rows) and the host sampler's
  // tables (with the modules that name their frames). Their size is that of
  // the results they make, not the rank's event count.
  void first_pass() {
    kept_.meta = head_.meta;
    kept_.strings = head_.strings;
    for (size_t c = 0; c < facts_.size(); ++c) {
      const Chunk batch = chunks_.read(c, batch_);
      ChunkFacts& f = facts_[c];
      gpu_facts(batch, f);
      keep_rows(batch);
      host_facts(batch, f);
      if (sum_first_) {
        main_.sum_gpu(batch, names_);
        main_.sum_syncs(batch);
        main_.sum_api(batch, names_);
      }
    }
    sync_from_api_ = rows_.syncs == 0;
  }

  // A chunk's GPU tables: row counts, the trace's span, iteration
  // detection's cap, the chunk's first start and smallest correlation id.
  void gpu_facts(const Chunk& batch, ChunkFacts& f) {
    auto span = [&](const auto& t) {
      for (size_t i : batch.of(t)) {
        span_lo_ = std::min(span_lo_, t.start[i]);
        span_hi_ = std::max(span_hi_, t.end[i]);
      }
    };
    auto gpu_rows = [&](const auto& t) {
      for (size_t i : batch.of(t)) {
        gpu_end_ = std::max(gpu_end_, t.end[i]);
        if (t.end[i] < t.start[i]) continue;
        f.gpu = true;
        f.first = std::min(f.first, t.start[i]);
        if (t.correlation[i] != 0) f.min_correlation = std::min(f.min_correlation, t.correlation[i]);
      }
    };
    // Collectives and syncs widen the trace's extent: Trace::time_span() leaves them out.
    auto widen = [&](const auto& t) {
      for (size_t i : batch.of(t)) {
        extra_lo_ = std::min(extra_lo_, t.start[i]);
        extra_hi_ = std::max(extra_hi_, t.end[i]);
        extra_any_ = true;
      }
    };
    const auto& k = batch->kernels;
    rows_.kernels += batch.of(k).size();
    f.kernels = !batch.of(k).empty();
    span(k);
    gpu_rows(k);
    for (size_t i : batch.of(k)) ++kernels_by_device_[k.device[i]];
    rows_.memcpys += batch.of(batch->memcpys).size();
    span(batch->memcpys);
    gpu_rows(batch->memcpys);
    rows_.memsets += batch.of(batch->memsets).size();
    span(batch->memsets);
    gpu_rows(batch->memsets);
    const auto& nc = batch->nccl;
    rows_.nccl += batch.of(nc).size();
    widen(nc);
    gpu_rows(nc);
    rows_.syncs += batch.of(batch->syncs).size();
    widen(batch->syncs);
    const auto& a = batch->api;
    rows_.api += batch.of(a).size();
    span(a);
  }

  void keep_rows(const Chunk& batch) {
    for (size_t i : batch.of(batch->nccl)) kept_.nccl.push(batch->nccl.row(i));
    // Communication kernels make the collective list (and tell that NCCL ran)
    // only in a trace without NCCL rows: once one is read they are not kept.
    const auto& k = batch->kernels;
    if (kept_.nccl.size() > 0) kept_.kernels = {};
    else
      for (size_t i : batch.of(k))
        if (names_.kernel(k.name[i]).cls == KernelClass::kCommunication) kept_.kernels.push(k.row(i));
    const auto& nv = batch->nvtx;
    for (size_t i : batch.of(nv))
      if (nv.kind[i] == trace::NvtxKind::kRange &&
          (marks_steps(nv.text[i]) || (nv.device[i] < 0 && !is_op_domain(nv.domain[i])) || is_mpi(nv.text[i])))
        kept_.nvtx.push(nv.row(i));
    // MPI calls (few): the job's facts read them (detail::job_facts).
    for (size_t i : batch.of(batch->api))
      if (is_mpi(batch->api.name[i])) kept_.api.push(batch->api.row(i));
    for (size_t i : batch.of(batch->host_threads)) kept_.host_threads.push(batch->host_threads.row(i));
    for (size_t i : batch.of(batch->host_samples)) kept_.host_samples.push(batch->host_samples.row(i));
    for (size_t i : batch.of(batch->host_callsites)) kept_.host_callsites.push(batch->host_callsites.row(i));
    for (size_t i : batch.of(batch->host_stack_samples))
      kept_.host_stack_samples.push(batch->host_stack_samples.row(i));
    for (size_t i : batch.of(batch->host_modules)) kept_.host_modules.push(batch->host_modules.row(i));
    // The NVML samples (a few per second): the GPU clock analysis reads them.
    for (size_t i : batch.of(batch->counters)) kept_.counters.push(batch->counters.row(i));
  }

  // A chunk's host waits and API calls: their first starts (the order of the sweep).
  void host_facts(const Chunk& batch, ChunkFacts& f) {
    f.syncs = !batch.of(batch->syncs).empty();
    for (size_t i : batch.of(batch->syncs))
      if (host_wait(batch->syncs.kind[i]) && batch->syncs.end[i] >= batch->syncs.start[i])
        f.wait_first = std::min(f.wait_first, batch->syncs.start[i]);
    const auto& a = batch->api;
    for (size_t i : batch.of(a)) {
      if (const int8_t kind = names_.sync_kind(a.name[i]);
          kind > 0 && host_wait(static_cast<trace::SyncKind>(kind)) && a.end[i] >= a.start[i])
        f.api_wait_first = std::min(f.api_wait_first, a.start[i]);
      if (a.correlation[i] != 0) f.call_first = std::min(f.call_first, a.start[i]);
    }
    correlated_calls_ = correlated_calls_ || f.call_first != kNever;
    f.api = !batch.of(a).empty();
    for (size_t i : batch.of(a)) {
      f.launches = launch_domain(a.domain[i]) && names_.launch(a.name[i]) && a.end[i] >= a.start[i];
      if (f.launches) break;
    }
  }

  bool marks_steps(trace::StringId id) {
    int8_t& m = step_range_[id];
    if (m < 0) {
      const std::string_view text = head_.strings.view(id);
      m = (o_.iteration_range.empty() ? text.starts_with("ProfilerStep#") : text == o_.iteration_range) ? 1 : 0;
    }
    return m > 0;
  }
  bool is_op_domain(trace::StringId id) {
    int8_t& m = op_domain_[id];
    if (m < 0) {
      const std::string_view d = head_.strings.view(id);
      m = d == "cpu_op" || d == "python_function";
    }
    return m > 0;
  }
  bool is_mpi(trace::StringId id) {
    int8_t& m = mpi_name_[id];
    if (m < 0) m = detail::is_mpi_call(head_.strings.view(id)) ? 1 : 0;
    return m > 0;
  }

  // ---- iterations, as detail::detect_iterations finds them -----------------
  // Ranges and collectives first; only when neither marks steps does the
  // detection need every kernel's name and start (12 bytes per kernel, the
  // one state here that grows with the trace: the repeating-kernel search
  // compares each name's gaps with their median). They are read in one more
  // pass, in file order, and freed once detection is done.
  void detect() {
    if (gpu_end_ == 0) gpu_end_ = span_lo_ > span_hi_ ? 0 : span_hi_;  // no GPU row ends later: the trace's end
    std::vector<trace::StringId> kernel_name;
    std::vector<Timestamp> kernel_start;
    auto detect = [&] {
      return detail::detect_iterations(detail::IterationInputs{kept_.strings, kept_.nvtx, kept_.nccl.op,
                                                               kept_.nccl.bytes, kept_.nccl.start, kernel_name,
                                                               kernel_start, gpu_end_},
                                       o_.iteration_range);
    };
    detected_ = detect();
    if (!detected_.iterations.empty() || rows_.kernels == 0) return;
    kernel_name.reserve(rows_.kernels);
    kernel_start.reserve(rows_.kernels);
    for (size_t c = 0; c < facts_.size(); ++c) {
      if (!facts_[c].kernels) continue;
      const Chunk batch = chunks_.read(c, batch_);
      const RowRange rows = batch.of(batch->kernels);
      auto first = static_cast<std::ptrdiff_t>(*rows.begin()), last = static_cast<std::ptrdiff_t>(*rows.end());
      const auto& k = batch->kernels;
      kernel_name.insert(kernel_name.end(), k.name.begin() + first, k.name.begin() + last);
      kernel_start.insert(kernel_start.end(), k.start.begin() + first, k.start.begin() + last);
    }
    detected_ = detect();
  }

  // ---- the windows, as detail::resolve_window finds them ------------------
  void resolve_windows() {
    // The trace's extent: Trace::time_span(), widened by collectives and syncs.
    Timestamp first = span_lo_, last = span_hi_;
    if (span_lo_ > span_hi_) first = last = 0;
    if (extra_any_) {
      const bool any = first != 0 || last != 0;
      first = any ? std::min(first, extra_lo_) : extra_lo_;
      last = any ? std::max(last, extra_hi_) : extra_hi_;
    }
    const auto [ws, we] = detail::resolve_window(first, last, rows_.gpu(), head_.meta, o_, detected_);
    ws_ = ws;
    we_ = we;
    // Only a trace with events at time 0 can have rows outside the whole-trace
    // window (time_span() then reads as empty): pass 1's sums are then redone
    // in the sweep with the window, as for --window.
    summed_ = sum_first_ && !main_.summed_outside(ws, we);
    if (summed_) main_.set_window(ws, we);
    else main_ = WindowFigures(name_count_, ws, we);
    r_.iterations = detail::window_iterations(detected_, ws, we, o_.warmup_tolerance);
    // The steady iterations (RankAnalysis::steady): from the first one after
    // warm-up to the end, without --window. Their window is analysed in the
    // same passes; its sums wait for the sweep (it needs the iterations).
    steady_options_ = o_;
    if (!o_.window && r_.iterations.availability.available && !r_.iterations.iterations.empty()) {
      const auto& its = r_.iterations.iterations;  // all detected iterations: the window is the whole trace
      while (steady_first_ < its.size() && its[steady_first_].warmup) ++steady_first_;
      if (steady_first_ < its.size()) {
        // In --window's numbering (all detected iterations), which a step
        // begun before the trace's first event shifts from the table's.
        const auto base = static_cast<size_t>(r_.iterations.first_number);
        steady_first_ += base;
        steady_options_.window = WindowSpec{WindowSpec::Kind::kIterations, static_cast<double>(steady_first_),
                                            static_cast<double>(base + its.size())};
        const auto [ss, se] = detail::resolve_window(first, last, rows_.gpu(), head_.meta, steady_options_, detected_);
        steady_.emplace(name_count_, ss, se);
        st_.iterations = detail::window_iterations(detected_, ss, se, o_.warmup_tolerance);
      }
    }
    // One sweep for both windows, over their hull (the steady iterations lie
    // inside the whole trace's window unless detected steps reach past it).
    hull_lo_ = steady_ ? std::min(ws, steady_->ws()) : ws;
    hull_hi_ = steady_ ? std::max(we, steady_->we()) : we;
    sweep_.emplace(hull_lo_, hull_hi_, correlated_calls_);
    add_swept(main_, r_);
    if (steady_) add_swept(*steady_, st_);
  }
  // A window's place in the sweep, with its MPI calls (the idle split's).
  void add_swept(WindowFigures& figures, RankAnalysis& out) {
    const auto [from, to] = detail::input_span(out.iterations, figures.ws(), figures.we());
    swept_.push_back({sweep_->add_window(figures.ws(), figures.we(), from, to), figures.ws(), figures.we()});
    figures.sweep_as(swept_.back().index);
    Intervals mpi;
    out.job = detail::job_facts(kept_, rows_.gpu(), figures.ws(), figures.we(), &mpi);
    sweep_->mpi_calls(swept_.back().index, std::move(mpi));
  }

  // ---- pass 2: chunks of GPU rows, host waits and launch calls in time order
  // A window summed in pass 1 also collects its medians' values here; the
  // others sum here and collect in collect_medians.
  void sweep() {
    if (summed_) main_.choose();
    const std::vector<size_t> order = time_order();
    // The smallest correlation id of the GPU chunks after the n-th.
    std::vector<uint32_t> unread_correlation(order.size() + 1, std::numeric_limits<uint32_t>::max());
    for (size_t n = order.size(); n-- > 0;)
      unread_correlation[n] = std::min(unread_correlation[n + 1], facts_[order[n]].min_correlation);
    for (size_t n = 0; n < order.size(); ++n) {
      const Chunk batch = chunks_.read(order[n], batch_);
      host_waits_and_calls(batch);
      if (facts_[order[n]].gpu) {
        if (!summed_) main_.sum_gpu(batch, names_);
        main_.inputs(batch, *sweep_, summed_);
        if (steady_) {
          steady_->sum_gpu(batch, names_);
          steady_->inputs(batch, *sweep_, false);
        }
        sweep_rows(batch, names_, *sweep_, hull_lo_, hull_hi_);
      }
      // No row of a later chunk starts before that chunk's first start.
      sweep_->cut(n + 1 < order.size() ? first_of(order[n + 1]) : kNever, unread_correlation[n + 1]);
    }
  }
  // The chunks of GPU rows, host waits (the idle split's) and launch calls
  // (the idle breakdown's), by first start.
  Timestamp first_of(size_t c) const {
    const ChunkFacts& f = facts_[c];
    return std::min({f.first, sync_from_api_ ? f.api_wait_first : f.wait_first, f.call_first});
  }
  std::vector<size_t> time_order() const {
    std::vector<size_t> order;
    for (size_t c = 0; c < facts_.size(); ++c)
      if (facts_[c].gpu || first_of(c) != kNever) order.push_back(c);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return first_of(x) < first_of(y); });
    return order;
  }
  // A chunk's host waits into each window's idle split (clipped to it), and its launch calls.
  void host_waits_and_calls(const Chunk& batch) {
    auto add_waits = [&](const auto& t, auto&& is_wait) {
      const auto& start = t.start;
      const auto& end = t.end;
      for (size_t i : batch.of(t)) {
        if (end[i] < start[i] || !is_wait(i)) continue;
        for (const Swept& w : swept_)
          if (end[i] >= w.ws && start[i] <= w.we)
            sweep_->host_wait(w.index, {std::max(start[i], w.ws), std::min(end[i], w.we)});
      }
    };
    if (sync_from_api_)
      add_waits(batch->api, [&](size_t i) {
        const int8_t kind = names_.sync_kind(batch->api.name[i]);
        return kind > 0 && host_wait(static_cast<trace::SyncKind>(kind));
      });
    else
      add_waits(batch->syncs, [&](size_t i) { return host_wait(batch->syncs.kind[i]); });
    for (size_t i : batch.of(batch->api))
      if (batch->api.correlation[i] != 0) sweep_->launch_call(batch->api.correlation[i], batch->api.start[i]);
  }

  // The API (and sync) chunks, once every GPU row was summed: pageable
  // calls, syncs from API calls, and the sums left for this pass.
  void late_sums() {
    const bool sums_left = !summed_ || steady_;
    for (size_t c = 0; c < facts_.size(); ++c) {
      if (!facts_[c].api && !(facts_[c].syncs && sums_left)) continue;
      const Chunk batch = chunks_.read(c, batch_);
      if (!summed_) {
        main_.sum_syncs(batch);
        main_.sum_api(batch, names_);
      }
      main_.late_api(batch, names_, sync_from_api_, summed_);
      if (steady_) {
        steady_->sum_syncs(batch);
        steady_->sum_api(batch, names_);
        steady_->late_api(batch, names_, sync_from_api_, false);
      }
    }
  }

  // ---- pass 3: the medians of the windows summed in pass 2 ----------------
  void collect_medians() {
    if (summed_ && !steady_) return;
    if (!summed_) main_.choose();
    if (steady_) steady_->choose();
    for (size_t c = 0; c < facts_.size(); ++c) {
      if (!(facts_[c].kernels && facts_[c].gpu) && !facts_[c].launches) continue;
      const Chunk batch = chunks_.read(c, batch_);
      if (!summed_) {
        main_.collect_kernels(batch);
        main_.collect_launches(batch, names_);
      }
      if (steady_) {
        steady_->collect_kernels(batch);
        steady_->collect_launches(batch, names_);
      }
    }
  }

  // ---- the results, as each analysis states them ----------------------------
  RankAnalysis results(const std::function<void(trace::Trace&)>& name_frames) {
    // Native frames (format 1.4) are named before the host analysis reads them.
    if (name_frames && kept_.host_callsites.size() > 0) name_frames(kept_);
    state(main_, swept_[0].index, o_, r_);
    if (steady_) state(*steady_, swept_[1].index, steady_options_, st_);
    attribute();
    if (steady_) {
      r_.steady = std::make_shared<const RankAnalysis>(std::move(st_));  // no collectives: matched over the whole trace
      r_.steady_first_iteration = static_cast<int64_t>(steady_first_);
      r_.steady_end_iteration = r_.iterations.first_number + static_cast<int64_t>(r_.iterations.iterations.size());
    }
    r_.collectives = detail::collective_arrivals(kept_, ws_, we_, names_.info, r_.iterations.iterations);
    r_.nccl_ops = summarize_nccl_ops(kept_);  // kept_ holds every collective
    return std::move(r_);
  }
  // One window's figures (both splits of idle time were made gap by gap in the sweep).
  void state(WindowFigures& figures, size_t index, const Options& window_options, RankAnalysis& out) {
    detail::describe_rank(head_, rows_.gpu(), out);
    figures.finish(rows_, names_, *sweep_, window_options, out);
    out.numa = detail::analyze_numa(head_.meta);
    out.host = detail::analyze_host(kept_, figures.ws(), figures.we(), out.iterations.iterations);
    out.sampled_gpus = detail::sampled_gpus(kept_, figures.ws(), figures.we());
    out.gpu_clocks = detail::own_gpu_clocks(kept_, out.sampled_gpus, detail::busiest_device(kernels_by_device_));
    out.idle_cover = sweep_->idle_cover(index);
    out.idle_breakdown = sweep_->idle_breakdown(index);
    if (!out.breakdown.availability.available)
      out.idle_cover.availability = out.idle_breakdown.availability = out.breakdown.availability;
    detail::mark_empty_window(window_options, figures.wall(), out);
  }
  // Attribution of the window and of the steady one: its own passes over the
  // chunks (attribution_stream.hpp), one call for both to share the reads.
  void attribute() {
    if (o_.attribution) {
      std::vector<AttributionWindow> windows{{ws_, we_, !o_.window.has_value(), &r_.iterations.iterations}};
      if (steady_) windows.push_back({steady_->ws(), steady_->we(), false, &st_.iterations.iterations});
      std::vector<Attribution> a = stream_attribution(chunks_, windows, names_.info);
      r_.attribution = std::move(a[0]);
      if (steady_) st_.attribution = std::move(a[1]);
    } else {
      r_.attribution.available = false;
      r_.attribution.reason = "skipped: turned off (--no-attribution)";
      st_.attribution = r_.attribution;
    }
    detail::mark_empty_window(o_, main_.wall(), r_.attribution);
    if (steady_) detail::mark_empty_window(steady_options_, steady_->wall(), st_.attribution);
  }

  ChunkSource& chunks_;
  const Options& o_;
  const trace::Trace& head_;
  const size_t name_count_;
  Names names_;
  trace::Trace batch_;  // a file's chunk being read

  // pass 1
  const bool sum_first_;
  WindowFigures main_;
  TableRows rows_;
  std::vector<ChunkFacts> facts_;
  trace::Trace kept_;
  Timestamp span_lo_ = kNever, span_hi_ = std::numeric_limits<Timestamp>::min();
  Timestamp extra_lo_ = kNever, extra_hi_ = std::numeric_limits<Timestamp>::min();
  bool extra_any_ = false;  // nccl or sync rows
  Timestamp gpu_end_ = 0;
  std::vector<int8_t> step_range_, op_domain_, mpi_name_;  // per name: -1 not asked yet
  std::map<uint32_t, int64_t> kernels_by_device_;          // the rank's GPU: the one most kernels ran on
  bool correlated_calls_ = false;                          // API calls with a correlation id
  bool sync_from_api_ = false;                             // no sync rows: waits are such API calls

  // the windows
  detail::Detected detected_;
  Timestamp ws_ = 0, we_ = 0;
  bool summed_ = false;  // main_ summed in pass 1
  RankAnalysis r_, st_;
  std::optional<WindowFigures> steady_;
  Options steady_options_;
  size_t steady_first_ = 0;
  Timestamp hull_lo_ = 0, hull_hi_ = 0;
  std::optional<StreamSweep> sweep_;
  struct Swept {
    size_t index;
    Timestamp ws, we;
  };
  std::vector<Swept> swept_;
};

}  // namespace

RankAnalysis analyze_chunks(ChunkSource& chunks, const Options& o, const std::function<void(trace::Trace&)>& name_frames) {
  return RankEngine(chunks, o).run(name_frames);
}

RankAnalysis analyze_rank(const trace::Trace& t, const Options& o) {
  ChunkSource chunks(t);
  return analyze_chunks(chunks, o, {});
}

RankAnalysis analyze_rank_streaming(const std::filesystem::path& path, const Options& o,
                                    const std::function<void(trace::Trace&)>& name_frames) {
  return analyze_rank_streaming(trace::ChunkReader::open(path), o, name_frames);
}

RankAnalysis analyze_rank_streaming(trace::ChunkReader reader, const Options& o,
                                    const std::function<void(trace::Trace&)>& name_frames) {
  ChunkSource chunks(reader);
  return analyze_chunks(chunks, o, name_frames);
}

}  // namespace scalescope::analyze
