// stream_attribution: attribution.cpp's launch paths and window summaries,
// fed from a ChunkSource in time order (attribution_stream.hpp says how and
// what bounds the state). The rules are not restated here: they are those of
// RangeStacks, ShareSweep and WindowSummary (attribution_sweep.hpp).
#include "analyze/attribution_stream.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "analyze/attribution_sweep.hpp"

namespace scalescope::analyze {
namespace {

using detail::kNoLaunch;
using trace::Timestamp;

constexpr Timestamp kNever = std::numeric_limits<Timestamp>::max();
constexpr uint32_t kNoId = std::numeric_limits<uint32_t>::max();
constexpr int64_t kNoSeq = std::numeric_limits<int64_t>::max();

// What the first pass learns of one table chunk.
struct ChunkFacts {
  // A row's index in the rank's table: its index in the chunk's table plus this.
  uint64_t nvtx_base = 0, api_base = 0, kernel_base = 0, memcpy_base = 0, memset_base = 0;
  bool host = false, gpu = false;
  Timestamp host_first = kNever, gpu_first = kNever;  // earliest start of its host events / GPU rows
  uint32_t api_corr = kNoId, gpu_corr = kNoId;        // smallest nonzero correlation id
  uint32_t link = kNoId;                              // smallest nonzero link of its ranges
  int64_t seq = kNoSeq;                               // smallest seq of its ranges
};

// A range or an API call waiting for its turn in the host sweep.
struct HostEvent {
  Timestamp start, end;
  uint32_t row;  // in its table
  uint32_t thread;
  uint32_t id;                          // range: link; call: correlation id
  const detail::NameCache::Info* info;  // nullptr: an API call
  // The merge order: by start, ranges first, ranges by end
  // (latest first) then row, calls by row.
  bool operator<(const HostEvent& o) const {
    if (start != o.start) return start < o.start;
    const bool range = info != nullptr, o_range = o.info != nullptr;
    if (range != o_range) return range;
    if (range && end != o.end) return end > o.end;
    return row < o.row;
  }
};

// A GPU row waiting for its turn in one window's sweep: ordered by start cut
// to the window, then kernels, copies, sets, then row (WorkCursor's order).
struct GpuRow {
  detail::Work work;  // its node is set when the row is released
  uint32_t table;
  uint32_t correlation;
  uint64_t row;
  bool operator<(const GpuRow& o) const {
    if (work.start != o.work.start) return work.start < o.work.start;
    if (table != o.table) return table < o.table;
    return row < o.row;
  }
};

// Suffix minima of a key over a sequence, so that "the smallest key still to
// come" is one lookup at any position.
template <typename T>
void suffix_min(std::vector<T>& out, size_t n, T none, auto&& key) {
  out.assign(n + 1, none);
  for (size_t i = n; i-- > 0;) out[i] = std::min(out[i + 1], key(i));
}

// Correlation id -> node of the ids between the oldest GPU row still to come
// and the newest call taken. Ids grow with time (CUPTI's and Kineto's
// counters): a deque indexed from the oldest kept id, dropped from the front;
// ids far from that run (or below it) go to a hash map.
class CorrelationWindow {
 public:
  void set(uint32_t id, uint32_t node) {
    if (dense_.empty()) base_ = id;
    if (id >= base_ && id - base_ < dense_.size() + kMaxHole) {
      if (id - base_ >= dense_.size()) dense_.resize(id - base_ + 1, kNoLaunch);
      uint32_t& v = dense_[id - base_];
      entries_ += v == kNoLaunch;
      v = node;
    } else {
      sparse_[id] = node;
    }
  }
  uint32_t get(uint32_t id) const {
    // A call set in the deque is newer than one of the same id in the map
    // (set while the deque did not reach that far yet).
    if (id >= base_ && id - base_ < dense_.size() && dense_[id - base_] != kNoLaunch) return dense_[id - base_];
    auto it = sparse_.find(id);
    return it == sparse_.end() ? kNoLaunch : it->second;
  }
  // Ids below `min` are asked for no more.
  void forget_below(uint32_t min) {
    while (!dense_.empty() && base_ < min) {
      entries_ -= dense_.front() != kNoLaunch;
      dense_.pop_front();
      ++base_;
    }
    if (sparse_.size() > sparse_limit_) {
      std::erase_if(sparse_, [&](const auto& e) { return e.first < min; });
      sparse_limit_ = std::max<size_t>(1024, 2 * sparse_.size());
    }
  }
  size_t entries() const { return entries_ + sparse_.size(); }  // ids with a call
  size_t span() const { return dense_.size(); }                 // ids the deque covers (4 bytes each)

