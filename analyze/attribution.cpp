// GPU time by operator, module and range (docs/attribution.md).
//
// Two steps. launch_paths() runs once per trace: one sweep over the host
// ranges and the API calls in time order, with a stack of open ranges per
// thread, gives every API call the path of ranges open around it (a node of a
// trie of paths); the GPU work takes its launch call's path through the
// correlation id. summarize_attribution() runs per window (the whole trace and
// the steady iterations): it shares the GPU busy time among the work running
// at each instant and adds it up per path node, name and iteration.
#include "analyze/attribution_detail.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "analyze/intervals.hpp"

namespace scalescope::analyze {

std::string_view to_string(RangeKind k) {
  switch (k) {
    case RangeKind::kOperator: return "operator";
    case RangeKind::kModule: return "module";
    case RangeKind::kRange: return "range";
    case RangeKind::kBackward: return "backward";
  }
  return "range";
}

namespace detail {
namespace {

using trace::Timestamp;

bool ends_with_backward_n(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  return i < s.size() && s.substr(0, i).ends_with("Backward");
}

}  // namespace

ParsedRange parse_range_text(std::string_view text) {
  ParsedRange p;
  // emit_nvtx decorations: "aten::addmm, seq = 12, op_id = 3, sizes = [[2, 3]]",
  // backward: "MulBackward0, stashed seq=7" (older) or "MulBackward0, seq = 7".
  size_t cut = std::string_view::npos;
  for (std::string_view marker : {", seq", ", stashed seq", ", op_id = ", ", sizes = ", ", input_op_ids = "})
    cut = std::min(cut, text.find(marker));
  std::string_view name = text.substr(0, cut);
  if (cut != std::string_view::npos) {
    p.decorated = true;
    std::string_view rest = text.substr(cut);
    p.stashed = rest.find("stashed seq") != std::string_view::npos;
    if (size_t s = rest.find("seq"); s != std::string_view::npos) {
      size_t i = s + 3;
      while (i < rest.size() && rest[i] == ' ') ++i;
      if (i < rest.size() && rest[i] == '=') {
        ++i;
        while (i < rest.size() && rest[i] == ' ') ++i;
        int64_t v = 0;
        size_t digits = 0;
        for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9' && digits < 18; ++i, ++digits)
          v = v * 10 + (rest[i] - '0');
        if (digits > 0) p.seq = v;
      }
    }
  }
  // "ProfilerStep#12" -> "ProfilerStep#N": one row for all steps.
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i < name.size() && i > 0 && name[i - 1] == '#') {
    p.name.assign(name.substr(0, i));
    p.name += 'N';
  } else {
    p.name.assign(name);
  }
  p.backward_node = p.stashed || ends_with_backward_n(name);
  p.operator_like = p.decorated || p.backward_node || name.find("::") != std::string_view::npos;
  return p;
}

namespace {

// What each (domain, text) of the NVTX table means for attribution.
class NameCache {
 public:
  NameCache(const trace::Trace& t, LaunchPaths& p) : t_(t), p_(p), by_text_(t.strings.size()) {
    // Key 0: the root; key 1: the backward marker.
    key_of("(all GPU work)", RangeKind::kRange);
    key_of("(backward)", RangeKind::kBackward);
  }
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
    const uint64_t k = (uint64_t{domain} << 32) | text;
    auto it = cache_.find(k);
    if (it == cache_.end()) it = cache_.emplace(k, make(t_.strings.view(domain), t_.strings.view(text))).first;
    if (text < by_text_.size() && by_text_[text].domain == kNoDomain) by_text_[text] = {domain, it->second};
    return it->second;
  }
  uint32_t key_of(const std::string& name, RangeKind kind) {
    std::string k(1, static_cast<char>('0' + static_cast<int>(kind)));
    k += name;
    auto [it, inserted] = keys_.try_emplace(std::move(k), static_cast<uint32_t>(p_.names.size()));
    if (inserted) {
      p_.names.push_back(name);
      p_.name_kinds.push_back(kind);
    }
    return it->second;
  }

