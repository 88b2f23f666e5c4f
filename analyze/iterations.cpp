// Iteration detection: from named NVTX ranges, or from the repeating sequence
// of annotations, collectives or kernels when the job has no step ranges.
#include "analyze/iterations.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "analyze/detail.hpp"
#include "base/error.hpp"

namespace scalescope::analyze::detail {
namespace {

using trace::Timestamp;

// Occurrences of one symbol, regular enough to mark iterations.
struct Marker {
  uint32_t symbol = 0;
  std::vector<Timestamp> starts;
  std::vector<Timestamp> ends;
};

// Turns marker occurrences into iterations. When the ranges tile the timeline
// (each ends about where the next starts, like ProfilerStep#N) they are the
// iterations; otherwise iteration i runs from occurrence i to occurrence i+1,
// and the last one to the end of GPU activity, capped at one median period.
std::vector<Iteration> to_iterations(std::vector<Timestamp> starts, std::vector<Timestamp> ends, Timestamp trace_end) {
  std::vector<size_t> order(starts.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return starts[a] < starts[b]; });
  std::vector<Iteration> out;
  const size_t n = order.size();
  if (n == 0) return out;
  std::vector<double> periods, gaps;
  for (size_t i = 0; i + 1 < n; ++i) {
    periods.push_back(static_cast<double>(starts[order[i + 1]] - starts[order[i]]));
    gaps.push_back(static_cast<double>(starts[order[i + 1]] - ends[order[i]]));
  }
  const double period = periods.empty() ? 0 : median(periods);
  const bool tiles = n == 1 || (period > 0 && median(gaps) <= 0.05 * period);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    Iteration it;
    it.start = starts[i];
    if (tiles) {
      it.end = std::max(ends[i], starts[i]);
    } else if (k + 1 < n) {
      it.end = starts[order[k + 1]];
    } else {
      const Timestamp cap = starts[i] + static_cast<Timestamp>(period);
      it.end = std::max(ends[i], std::min(trace_end, cap));
    }
    if (it.end > it.start) out.push_back(it);
  }
  return out;
}

