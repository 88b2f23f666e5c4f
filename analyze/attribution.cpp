// GPU time by operator, module and range (docs/attribution.md).
//
// The pieces attribution_stream.cpp runs over a rank's chunks: a sweep over
// the host ranges and the API calls in time order, with a stack of open
// ranges per thread, gives every API call the path of ranges open around it
// (a node of a trie of paths); the GPU work takes its launch call's path
// through the correlation id. Per window (the whole trace and the steady
// iterations), WindowSummary shares the GPU busy time among the work running
// at each instant and adds it up per path node, name and iteration.
#include "analyze/attribution_detail.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "analyze/attribution_sweep.hpp"
#include "base/enum_names.hpp"
#include "analyze/intervals.hpp"

namespace scalescope::analyze {

std::string_view to_string(RangeKind k) {
  static constexpr auto kNames = std::to_array<std::string_view>({"operator", "module", "range", "backward"});
  return name_by_value<RangeKind::kBackward>(kNames, k, "range");
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

// ---- NameCache ---------------------------------------------------------------

NameCache::NameCache(const trace::StringTable& strings, LaunchPaths& p)
    : strings_(strings), p_(p), by_text_(strings.size()) {
  // Key 0: the root; key 1: the backward marker.
  key_of("(all GPU work)", RangeKind::kRange);
  key_of("(backward)", RangeKind::kBackward);
}

const NameCache::Info& NameCache::get_slow(trace::StringId domain, trace::StringId text) {
  const uint64_t k = (uint64_t{domain} << 32) | text;
  auto it = cache_.find(k);
  if (it == cache_.end()) it = cache_.emplace(k, make(strings_.view(domain), strings_.view(text))).first;
  if (text < by_text_.size() && by_text_[text].domain == kNoDomain) by_text_[text] = {domain, it->second};
  return it->second;
}

uint32_t NameCache::key_of(const std::string& name, RangeKind kind) {
  std::string k(1, static_cast<char>('0' + static_cast<int>(kind)));
  k += name;
  auto [it, inserted] = keys_.try_emplace(std::move(k), static_cast<uint32_t>(p_.names.size()));
  if (inserted) {
    p_.names.push_back(name);
    p_.name_kinds.push_back(kind);
  }
  return it->second;
}

NameCache::Info NameCache::make(std::string_view domain, std::string_view text) {
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
    // are recognized by their decorations and names; the Python bootstrap's
    // module ranges by the prefix Kineto gives modules ("nn.Module: NAME").
    info.kind = text.starts_with("nn.Module: ") ? RangeKind::kModule
                : parsed.operator_like          ? RangeKind::kOperator
                                                : RangeKind::kRange;
    info.seq = parsed.seq;
    info.backward_node = parsed.backward_node;
  }
  info.skip = false;
  info.key = key_of(parsed.name, info.kind);
  return info;
}

// ---- RangeStacks -------------------------------------------------------------

RangeStacks::RangeStacks(LaunchPaths& p, bool use_links, bool use_seq)
    : p_(p), use_links_(use_links), use_seq_(use_seq) {
  if (p_.nodes.empty()) p_.nodes.push_back({kNoParent, 0, RangeKind::kRange});
}

// The node under `parent` for the range name `key`, made on first use.
// Once per range (300k on the real trace): an open-addressing table of the
// (parent, key) pairs, a quarter full at most, instead of a node-based map.
uint32_t RangeStacks::child(uint32_t parent, uint32_t key, RangeKind kind) {
  const uint64_t k = (uint64_t{parent} << 32) | key;
  if (4 * (p_.nodes.size() + 1) > slots_.size()) grow();
  size_t i = slot_of(k);
  if (slots_[i].node == kNoParent) {
    slots_[i] = {k, static_cast<uint32_t>(p_.nodes.size())};
    p_.nodes.push_back({parent, key, kind});
  }
  return slots_[i].node;
}

size_t RangeStacks::slot_of(uint64_t k) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (slots_[i].node != kNoParent && slots_[i].key != k) i = (i + 1) & mask;
  return i;
}

void RangeStacks::grow() {
  std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
  old.swap(slots_);
  for (const Slot& e : old)
    if (e.node != kNoParent) slots_[slot_of(e.key)] = e;
}

void RangeStacks::forget_links_below(uint32_t min) {
  std::erase_if(link_ctx_, [&](const auto& e) { return e.first < min; });
}

void RangeStacks::forget_seqs_below(int64_t min) {
  std::erase_if(seq_ctx_, [&](const auto& e) { return e.first < min; });
}

namespace {

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

}  // namespace

// ---- WindowSummary -------------------------------------------------------------

