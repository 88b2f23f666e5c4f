// The sections of one run (one trace per rank): what analyze/ and advise/
// found, plus views that need the events themselves (the timeline of one
// steady-state iteration, NCCL collectives, counters), reduced to what the eye
// can see so that a 10 M-event run still gives a small page. Those views are
// taken from each rank while the run pipeline holds it (RunDrawing), so a
// report holds no more traces at a time than `analyze` does.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "report/report_document.hpp"
#include "report/run_tables.hpp"
#include "report/table.hpp"
#include "trace/import/clock_alignment.hpp"
#include "base/error.hpp"
#include "base/quantile.hpp"
#include "trace/stats/stats.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::report::detail {

namespace {

// The rank's number as the analysis gave it (numbered in file order when the
// trace has none, as `analyze` numbers it).
std::string rank_label(const analyze::RankAnalysis& r) {
  return r.rank >= 0 ? fmt::format("rank {}", r.rank) : r.label;
}

using trace::quantile_of_sorted;  // the one quantile (base/quantile.hpp), as the analysis' medians

// A table of report/run_tables.hpp as the page shows it: the table when it
// has rows, else its notes (why each rank has none) as paragraphs.
void add_table(Json& blocks, const Table& t, std::vector<int> name_columns = {}) {
  if (!t.rows().empty()) {
    blocks.push_back(table_block(t, std::move(name_columns)));
    return;
  }
  const std::string name = t.title().substr(0, t.title().find(" ("));
  for (const std::string& note : t.notes())
    blocks.push_back(paragraph(note.starts_with(name) ? note : name + ": " + note, "skipped"));
}

struct ChartPart {
  const char* name;
  const char* colour;
};

// A stacked bar chart in ms, one bar per rank that has the figures: the
// parts of `parts`, values(r) giving each part's ns (nullopt: none). Null
// when no rank has them.
Json stacked_ranks_chart(
    const analyze::RunAnalysis& run, const char* title, const std::vector<ChartPart>& parts,
    const std::function<std::optional<std::vector<int64_t>>(const analyze::RankAnalysis&)>& values) {
  Json categories = Json::array();
  std::vector<Json> values_of(parts.size(), Json::array());
  for (const auto& r : run.ranks) {
    const auto v = values(r);
    if (!v) continue;
    categories.push_back(r.label);
    for (size_t i = 0; i < parts.size(); ++i) values_of[i].push_back(ms(static_cast<double>((*v)[i])));
  }
  if (categories.empty()) return nullptr;
  Json series = Json::array();
  for (size_t i = 0; i < parts.size(); ++i)
    series.push_back({{"name", parts[i].name}, {"values", std::move(values_of[i])}, {"colour", parts[i].colour}});
  return {{"type", "chart"},
          {"kind", "bars"},
          {"title", title},
          {"stacked", true},
          {"horizontal", categories.size() > 8},
          {"unit", "ms"},
          {"categories", categories},
          {"series", std::move(series)}};
}

// The chart of where each rank's time went, and `analyze`'s table under it.
Json breakdown_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  Json chart =
      stacked_ranks_chart(run, "Per-rank breakdown",
                          {{"compute", "#2f6fde"},
                           {"exposed communication", "#e08a00"},
                           {"copies and sets", "#2e9d58"},
                           {"idle", "#b0bec5"}},
                          [](const analyze::RankAnalysis& r) -> std::optional<std::vector<int64_t>> {
                            const auto& b = r.breakdown;
                            if (!b.availability.available) return std::nullopt;
                            return std::vector<int64_t>{b.compute_ns, b.exposed_communication_ns, b.copy_ns, b.idle_ns};
                          });
  if (!chart.is_null()) blocks.push_back(std::move(chart));
  add_table(blocks, breakdown_table(run));
  return blocks;
}

// GPU idle time inside the iterations, split as Holistic Trace Analysis does
// (analyze::IdleBreakdown).
Json idle_breakdown_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  Json chart = stacked_ranks_chart(run, "GPU idle time by kind",
                                   {{"host wait", "#c62828"}, {"kernel wait", "#e08a00"}, {"other", "#b0bec5"}},
                                   [](const analyze::RankAnalysis& r) -> std::optional<std::vector<int64_t>> {
                                     const auto& b = r.idle_breakdown;
                                     if (!b.availability.available) return std::nullopt;
                                     return std::vector<int64_t>{b.host_wait_ns, b.kernel_wait_ns, b.other_ns};
                                   });
  if (!chart.is_null()) blocks.push_back(std::move(chart));
  add_table(blocks, idle_table(run));
  return blocks;
}