 private:
  Info make(std::string_view domain, std::string_view text) {
    Info info;
    ParsedRange parsed = parse_range_text(text);
    if (domain == "gpu_user_annotation") return info;  // a projection onto the GPU, not a host range
    if (domain == "python_function") {
      // Python frames (with_stack) are not ranges here, except modules.
      if (!text.starts_with("nn.Module: ")) return info;
      info.kind = RangeKind::kModule;
    } else if (domain == "cpu_op") {
      info.kind = RangeKind::kOperator;
    } else if (domain == "user_annotation") {
      info.kind = RangeKind::kRange;
    } else {
      // NVTX of any other domain (collector traces): emit_nvtx operator ranges
      // are recognized by their decorations and names.
      info.kind = parsed.operator_like ? RangeKind::kOperator : RangeKind::kRange;
      info.seq = parsed.seq;
      info.backward_node = parsed.backward_node;
    }
    info.skip = false;
    info.key = key_of(parsed.name, info.kind);
    return info;
  }

  static constexpr trace::StringId kNoDomain = std::numeric_limits<trace::StringId>::max();
  struct ByText {
    trace::StringId domain = kNoDomain;
    Info info;
  };
  const trace::Trace& t_;
  LaunchPaths& p_;
  std::vector<ByText> by_text_;
  std::unordered_map<uint64_t, Info> cache_;
  std::unordered_map<std::string, uint32_t> keys_;
};

// correlation id -> path node + 1 (0: no API call). Dense when the ids are
// (CUPTI's and Kineto's counters), a hash map otherwise.
class CorrelationMap {
 public:
  explicit CorrelationMap(const trace::ApiTable& a) {
    uint32_t max_id = 0;
    for (uint32_t c : a.correlation) max_id = std::max(max_id, c);
    dense_ = uint64_t{max_id} <= 4 * uint64_t{a.size()} + (uint64_t{1} << 20);
    if (dense_) values_.assign(size_t{max_id} + 1, 0);
  }
  void set(uint32_t corr, uint32_t node) {
    if (dense_) values_[corr] = node + 1;
    else sparse_[corr] = node + 1;
  }
  uint32_t node_of(uint32_t corr) const {  // kNoLaunch when unknown
    uint32_t v = 0;
    if (corr == 0) return kNoLaunch;
    if (dense_) {
      if (corr < values_.size()) v = values_[corr];
    } else if (auto it = sparse_.find(corr); it != sparse_.end()) {
      v = it->second;
    }
    return v == 0 ? kNoLaunch : v - 1;
  }

 private:
  bool dense_ = true;
  std::vector<uint32_t> values_;
  std::unordered_map<uint32_t, uint32_t> sparse_;
};

struct StackEntry {
  Timestamp end;
  uint32_t node;
  uint32_t ctx;  // innermost module/range node at or above this entry (forward context)
  uint32_t instance;
  bool rerooted_below;  // this entry or an ancestor was placed under a forward context
  bool backward_below;  // ... or is a backward node: its seq numbers are not forward ones
};

class PathBuilder {
 public:
  PathBuilder(const trace::Trace& t, LaunchPaths& p) : t_(t), p_(p), names_(t, p) {
    p_.nodes.push_back({kNoParent, 0, RangeKind::kRange});
  }

  void run();

 private:
  // The node under `parent` for the range name `key`, made on first use.
  // Once per range (300k on the real trace): an open-addressing table of the
  // (parent, key) pairs, a quarter full at most, instead of a node-based map.
  uint32_t child(uint32_t parent, uint32_t key, RangeKind kind) {
    const uint64_t k = (uint64_t{parent} << 32) | key;
    if (4 * (p_.nodes.size() + 1) > slots_.size()) grow();
    size_t i = slot_of(k);
    if (slots_[i].node == kNoParent) {
      slots_[i] = {k, static_cast<uint32_t>(p_.nodes.size())};
      p_.nodes.push_back({parent, key, kind});
    }
    return slots_[i].node;
  }
  size_t slot_of(uint64_t k) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (slots_[i].node != kNoParent && slots_[i].key != k) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const Slot& e : old)
      if (e.node != kNoParent) slots_[slot_of(e.key)] = e;
  }
  std::vector<StackEntry>& stack_of(uint32_t thread) {
    if (last_stack_ && thread == last_thread_) return *last_stack_;
    last_thread_ = thread;
    last_stack_ = &stacks_[thread];
    return *last_stack_;
  }
  static void pop_ended(std::vector<StackEntry>& s, Timestamp t) {
    while (!s.empty() && s.back().end <= t) s.pop_back();
  }
  void push_range(size_t i, const NameCache::Info& info);
  void launch(size_t i);

  const trace::Trace& t_;
  LaunchPaths& p_;
  NameCache names_;
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
  CorrelationMap* corr_ = nullptr;
};