WindowSummary::WindowSummary(Timestamp ws, Timestamp we, bool whole_trace, const std::vector<Iteration>& iterations)
    : ws_(ws), we_(we), whole_trace_(whole_trace) {
  for (const Iteration& it : iterations)
    if (it.start >= ws && it.end <= we) ++iteration_count_;
  out_.iteration_count = iteration_count_;
  if (iteration_count_ > 0) {
    for (const Iteration& it : iterations) {
      if (it.start < ws || it.end > we) continue;
      AttributionIteration ai;
      ai.start = it.start;
      ai.end = it.end;
      out_.iterations.push_back(std::move(ai));
    }
  }
}

void WindowSummary::grow_to(size_t n) {
  for (auto* v : {&node_gpu_, &node_sum_, &node_kernels_, &node_calls_, &node_cpu_, &node_self_cpu_}) v->resize(n, 0);
  for (auto* v : {&layout_, &fp32_, &tiny_}) v->resize(n, {0, 0});
  last_share_.resize(n, kNoParent);
}

uint32_t WindowSummary::iteration_of(Timestamp start) {
  if (iteration_count_ == 0) return kNoIteration;
  while (k_ < out_.iterations.size() && out_.iterations[k_].end <= start) ++k_;
  if (k_ < out_.iterations.size() && start >= out_.iterations[k_].start) return static_cast<uint32_t>(k_);
  return kNoIteration;
}

void WindowSummary::classify(const Work& w, const std::vector<KernelInfo>& kernel_info) {
  if (w.kernel_name == kNoLaunch || w.kernel_name >= kernel_info.size()) return;
  const KernelInfo& ki = kernel_info[w.kernel_name];
  const int64_t d = w.end - w.start;
  const bool launched = w.node != kNoLaunch;
  if (launched) ensure(w.node);
  auto add = [&](NodeTotals& m, std::pair<int64_t, int64_t>& none) {
    auto& e = launched ? m[w.node] : none;
    e.first += 1;
    e.second += d;
  };
  if (ki.layout_conversion) add(layout_, no_launch_layout_);
  if (ki.precision == Precision::kFp32NoTensor) add(fp32_, no_launch_fp32_);
  if (d < Attribution::kTinyKernelNs) add(tiny_, no_launch_tiny_);
}

void WindowSummary::done(const Work& w, uint32_t iteration, int64_t s) {
  out_.busy_ns += s;
  const bool launched = w.node != kNoLaunch;
  const uint32_t v = launched ? w.node : 0;  // the root's self time is all unattributed work
  if (!launched) out_.no_launch_ns += s;
  else if (v == 0) out_.outside_ranges_ns += s;
  if (v == 0) ++out_.unattributed_activities;
  ensure(v);
  node_gpu_[v] += s;
  node_sum_[v] += w.end - w.start;
  ++node_kernels_[v];
  if (iteration == kNoIteration) return;
  AttributionIteration& ai = out_.iterations[iteration];
  ai.busy_ns += s;
  if (v == 0) return;
  ai.attributed_ns += s;
  const uint32_t e = last_share_[v];
  if (e != kNoParent && iteration_shares_[e].iteration == iteration) {
    iteration_shares_[e].gpu_ns += s;
  } else {
    last_share_[v] = static_cast<uint32_t>(iteration_shares_.size());
    iteration_shares_.push_back({iteration, v, s});
  }
}

void WindowSummary::add_range(const FinishedRange& r) {
  if (!whole_trace_ && (r.start < ws_ || r.start > we_)) return;
  ensure(r.node);
  node_calls_[r.node] += 1;
  node_self_cpu_[r.node] += r.duration - r.child_ns;
  node_cpu_[r.node] += r.duration;
}

Attribution WindowSummary::finish(const LaunchPaths& p, int64_t activities, uint64_t gpu_rows, uint64_t api_rows) {
  Attribution out = std::move(out_);
  const size_t node_count = p.nodes.size();
  grow_to(std::max(node_count, node_gpu_.size()));
  out.activities = activities;
  auto with_none = [&](NodeTotals& m, const std::pair<int64_t, int64_t>& none) {
    m.resize(node_count);
    m.push_back(none);
    return m;
  };
  out.layout_conversions = top_responsible(p, with_none(layout_, no_launch_layout_), false);
  out.fp32_no_tensor = top_responsible(p, with_none(fp32_, no_launch_fp32_), false);
  out.tiny_kernels = top_responsible(p, with_none(tiny_, no_launch_tiny_), true);
  out.unattributed_ns = out.no_launch_ns + out.outside_ranges_ns;
  out.attributed_ns = out.busy_ns - out.unattributed_ns;

  std::vector<AttributionRow> rows = sum_rows_per_name(p, out);
  const std::vector<uint32_t> operator_keys = add_operator_and_range_rows(p, rows, out);
  add_tree(p, out);
  if (iteration_count_ > 0) add_top_operators_per_iteration(p, operator_keys, out);

  out.backward_links = p.backward_links;
  out.link_source = p.link_source;
  if (out.activities == 0 && gpu_rows == 0) {
    out.available = false;
    out.reason = "skipped: the trace has no kernels, copies or sets";
  } else if (!p.any_ranges) {
    out.available = false;
    out.reason =
        "skipped: the trace has no host ranges (NVTX, record_function or operator events) to charge GPU work to";
  } else if (api_rows == 0) {
    out.available = false;
    out.reason = "skipped: the trace has no CUDA API calls to link GPU work to the thread that launched it";
  }
  return out;
}