// The boxplot of each rank's steady iterations, and `analyze`'s table under it.
Json iteration_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  Json categories = Json::array(), boxes = Json::array(), outliers = Json::array();
  for (const auto& r : run.ranks) {
    const auto& it = r.iterations;
    if (!it.availability.available) continue;
    std::vector<double> d;
    for (const auto& i : it.iterations)
      if (!i.warmup) d.push_back(ms(static_cast<double>(i.end - i.start)));
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    const double q1 = quantile_of_sorted(d, 0.25), q3 = quantile_of_sorted(d, 0.75), iqr = q3 - q1;
    const double lo_fence = q1 - 1.5 * iqr, hi_fence = q3 + 1.5 * iqr;
    double whisker_lo = q1, whisker_hi = q3;
    const size_t x = categories.size();
    for (double v : d) {
      if (v < lo_fence || v > hi_fence) outliers.push_back({x, v});
      else {
        whisker_lo = std::min(whisker_lo, v);
        whisker_hi = std::max(whisker_hi, v);
      }
    }
    categories.push_back(r.label);
    boxes.push_back({whisker_lo, q1, quantile_of_sorted(d, 0.5), q3, whisker_hi});
  }
  if (!boxes.empty())
    blocks.push_back(
        {{"type", "chart"},
         {"kind", "boxplot"},
         {"title", "Iteration time per rank (steady state)"},
         {"unit", "ms"},
         {"series_name", "iteration time"},
         {"categories", categories},
         {"boxes", boxes},
         {"outliers", outliers},
         {"notes",
          Json::array({"Boxes: quartiles; whiskers: 1.5 IQR; dots: outliers. Warm-up iterations excluded."})}});
  add_table(blocks, iterations_table(run), {1});
  return blocks;
}

// The collector's host sampler (format 1.2): `analyze`'s host tables (the
// main thread, other threads and worker processes per rank over the steady
// iterations where found; each rank's threads by CPU time; native call
// stacks where sampled). Nothing for traces without host samples.
Json host_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  for (const Table& t : host_tables(run))
    if (t.id() != "host_iterations") blocks.push_back(table_block(t, {}));
  return blocks;
}

// Picks the steady-state iteration to draw: the one whose duration is closest
// to the steady median (a typical step, not the fastest or a hiccup).
std::optional<size_t> typical_iteration(const analyze::IterationStats& it) {
  std::optional<size_t> best;
  double best_diff = 0;
  for (size_t i = 0; i < it.iterations.size(); ++i) {
    const auto& x = it.iterations[i];
    if (x.warmup) continue;
    const double diff = std::fabs(static_cast<double>(x.end - x.start) - it.steady_median_ns);
    if (!best || diff < best_diff) {
      best = i;
      best_diff = diff;
    }
  }
  return best;
}

struct TimelineItem {
  uint32_t lane;
  double start_us, end_us;
  uint32_t cls;
  uint32_t name;
};

// One counter series of one rank: the points min/max decimation keeps, on the
// rank's own Unix clock (the run's correction is applied when drawn).
struct CounterSeries {
  std::vector<std::pair<int64_t, double>> points;  // (Unix ns as read, value)
  size_t read = 0;                                 // samples before decimation
};

// Min/max decimation: each bucket of the time range keeps its lowest and
// highest sample, so spikes survive while the series stays short. Returns the
// indices kept, in time order; points sorted by time.
std::vector<size_t> decimate(const std::vector<std::pair<int64_t, double>>& points, size_t max_points) {
  std::vector<size_t> out;
  if (points.size() <= max_points) {
    for (size_t i = 0; i < points.size(); ++i) out.push_back(i);
    return out;
  }
  const size_t buckets = std::max<size_t>(1, max_points / 2);
  const double x0 = static_cast<double>(points.front().first), x1 = static_cast<double>(points.back().first);
  const double width = (x1 - x0) / static_cast<double>(buckets);
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const double end = b + 1 == buckets ? x1 : x0 + width * static_cast<double>(b + 1);
    size_t lo = i, hi = i;
    for (; i < points.size() && (static_cast<double>(points[i].first) <= end || b + 1 == buckets); ++i) {
      if (points[i].second < points[lo].second) lo = i;
      if (points[i].second > points[hi].second) hi = i;
    }
    if (i == lo && i == hi) continue;
    const size_t a = std::min(lo, hi), c = std::max(lo, hi);
    out.push_back(a);
    if (c != a) out.push_back(c);
  }
  return out;
}

