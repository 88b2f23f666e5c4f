// Stragglers: collectives matched across ranks by (communicator, op, sequence);
// a rank's lateness in one collective is its arrival (kernel start, Unix
// clock) minus the earliest arrival of that collective.
#include "analyze/stragglers.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "trace/model/launcher.hpp"

namespace scalescope::analyze {

namespace {

using CollectiveKey = std::tuple<std::string_view, trace::NcclOp, int64_t>;
struct Arrivals {
  std::vector<std::pair<size_t, int64_t>> by_rank;  // (index into ranks, arrival)
  int64_t first_end = INT64_MAX;                    // earliest end over ranks
  bool warmup = false;                              // some rank reached it in a warm-up iteration
};
using MatchedCollectives = std::map<CollectiveKey, Arrivals>;

// Slowest rank by steady-state median iteration time.
void find_slowest_and_fastest_rank(const std::vector<RankAnalysis>& ranks, StragglerStats& st) {
  double slow = -1, fast = -1;
  for (const RankAnalysis& r : ranks) {
    if (!r.iterations.availability.available || r.iterations.count == 0) continue;
    const double m = r.iterations.steady_median_ns;
    if (m > slow) {
      slow = m;
      st.slowest_rank = r.rank;
    }
    if (fast < 0 || m < fast) fast = m;
  }
  st.slowest_rank_median_ns = std::max(0.0, slow);
  st.fastest_rank_median_ns = std::max(0.0, fast);
}

MatchedCollectives match_collectives_across_ranks(const std::vector<RankAnalysis>& ranks, size_t& total) {
  MatchedCollectives matched;
  total = 0;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    for (const CollectiveArrival& c : ranks[ri].collectives) {
      Arrivals& a = matched[{c.communicator_name, c.op, c.sequence}];
      a.by_rank.push_back({ri, c.arrival_unix_ns});
      a.first_end = std::min(a.first_end, c.end_unix_ns);
      a.warmup = a.warmup || c.warmup;
      ++total;
    }
  }
  return matched;
}

// A collective cannot finish on any rank before the last rank arrives. When
// it often does, the clocks do not line up (or the matching is wrong), and
// lateness would be an artefact: say so instead of reporting it.
bool clocks_do_not_line_up(const MatchedCollectives& matched, StragglerStats& st) {
  int64_t impossible = 0, multi = 0;
  for (const auto& [key, a] : matched) {
    if (a.by_rank.size() < 2) continue;
    ++multi;
    int64_t last = INT64_MIN;
    for (auto [ri, t] : a.by_rank) last = std::max(last, t);
    if (a.first_end < last) ++impossible;
  }
  if (multi > 0 && impossible * 10 > multi) {
    st.matched_collectives = multi;
    st.availability = {false, fmt::format("skipped: in {} of {} matched collectives a rank finished before another "
                                          "arrived, so the ranks' clocks do not line up even after clock alignment "
                                          "(or the traces are not of one job); lateness would be wrong",
                                          impossible, multi)};
    return true;
  }
  return false;
}

std::vector<RankLateness> sum_lateness_per_rank(const std::vector<RankAnalysis>& ranks,
                                                const MatchedCollectives& matched, StragglerStats& st) {
  std::vector<RankLateness> late(ranks.size());
  for (size_t ri = 0; ri < ranks.size(); ++ri) late[ri].rank = ranks[ri].rank;
  for (auto& [key, a] : matched) {
    if (a.by_rank.size() < 2) {
      st.unmatched_collectives += 1;
      continue;
    }
    st.matched_collectives += 1;
    int64_t first = a.by_rank[0].second, last = first;
    size_t last_rank = a.by_rank[0].first;
    for (auto [ri, t] : a.by_rank) {
      first = std::min(first, t);
      if (t > last) {
        last = t;
        last_rank = ri;
      }
    }
    st.total_wait_ns += last - first;
    for (auto [ri, t] : a.by_rank) {
      late[ri].total_late_ns += t - first;
      late[ri].max_late_ns = std::max(late[ri].max_late_ns, t - first);
      if (!a.warmup) late[ri].steady_late_ns += t - first;
    }
    if (last > first) late[last_rank].times_last += 1;
    if (!a.warmup) {
      st.steady_matched_collectives += 1;
      if (last > first) late[last_rank].steady_times_last += 1;
    }
  }
  return late;
}

void divide_lateness_by_iterations(const std::vector<RankAnalysis>& ranks, std::vector<RankLateness>& late) {
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const int64_t n = ranks[ri].iterations.count;
    late[ri].late_per_iteration_ns = n > 0 ? static_cast<double>(late[ri].total_late_ns) / static_cast<double>(n) : 0;
    const int64_t steady = n - ranks[ri].iterations.warmup_count;
    late[ri].steady_late_per_iteration_ns =
        steady > 0 ? static_cast<double>(late[ri].steady_late_ns) / static_cast<double>(steady) : 0;
  }
}