// Per name: walk each node's path once.
std::vector<AttributionRow> WindowSummary::sum_rows_per_name(const LaunchPaths& p, Attribution& out) const {
  const size_t node_count = p.nodes.size();
  const size_t name_count = p.names.size();
  std::vector<AttributionRow> rows(name_count);
  std::vector<uint32_t> stamp(name_count, kNoParent);
  for (size_t v = 0; v < node_count; ++v) {
    if (node_kernels_[v] == 0) continue;
    bool op_found = false, range_found = false;
    for (uint32_t u = static_cast<uint32_t>(v); u != 0 && u != kNoParent; u = p.nodes[u].parent) {
      const PathNode& pn = p.nodes[u];
      if (pn.kind == RangeKind::kBackward) continue;
      AttributionRow& row = rows[pn.name];
      if (stamp[pn.name] != v) {
        stamp[pn.name] = static_cast<uint32_t>(v);
        row.gpu_ns += node_gpu_[v];
        row.sum_ns += node_sum_[v];
        row.kernels += node_kernels_[v];
      }
      bool& found = pn.kind == RangeKind::kOperator ? op_found : range_found;
      if (!found) {
        found = true;
        row.self_gpu_ns += node_gpu_[v];
        row.self_sum_ns += node_sum_[v];
      }
    }
    if (!op_found) out.no_operator_ns += node_gpu_[v];
    if (!range_found) out.no_range_ns += node_gpu_[v];
  }
  // Calls and CPU time of the ranges that start in the window; a range nested
  // in one of its name counts once in cpu_ns.
  for (size_t v = 1; v < node_count; ++v) {
    if (node_calls_[v] == 0) continue;
    const uint32_t key = p.nodes[v].name;
    bool recursive = false;
    for (uint32_t u = p.nodes[v].parent; u != 0 && u != kNoParent; u = p.nodes[u].parent)
      if (p.nodes[u].name == key) {
        recursive = true;
        break;
      }
    AttributionRow& row = rows[key];
    row.calls += node_calls_[v];
    row.self_cpu_ns += node_self_cpu_[v];
    if (!recursive) row.cpu_ns += node_cpu_[v];
  }
  return rows;
}

std::vector<uint32_t> WindowSummary::add_operator_and_range_rows(const LaunchPaths& p,
                                                                 std::vector<AttributionRow>& rows,
                                                                 Attribution& out) const {
  const int64_t wall = std::max<int64_t>(0, we_ - ws_);
  std::vector<uint32_t> operator_keys;
  for (uint32_t key = 2; key < rows.size(); ++key) {
    AttributionRow& row = rows[key];
    if (row.calls == 0 && row.kernels == 0) continue;
    row.name = p.names[key];
    row.kind = p.name_kinds[key];
    row.step_fraction = wall > 0 ? static_cast<double>(row.gpu_ns) / static_cast<double>(wall) : 0;
    row.gpu_ns_per_iteration =
        iteration_count_ > 0 ? static_cast<double>(row.gpu_ns) / static_cast<double>(iteration_count_) : 0;
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
  return operator_keys;
}

void WindowSummary::add_tree(const LaunchPaths& p, Attribution& out) const {
  const size_t node_count = p.nodes.size();
  std::vector<int64_t> incl_gpu(node_gpu_.begin(), node_gpu_.begin() + static_cast<std::ptrdiff_t>(node_count));
  std::vector<int64_t> incl_kernels(node_kernels_.begin(),
                                    node_kernels_.begin() + static_cast<std::ptrdiff_t>(node_count));
  for (size_t v = node_count; v-- > 1;) {
    incl_gpu[p.nodes[v].parent] += incl_gpu[v];
    incl_kernels[p.nodes[v].parent] += incl_kernels[v];
  }
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
    n.self_gpu_ns = node_gpu_[v];
    n.kernels = incl_kernels[v];
    out.tree.push_back(std::move(n));
  }
}

void WindowSummary::add_top_operators_per_iteration(const LaunchPaths& p, const std::vector<uint32_t>& operator_keys,
                                                    Attribution& out) const {
  const size_t node_count = p.nodes.size();
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
  for (const IterationNodeShare& e : iteration_shares_) {
    const uint16_t m = mask_of(e.node);
    for (size_t b = 0; b < top_keys.size(); ++b)
      if (m & (1u << b)) out.iterations[e.iteration].top_operator_gpu_ns[b] += e.gpu_ns;
  }
}

}  // namespace detail
}  // namespace scalescope::analyze