// What the page draws of each rank's events, taken while the run pipeline
// holds the rank's trace (analyze_path's visitor) and kept small: one
// iteration's GPU activity for the timeline, decimated counter series (the
// NCCL table is the analysis', RunAnalysis::nccl_ops). So a report holds a few traces at a time, as `analyze` does, and
// not every rank's.
class RunDrawing {
 public:
  RunDrawing(const analyze::KernelClassifier& classifier, size_t max_counter_points)
      : classifier_(classifier), max_counter_points_(max_counter_points) {}

  // Ranks come one at a time, slot 0, 1, ... (input order for a path).
  void add_rank(size_t slot, const trace::Trace& t, const analyze::RankAnalysis& r) {
    if (slot >= ranks_.size()) ranks_.resize(slot + 1);
    Rank& out = ranks_[slot];
    out.events = t.event_count();
    out.source = t.meta.source;
    out.device_name = t.meta.devices.empty() ? std::string() : t.meta.devices.front().name;
    out.devices = t.meta.devices.size();
    out.hostname = t.meta.hostname;
    for (int p = 0; p < trace::kProblemCount; ++p)
      if (const auto n = t.problems.get(static_cast<trace::Problem>(p)))
        out.problems.emplace_back(static_cast<trace::Problem>(p), n);
    add_timeline(t, r, out);
    add_counters(t, out);
  }

  // The blocks, for the ranks in run order: slot_of[i] is run.ranks[i]'s slot.
  // clocks: the run's estimate, applied to the counters' time axis.
  Json timeline_blocks(const std::vector<analyze::RankAnalysis>& ranks, const std::vector<size_t>& slot_of,
                       size_t max_events) const;
  Json counter_blocks(const std::vector<analyze::RankAnalysis>& ranks, const std::vector<size_t>& slot_of,
                      const trace::ClockAlignment* clocks) const;
  Json problem_blocks(const std::vector<analyze::RankAnalysis>& ranks, const std::vector<size_t>& slot_of) const;
  std::string subtitle(const std::vector<size_t>& slot_of) const;

 private:
  struct Rank {
    size_t events = 0, devices = 0;
    std::string source, device_name, hostname;
    std::vector<std::pair<trace::Problem, uint64_t>> problems;
    bool drawn = false;  // has a timeline iteration
    double span_us = 0;
    std::vector<TimelineItem> items;                       // lane: index into lane_keys
    std::vector<std::pair<uint32_t, uint32_t>> lane_keys;  // (device, stream), in order of first use
    std::map<std::pair<trace::CounterMetric, uint32_t>, CounterSeries> counters;  // (metric, device)
    std::optional<int64_t> first_counter_unix;  // of the table's first row, as the axis' origin
  };