 private:
  static constexpr size_t kMaxHole = size_t{1} << 16;
  uint32_t base_ = 0;
  std::deque<uint32_t> dense_;  // kNoLaunch: no call with that id taken
  std::unordered_map<uint32_t, uint32_t> sparse_;
  size_t entries_ = 0;  // in dense_
  size_t sparse_limit_ = 1024;
};

class Attributor {
 public:
  Attributor(ChunkSource& chunks, const std::vector<AttributionWindow>& windows,
             const std::vector<KernelInfo>& kernel_info)
      : chunks_(chunks), kernel_info_(kernel_info), names_(chunks.head().strings, paths_) {
    for (const AttributionWindow& w : windows) {
      static const std::vector<Iteration> none;
      windows_.push_back(std::make_unique<Window>(w.start, w.end, w.whole_trace, w.iterations ? *w.iterations : none));
    }
  }

  std::vector<Attribution> run() {
    first_pass();
    stacks_.emplace(paths_, use_links_, use_seq_);
    host_order_ =
        chunks_where([](const ChunkFacts& f) { return f.host; }, [](const ChunkFacts& f) { return f.host_first; });
    gpu_order_ =
        chunks_where([](const ChunkFacts& f) { return f.gpu; }, [](const ChunkFacts& f) { return f.gpu_first; });
    const size_t hn = host_order_.size(), gn = gpu_order_.size();
    suffix_min(unread_api_corr_, hn, kNoId, [&](size_t i) { return facts_[host_order_[i]].api_corr; });
    suffix_min(unread_link_, hn, kNoId, [&](size_t i) { return facts_[host_order_[i]].link; });
    suffix_min(unread_seq_, hn, kNoSeq, [&](size_t i) { return facts_[host_order_[i]].seq; });
    suffix_min(unread_gpu_corr_, gn, kNoId, [&](size_t i) { return facts_[gpu_order_[i]].gpu_corr; });

    for (size_t n = 0; n < gn; ++n) gpu_chunk(n);
    release(kNever);
    gpu_done_ = true;
    corr_ = {};
    for (auto& w : windows_)
      w->sweep.finish_all([&](const detail::Work& x, uint32_t it, int64_t s) { w->summary.done(x, it, s); });
    while (step()) {}
    stacks_->finish([&](const detail::FinishedRange& r) { finished(r); });

    std::vector<Attribution> out;
    for (auto& w : windows_) out.push_back(w->summary.finish(paths_, w->sweep.pushed(), gpu_rows_, api_rows_));
    return out;
  }

  AttributionStreamStats stats;

 private:
  struct Window {
    Window(Timestamp ws, Timestamp we, bool whole, const std::vector<Iteration>& its) : summary(ws, we, whole, its) {}
    detail::WindowSummary summary;
    detail::ShareSweep<uint32_t> sweep;
    std::vector<GpuRow> pending;  // [0, released): to push, in order; the rest held
    size_t released = 0;
    std::vector<uint32_t> floor;  // suffix minima of the pending rows' correlation ids
  };