// Ranked by steady lateness where there is any steady collective: a rank that
// waited once at start-up is not the one that makes the others wait each step.
void rank_by_lateness(std::vector<RankLateness>& late, StragglerStats& st) {
  const bool by_steady = st.steady_matched_collectives > 0;
  st.ranked_by = by_steady ? "steady iterations" : "whole window";
  std::sort(late.begin(), late.end(), [by_steady](const RankLateness& a, const RankLateness& b) {
    const int64_t x = by_steady ? a.steady_late_ns : a.total_late_ns,
                  y = by_steady ? b.steady_late_ns : b.total_late_ns;
    return x > y || (x == y && a.rank < b.rank);
  });
}

}  // namespace

StragglerStats find_stragglers(const std::vector<RankAnalysis>& ranks) {
  StragglerStats st;
  if (ranks.size() < 2) {
    st.availability = {false, "skipped: stragglers need at least two ranks"};
  }
  find_slowest_and_fastest_rank(ranks, st);
  if (ranks.size() < 2) return st;

  size_t total = 0;
  const MatchedCollectives matched = match_collectives_across_ranks(ranks, total);
  if (total == 0) {
    st.availability = {false, "skipped: the traces have no collectives in the window (no NCCL records or kernels)"};
    return st;
  }
  if (clocks_do_not_line_up(matched, st)) return st;
  std::vector<RankLateness> late = sum_lateness_per_rank(ranks, matched, st);
  if (st.matched_collectives == 0) {
    st.availability = {false, fmt::format("skipped: none of the {} collectives matched across ranks "
                                          "(different communicators or sequence numbers)",
                                          st.unmatched_collectives)};
    return st;
  }
  divide_lateness_by_iterations(ranks, late);
  rank_by_lateness(late, st);
  st.ranks = std::move(late);
  return st;
}

namespace {

// The name alignment gives a rank's host; a process that does not know its
// host is a clock of its own (as in trace/import/clock_alignment.cpp).
std::string clock_host(const RankAnalysis& r, size_t index) {
  return r.hostname.empty() ? fmt::format("(unknown host, process {})", index) : r.hostname;
}

// Estimates each host's clock from the ranks' collectives and, where applied,
// moves their arrival and end times onto the reference host's clock.
trace::ClockAlignment align_collectives(std::vector<RankAnalysis>& ranks, bool apply) {
  std::vector<trace::RankCollectives> samples(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    samples[i].hostname = ranks[i].hostname;
    samples[i].rank = ranks[i].rank;
    samples[i].ends.reserve(ranks[i].collectives.size());
    for (const CollectiveArrival& c : ranks[i].collectives)
      samples[i].ends.push_back({trace::collective_key(c.communicator_name, c.op, c.sequence), c.end_unix_ns});
  }
  trace::AlignOptions options;
  options.apply = apply;
  trace::ClockAlignment clocks = trace::estimate_clock_alignment(samples, options);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const trace::HostClock* h = clocks.find(clock_host(ranks[i], i));
    if (!h || !h->applied()) continue;
    for (CollectiveArrival& c : ranks[i].collectives) {
      c.arrival_unix_ns -= h->correction_at(c.arrival_unix_ns);
      c.end_unix_ns -= h->correction_at(c.end_unix_ns);
    }
  }
  return clocks;
}

}  // namespace

RunAnalysis combine(std::vector<RankAnalysis> ranks, bool align_clocks) {
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankAnalysis& a, const RankAnalysis& b) { return a.rank < b.rank; });
  RunAnalysis run;
  const bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.gpu_activity; });
  auto launcher = [any_gpu](const RankAnalysis& r) { return trace::is_launcher(r.rank, r.gpu_activity, any_gpu); };
  for (const RankAnalysis& r : ranks)
    if (launcher(r)) run.left_out.push_back(r.label);
  ranks.erase(std::remove_if(ranks.begin(), ranks.end(), launcher), ranks.end());
  detail::share_sampled_gpus(ranks);
  run.clocks = align_collectives(ranks, align_clocks);
  run.stragglers = find_stragglers(ranks);
  run.nodes = find_nodes(ranks, run.stragglers);
  for (RankAnalysis& r : ranks) r.collectives = {};  // matched; keep the result small
  run.ranks = std::move(ranks);
  return run;
}

}  // namespace scalescope::analyze