// Finds the symbol that marks iterations in a time-ordered sequence of
// symbols, from the sequence's structure alone, not from timing: a step of a
// job waiting on its DataLoader is as long as the wait, but launches the
// same sequence every time. A symbol is a candidate when it occurs at least
// 3 times with a stable number of others between its occurrences: at least
// 80% of the gaps (counted in positions of the sequence) within 5% (at least
// 2 positions) of the median gap, none under half of it (several
// occurrences per step fail this; a warm-up step may differ). Candidates
// that occur once per repeating block of a layer (12 per step in a 12-layer
// model) pass too, so each candidate count is scored by how much of the
// sequence repeats with its period (the median gap): the count whose period
// repeats best wins, a tie (within half a percent) going to the larger count
// (a symbol seen every tenth step repeats as well as one seen every step).
// The marker is the winning count's candidate seen first.
std::optional<Marker> find_marker(const std::vector<uint32_t>& symbol, const std::vector<Timestamp>& start,
                                  const std::vector<Timestamp>& end, size_t symbol_count) {
  std::vector<uint32_t> count(symbol_count, 0);
  for (uint32_t s : symbol) ++count[s];
  // Counting sort of occurrences by symbol, keeping sequence order within each.
  std::vector<size_t> offset(symbol_count + 1, 0);
  for (size_t s = 0; s < symbol_count; ++s) offset[s + 1] = offset[s] + count[s];
  std::vector<uint32_t> fill(symbol_count, 0);
  std::vector<uint32_t> index(symbol.size());
  for (uint32_t i = 0; i < symbol.size(); ++i) index[offset[symbol[i]] + fill[symbol[i]]++] = i;

  struct Candidates {
    int votes = 0;
    std::vector<double> periods;
  };
  std::map<uint32_t, Candidates> by_count;
  std::vector<uint8_t> candidate(symbol_count, 0);
  std::vector<double> gaps;
  for (size_t s = 0; s < symbol_count; ++s) {
    if (count[s] < 3) continue;
    gaps.clear();
    for (size_t k = offset[s] + 1; k < offset[s + 1]; ++k) gaps.push_back(static_cast<double>(index[k] - index[k - 1]));
    const double med = median(gaps);
    const double tolerance = std::max(2.0, 0.05 * med);
    const double min_gap = *std::min_element(gaps.begin(), gaps.end());
    const auto near =
        std::count_if(gaps.begin(), gaps.end(), [&](double g) { return std::fabs(g - med) <= tolerance; });
    if (min_gap < 0.5 * med || static_cast<double>(near) < 0.8 * static_cast<double>(gaps.size())) continue;
    candidate[s] = 1;
    Candidates& c = by_count[count[s]];
    ++c.votes;
    c.periods.push_back(med);
  }
  if (by_count.empty()) return std::nullopt;
  // The counts with the most candidates (a bounded number of O(n) scores).
  std::vector<std::pair<int, uint32_t>> ranked;
  for (const auto& [c, cand] : by_count) ranked.emplace_back(cand.votes, c);
  std::sort(ranked.begin(), ranked.end(),
            [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  if (ranked.size() > 8) ranked.resize(8);
  // Of the positions with a successor one period on, the share holding the same symbol.
  auto repeats = [&](size_t period) {
    if (period == 0 || period >= symbol.size()) return 0.0;
    size_t same = 0;
    for (size_t i = 0; i + period < symbol.size(); ++i) same += symbol[i] == symbol[i + period];
    return static_cast<double>(same) / static_cast<double>(symbol.size() - period);
  };
  uint32_t best_count = 0;
  double best_score = -1;
  for (const auto& [votes, c] : ranked) {
    const double score = repeats(static_cast<size_t>(std::llround(median(by_count[c].periods))));
    if (score > best_score + 0.005 || (std::fabs(score - best_score) <= 0.005 && c > best_count)) {
      best_score = std::max(best_score, score);
      best_count = c;
    }
  }
  Marker marker;
  bool found = false;
  uint32_t first = 0;
  for (size_t s = 0; s < symbol_count; ++s) {
    if (!candidate[s] || count[s] != best_count) continue;
    const uint32_t at = index[offset[s]];
    if (!found || at < first) {
      first = at;
      found = true;
      marker.symbol = static_cast<uint32_t>(s);
    }
  }
  for (size_t k = offset[marker.symbol]; k < offset[marker.symbol + 1]; ++k) {
    marker.starts.push_back(start[index[k]]);
    marker.ends.push_back(end[index[k]]);
  }
  return marker;
}

// Indices of a column sorted by time (identity when already sorted).
std::vector<uint32_t> time_order(const std::vector<Timestamp>& start) {
  std::vector<uint32_t> order(start.size());
  std::iota(order.begin(), order.end(), 0u);
  if (!std::is_sorted(start.begin(), start.end()))
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return start[a] < start[b]; });
  return order;
}

}  // namespace

// "the most frequent ranges: A (x40), B (x40), ...": the names
// --iteration-range can take: host annotations (operator ranges are not
// steps; GPU-projected ranges copy host ones).
static std::string frequent_ranges(const IterationInputs& t) {
  std::vector<uint32_t> count(t.strings.size(), 0);
  std::vector<int8_t> op_domain(t.strings.size(), -1);
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    if (t.nvtx.kind[i] != trace::NvtxKind::kRange || t.nvtx.device[i] >= 0) continue;
    int8_t& op = op_domain[t.nvtx.domain[i]];
    if (op < 0) {
      const std::string_view d = t.strings.view(t.nvtx.domain[i]);
      op = d == "cpu_op" || d == "python_function";
    }
    if (!op) ++count[t.nvtx.text[i]];
  }
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < count.size(); ++id)
    if (count[id] > 0) ids.push_back(id);
  if (ids.empty()) return "the trace has no annotation ranges";
  constexpr size_t kShown = 5;
  const size_t shown = std::min(kShown, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(shown), ids.end(), [&](uint32_t a, uint32_t b) {
    return count[a] != count[b] ? count[a] > count[b] : t.strings.view(a) < t.strings.view(b);
  });
  std::string out = shown < ids.size() ? "the most frequent ranges: " : "the ranges: ";
  for (size_t k = 0; k < shown; ++k) {
    std::string name(t.strings.view(ids[k]).substr(0, 80));
    for (char& c : name)
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    out += fmt::format("{}'{}' (x{})", k ? ", " : "", name, count[ids[k]]);
  }
  if (shown < ids.size()) out += fmt::format(" and {} more", ids.size() - shown);
  return out;
}