  uint32_t intern(std::string s) {
    auto [it, inserted] = name_ids_.try_emplace(s, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(std::move(s));
    return it->second;
  }

  void add_timeline(const trace::Trace& t, const analyze::RankAnalysis& r, Rank& out) {
    const auto& it = r.iterations;
    if (!it.availability.available || it.iterations.empty()) return;
    // The same iteration index on every rank (ranks step together), chosen on
    // the first rank that has one.
    if (!index_) index_ = typical_iteration(it);
    if (!index_) return;
    const size_t k =
        *index_ < it.iterations.size() && !it.iterations[*index_].warmup ? *index_ : typical_iteration(it).value_or(0);
    const auto w0 = it.iterations[k].start, w1 = it.iterations[k].end;
    if (w1 <= w0) return;
    out.drawn = true;
    out.span_us = static_cast<double>(w1 - w0) / 1e3;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> lanes;
    auto add = [&](trace::Timestamp s, trace::Timestamp e, uint32_t device, uint32_t stream, uint32_t cls,
                   uint32_t name) {
      if (e <= w0 || s >= w1) return;
      s = std::max(s, w0);
      e = std::min(e, w1);
      const auto [lane, inserted] = lanes.try_emplace({device, stream}, static_cast<uint32_t>(out.lane_keys.size()));
      if (inserted) out.lane_keys.emplace_back(device, stream);
      out.items.push_back(
          {lane->second, static_cast<double>(s - w0) / 1e3, static_cast<double>(e - w0) / 1e3, cls, name});
    };
    constexpr uint32_t kCopy = 4, kMemset = 5;
    std::unordered_map<trace::StringId, std::pair<uint32_t, uint32_t>> kernel_cache;  // name -> (class, name id)
    const auto& kt = t.kernels;
    // A linear scan: it does not rely on the tables being sorted, and costs ~10 ms per 10 M events.
    for (size_t i = 0; i < kt.size(); ++i) {
      if (kt.end[i] <= w0 || kt.start[i] >= w1) continue;
      auto found = kernel_cache.find(kt.name[i]);
      if (found == kernel_cache.end()) {
        const auto view = t.strings.view(kt.name[i]);
        const auto info = classifier_.classify(view);
        found = kernel_cache.emplace(kt.name[i], std::pair{static_cast<uint32_t>(info.cls), intern(std::string(view))})
                    .first;
      }
      add(kt.start[i], kt.end[i], kt.device[i], kt.stream[i], found->second.first, found->second.second);
    }
    const auto& mt = t.memcpys;
    for (size_t i = 0; i < mt.size(); ++i) {
      if (mt.end[i] <= w0 || mt.start[i] >= w1) continue;
      add(mt.start[i], mt.end[i], mt.device[i], mt.stream[i], kCopy,
          intern(fmt::format("memcpy {} {} ({} -> {})", trace::to_string(mt.kind[i]),
                             format_bytes(static_cast<double>(mt.bytes[i])), trace::to_string(mt.src_kind[i]),
                             trace::to_string(mt.dst_kind[i]))));
    }
    const auto& st = t.memsets;
    for (size_t i = 0; i < st.size(); ++i) {
      if (st.end[i] <= w0 || st.start[i] >= w1) continue;
      add(st.start[i], st.end[i], st.device[i], st.stream[i], kMemset,
          intern(fmt::format("memset {}", format_bytes(static_cast<double>(st.bytes[i])))));
    }
  }

  void add_counters(const trace::Trace& t, Rank& out) {
    const auto& c = t.counters;
    if (!c.size()) return;
    out.first_counter_unix = t.meta.to_unix_ns(c.time.front());
    std::map<std::pair<trace::CounterMetric, uint32_t>, std::vector<std::pair<int64_t, double>>> read;
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.metric[i] == trace::CounterMetric::kEnergyJoules ||
          c.metric[i] == trace::CounterMetric::kClocksEventReasons)
        continue;  // a running total (power shows the same over time), a bitmask (the GPU clocks table reads it)
      read[{c.metric[i], c.device[i]}].emplace_back(t.meta.to_unix_ns(c.time[i]), c.value[i]);
    }
    for (auto& [key, points] : read) {
      std::sort(points.begin(), points.end());
      CounterSeries& s = out.counters[key];
      s.read = points.size();
      for (size_t i : decimate(points, max_counter_points_)) s.points.push_back(points[i]);
    }
  }

  const analyze::KernelClassifier& classifier_;
  size_t max_counter_points_;
  std::vector<Rank> ranks_;
  std::optional<size_t> index_;  // the timeline's iteration
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
};

Json RunDrawing::timeline_blocks(const std::vector<analyze::RankAnalysis>& ranks, const std::vector<size_t>& slot_of,
                                 size_t max_events) const {
  // Classes: the four kernel classes, then copies and sets.
  const std::vector<std::string> classes = {"compute", "communication", "memory", "synchronization", "copy", "memset"};
  if (!index_)
    return Json::array({paragraph("No timeline: no steady-state iteration was found in any rank.", "skipped")});
  std::vector<std::string> lanes;
  std::vector<TimelineItem> items;
  double span_us = 0;
  size_t ranks_drawn = 0;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const Rank& r = ranks_[slot_of[ri]];
    if (!r.drawn) continue;
    ++ranks_drawn;
    span_us = std::max(span_us, r.span_us);
    if (r.items.empty()) continue;
    // Lanes in (rank, device, stream) order.
    std::vector<uint32_t> order(r.lane_keys.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return r.lane_keys[a] < r.lane_keys[b]; });
    std::vector<uint32_t> lane_of(order.size());
    for (uint32_t id : order) {
      lane_of[id] = static_cast<uint32_t>(lanes.size());
      const auto [device, stream] = r.lane_keys[id];
      lanes.push_back(r.devices > 1 ? fmt::format("{} gpu {} stream {}", rank_label(ranks[ri]), device, stream)
                                    : fmt::format("{} stream {}", rank_label(ranks[ri]), stream));
    }
    for (TimelineItem i : r.items) {
      i.lane = lane_of[i.lane];
      items.push_back(i);
    }
  }
  if (items.empty())
    return Json::array({paragraph("No timeline: the chosen iteration holds no GPU activity.", "skipped")});
  const size_t total = items.size();
  if (items.size() > max_events) {
    // The longest events carry the picture; the shortest are below a pixel at full zoom-out.
    std::nth_element(
        items.begin(), items.begin() + static_cast<std::ptrdiff_t>(max_events), items.end(),
        [](const TimelineItem& a, const TimelineItem& b) { return a.end_us - a.start_us > b.end_us - b.start_us; });
    items.resize(max_events);
  }
  std::sort(items.begin(), items.end(),
            [](const TimelineItem& a, const TimelineItem& b) { return a.start_us < b.start_us; });
  // Only the names still drawn, renumbered in order of first use.
  std::vector<std::string> names;
  std::unordered_map<uint32_t, uint32_t> name_of;
  Json data = Json::array();
  for (const auto& i : items) {
    const auto [it, inserted] = name_of.try_emplace(i.name, static_cast<uint32_t>(names.size()));
    if (inserted) names.push_back(names_[i.name]);
    data.push_back(
        {i.lane, std::round(i.start_us * 1000) / 1000, std::round(i.end_us * 1000) / 1000, i.cls, it->second});
  }
  Json notes = Json::array();
  notes.push_back(
      fmt::format("Iteration {} (the steady one closest to the median), drawn for {} rank{}, each on its own "
                  "clock from the iteration's start. Drag the slider or scroll to zoom.",
                  *index_ + 1, ranks_drawn, ranks_drawn == 1 ? "" : "s"));
  if (total > items.size())
    notes.push_back(fmt::format("Showing the {} longest of {} events; shorter ones are omitted.", items.size(), total));
  return Json::array({{{"type", "chart"},
                       {"kind", "timeline"},
                       {"title", "Timeline of one steady-state iteration"},
                       {"tall", true},
                       {"unit", "us"},
                       {"span", std::ceil(span_us)},
                       {"lanes", lanes},
                       {"classes", classes},
                       {"names", names},
                       {"items", std::move(data)},
                       {"notes", std::move(notes)}}});
}

