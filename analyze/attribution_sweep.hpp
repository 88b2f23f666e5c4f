#pragma once
// Private: the pieces of attribution (attribution.cpp) that its sweep over a
// rank's chunks (attribution_stream.cpp) runs:
//   NameCache    what an NVTX row's (domain, text) means (its name key, kind, seq)
//   RangeStacks  the stacks of open host ranges per thread and the trie of
//                paths; ranges and API calls are fed in one time order
//   ShareSweep   each instant of GPU busy time shared among the work running then
//   WindowSummary the per-node sums of one window and the Attribution made of them
#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/attribution_detail.hpp"

namespace scalescope::analyze::detail {

// What each (domain, text) of the NVTX table means for attribution. Name keys
// are given in order of first get(): callers ask for every range row in
// table order, so that keys (and with them ties in the tables) do not depend
// on how the rows are read.
class NameCache {
 public:
  NameCache(const trace::StringTable& strings, LaunchPaths& p);
  struct Info {
    uint32_t key = 0;
    RangeKind kind = RangeKind::kRange;
    bool skip = true;
    bool backward_node = false;
    int64_t seq = -1;
  };
  // Once per NVTX row: a flat table by text id answers, the hash map only
  // when one text appears under two domains.
  const Info& get(trace::StringId domain, trace::StringId text) {
    if (text < by_text_.size() && by_text_[text].domain == domain) return by_text_[text].info;
    return get_slow(domain, text);
  }
  // The NVTX row's meaning when it is a host range here, else nullptr.
  const Info* range_info(const trace::NvtxTable& nv, size_t i) {
    if (nv.kind[i] != trace::NvtxKind::kRange || nv.device[i] >= 0 || nv.end[i] < nv.start[i]) return nullptr;
    const Info& info = get(nv.domain[i], nv.text[i]);
    return info.skip ? nullptr : &info;
  }

 private:
  const Info& get_slow(trace::StringId domain, trace::StringId text);
  uint32_t key_of(const std::string& name, RangeKind kind);
  Info make(std::string_view domain, std::string_view text);

  static constexpr trace::StringId kNoDomain = std::numeric_limits<trace::StringId>::max();
  struct ByText {
    trace::StringId domain = kNoDomain;
    Info info;
  };
  const trace::StringTable& strings_;
  LaunchPaths& p_;
  std::vector<ByText> by_text_;
  std::unordered_map<uint64_t, Info> cache_;
  std::unordered_map<std::string, uint32_t> keys_;
};

// A host range as RangeStacks takes it.
struct HostRange {
  trace::Timestamp start, end;
  uint32_t row;  // in the NVTX table
  uint32_t thread, link;
  const NameCache::Info* info;
};

// A range whose stack entry was popped: its children are all known.
struct FinishedRange {
  trace::Timestamp start;
  uint32_t row, node;
  int64_t duration;  // end cut at the parent's end, less the start
  int64_t child_ns;  // time of the ranges directly inside
};

// The stacks of open ranges per thread. Ranges and API calls must come in
// one order: by start, ranges before calls where starts tie, ranges by end
// (latest first) then row, calls by row. Each range is handed to `done` when
// its entry leaves the stack (a later event on its thread starts at or after
// its end, or finish()).
class RangeStacks {
 public:
  RangeStacks(LaunchPaths& p, bool use_links, bool use_seq);

  template <typename Done>
  void push_range(const HostRange& r, Done&& done);
  // The node of the ranges open on `thread` at `start` (0: none).
  template <typename Done>
  uint32_t launch_node(uint32_t thread, trace::Timestamp start, Done&& done) {
    auto& s = stack_of(thread);
    pop_ended(s, start, done);
    return s.empty() ? 0 : s.back().node;
  }
  template <typename Done>
  void finish(Done&& done) {
    for (auto& [thread, s] : stacks_) pop_ended(s, std::numeric_limits<trace::Timestamp>::max(), done);
  }
  // Forgets the forward contexts of links (seq numbers) below `min`: no range
  // still to come carries one (the caller knows), so none is looked up again.
  void forget_links_below(uint32_t min);
  void forget_seqs_below(int64_t min);
  size_t link_entries() const { return link_ctx_.size(); }
  size_t seq_entries() const { return seq_ctx_.size(); }

 private:
  struct StackEntry {
    trace::Timestamp start, end;
    uint32_t row;
    uint32_t node;
    uint32_t ctx;         // innermost module/range node at or above this entry (forward context)
    bool rerooted_below;  // this entry or an ancestor was placed under a forward context
    bool backward_below;  // ... or is a backward node: its seq numbers are not forward ones
    int64_t child_ns;
  };
  uint32_t child(uint32_t parent, uint32_t key, RangeKind kind);
  size_t slot_of(uint64_t k) const;
  void grow();
  std::vector<StackEntry>& stack_of(uint32_t thread) {
    if (last_stack_ && thread == last_thread_) return *last_stack_;
    last_thread_ = thread;
    last_stack_ = &stacks_[thread];
    return *last_stack_;
  }
  template <typename Done>
  static void pop_ended(std::vector<StackEntry>& s, trace::Timestamp t, Done&& done) {
    while (!s.empty() && s.back().end <= t) {
      const StackEntry& e = s.back();
      done(FinishedRange{e.start, e.row, e.node, e.end - e.start, e.child_ns});
      s.pop_back();
    }
  }