namespace {

// Ranges selected by a predicate on their text; GPU-projected copies
// (Kineto's gpu_user_annotation) are preferred because the analyses are
// about GPU time, host ranges otherwise.
template <class Matches>
std::vector<Iteration> matching_ranges(const IterationInputs& t, Matches&& matches) {
  const auto& nv = t.nvtx;
  std::vector<Timestamp> gs, ge, hs, he;
  std::vector<int8_t> cache(t.strings.size(), -1);
  for (size_t i = 0; i < nv.size(); ++i) {
    if (nv.kind[i] != trace::NvtxKind::kRange) continue;
    const trace::StringId id = nv.text[i];
    if (cache[id] < 0) cache[id] = matches(t.strings.view(id)) ? 1 : 0;
    if (!cache[id]) continue;
    if (nv.device[i] >= 0) {
      gs.push_back(nv.start[i]);
      ge.push_back(nv.end[i]);
    } else {
      hs.push_back(nv.start[i]);
      he.push_back(nv.end[i]);
    }
  }
  return gs.empty() ? to_iterations(std::move(hs), std::move(he), t.gpu_end)
                    : to_iterations(std::move(gs), std::move(ge), t.gpu_end);
}

// Repeating annotations (host ranges only, so each annotation counts once).
bool detect_by_repeating_annotation(const IterationInputs& t, Detected& d) {
  const auto& nv = t.nvtx;
  if (nv.size() == 0) return false;
  std::vector<uint32_t> sym;
  std::vector<Timestamp> s, e;
  const auto order = time_order(nv.start);
  // Imported operator ranges (Kineto cpu_op, python_function) are too fine
  // and too many; only annotations mark steps.
  std::vector<uint8_t> is_op_domain(t.strings.size(), 0);
  for (trace::StringId id : nv.domain) {
    const std::string_view domain = t.strings.view(id);
    is_op_domain[id] = domain == "cpu_op" || domain == "python_function";
  }
  for (uint32_t i : order) {
    if (nv.kind[i] != trace::NvtxKind::kRange || nv.device[i] >= 0 || is_op_domain[nv.domain[i]]) continue;
    sym.push_back(nv.text[i]);
    s.push_back(nv.start[i]);
    e.push_back(nv.end[i]);
  }
  if (auto m = find_marker(sym, s, e, t.strings.size())) {
    d.source = fmt::format("detected:annotation '{}'", t.strings.view(m->symbol));
    d.iterations = to_iterations(std::move(m->starts), std::move(m->ends), t.gpu_end);
    return true;
  }
  return false;
}

// Repeating collectives, by (op, bytes).
bool detect_by_repeating_collective(const IterationInputs& t, Detected& d) {
  if (t.nccl_start.empty()) return false;
  std::map<std::pair<int, uint64_t>, uint32_t> ids;
  std::vector<uint32_t> sym;
  std::vector<Timestamp> s;
  for (uint32_t i : time_order(t.nccl_start)) {
    auto key = std::make_pair(static_cast<int>(t.nccl_op[i]), t.nccl_bytes[i]);
    auto [it, _] = ids.emplace(key, static_cast<uint32_t>(ids.size()));
    sym.push_back(it->second);
    s.push_back(t.nccl_start[i]);
  }
  if (auto m = find_marker(sym, s, s, ids.size())) {
    for (auto& [key, id] : ids) {
      if (id == m->symbol)
        d.source = fmt::format("detected:collective {} of {} bytes",
                               trace::to_string(static_cast<trace::NcclOp>(key.first)), key.second);
    }
    d.iterations = to_iterations(m->starts, m->starts, t.gpu_end);
    return true;
  }
  return false;
}

bool detect_by_repeating_kernel(const IterationInputs& t, Detected& d) {
  if (t.kernel_start.empty()) return false;
  std::vector<uint32_t> sym;
  std::vector<Timestamp> s;
  sym.reserve(t.kernel_start.size());
  s.reserve(t.kernel_start.size());
  for (uint32_t i : time_order(t.kernel_start)) {
    sym.push_back(t.kernel_name[i]);
    s.push_back(t.kernel_start[i]);
  }
  if (auto m = find_marker(sym, s, s, t.strings.size())) {
    std::string name(t.strings.view(m->symbol).substr(0, 60));
    d.source = fmt::format("detected:kernel '{}'", name);
    d.iterations = to_iterations(m->starts, m->starts, t.gpu_end);
    return true;
  }
  return false;
}

}  // namespace