// The run's NCCL collectives by operation and message size, as the analysis
// gives them (analyze/nccl_ops.hpp): time per rank and operation, then the table.
Json nccl_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  const analyze::NcclOpStats& all = run.nccl_ops;
  if (all.available && !all.groups.empty()) {
    Json cats = Json::array();
    for (const auto& r : run.ranks) cats.push_back(rank_label(r));
    std::vector<std::string> ops;  // groups come by operation: each once, in order
    for (const auto& g : all.groups)
      if (ops.empty() || ops.back() != g.operation) ops.push_back(g.operation);
    Json series = Json::array();
    for (const auto& op : ops) {
      Json values = Json::array();
      for (const auto& r : run.ranks) {
        int64_t ns = 0;
        for (const auto& g : r.nccl_ops.groups)
          if (g.operation == op) ns += g.time_ns;
        values.push_back(ms(ns));
      }
      series.push_back({{"name", op}, {"values", std::move(values)}});
    }
    blocks.push_back({{"type", "chart"},
                      {"kind", "bars"},
                      {"title", "NCCL time per rank by operation"},
                      {"stacked", true},
                      {"unit", "ms"},
                      {"categories", cats},
                      {"series", std::move(series)}});
  }
  add_table(blocks, nccl_table(run));
  return blocks;
}

Json RunDrawing::counter_blocks(const std::vector<analyze::RankAnalysis>& ranks, const std::vector<size_t>& slot_of,
                                const trace::ClockAlignment* clocks) const {
  // Series per (metric, rank, device), on one Unix-clock axis so ranks line up:
  // each rank's times moved onto the reference host's clock as the run's
  // alignment estimated.
  std::vector<const trace::HostClock*> clock_of(ranks.size(), nullptr);
  int64_t t0 = std::numeric_limits<int64_t>::max();
  auto corrected = [&](size_t ri, int64_t unix_ns) {
    return clock_of[ri] && clock_of[ri]->applied() ? unix_ns - clock_of[ri]->correction_at(unix_ns) : unix_ns;
  };
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const Rank& r = ranks_[slot_of[ri]];
    if (clocks) {
      const std::string host = r.hostname.empty() ? fmt::format("(unknown host, process {})", ri) : r.hostname;
      clock_of[ri] = clocks->find(host);
    }
    if (r.first_counter_unix) t0 = std::min(t0, corrected(ri, *r.first_counter_unix));
  }
  std::map<std::pair<trace::CounterMetric, std::string>, Json> series;
  size_t total = 0, kept = 0;
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    const Rank& r = ranks_[slot_of[ri]];
    for (const auto& [key, s] : r.counters) {
      const std::string name = ranks.size() > 1 || r.devices > 1
                                   ? fmt::format("{} gpu {}", rank_label(ranks[ri]), key.second)
                                   : fmt::format("gpu {}", key.second);
      Json p = Json::array();
      for (const auto& [unix_ns, value] : s.points)
        p.push_back({static_cast<double>(corrected(ri, unix_ns) - t0) / 1e9, value});
      total += s.read;
      kept += s.points.size();
      series[{key.first, name}] = std::move(p);
    }
  }
  if (series.empty())
    return Json::array(
        {paragraph("No GPU counters in these traces (NVML sampling was off or unavailable).", "skipped")});
  // One figure of small multiples, a panel per metric on a shared time axis:
  // a chart per metric made the section a dozen screens tall.
  Json blocks = Json::array();
  std::map<trace::CounterMetric, Json> panels;
  for (auto& [key, p] : series) {
    auto& panel = panels[key.first];
    if (panel.is_null()) panel = {{"name", std::string(trace::to_string(key.first))}, {"series", Json::array()}};
    panel["series"].push_back({{"name", key.second}, {"style", "line-only"}, {"points", std::move(p)}});
  }
  Json list = Json::array();
  for (auto& [metric, panel] : panels) list.push_back(std::move(panel));
  blocks.push_back({{"type", "chart"},
                    {"kind", "panels"},
                    {"title", "GPU counters"},
                    {"x", {{"name", "time (s)"}}},
                    {"panels", std::move(list)}});
  if (kept < total)
    blocks.push_back(
        paragraph(fmt::format("Counters decimated for drawing: {} of {} samples kept (each interval keeps its "
                              "minimum and maximum).",
                              kept, total),
                  "note"));
  return blocks;
}