  // ---- pass 1 -------------------------------------------------------------------
  void first_pass() {
    facts_.resize(chunks_.count());
    uint64_t nvtx_rows = 0, kernel_rows = 0, memcpy_rows = 0, memset_rows = 0;
    bool any_link = false, any_seq = false;
    trace::Trace buffer;  // every table's columns grow here: freed before the sweeps
    for (size_t c = 0; c < facts_.size(); ++c) {
      const Chunk first = chunks_.read(c, buffer);
      ChunkFacts& f = facts_[c];
      const auto& nv = first->nvtx;
      f.nvtx_base = nvtx_rows - *first.of(nv).begin();
      nvtx_rows += first.of(nv).size();
      for (size_t i : first.of(nv)) {
        const detail::NameCache::Info* info = names_.range_info(nv, i);  // gives the keys in table order
        if (!info) continue;
        paths_.any_ranges = true;
        f.host = true;
        f.host_first = std::min(f.host_first, nv.start[i]);
        if (nv.link[i] != 0) {
          any_link = true;
          f.link = std::min(f.link, nv.link[i]);
        }
        if (info->seq >= 0) {
          any_seq = true;
          f.seq = std::min(f.seq, info->seq);
        }
      }
      const auto& a = first->api;
      f.api_base = api_rows_ - *first.of(a).begin();
      api_rows_ += first.of(a).size();
      for (size_t i : first.of(a)) {
        if (a.correlation[i] == 0) continue;  // no launch: nothing to attribute to it
        f.host = true;
        f.host_first = std::min(f.host_first, a.start[i]);
        f.api_corr = std::min(f.api_corr, a.correlation[i]);
      }
      auto gpu = [&](const auto& table, uint64_t& base, uint64_t& rows) {
        base = rows - *first.of(table).begin();
        rows += first.of(table).size();
        for (size_t i : first.of(table)) {
          if (table.end[i] < table.start[i]) continue;
          f.gpu = true;
          f.gpu_first = std::min(f.gpu_first, table.start[i]);
          if (table.correlation[i] != 0) f.gpu_corr = std::min(f.gpu_corr, table.correlation[i]);
        }
      };
      gpu(first->kernels, f.kernel_base, kernel_rows);
      gpu(first->memcpys, f.memcpy_base, memcpy_rows);
      gpu(first->memsets, f.memset_base, memset_rows);
    }
    gpu_rows_ = kernel_rows + memcpy_rows + memset_rows;
    use_links_ = any_link;
    use_seq_ = !any_link && any_seq;
    paths_.link_source = use_links_ ? "fwdbwd flows" : use_seq_ ? "emit_nvtx seq" : "";
  }

  template <typename Has, typename First>
  std::vector<size_t> chunks_where(Has&& has, First&& first) const {
    std::vector<size_t> order;
    for (size_t c = 0; c < facts_.size(); ++c)
      if (has(facts_[c])) order.push_back(c);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return first(facts_[x]) < first(facts_[y]); });
    return order;
  }

  // ---- the host sweep ---------------------------------------------------------------
  // Takes the next event in order (reading the next host chunk when the
  // released ones are used up); false once every event was taken.
  bool step() {
    if (ready_pos_ == ready_end_) {
      if (next_host_ == host_order_.size()) return false;
      load_host_chunk();
      return true;
    }
    const HostEvent& e = events_[ready_pos_++];
    auto done = [&](const detail::FinishedRange& r) { finished(r); };
    if (e.info) {
      stacks_->push_range({e.start, e.end, e.row, e.thread, e.id, e.info}, done);
      ++open_ranges_;
      stats.open_ranges = std::max(stats.open_ranges, open_ranges_);
      const size_t contexts = stacks_->link_entries() + stacks_->seq_entries();
      stats.link_contexts = std::max(stats.link_contexts, contexts);
      if (contexts > link_limit_) forget_links();
    } else {
      const uint32_t node = stacks_->launch_node(e.thread, e.start, done);
      if (!gpu_done_) {
        corr_.set(e.id, node);  // a repeated id: the last call wins
        corr_.forget_below(gpu_floor_);
        stats.correlations = std::max(stats.correlations, corr_.entries());
        stats.correlation_span = std::max(stats.correlation_span, corr_.span());
      }
    }
    return true;
  }

  void finished(const detail::FinishedRange& r) {
    --open_ranges_;
    for (auto& w : windows_) w->summary.add_range(r);
  }