  LaunchPaths& p_;
  struct Slot {
    uint64_t key = 0;
    uint32_t node = kNoParent;
  };
  std::vector<Slot> slots_;  // (parent << 32 | name key) -> child node
  std::unordered_map<uint32_t, std::vector<StackEntry>> stacks_;
  uint32_t last_thread_ = 0;
  std::vector<StackEntry>* last_stack_ = nullptr;
  bool use_links_ = false, use_seq_ = false;
  std::unordered_map<uint32_t, uint32_t> link_ctx_;  // link id -> forward context node
  std::unordered_map<int64_t, uint32_t> seq_ctx_;    // emit_nvtx seq -> forward context node
};

template <typename Done>
void RangeStacks::push_range(const HostRange& r, Done&& done) {
  const NameCache::Info& info = *r.info;
  auto& s = stack_of(r.thread);
  pop_ended(s, r.start, done);
  StackEntry* parent = s.empty() ? nullptr : &s.back();
  // A range that outlives its parent on the same thread (rounding, or a
  // start/end range) is cut at the parent's end: stacks stay nested.
  const trace::Timestamp end = parent ? std::min(r.end, parent->end) : r.end;
  const uint32_t parent_node = parent ? parent->node : 0;
  const uint32_t parent_ctx = parent ? parent->ctx : 0;
  const bool rerooted_below = parent && parent->rerooted_below;
  const bool backward_below = parent && parent->backward_below;

  // A backward range linked to the forward range that made it goes under the
  // forward range's module, then the backward thread's own ranges.
  bool target = false;
  uint32_t forward_ctx = 0;
  if (use_links_ && r.link != 0) {
    if (auto it = link_ctx_.find(r.link); it != link_ctx_.end()) {
      target = true;
      forward_ctx = it->second;
    }
  } else if (use_seq_ && info.backward_node && info.seq >= 0) {
    // Inside "autograd::engine::evaluate_function: XBackward0" (no seq of its
    // own) the node's range "XBackward0, seq = N" carries the link.
    if (auto it = seq_ctx_.find(info.seq); it != seq_ctx_.end()) {
      target = true;
      forward_ctx = it->second;
    }
  }
  uint32_t node = 0, ctx = 0;
  const bool reroot = target && !rerooted_below;
  if (reroot) {
    uint32_t n = child(forward_ctx, 1, RangeKind::kBackward);
    ctx = n;
    for (const StackEntry& e : s) n = child(n, p_.nodes[e.node].name, p_.nodes[e.node].kind);
    node = child(n, info.key, info.kind);
    ++p_.backward_links;
  } else {
    node = child(parent_node, info.key, info.kind);
    ctx = info.kind == RangeKind::kOperator ? parent_ctx : node;
  }
  if (use_links_ && r.link != 0 && !target)
    link_ctx_.emplace(r.link, info.kind == RangeKind::kOperator ? parent_ctx : node);
  if (use_seq_ && info.seq >= 0 && !info.backward_node && !backward_below)
    seq_ctx_[info.seq] = info.kind == RangeKind::kOperator ? parent_ctx : node;

  if (parent) parent->child_ns += end - r.start;
  s.push_back(
      {r.start, end, r.row, node, ctx, rerooted_below || reroot, backward_below || reroot || info.backward_node, 0});
}

// ---- summary of one window -----------------------------------------------

// One piece of GPU work in the window (start and end cut to it).
struct Work {
  trace::Timestamp start, end;
  uint32_t node;
  uint32_t kernel_name;  // kNoLaunch for copies and sets
};

// Shares [start, end) of every piece of work so that each instant of GPU busy
// time goes in equal parts to the work running then: the shares add up to
// the union exactly (remainders of a split go to one of the running pieces).
// Work is pushed in start order and handed to `done(work, tag, share)` when
// it ends; only the pieces running at once are held, not one entry per piece
// (on a 10 M-event trace per-piece arrays were most of attribution's cost:
// fresh pages, written once).
template <typename Tag>
class ShareSweep {
 public:
  template <typename Done>
  void push(const Work& w, Tag tag, Done&& done) {
    while (!ends_.empty() && ends_.top().end <= w.start) finish_top(done);
    advance(w.start);
    uint32_t slot = 0;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(running_.size());
      running_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    running_[slot] = {w, tag, per_piece_, 0, static_cast<uint32_t>(active_.size())};
    active_.push_back(slot);
    ends_.push({w.end, seq_++, slot});
  }
  template <typename Done>
  void finish_all(Done&& done) {
    while (!ends_.empty()) finish_top(done);
  }
  uint32_t pushed() const { return seq_; }