Json RunDrawing::problem_blocks(const std::vector<analyze::RankAnalysis>& ranks,
                                const std::vector<size_t>& slot_of) const {
  Json blocks = Json::array();
  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    std::vector<std::string> parts;
    bool loss = false;
    for (const auto& [problem, n] : ranks_[slot_of[ri]].problems) {
      // In words; the code after it, as `analyze` and the trace format name it.
      parts.push_back(fmt::format("{} ({}, {})", trace::describe(problem), n, trace::to_string(problem)));
      loss = loss || trace::severity_of(problem) == trace::Severity::kDataLoss;
    }
    if (!parts.empty())
      blocks.push_back(paragraph(
          fmt::format("{}{}: {}.", rank_label(ranks[ri]), loss ? " (data loss)" : "", fmt::join(parts, "; ")), "note"));
  }
  return blocks;
}

std::string RunDrawing::subtitle(const std::vector<size_t>& slot_of) const {
  size_t events = 0;
  for (size_t s : slot_of) events += ranks_[s].events;
  const Rank& first = ranks_[slot_of.front()];
  std::string text = fmt::format("{} rank(s), {} events, source: {}", slot_of.size(), events,
                                 first.source.empty() ? "unknown" : first.source);
  if (!first.device_name.empty()) text += ", " + first.device_name;
  return text;
}

// A horizontal bar chart of a table's first `max_bars` rows: each row's
// `label` cell and its `value_ns` column in ms.
Json bars_of(const Table& t, const char* title, const char* series, std::string_view label,
             std::string_view value_ns, size_t max_bars) {
  const auto index = [&](std::string_view name) {
    for (size_t i = 0; i < t.columns().size(); ++i)
      if (t.columns()[i].name == name) return i;
    fail("report: table '{}' has no column {}", t.title(), std::string(name));
  };
  const size_t label_at = index(label), value_at = index(value_ns);
  Json cats = Json::array(), values = Json::array();
  for (size_t i = 0; i < t.rows().size() && i < max_bars; ++i) {
    cats.push_back(std::get<std::string>(t.rows()[i][label_at]));
    values.push_back(ms(std::get<int64_t>(t.rows()[i][value_at])));
  }
  return {{"type", "chart"},
          {"kind", "bars"},
          {"title", title},
          {"horizontal", true},
          {"unit", "ms"},
          {"categories", std::move(cats)},
          {"series", Json::array({{{"name", series}, {"values", std::move(values)}}})}};
}

// `analyze`'s table of the kernels of all ranks, under a chart of the first
// 15 (short names; the full signature is the table cell's tooltip).
Json kernel_blocks(const analyze::RunAnalysis& run, int top) {
  const Table t = all_ranks_kernels_table(run, top);
  Json blocks = Json::array();
  if (!t.rows().empty())
    blocks.push_back(bars_of(t, "Top kernels by total time", "total time", "short_name", "total_ns", 15));
  add_table(blocks, t, {0});
  return blocks;
}

// `analyze`'s table of the copies of all ranks, under a chart of their time.
Json copy_blocks(const analyze::RunAnalysis& run) {
  const Table t = all_ranks_copies_table(run);
  Json blocks = Json::array();
  if (!t.rows().empty()) blocks.push_back(bars_of(t, "Copy time by kind", "time", "copy", "time_ns", t.rows().size()));
  add_table(blocks, t);
  return blocks;
}