Detected detect_iterations(const IterationInputs& t, const std::string& range_name) {
  Detected d;
  if (!range_name.empty()) {
    d.iterations = matching_ranges(t, [&](std::string_view s) { return s == range_name; });
    if (d.iterations.empty())
      fail("--iteration-range '{}': the trace has no NVTX range of that name; {}", range_name, frequent_ranges(t));
    d.source = "range:" + range_name;
    return d;
  }
  d.iterations = matching_ranges(t, [](std::string_view s) { return s.starts_with("ProfilerStep#"); });
  if (!d.iterations.empty()) {
    d.source = "nvtx:ProfilerStep#";
    return d;
  }
  if (detect_by_repeating_annotation(t, d) || detect_by_repeating_collective(t, d) || detect_by_repeating_kernel(t, d))
    return d;
  d.reason =
      "no ProfilerStep#N ranges and no repeating annotation, collective or kernel (at least 3 regular occurrences)";
  return d;
}

void summarize_iterations(IterationStats& st, double tol) {
  st.count = static_cast<int64_t>(st.iterations.size());
  st.warmup_count = 0;
  if (st.iterations.empty()) return;
  std::vector<double> d;
  for (const Iteration& it : st.iterations) d.push_back(static_cast<double>(it.end - it.start));
  auto stats = [](const std::vector<double>& v, double& med, double& p95, double& mean, double& cv) {
    med = median(v);
    p95 = quantile(v, 0.95);
    mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    var /= static_cast<double>(v.size());
    cv = mean > 0 ? std::sqrt(var) / mean : 0;
  };
  stats(d, st.median_ns, st.p95_ns, st.mean_ns, st.cv);
  // Warm-up: the leading run of iterations much longer than the median (at most half).
  size_t w = 0;
  while (w < d.size() / 2 && d[w] > (1 + tol) * st.median_ns) ++w;
  for (size_t i = 0; i < w; ++i) st.iterations[i].warmup = true;
  st.warmup_count = static_cast<int64_t>(w);
  std::vector<double> steady(d.begin() + static_cast<std::ptrdiff_t>(w), d.end());
  double mean = 0;
  stats(steady, st.steady_median_ns, st.steady_p95_ns, mean, st.steady_cv);
}

std::pair<Timestamp, Timestamp> resolve_window(Timestamp first, Timestamp last, bool gpu_rows,
                                               const trace::Metadata& meta, const Options& o,
                                               const Detected& detected) {
  if (!o.window) return {first, last};
  const WindowSpec& w = *o.window;
  // Offsets are clamped to the span in unsigned arithmetic (exact to the ns,
  // and defined whatever the trace's timestamps are), so first + offset <= last.
  const uint64_t span = static_cast<uint64_t>(last) - static_cast<uint64_t>(first);
  auto at = [&](double offset) {
    const uint64_t off = offset <= 0                           ? 0
                         : offset >= static_cast<double>(span) ? span
                                                               : std::min(span, static_cast<uint64_t>(offset));
    return static_cast<Timestamp>(static_cast<uint64_t>(first) + off);
  };
  switch (w.kind) {
    case WindowSpec::Kind::kPercent:
      return {at(static_cast<double>(span) * w.start / 100.0), at(static_cast<double>(span) * w.end / 100.0)};
    case WindowSpec::Kind::kNanoseconds: return {at(w.start), at(w.end)};
    case WindowSpec::Kind::kIterations: {
      const auto n = static_cast<int64_t>(detected.iterations.size());
      const auto s = static_cast<int64_t>(w.start), e = static_cast<int64_t>(w.end);
      if (n == 0) {
        // A process without GPU work (torchrun's agent beside its ranks) has
        // nothing to window: it keeps its whole span instead of failing the run.
        if (!gpu_rows) return {first, last};
        fail("--window {}: the trace of pid {} ({}) has no iterations ({})", w.to_string(), meta.pid,
             meta.rank >= 0 ? fmt::format("rank {}", meta.rank) : std::string("no rank"), detected.reason);
      }
      if (e > n) fail("--window {}: the trace has only {} iterations", w.to_string(), n);
      return {detected.iterations[static_cast<size_t>(s)].start, detected.iterations[static_cast<size_t>(e - 1)].end};
    }
  }
  return {first, last};
}

}  // namespace scalescope::analyze::detail

