// Nodes: a multi-node run grouped by host. Per node: its ranks' mean time
// breakdown, their lateness at collectives and the slowest iteration; per
// communicator: whether it spans hosts (inter-node) or not; which nodes and
// ranks the launcher promised but did not report.
#include "analyze/nodes.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/analyze.hpp"
#include "base/error.hpp"

namespace scalescope::analyze {
namespace {

constexpr size_t kMaxHostlistNames = 65'536;

std::string short_name(std::string_view host) { return std::string(host.substr(0, host.find('.'))); }

std::string node_name(const RankAnalysis& r) { return r.hostname.empty() ? std::string("(unknown host)") : r.hostname; }

// "01-03,7" inside brackets -> {"01","02","03","7"} (zero padding kept).
void expand_ranges(std::string_view prefix, std::string_view ranges, std::string_view suffix, std::string_view whole,
                   std::vector<std::string>& out) {
  size_t pos = 0;
  while (pos <= ranges.size()) {
    size_t comma = ranges.find(',', pos);
    if (comma == std::string_view::npos) comma = ranges.size();
    const std::string_view item = ranges.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    auto parse = [](std::string_view s, uint64_t& v) {
      if (s.empty() || s.size() > 18) return false;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc() && p == s.data() + s.size();
    };
    if (!parse(lo_text, lo) || !parse(hi_text, hi) || hi < lo)
      fail("bad Slurm node list '{}': expected e.g. gpu[01-04,07]", whole.substr(0, 80));
    if (out.size() + (hi - lo) >= kMaxHostlistNames)
      fail("bad Slurm node list '{}': more than {} names", whole.substr(0, 80), kMaxHostlistNames);
    for (uint64_t v = lo; v <= hi; ++v) out.push_back(fmt::format("{}{:0{}}{}", prefix, v, lo_text.size(), suffix));
    pos = comma + 1;
  }
}

std::string group_label(const trace::ProcessGroup& g) {
  return g.description.empty() || g.description == g.name ? fmt::format("group {}", g.name) : g.description;
}

// The process group a communicator serves. A PyTorch-profiler trace names its
// communicators by torch's group name; a collector trace by NCCL's
// communicator hash, which torch does not expose: there, the group whose
// ranks are exactly the ranks seen in the communicator, or, when some ranks
// left no trace, the one smallest group that holds them all. Groups with the
// same ranks (a user's group over the whole world) are named together.
void name_group(const std::string& name, const std::set<int32_t>& seen,
                const std::vector<const trace::ProcessGroup*>& groups, CommunicatorSummary& s) {
  std::vector<const trace::ProcessGroup*> match;
  for (const auto* g : groups)
    if (g->name == name) match = {g};
  if (match.empty() && !name.empty() && !seen.empty()) {
    auto holds_all = [&](const trace::ProcessGroup& g) {
      return std::includes(g.ranks.begin(), g.ranks.end(), seen.begin(), seen.end());
    };
    for (const auto* g : groups)
      if (g->ranks.size() == seen.size() && holds_all(*g)) match.push_back(g);
    if (match.empty()) {
      size_t smallest = SIZE_MAX;
      for (const auto* g : groups)
        if (holds_all(*g)) smallest = std::min(smallest, g->ranks.size());
      for (const auto* g : groups)
        if (g->ranks.size() == smallest && holds_all(*g)) match.push_back(g);
      if (match.size() > 1) match.clear();  // two groups could hold them: no guess
    }
  }
  if (match.empty()) return;
  std::vector<std::string> labels, names;
  for (const auto* g : match) {
    labels.push_back(group_label(*g));
    names.push_back(g->name);
  }
  s.group = fmt::format("{}", fmt::join(labels, " = "));
  s.group_name = fmt::format("{}", fmt::join(names, ","));
  s.backend = match.front()->backend;
  s.group_ranks = match.front()->ranks;
}

// Time collectives took per communicator, the hosts each one spans, and the
// process group it serves.
void add_communicators(const std::vector<RankAnalysis>& ranks, NodeStats& st) {
  struct Comm {
    std::set<size_t> ranks;
    std::set<std::string> hosts;
    std::set<std::pair<trace::NcclOp, int64_t>> collectives;
    int64_t time_ns = 0;
  };
  std::map<std::string, Comm> comms;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    for (const CollectiveArrival& c : ranks[ri].collectives) {
      Comm& m = comms[c.communicator_name];
      m.ranks.insert(ri);
      m.hosts.insert(node_name(ranks[ri]));
      m.collectives.insert({c.op, c.sequence});
      m.time_ns += std::max<int64_t>(0, c.end_unix_ns - c.arrival_unix_ns);
    }
  }
  // Every group any rank knows, once.
  std::vector<const trace::ProcessGroup*> groups;
  for (const RankAnalysis& r : ranks)
    for (const trace::ProcessGroup& g : r.process_groups)
      if (std::none_of(groups.begin(), groups.end(), [&](const auto* h) { return *h == g; })) groups.push_back(&g);
  for (auto& [name, m] : comms) {
    CommunicatorSummary s;
    s.name = name;
    std::set<int32_t> seen;
    for (size_t ri : m.ranks)
      if (ranks[ri].rank >= 0) seen.insert(ranks[ri].rank);
    name_group(name, seen, groups, s);
    s.ranks = static_cast<int32_t>(m.ranks.size());
    s.hosts = static_cast<int32_t>(m.hosts.size());
    s.inter_node = m.hosts.size() > 1;
    s.collectives = static_cast<int64_t>(m.collectives.size());
    s.time_ns = m.time_ns;
    (s.inter_node ? st.inter_node_collectives : st.intra_node_collectives) += s.collectives;
    (s.inter_node ? st.inter_node_ns : st.intra_node_ns) += s.time_ns;
    st.communicators.push_back(std::move(s));
  }
  std::sort(st.communicators.begin(), st.communicators.end(),
            [](const CommunicatorSummary& a, const CommunicatorSummary& b) {
              return a.time_ns > b.time_ns || (a.time_ns == b.time_ns && a.name < b.name);
            });
}

// Nodes and ranks the launcher's environment promised that no trace came from.
void add_missing(const std::vector<RankAnalysis>& ranks, NodeStats& st) {
  std::set<std::string> seen_hosts;
  std::set<int32_t> seen_node_ids, seen_ranks;
  std::string node_list;
  for (const RankAnalysis& r : ranks) {
    if (!r.hostname.empty()) seen_hosts.insert(short_name(r.hostname));
    if (r.node_rank >= 0) seen_node_ids.insert(r.node_rank);
    if (r.rank >= 0) seen_ranks.insert(r.rank);
    st.expected_nodes = std::max(st.expected_nodes, r.node_count);
    st.expected_ranks = std::max(st.expected_ranks, r.world_size);
    if (node_list.empty()) node_list = r.node_list;
  }
  std::vector<std::string> listed;
  if (!node_list.empty()) {
    try {
      listed = expand_slurm_hostlist(node_list);
    } catch (const Error&) {
      listed.clear();  // an odd list is no reason to lose the analysis: node ids below still count
    }
  }
  if (!listed.empty() && !seen_hosts.empty()) {
    for (const std::string& name : listed)
      if (!seen_hosts.count(short_name(name))) st.missing_nodes.push_back(name);
    st.expected_nodes = std::max(st.expected_nodes, static_cast<int32_t>(listed.size()));
  } else if (st.expected_nodes > 0 && !seen_node_ids.empty()) {
    for (int32_t n = 0; n < st.expected_nodes; ++n)
      if (!seen_node_ids.count(n)) st.missing_nodes.push_back(fmt::format("node {}", n));
  } else if (st.expected_nodes > static_cast<int32_t>(seen_hosts.size()) && !seen_hosts.empty()) {
    const int32_t n = st.expected_nodes - static_cast<int32_t>(seen_hosts.size());
    st.missing_nodes.push_back(fmt::format("{} node{} (ids unknown)", n, n == 1 ? "" : "s"));
  }
  // Bounded: a corrupt world size must not make a list of a billion ranks.
  if (st.expected_ranks > 0 && st.expected_ranks <= (1 << 20))
    for (int32_t r = 0; r < st.expected_ranks; ++r)
      if (!seen_ranks.count(r)) st.missing_ranks.push_back(r);
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    // One item: up to a comma outside brackets.
    size_t end = pos, open = std::string_view::npos;
    int depth = 0;
    for (; end < text.size(); ++end) {
      if (text[end] == '[') {
        if (depth++ > 0) fail("bad Slurm node list '{}': nested brackets", text.substr(0, 80));
        open = end;
      } else if (text[end] == ']') {
        if (--depth < 0) fail("bad Slurm node list '{}': ']' without '['", text.substr(0, 80));
      } else if (text[end] == ',' && depth == 0) {
        break;
      }
    }
    if (depth != 0) fail("bad Slurm node list '{}': '[' without ']'", text.substr(0, 80));
    const std::string_view item = text.substr(pos, end - pos);
    if (item.empty()) fail("bad Slurm node list '{}': empty name", text.substr(0, 80));
    if (open == std::string_view::npos) {
      if (out.size() >= kMaxHostlistNames)
        fail("bad Slurm node list '{}': more than {} names", text.substr(0, 80), kMaxHostlistNames);
      out.emplace_back(item);
    } else {
      const size_t o = open - pos, c = item.find(']');
      if (item.find('[', c) != std::string_view::npos)
        fail("bad Slurm node list '{}': two ranges in one name", text.substr(0, 80));
      expand_ranges(item.substr(0, o), item.substr(o + 1, c - o - 1), item.substr(c + 1), text, out);
    }
    pos = end + 1;
  }
  return out;
}