Json straggler_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  add_table(blocks, straggler_table(run));
  return blocks;
}

// The per-node view of a run of several hosts: a chart of each node's mean
// breakdown and its ranks' lateness, then the tables `analyze` prints (one
// formatter, report/run_tables.hpp). Empty for a run of one host.
Json node_blocks(const analyze::RunAnalysis& run) {
  Json blocks = Json::array();
  std::vector<Table> tables = node_tables(run);
  if (tables.empty()) return blocks;
  const analyze::NodeStats& n = run.nodes;
  if (n.availability.available && !n.nodes.empty()) {
    Json categories = Json::array(), compute = Json::array(), comm = Json::array(), copies = Json::array(),
         idle = Json::array(), late = Json::array();
    for (const auto& x : n.nodes) {
      categories.push_back(x.hostname);
      compute.push_back(ms(x.compute_ns));
      comm.push_back(ms(x.exposed_communication_ns));
      copies.push_back(ms(x.copy_ns));
      idle.push_back(ms(x.idle_ns));
      late.push_back(ms(static_cast<double>(x.late_ns)));
    }
    const bool horizontal = categories.size() > 8;
    blocks.push_back(
        {{"type", "chart"},
         {"kind", "bars"},
         {"title", "Per-node breakdown (mean over each node's ranks)"},
         {"stacked", true},
         {"horizontal", horizontal},
         {"unit", "ms"},
         {"categories", categories},
         {"series", Json::array({{{"name", "compute"}, {"values", compute}, {"colour", "#2f6fde"}},
                                 {{"name", "exposed communication"}, {"values", comm}, {"colour", "#e08a00"}},
                                 {{"name", "copies and sets"}, {"values", copies}, {"colour", "#2e9d58"}},
                                 {{"name", "idle"}, {"values", idle}, {"colour", "#b0bec5"}}})}});
    blocks.push_back(
        {{"type", "chart"},
         {"kind", "bars"},
         {"title", "Lateness at collectives per node (summed over its ranks)"},
         {"horizontal", horizontal},
         {"unit", "ms"},
         {"categories", std::move(categories)},
         {"series", Json::array({{{"name", "late"}, {"values", std::move(late)}, {"colour", "#c62828"}}})}});
    if (!n.slowest_node.empty())
      blocks.push_back(paragraph(fmt::format("Slowest node: {} (by {}).", n.slowest_node, n.slowest_node_by)));
  } else if (!n.availability.reason.empty()) {
    blocks.push_back(paragraph("Nodes: " + n.availability.reason, "skipped"));
  }
  for (const Table& t : tables) blocks.push_back(table_block(t, {0}));
  return blocks;
}

// The collector's self-measured perturbation (sampled windows): one line per
// rank that has it, so the reader knows how much the profiler changed the step.
Json perturbation_blocks(const std::vector<analyze::RankAnalysis>& ranks) {
  Json blocks = Json::array();
  for (const auto& r : ranks) {
    const auto& p = r.perturbation;
    if (p.sampling.empty()) continue;
    std::string text;
    if (p.sampling == "sampled")
      text = fmt::format("{}: profiler perturbation, measured by the run: {}", r.label,
                         p.text.empty() ? std::string("not recorded") : p.text);
    else
      text = fmt::format("{}: profiler perturbation not measured ({})", r.label,
                         p.sampling == "full" ? "the whole run was traced: --full" : "the user's own tracing windows");
    if (p.matters)
      text += fmt::format("; above {:.0f} %, so launch-bound, idle-gap and host-sync figures are inflated",
                          analyze::kPerturbationMatters);
    blocks.push_back(paragraph(text, "note"));
  }
  return blocks;
}

void append(Json& blocks, Json more) {
  for (auto& b : more) blocks.push_back(std::move(b));
}

analyze::Options run_options(const Document& doc) {
  analyze::Options options;
  options.iteration_range = doc.options.iteration_range;
  return options;
}