namespace scalescope::analyze {

WindowSpec WindowSpec::parse(std::string_view raw) {
  // Text as quoted in errors: control characters shown as '?', cut at 80.
  auto printable = [](std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 80)) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
    if (s.size() > 80) out += "...";
    return out;
  };
  const std::string text = printable(raw);
  constexpr std::string_view kForms =
      "takes START:END in percent of the trace (10%:90%), time after its first event (5s:10s, 500ms:2s; units "
      "ns, us, ms, s; a bare number is ns) or iterations (it5:it50)";
  const auto colon = raw.find(':');
  if (colon == std::string_view::npos) fail("--window '{}': expected START:END; --window {}", text, kForms);
  std::string a(raw.substr(0, colon)), b(raw.substr(colon + 1));
  WindowSpec w;
  auto strip = [&](std::string& s, std::string_view suffix_or_prefix, bool prefix) {
    if (prefix && s.starts_with(suffix_or_prefix)) {
      s.erase(0, suffix_or_prefix.size());
      return true;
    }
    if (!prefix && s.ends_with(suffix_or_prefix)) {
      s.erase(s.size() - suffix_or_prefix.size());
      return true;
    }
    return false;
  };
  // A time unit: its factor to ns (1 for a bare number), 0 for none.
  auto unit = [&](std::string& s) -> double {
    for (auto [suffix, factor] : {std::pair{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}})
      if (strip(s, suffix, false)) return factor;
    return 0;
  };
  const bool pa = strip(a, "%", false), pb = strip(b, "%", false);
  const bool ia = strip(a, "it", true), ib = strip(b, "it", true);
  if (pa != pb || ia != ib) fail("--window '{}': both ends must use the same form; --window {}", text, kForms);
  w.kind = pa ? Kind::kPercent : ia ? Kind::kIterations : Kind::kNanoseconds;
  const double factor_a = w.kind == Kind::kNanoseconds ? unit(a) : 0;
  const double factor_b = w.kind == Kind::kNanoseconds ? unit(b) : 0;
  // Bounds keep every conversion to an integer time or index defined.
  const double limit = w.kind == Kind::kPercent ? 100 : w.kind == Kind::kIterations ? kMaxIterations : kMaxNanoseconds;
  auto number = [&](const std::string& s, double factor) {
    // Plain decimal numbers only: std::stod would also take " 5", "0x10", "inf".
    const bool plain = !s.empty() && s.size() <= 32 &&
                       (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') &&
                       s.find_first_not_of("0123456789.eE+-") == std::string::npos;
    size_t used = 0;
    double v = 0;
    if (plain) {
      try {
        v = std::stod(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
    }
    if (used == 0 || used != s.size() || !std::isfinite(v) || v < 0)
      fail("--window '{}': '{}' is not a non-negative number; --window {}", text, printable(s), kForms);
    if (factor > 0) v *= factor;
    if (v > limit) {
      if (w.kind == Kind::kPercent) fail("--window '{}': percentages go up to 100", text);
      fail("--window '{}': {} is too large (at most {:g})", text, printable(s), limit);
    }
    return v;
  };
  w.start = number(a, factor_a);
  w.end = number(b, factor_b);
  if (w.end <= w.start) fail("--window '{}': the end must be after the start", text);
  if (w.kind == Kind::kIterations && (w.start != std::floor(w.start) || w.end != std::floor(w.end)))
    fail("--window '{}': iteration numbers are whole numbers", text);
  return w;
}

std::string WindowSpec::to_string() const {
  switch (kind) {
    case Kind::kPercent: return fmt::format("{}%:{}%", start, end);
    case Kind::kIterations: return fmt::format("it{}:it{}", start, end);
    case Kind::kNanoseconds: return fmt::format("{}:{}", start, end);
  }
  return "";
}

IterationStats find_iterations(const trace::Trace& trace, const Options& options) {
  Options o = options;
  o.attribution = false;  // not needed for the iterations
  return analyze_rank(trace, o).iterations;
}

// The detected iterations that lie wholly inside the window, summarized.
IterationStats detail::window_iterations(const Detected& detected, trace::Timestamp ws, trace::Timestamp we,
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

}  // namespace scalescope::analyze