void PathBuilder::push_range(size_t i, const NameCache::Info& info) {
  const auto& nv = t_.nvtx;
  const Timestamp start = nv.start[i];
  auto& s = stack_of(nv.thread[i]);
  pop_ended(s, start);
  const StackEntry* parent = s.empty() ? nullptr : &s.back();
  // A range that outlives its parent on the same thread (rounding, or a
  // start/end range) is cut at the parent's end: stacks stay nested.
  const Timestamp end = parent ? std::min(nv.end[i], parent->end) : nv.end[i];
  const uint32_t parent_node = parent ? parent->node : 0;
  const uint32_t parent_ctx = parent ? parent->ctx : 0;
  const bool rerooted_below = parent && parent->rerooted_below;
  const bool backward_below = parent && parent->backward_below;

  // A backward range linked to the forward range that made it goes under the
  // forward range's module, then the backward thread's own ranges.
  bool target = false;
  uint32_t forward_ctx = 0;
  const uint32_t link = nv.link[i];
  if (use_links_ && link != 0) {
    if (auto it = link_ctx_.find(link); it != link_ctx_.end()) {
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
  if (use_links_ && link != 0 && !target)
    link_ctx_.emplace(link, info.kind == RangeKind::kOperator ? parent_ctx : node);
  if (use_seq_ && info.seq >= 0 && !info.backward_node && !backward_below)
    seq_ctx_[info.seq] = info.kind == RangeKind::kOperator ? parent_ctx : node;

  const auto instance = static_cast<uint32_t>(p_.instances.size());
  p_.instances.push_back({static_cast<uint32_t>(i), node, end - start, 0});
  if (parent) p_.instances[parent->instance].child_ns += end - start;
  s.push_back({end, node, ctx, instance, rerooted_below || reroot, backward_below || reroot || info.backward_node});
}

void PathBuilder::launch(size_t i) {
  const auto& a = t_.api;
  if (a.correlation[i] == 0) return;
  auto& s = stack_of(a.thread[i]);
  pop_ended(s, a.start[i]);
  corr_->set(a.correlation[i], s.empty() ? 0 : s.back().node);
}

void PathBuilder::run() {
  const auto& nv = t_.nvtx;
  // The host ranges: NVTX ranges on a thread whose name means a range here.
  auto info_of = [&](size_t i) -> const NameCache::Info* {
    if (nv.kind[i] != trace::NvtxKind::kRange || nv.device[i] >= 0 || nv.end[i] < nv.start[i]) return nullptr;
    const NameCache::Info& info = names_.get(nv.domain[i], nv.text[i]);
    return info.skip ? nullptr : &info;
  };
  // First pass: which link the trace carries, and how many ranges there are
  // (the instances are reserved once: 300k on the real trace).
  bool any_link = false, any_seq = false;
  size_t range_count = 0;
  for (size_t i = 0; i < nv.size(); ++i) {
    const NameCache::Info* info = info_of(i);
    if (!info) continue;
    ++range_count;
    any_link |= nv.link[i] != 0;
    any_seq |= info->seq >= 0;
  }
  use_links_ = any_link;
  use_seq_ = !any_link && any_seq;
  p_.link_source = use_links_ ? "fwdbwd flows" : use_seq_ ? "emit_nvtx seq" : "";
  p_.any_ranges = range_count > 0;
  p_.instances.reserve(range_count);

  // The ranges in start order, outer ranges first where starts tie, so that
  // they enclose the inner ones. Imported tables are already in start order
  // (the importer sorts them): then only each run of equal starts is sorted,
  // in a small buffer, instead of an index of every range.
  auto outer_first = [&](uint32_t x, uint32_t y) {
    return nv.start[x] != nv.start[y] ? nv.start[x] < nv.start[y]
           : nv.end[x] != nv.end[y]   ? nv.end[x] > nv.end[y]
                                      : x < y;
  };
  const bool nvtx_sorted = std::is_sorted(nv.start.begin(), nv.start.end());
  std::vector<uint32_t> order;  // all ranges (unsorted table) or one run of equal starts
  size_t row = 0, next = 0;     // sorted table: the next row to look at; position in order
  if (!nvtx_sorted) {
    order.reserve(range_count);
    for (size_t i = 0; i < nv.size(); ++i)
      if (info_of(i)) order.push_back(static_cast<uint32_t>(i));
    std::sort(order.begin(), order.end(), outer_first);
  }
  auto next_range = [&]() -> int64_t {  // -1 when none is left
    if (!nvtx_sorted || next < order.size()) return next < order.size() ? int64_t{order[next++]} : int64_t{-1};
    order.clear();
    next = 0;
    while (row < nv.size() && !info_of(row)) ++row;
    if (row == nv.size()) return -1;
    const Timestamp start = nv.start[row];
    for (; row < nv.size() && nv.start[row] == start; ++row)
      if (info_of(row)) order.push_back(static_cast<uint32_t>(row));
    if (order.size() > 1) std::sort(order.begin(), order.end(), outer_first);
    return order[next++];
  };

  const auto& a = t_.api;
  std::vector<uint32_t> calls;
  const bool api_sorted = std::is_sorted(a.start.begin(), a.start.end());
  if (!api_sorted) {
    calls.resize(a.size());
    for (uint32_t i = 0; i < calls.size(); ++i) calls[i] = i;
    std::stable_sort(calls.begin(), calls.end(), [&](uint32_t x, uint32_t y) { return a.start[x] < a.start[y]; });
  }
  CorrelationMap corr(a);
  corr_ = &corr;
  // One merge in time order: a range that starts at the same time as a call encloses it.
  int64_t r = next_range();
  size_t c = 0;
  while (r >= 0 || c < a.size()) {
    const size_t call = c < a.size() ? (api_sorted ? c : calls[c]) : 0;
    if (r >= 0 && (c >= a.size() || nv.start[static_cast<size_t>(r)] <= a.start[call])) {
      push_range(static_cast<size_t>(r), *info_of(static_cast<size_t>(r)));
      r = next_range();
    } else {
      launch(call);
      ++c;
    }
  }
  auto fill = [&](std::vector<uint32_t>& out, const std::vector<uint32_t>& correlation) {
    out.resize(correlation.size());
    for (size_t i = 0; i < correlation.size(); ++i) out[i] = corr.node_of(correlation[i]);
  };
  fill(p_.kernel_node, t_.kernels.correlation);
  fill(p_.memcpy_node, t_.memcpys.correlation);
  fill(p_.memset_node, t_.memsets.correlation);
}

// ---- summary of one window -----------------------------------------------

// One piece of GPU work in the window (start and end cut to it).
struct Work {
  Timestamp start, end;
  uint32_t node;
  uint32_t kernel_name;  // kNoLaunch for copies and sets
};

// The rows of one table (kernels, copies or sets) that overlap the window, in
// order of their start cut to the window; rows with equal starts keep their
// table order. Imported and collected tables are sorted by start already:
// then this walks the columns in place; otherwise it sorts an index once.
class WorkCursor {
 public:
  WorkCursor(const std::vector<Timestamp>& start, const std::vector<Timestamp>& end, const std::vector<uint32_t>& node,
             const std::vector<trace::StringId>* names, Timestamp ws, Timestamp we)
      : start_(start), end_(end), node_(node), names_(names), ws_(ws), we_(we) {
    if (!std::is_sorted(start.begin(), start.end())) {
      for (uint32_t i = 0; i < start.size(); ++i)
        if (in_window(i)) order_.push_back(i);
      std::stable_sort(order_.begin(), order_.end(),
                       [&](uint32_t x, uint32_t y) { return std::max(start_[x], ws_) < std::max(start_[y], ws_); });
      sorted_ = false;
    }
    skip();
  }
  bool done() const { return sorted_ ? i_ >= start_.size() : i_ >= order_.size(); }
  Timestamp start() const { return std::max(start_[row()], ws_); }
  Work take() {
    const size_t r = row();
    const Work w{std::max(start_[r], ws_), std::min(end_[r], we_), node_[r], names_ ? (*names_)[r] : kNoLaunch};
    ++i_;
    skip();
    return w;
  }

 private:
  bool in_window(size_t r) const { return end_[r] >= ws_ && start_[r] <= we_ && end_[r] >= start_[r]; }
  size_t row() const { return sorted_ ? i_ : order_[i_]; }
  void skip() {
    if (sorted_)
      while (i_ < start_.size() && !in_window(i_)) ++i_;
  }
  const std::vector<Timestamp>& start_;
  const std::vector<Timestamp>& end_;
  const std::vector<uint32_t>& node_;
  const std::vector<trace::StringId>* names_;
  Timestamp ws_, we_;
  bool sorted_ = true;
  size_t i_ = 0;
  std::vector<uint32_t> order_;
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
    Timestamp end;
    uint32_t seq;  // start order: ties end in start order
    uint32_t slot;
    bool operator>(const End& o) const { return end != o.end ? end > o.end : seq > o.seq; }
  };
  void advance(Timestamp t) {
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
  Timestamp now_ = std::numeric_limits<Timestamp>::min();
  uint32_t seq_ = 0;
};

}  // namespace

std::shared_ptr<const LaunchPaths> launch_paths(const trace::Trace& t) {
  auto p = std::make_shared<LaunchPaths>();
  PathBuilder(t, *p).run();
  return p;
}

// The innermost operator and module/range of a node's path.
std::pair<uint32_t, uint32_t> responsible_keys(const LaunchPaths& p, uint32_t v) {
  uint32_t op = 0, module = 0;
  for (uint32_t u = v; u != 0 && u != kNoParent && u != kNoLaunch; u = p.nodes[u].parent) {
    const PathNode& n = p.nodes[u];
    if (n.kind == RangeKind::kOperator && op == 0) op = n.name;
    if ((n.kind == RangeKind::kModule || n.kind == RangeKind::kRange) && module == 0) module = n.name;
    if (op != 0 && module != 0) break;
  }
  return {op, module};
}

// Kernels of one kind by launching node: (count, summed ns); the last entry
// stands for work without a launch call.
using NodeTotals = std::vector<std::pair<int64_t, int64_t>>;

std::vector<ResponsibleOperator> top_responsible(const LaunchPaths& p, const NodeTotals& by_node, bool by_count) {
  std::unordered_map<uint64_t, ResponsibleOperator> groups;
  for (size_t node = 0; node < by_node.size(); ++node) {
    const auto& totals = by_node[node];
    if (totals.first == 0) continue;
    const auto [op, module] = node + 1 == by_node.size() ? std::pair<uint32_t, uint32_t>{0, 0}
                                                         : responsible_keys(p, static_cast<uint32_t>(node));
    ResponsibleOperator& g = groups[(uint64_t{op} << 32) | module];
    g.name = op ? p.names[op] : std::string();
    g.module = module ? p.names[module] : std::string();
    g.count += totals.first;
    g.sum_ns += totals.second;
  }
  std::vector<ResponsibleOperator> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  std::sort(out.begin(), out.end(), [&](const ResponsibleOperator& x, const ResponsibleOperator& y) {
    const int64_t a = by_count ? x.count : x.sum_ns, b = by_count ? y.count : y.sum_ns;
    return a != b ? a > b : std::tie(x.name, x.module) < std::tie(y.name, y.module);
  });
  if (out.size() > 5) out.resize(5);
  return out;
}

// GPU time of one iteration under one node: partial sums, added up at the end
// (a node's work may end out of iteration order, so one pair may appear twice).
struct IterationNodeShare {
  uint32_t iteration, node;
  int64_t gpu_ns;
};

Attribution summarize_attribution(const trace::Trace& t, const LaunchPaths& p, Timestamp ws, Timestamp we,
                                  bool whole_trace, const std::vector<Iteration>& iterations,
                                  const std::vector<KernelInfo>& kernel_info) {
  Attribution out;
  const int64_t wall = std::max<int64_t>(0, we - ws);
  const size_t node_count = p.nodes.size();
  int64_t iteration_count = 0;
  for (const Iteration& it : iterations)
    if (it.start >= ws && it.end <= we) ++iteration_count;
  out.iteration_count = iteration_count;
  if (iteration_count > 0) {
    for (const Iteration& it : iterations) {
      if (it.start < ws || it.end > we) continue;
      AttributionIteration ai;
      ai.start = it.start;
      ai.end = it.end;
      out.iterations.push_back(std::move(ai));
    }
  }

  // ---- one sweep over the window's GPU work in start order -------------------
  // Kernels, then copies, then sets where starts tie. Each piece's share of
  // busy time goes to its path node and iteration when it ends.
  std::vector<int64_t> node_gpu(node_count, 0), node_sum(node_count, 0), node_kernels(node_count, 0);
  NodeTotals layout(node_count + 1), fp32(node_count + 1), tiny(node_count + 1);  // kernels the advisor asks about
  std::vector<IterationNodeShare> iteration_shares;
  std::vector<uint32_t> last_share(node_count, kNoParent);  // node -> its latest entry in iteration_shares
  constexpr uint32_t kNoIteration = kNoParent;
  auto done = [&](const Work& w, uint32_t iteration, int64_t s) {
    out.busy_ns += s;
    const bool launched = w.node != kNoLaunch;
    const uint32_t v = launched ? w.node : 0;  // the root's self time is all unattributed work
    if (!launched) out.no_launch_ns += s;
    else if (v == 0) out.outside_ranges_ns += s;
    if (v == 0) ++out.unattributed_activities;
    node_gpu[v] += s;
    node_sum[v] += w.end - w.start;
    ++node_kernels[v];
    if (iteration == kNoIteration) return;
    AttributionIteration& ai = out.iterations[iteration];
    ai.busy_ns += s;
    if (v == 0) return;
    ai.attributed_ns += s;
    const uint32_t e = last_share[v];
    if (e != kNoParent && iteration_shares[e].iteration == iteration) {
      iteration_shares[e].gpu_ns += s;
    } else {
      last_share[v] = static_cast<uint32_t>(iteration_shares.size());
      iteration_shares.push_back({iteration, v, s});
    }
  };
  {
    WorkCursor cursors[3] = {{t.kernels.start, t.kernels.end, p.kernel_node, &t.kernels.name, ws, we},
                             {t.memcpys.start, t.memcpys.end, p.memcpy_node, nullptr, ws, we},
                             {t.memsets.start, t.memsets.end, p.memset_node, nullptr, ws, we}};
    ShareSweep<uint32_t> sweep;
    size_t k = 0;  // the iteration the work starts in (work comes in start order)
    for (;;) {
      WorkCursor* next = nullptr;
      for (WorkCursor& c : cursors)
        if (!c.done() && (!next || c.start() < next->start())) next = &c;
      if (!next) break;
      const Work w = next->take();
      if (w.kernel_name != kNoLaunch && w.kernel_name < kernel_info.size()) {
        const KernelInfo& ki = kernel_info[w.kernel_name];
        const int64_t d = w.end - w.start;
        const size_t v = w.node == kNoLaunch ? node_count : w.node;
        auto add = [&](NodeTotals& m) {
          m[v].first += 1;
          m[v].second += d;
        };
        if (ki.layout_conversion) add(layout);
        if (ki.precision == Precision::kFp32NoTensor) add(fp32);
        if (d < Attribution::kTinyKernelNs) add(tiny);
      }
      uint32_t iteration = kNoIteration;
      if (iteration_count > 0) {
        while (k < out.iterations.size() && out.iterations[k].end <= w.start) ++k;
        if (k < out.iterations.size() && w.start >= out.iterations[k].start) iteration = static_cast<uint32_t>(k);
      }
      sweep.push(w, iteration, done);
    }
    sweep.finish_all(done);
    out.activities = sweep.pushed();
  }
  out.layout_conversions = top_responsible(p, layout, false);
  out.fp32_no_tensor = top_responsible(p, fp32, false);
  out.tiny_kernels = top_responsible(p, tiny, true);
  out.unattributed_ns = out.no_launch_ns + out.outside_ranges_ns;
  out.attributed_ns = out.busy_ns - out.unattributed_ns;

  // ---- per name: walk each node's path once -------------------------------
  const size_t name_count = p.names.size();
  std::vector<AttributionRow> rows(name_count);
  std::vector<uint32_t> stamp(name_count, kNoParent);
  for (size_t v = 0; v < node_count; ++v) {
    if (node_kernels[v] == 0) continue;
    bool op_found = false, range_found = false;
    for (uint32_t u = static_cast<uint32_t>(v); u != 0 && u != kNoParent; u = p.nodes[u].parent) {
      const PathNode& pn = p.nodes[u];
      if (pn.kind == RangeKind::kBackward) continue;
      AttributionRow& row = rows[pn.name];
      if (stamp[pn.name] != v) {
        stamp[pn.name] = static_cast<uint32_t>(v);
        row.gpu_ns += node_gpu[v];
        row.sum_ns += node_sum[v];
        row.kernels += node_kernels[v];
      }
      bool& found = pn.kind == RangeKind::kOperator ? op_found : range_found;
      if (!found) {
        found = true;
        row.self_gpu_ns += node_gpu[v];
        row.self_sum_ns += node_sum[v];
      }
    }
    if (!op_found) out.no_operator_ns += node_gpu[v];
    if (!range_found) out.no_range_ns += node_gpu[v];
  }
  // Calls and CPU time of the ranges that start in the window.
  std::vector<int8_t> recursive(node_count, -1);
  auto is_recursive = [&](uint32_t v) {
    if (recursive[v] < 0) {
      const uint32_t key = p.nodes[v].name;
      recursive[v] = 0;
      for (uint32_t u = p.nodes[v].parent; u != 0 && u != kNoParent; u = p.nodes[u].parent)
        if (p.nodes[u].name == key) {
          recursive[v] = 1;
          break;
        }
    }
    return recursive[v] == 1;
  };
  for (const RangeInstance& r : p.instances) {
    if (!whole_trace && (t.nvtx.start[r.row] < ws || t.nvtx.start[r.row] > we)) continue;
    AttributionRow& row = rows[p.nodes[r.node].name];
    row.calls += 1;
    row.self_cpu_ns += r.duration - r.child_ns;
    if (!is_recursive(r.node)) row.cpu_ns += r.duration;
  }
  std::vector<uint32_t> operator_keys;
  for (uint32_t key = 2; key < name_count; ++key) {
    AttributionRow& row = rows[key];
    if (row.calls == 0 && row.kernels == 0) continue;
    row.name = p.names[key];
    row.kind = p.name_kinds[key];
    row.step_fraction = wall > 0 ? static_cast<double>(row.gpu_ns) / static_cast<double>(wall) : 0;
    row.gpu_ns_per_iteration =
        iteration_count > 0 ? static_cast<double>(row.gpu_ns) / static_cast<double>(iteration_count) : 0;
    row.kernels_per_call = row.calls > 0 ? static_cast<double>(row.kernels) / static_cast<double>(row.calls) : 0;
    if (row.kind == RangeKind::kOperator) operator_keys.push_back(key);
    (row.kind == RangeKind::kOperator ? out.operators : out.ranges).push_back(row);
  }
  auto by_gpu = [](const AttributionRow& x, const AttributionRow& y) {
    if (x.gpu_ns != y.gpu_ns) return x.gpu_ns > y.gpu_ns;
    if (x.sum_ns != y.sum_ns) return x.sum_ns > y.sum_ns;
    return x.name < y.name;
  };
  std::sort(out.operators.begin(), out.operators.end(), by_gpu);
  std::sort(out.ranges.begin(), out.ranges.end(), by_gpu);

  // ---- the tree -------------------------------------------------------------
  std::vector<int64_t> incl_gpu = node_gpu, incl_kernels = node_kernels;
  for (size_t v = node_count; v-- > 1;) {
    incl_gpu[p.nodes[v].parent] += incl_gpu[v];
    incl_kernels[p.nodes[v].parent] += incl_kernels[v];
  }
  {
    std::vector<uint32_t> keep;
    for (uint32_t v = 1; v < node_count; ++v)
      if (incl_kernels[v] > 0) keep.push_back(v);
    if (keep.size() + 1 > Attribution::kMaxTreeNodes) {
      std::partial_sort(
          keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(Attribution::kMaxTreeNodes - 1), keep.end(),
          [&](uint32_t x, uint32_t y) { return incl_gpu[x] != incl_gpu[y] ? incl_gpu[x] > incl_gpu[y] : x < y; });
      keep.resize(Attribution::kMaxTreeNodes - 1);
    }
    std::vector<int32_t> index(node_count, -1);
    index[0] = 0;
    for (uint32_t v : keep)  // ancestors of a kept node are kept too
      for (uint32_t u = v; index[u] < 0; u = p.nodes[u].parent) index[u] = 1;
    int32_t next = 0;
    for (uint32_t v = 0; v < node_count; ++v) {
      if (index[v] < 0) continue;
      index[v] = next++;
      AttributionNode n;
      n.parent = v == 0 ? -1 : index[p.nodes[v].parent];
      n.name = p.names[p.nodes[v].name];
      n.kind = p.nodes[v].kind;
      n.gpu_ns = incl_gpu[v];
      n.self_gpu_ns = node_gpu[v];
      n.kernels = incl_kernels[v];
      out.tree.push_back(std::move(n));
    }
  }

  // ---- per iteration ----------------------------------------------------------
  if (iteration_count > 0) {
    const size_t top = std::min(Attribution::kTopIterationOperators, out.operators.size());
    std::vector<uint32_t> top_keys;
    for (size_t k = 0; k < top; ++k)
      for (uint32_t key : operator_keys)
        if (p.names[key] == out.operators[k].name) top_keys.push_back(key);
    std::vector<uint16_t> mask(node_count, 0);
    std::vector<int8_t> mask_done(node_count, 0);
    auto mask_of = [&](uint32_t v) {
      if (!mask_done[v]) {
        mask_done[v] = 1;
        for (uint32_t u = v; u != 0 && u != kNoParent; u = p.nodes[u].parent)
          for (size_t k = 0; k < top_keys.size(); ++k)
            if (p.nodes[u].name == top_keys[k]) mask[v] |= static_cast<uint16_t>(1u << k);
      }
      return mask[v];
    };
    for (AttributionIteration& ai : out.iterations) ai.top_operator_gpu_ns.assign(top_keys.size(), 0);
    for (const IterationNodeShare& e : iteration_shares) {
      const uint16_t m = mask_of(e.node);
      for (size_t b = 0; b < top_keys.size(); ++b)
        if (m & (1u << b)) out.iterations[e.iteration].top_operator_gpu_ns[b] += e.gpu_ns;
    }
  }

  out.backward_links = p.backward_links;
  out.link_source = p.link_source;
  if (out.activities == 0 && t.kernels.size() + t.memcpys.size() + t.memsets.size() == 0) {
    out.available = false;
    out.reason = "skipped: the trace has no kernels, copies or sets";
  } else if (!p.any_ranges) {
    out.available = false;
    out.reason =
        "skipped: the trace has no host ranges (NVTX, record_function or operator events) to charge GPU work to";
  } else if (t.api.size() == 0) {
    out.available = false;
    out.reason = "skipped: the trace has no CUDA API calls to link GPU work to the thread that launched it";
  }
  return out;
}

}  // namespace detail
}  // namespace scalescope::analyze