NodeStats find_nodes(const std::vector<RankAnalysis>& ranks, const StragglerStats& stragglers) {
  NodeStats st;
  std::map<std::string, size_t> index;
  std::vector<int64_t> with_breakdown;
  for (const RankAnalysis& r : ranks) {
    auto [it, fresh] = index.try_emplace(node_name(r), st.nodes.size());
    if (fresh) {
      st.nodes.push_back({});
      st.nodes.back().hostname = node_name(r);
      with_breakdown.push_back(0);
    }
    NodeSummary& n = st.nodes[it->second];
    if (r.rank >= 0) n.ranks.push_back(r.rank);
    if (r.node_rank >= 0) n.node_rank = r.node_rank;
    if (r.breakdown.availability.available) {
      const RankBreakdown& b = r.breakdown;
      n.wall_ns += static_cast<double>(b.wall_ns);
      n.compute_ns += static_cast<double>(b.compute_ns);
      n.exposed_communication_ns += static_cast<double>(b.exposed_communication_ns);
      n.copy_ns += static_cast<double>(b.copy_ns);
      n.idle_ns += static_cast<double>(b.idle_ns);
      with_breakdown[it->second] += 1;
    }
    if (r.iterations.availability.available && r.iterations.count > 0)
      n.steady_median_iteration_ns = std::max(n.steady_median_iteration_ns, r.iterations.steady_median_ns);
  }
  std::unordered_map<int32_t, const RankLateness*> late;
  if (stragglers.availability.available)
    for (const RankLateness& l : stragglers.ranks) late[l.rank] = &l;
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    NodeSummary& n = st.nodes[i];
    if (const double k = static_cast<double>(with_breakdown[i]); k > 0) {
      n.wall_ns /= k;
      n.compute_ns /= k;
      n.exposed_communication_ns /= k;
      n.copy_ns /= k;
      n.idle_ns /= k;
    }
    std::sort(n.ranks.begin(), n.ranks.end());
    for (int32_t r : n.ranks)
      if (auto it = late.find(r); it != late.end()) {
        n.late_ns += it->second->total_late_ns;
        n.steady_late_ns += it->second->steady_late_ns;
        n.times_last += it->second->times_last;
      }
  }
  std::sort(st.nodes.begin(), st.nodes.end(), [](const NodeSummary& a, const NodeSummary& b) {
    const auto na = static_cast<uint32_t>(a.node_rank), nb = static_cast<uint32_t>(b.node_rank);
    const auto ra = a.ranks.empty() ? UINT32_MAX : static_cast<uint32_t>(a.ranks.front());
    const auto rb = b.ranks.empty() ? UINT32_MAX : static_cast<uint32_t>(b.ranks.front());
    return std::tie(na, ra, a.hostname) < std::tie(nb, rb, b.hostname);
  });
  add_communicators(ranks, st);
  add_missing(ranks, st);
  if (st.nodes.size() < 2 && st.missing_nodes.empty()) {
    // Traces without host names (a PyTorch-profiler trace has none) do not
    // say the ranks shared a host: the clocks are then estimated per process.
    const bool unnamed = st.nodes.size() == 1 && st.nodes.front().hostname == node_name(RankAnalysis{});
    st.availability = {false,
                       unnamed ? "skipped: the traces do not name their hosts" : "skipped: every rank ran on one host"};
    return st;
  }
  // The slowest node: the one whose ranks the others waited for most (per
  // rank, so a node with more ranks is not blamed for its size); without
  // matched collectives, the one with the longest steady iteration.
  // Steady lateness where there is any, as the stragglers are ranked.
  const NodeSummary* slowest = nullptr;
  if (stragglers.availability.available) {
    const bool steady = stragglers.steady_matched_collectives > 0;
    auto late = [steady](const NodeSummary& n) { return steady ? n.steady_late_ns : n.late_ns; };
    auto per_rank = [&late](const NodeSummary& n) {
      return n.ranks.empty() ? 0.0 : static_cast<double>(late(n)) / static_cast<double>(n.ranks.size());
    };
    for (const NodeSummary& n : st.nodes)
      if (!slowest || per_rank(n) > per_rank(*slowest)) slowest = &n;
    if (slowest && late(*slowest) > 0)
      st.slowest_node_by = steady ? "lateness at collectives in steady iterations" : "lateness at collectives";
    else slowest = nullptr;
  }
  if (!slowest) {
    for (const NodeSummary& n : st.nodes)
      if (n.steady_median_iteration_ns > 0 &&
          (!slowest || n.steady_median_iteration_ns > slowest->steady_median_iteration_ns))
        slowest = &n;
    if (slowest) st.slowest_node_by = "steady median iteration";
  }
  if (slowest) st.slowest_node = slowest->hostname;
  return st;
}

}  // namespace scalescope::analyze