  void load_host_chunk() {
    const size_t c = host_order_[next_host_++];
    const Chunk host_batch = chunks_.read(c, host_batch_);
    // One buffer: the events taken go, those held move to the front, the chunk's join them.
    events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(ready_end_));
    const auto& nv = host_batch->nvtx;
    const auto& a = host_batch->api;
    events_.reserve(events_.size() + host_batch.of(nv).size() + host_batch.of(a).size());  // no doubling
    const ChunkFacts& f = facts_[c];
    for (size_t i : host_batch.of(nv))
      if (const detail::NameCache::Info* info = names_.range_info(nv, i))
        events_.push_back(
            {nv.start[i], nv.end[i], static_cast<uint32_t>(f.nvtx_base + i), nv.thread[i], nv.link[i], info});
    for (size_t i : host_batch.of(a))
      if (a.correlation[i] != 0)
        events_.push_back(
            {a.start[i], a.end[i], static_cast<uint32_t>(f.api_base + i), a.thread[i], a.correlation[i], nullptr});
    stats.host_rows = std::max(stats.host_rows, events_.size());
    // Events before the next chunk's earliest start are final: no event still to be read precedes them.
    const Timestamp cut = next_host_ < host_order_.size() ? facts_[host_order_[next_host_]].host_first : kNever;
    auto held = std::partition(events_.begin(), events_.end(), [&](const HostEvent& e) { return e.start < cut; });
    ready_pos_ = 0;
    ready_end_ = static_cast<size_t>(held - events_.begin());
    if (!std::is_sorted(events_.begin(), held)) std::sort(events_.begin(), held);
    held_api_corr_ = kNoId;
    held_link_ = kNoId;
    held_seq_ = kNoSeq;
    for (auto it = held; it != events_.end(); ++it) note_held(*it, held_api_corr_, held_link_, held_seq_);
    const size_t n = ready_end_;
    const std::vector<HostEvent>& r = events_;
    suffix_min(ready_api_corr_, n, kNoId, [&](size_t i) { return r[i].info ? kNoId : r[i].id; });
    suffix_min(ready_link_, n, kNoId, [&](size_t i) { return r[i].info && r[i].id != 0 ? r[i].id : kNoId; });
    suffix_min(ready_seq_, n, kNoSeq,
               [&](size_t i) { return r[i].info && r[i].info->seq >= 0 ? r[i].info->seq : kNoSeq; });
  }
  static void note_held(const HostEvent& e, uint32_t& corr, uint32_t& link, int64_t& seq) {
    if (!e.info) {
      corr = std::min(corr, e.id);
      return;
    }
    if (e.id != 0) link = std::min(link, e.id);
    if (e.info->seq >= 0) seq = std::min(seq, e.info->seq);
  }

  // The smallest correlation id (link, seq) of the API calls (ranges) not yet taken.
  uint32_t next_api_corr() const {
    return std::min(
        {ready_api_corr_.empty() ? kNoId : ready_api_corr_[ready_pos_], held_api_corr_, unread_api_corr_[next_host_]});
  }
  uint32_t next_link() const {
    return std::min({ready_link_.empty() ? kNoId : ready_link_[ready_pos_], held_link_, unread_link_[next_host_]});
  }
  int64_t next_seq() const {
    return std::min({ready_seq_.empty() ? kNoSeq : ready_seq_[ready_pos_], held_seq_, unread_seq_[next_host_]});
  }

  // Forward contexts no range still to come can look up; the limit doubles
  // with what is left, so the scans cost O(1) per entry.
  void forget_links() {
    if (use_links_) stacks_->forget_links_below(next_link());
    if (use_seq_) stacks_->forget_seqs_below(next_seq());
    const size_t left = stacks_->link_entries() + stacks_->seq_entries();
    link_limit_ = std::max<size_t>(1024, 2 * left);
  }
  // The node of the call with this correlation id; the host sweep goes on
  // until no call still to come has an id at or below it.
  uint32_t node_of(uint32_t corr) {
    if (corr == 0) return kNoLaunch;
    while (next_api_corr() <= corr && step()) {}
    return corr_.get(corr);
  }

  // ---- the GPU sweep ----------------------------------------------------------------
  void gpu_chunk(size_t n) {
    const size_t c = gpu_order_[n];
    next_gpu_ = n + 1;
    const Chunk batch = chunks_.read(c, batch_);
    const ChunkFacts& f = facts_[c];
    const size_t rows = batch.of(batch->kernels).size() + batch.of(batch->memcpys).size() + batch.of(batch->memsets).size();
    for (auto& w : windows_) w->pending.reserve(w->pending.size() + rows);  // no doubling
    auto add = [&](const auto& table, uint32_t which, uint64_t base, const std::vector<trace::StringId>* names) {
      for (size_t i : batch.of(table)) {
        const Timestamp s = table.start[i], e = table.end[i];
        for (auto& w : windows_) {
          if (!w->summary.in_window(s, e)) continue;
          const Timestamp ws = w->summary.window_start(), we = w->summary.window_end();
          w->pending.push_back({{std::max(s, ws), std::min(e, we), kNoLaunch, names ? (*names)[i] : kNoLaunch},
                                which,
                                table.correlation[i],
                                base + i});
        }
      }
    };
    add(batch->kernels, 0, f.kernel_base, &batch->kernels.name);
    add(batch->memcpys, 1, f.memcpy_base, nullptr);
    add(batch->memsets, 2, f.memset_base, nullptr);
    size_t held = 0;
    for (auto& w : windows_) held += w->pending.size();
    stats.gpu_rows = std::max(stats.gpu_rows, held);
    release(n + 1 < gpu_order_.size() ? facts_[gpu_order_[n + 1]].gpu_first : kNever);
  }

  // Pushes each window's rows that start (cut to the window) before `cut`,
  // in order, taking their nodes from their correlation ids. While it does,
  // gpu_floor_ is the smallest id of the rows not yet taken, in any window.
  void release(Timestamp cut) {
    uint32_t floor = unread_gpu_corr_[next_gpu_];
    for (auto& w : windows_) {
      auto held =
          std::partition(w->pending.begin(), w->pending.end(), [&](const GpuRow& r) { return r.work.start < cut; });
      w->released = static_cast<size_t>(held - w->pending.begin());
      if (!std::is_sorted(w->pending.begin(), held)) std::sort(w->pending.begin(), held);
      for (auto it = held; it != w->pending.end(); ++it)
        if (it->correlation != 0) floor = std::min(floor, it->correlation);
      suffix_min(w->floor, w->released, kNoId, [&](size_t i) {
        const uint32_t c = w->pending[i].correlation;
        return c != 0 ? c : kNoId;
      });
    }
    std::vector<uint32_t> after(windows_.size() + 1, floor);  // ... of the windows from k on
    for (size_t k = windows_.size(); k-- > 0;) after[k] = std::min(after[k + 1], windows_[k]->floor[0]);
    for (size_t k = 0; k < windows_.size(); ++k) {
      Window& w = *windows_[k];
      auto done = [&](const detail::Work& x, uint32_t it, int64_t s) { w.summary.done(x, it, s); };
      for (size_t i = 0; i < w.released; ++i) {
        GpuRow& r = w.pending[i];
        gpu_floor_ = std::min(after[k + 1], w.floor[i]);
        r.work.node = node_of(r.correlation);
        w.summary.classify(r.work, kernel_info_);
        w.sweep.push(r.work, w.summary.iteration_of(r.work.start), done);
      }
      w.pending.erase(w.pending.begin(), w.pending.begin() + static_cast<std::ptrdiff_t>(w.released));
    }
  }

  ChunkSource& chunks_;
  const std::vector<KernelInfo>& kernel_info_;
  detail::LaunchPaths paths_;
  detail::NameCache names_;
  std::optional<detail::RangeStacks> stacks_;
  bool use_links_ = false, use_seq_ = false;
  std::vector<std::unique_ptr<Window>> windows_;
  std::vector<ChunkFacts> facts_;
  uint64_t gpu_rows_ = 0, api_rows_ = 0;
  trace::Trace batch_, host_batch_;  // the GPU sweep's chunk, the host sweep's chunk (of a file)

  std::vector<size_t> host_order_, gpu_order_;
  std::vector<uint32_t> unread_api_corr_, unread_link_, unread_gpu_corr_;  // by position in the orders
  std::vector<int64_t> unread_seq_;
  size_t next_host_ = 0, next_gpu_ = 0;
  std::vector<HostEvent> events_;  // [0, ready_end_): released, in order; the rest read, held
  size_t ready_pos_ = 0, ready_end_ = 0;
  std::vector<uint32_t> ready_api_corr_, ready_link_;
  std::vector<int64_t> ready_seq_;
  uint32_t held_api_corr_ = kNoId, held_link_ = kNoId;
  int64_t held_seq_ = kNoSeq;
  size_t link_limit_ = 1024, open_ranges_ = 0;

  CorrelationWindow corr_;  // correlation id -> node of its (last) call
  uint32_t gpu_floor_ = 0;  // smallest id of the GPU rows not yet released (0: not known yet)
  bool gpu_done_ = false;
};

}  // namespace

std::vector<Attribution> stream_attribution(ChunkSource& chunks, const std::vector<AttributionWindow>& windows,
                                            const std::vector<KernelInfo>& kernel_info, AttributionStreamStats* stats) {
  Attributor a(chunks, windows, kernel_info);
  std::vector<Attribution> out = a.run();
  if (stats) *stats = a.stats;
  return out;
}

}  // namespace scalescope::analyze