 private:
  struct Running {
    Work work;
    Tag tag;
    int64_t base;   // per_piece_ when it started
    int64_t extra;  // remainders handed to it
    uint32_t pos;   // in active_
  };
  struct End {
    trace::Timestamp end;
    uint32_t seq;  // start order: ties end in start order
    uint32_t slot;
    bool operator>(const End& o) const { return end != o.end ? end > o.end : seq > o.seq; }
  };
  void advance(trace::Timestamp t) {
    if (!active_.empty() && t > now_) {
      const int64_t dt = t - now_, k = static_cast<int64_t>(active_.size());
      per_piece_ += dt / k;
      running_[active_.front()].extra += dt % k;
    }
    now_ = std::max(now_, t);
  }
  template <typename Done>
  void finish_top(Done&& done) {
    const End e = ends_.top();
    ends_.pop();
    advance(e.end);
    Running& r = running_[e.slot];
    const uint32_t last = active_.back();
    active_[r.pos] = last;
    running_[last].pos = r.pos;
    active_.pop_back();
    free_.push_back(e.slot);
    done(r.work, r.tag, per_piece_ - r.base + r.extra);
  }

  std::vector<Running> running_;  // slots, reused
  std::vector<uint32_t> free_, active_;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends_;
  int64_t per_piece_ = 0;  // floor shares handed to every running piece so far
  trace::Timestamp now_ = std::numeric_limits<trace::Timestamp>::min();
  uint32_t seq_ = 0;
};

// The sums of one window, per node of the trie (grown as nodes appear), and
// the Attribution made of them. Work comes in start order (push order of a
// ShareSweep); ranges in any order.
class WindowSummary {
 public:
  static constexpr uint32_t kNoIteration = kNoParent;
  WindowSummary(trace::Timestamp ws, trace::Timestamp we, bool whole_trace, const std::vector<Iteration>& iterations);
  trace::Timestamp window_start() const { return ws_; }
  trace::Timestamp window_end() const { return we_; }
  // A GPU row lies in the window (WorkCursor's rule).
  bool in_window(trace::Timestamp s, trace::Timestamp e) const { return e >= ws_ && s <= we_ && e >= s; }
  // The iteration a piece of work starts in; pieces must come in start order.
  uint32_t iteration_of(trace::Timestamp start);
  // A kernel of a kind the advisor asks about (layout, FP32 without tensor cores, tiny).
  void classify(const Work& w, const std::vector<KernelInfo>& kernel_info);
  // A piece's share of busy time, when it ends.
  void done(const Work& w, uint32_t iteration, int64_t share);
  // A range's call and CPU time, counted when it starts in the window.
  void add_range(const FinishedRange& r);
  // activities: pieces pushed; gpu_rows / api_rows: the trace's (for availability).
  Attribution finish(const LaunchPaths& p, int64_t activities, uint64_t gpu_rows, uint64_t api_rows);

 private:
  using NodeTotals = std::vector<std::pair<int64_t, int64_t>>;  // (count, summed ns)
  struct IterationNodeShare {
    uint32_t iteration, node;
    int64_t gpu_ns;
  };
  void ensure(uint32_t v) {
    if (v >= node_gpu_.size()) grow_to(v + 1);
  }
  void grow_to(size_t n);
  std::vector<AttributionRow> sum_rows_per_name(const LaunchPaths& p, Attribution& out) const;
  // Returns the names (keys) of the operator rows.
  std::vector<uint32_t> add_operator_and_range_rows(const LaunchPaths& p, std::vector<AttributionRow>& rows,
                                                    Attribution& out) const;
  void add_tree(const LaunchPaths& p, Attribution& out) const;
  void add_top_operators_per_iteration(const LaunchPaths& p, const std::vector<uint32_t>& operator_keys,
                                       Attribution& out) const;

  trace::Timestamp ws_, we_;
  bool whole_trace_;
  Attribution out_;
  int64_t iteration_count_ = 0;
  size_t k_ = 0;  // iteration_of's cursor
  std::vector<int64_t> node_gpu_, node_sum_, node_kernels_;
  std::vector<int64_t> node_calls_, node_cpu_, node_self_cpu_;
  NodeTotals layout_, fp32_, tiny_;  // by node; the no-launch totals apart
  std::pair<int64_t, int64_t> no_launch_layout_{}, no_launch_fp32_{}, no_launch_tiny_{};
  std::vector<IterationNodeShare> iteration_shares_;
  std::vector<uint32_t> last_share_;  // node -> its latest entry in iteration_shares_
};

}  // namespace scalescope::analyze::detail