// The sections of one analysed run; clocks: the estimate that moves the
// drawing's counters onto one clock (null when the events are already on one).
void add_analysed_run(Document& doc, const std::string& label, const RunDrawing& drawing,
                      const trace::ClockAlignment* clocks, analyze::RunAnalysis run) {
  const std::vector<analyze::RankAnalysis>& ranks = run.ranks;
  std::vector<size_t> slot_of;  // slot_of[i]: the drawing slot of ranks[i]
  for (const auto& r : ranks) slot_of.push_back(r.input_index);
  for (const auto& f : advise::advise(run)) {
    Json j = f;  // advise::to_json: the page shows what `analyze --json` gives, cause links included
    j["source"] = label;
    doc.findings.push_back(std::move(j));
    if (doc.finding_highlights < 6) {
      doc.highlights.push_back(
          fmt::format("{}: {} (up to {:.1f}% of step time)", label, f.title, 100 * f.saving_fraction));
      ++doc.finding_highlights;
    }
  }
  doc.analysed_runs = true;
  Json blocks = Json::array();
  append(blocks, drawing.problem_blocks(ranks, slot_of));
  append(blocks, perturbation_blocks(ranks));
  append(blocks, breakdown_blocks(run));
  append(blocks, idle_breakdown_blocks(run));
  append(blocks, iteration_blocks(run));
  append(blocks, host_blocks(run));
  for (const Table& t : python_frame_tables(run)) blocks.push_back(table_block(t, {}));
  append(blocks, drawing.timeline_blocks(ranks, slot_of, doc.options.max_timeline_events));
  append(blocks, kernel_blocks(run, doc.options.top_kernels));
  append(blocks, attribution_blocks(run));
  append(blocks, copy_blocks(run));
  if (ranks.size() > 1) append(blocks, straggler_blocks(run));
  append(blocks, nccl_blocks(run));
  append(blocks, drawing.counter_blocks(ranks, slot_of, clocks));
  // The per-rank summary of those counters `analyze` prints (one formatter).
  if (Table clocks = gpu_clocks_table(run); !clocks.rows().empty()) blocks.push_back(table_block(clocks));
  std::string subtitle = drawing.subtitle(slot_of);
  doc.sections.push_back(section("Run: " + label, std::move(subtitle), std::move(blocks)));
  Json nodes = node_blocks(run);
  if (!nodes.empty()) {
    // Hosts as the traces name them; a process without a host name has its
    // own clock estimate but is not counted as a host.
    size_t named = 0;
    for (const auto& h : run.clocks.hosts) named += h.hostname.starts_with("(unknown host") ? 0 : 1;
    const size_t unnamed = run.clocks.hosts.size() - named;
    const std::string hosts = unnamed == 0 ? fmt::format("{} host{}", named, named == 1 ? "" : "s")
                              : named == 0 ? std::string("hosts not named in the traces")
                                           : fmt::format("{} named host{} and {} process{} without a host name", named,
                                                         named == 1 ? "" : "s", unnamed, unnamed == 1 ? "" : "es");
    doc.sections.push_back(
        section("Nodes: " + label,
                fmt::format("{}, {} ranks; clocks aligned from matched collectives", hosts, run.ranks.size()),
                std::move(nodes)));
  }
}

}  // namespace

void add_run_sections(Document& doc, const std::string& label, const std::vector<trace::Trace>& given,
                      const trace::ClockAlignment* clocks) {
  if (given.empty()) fail("{}: no traces in this run", label);
  const analyze::Options options = run_options(doc);
  std::vector<std::string> names;
  for (size_t i = 0; i < given.size(); ++i) names.push_back(fmt::format("trace {}", i));
  // The run pipeline of `scalescope analyze`, as for a path below.
  RunDrawing drawing(options.classifier, doc.options.max_counter_points);
  analyze::RunAnalysis run = analyze::analyze_traces(
      given, names, options, {}, 0, [&](size_t input_index, const trace::Trace& t, const analyze::RankAnalysis& r) {
        drawing.add_rank(input_index, t, r);
      });
  // Traces already aligned carry the estimate that moved them; combine()
  // re-estimating would only find what is left (agrees, about 0).
  if (clocks && !clocks->hosts.empty()) run.clocks = *clocks;
  add_analysed_run(doc, label, drawing, nullptr, std::move(run));
}

void add_run_path_sections(Document& doc, const std::string& label, const std::filesystem::path& path) {
  const analyze::Options options = run_options(doc);
  // The run pipeline of `scalescope analyze`: the page shows the analysis it
  // prints, and takes what it draws from each rank as the pipeline passes it.
  RunDrawing drawing(options.classifier, doc.options.max_counter_points);
  analyze::RunAnalysis run = analyze::analyze_path(
      path, options, 0, {}, [&](size_t input_index, const trace::Trace& t, const analyze::RankAnalysis& r) {
        drawing.add_rank(input_index, t, r);
      });
  if (run.ranks.empty()) fail("{}: no traces in this run", label);
  // The counters are drawn on the reference host's clock, moved as the analysis estimated.
  const trace::ClockAlignment clocks = run.clocks;
  add_analysed_run(doc, label, drawing, &clocks, std::move(run));
}

}  // namespace scalescope::report::detail
