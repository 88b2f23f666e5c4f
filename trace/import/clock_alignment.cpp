#include "trace/import/clock_alignment.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "base/enum_names.hpp"
#include "base/quantile.hpp"
#include "trace/model/nccl_kernel_name.hpp"

namespace scalescope::trace {
namespace {

// Bins of the time-ordered differences for the Theil-Sen slope of long runs:
// 512 bins keep the pairwise slopes at 130,816 whatever the run's length, and
// each bin's median is robust to the odd late collective.
constexpr size_t kMaxBins = 512;
constexpr size_t kMaxRawTheilSen = 1024;  // points: 523,776 pairwise slopes at most
constexpr size_t kMinPerBin = 4;
constexpr size_t kMinPerRoughBin = 16;  // for finding the inliers: right matches outnumber wrong ones
// Ends of one collective on different hosts differ by microseconds (the last
// chunk's arrival); a band of 100 us holds them with room for a slow network,
// while a wrong match is off by the time between collectives (milliseconds).
constexpr double kClusterNs = 100'000;
// 1.4826 x MAD estimates a normal standard deviation; the median's standard
// error is sqrt(pi/2) = 1.2533 x sigma / sqrt(n).
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianStdErr = 1.2533;
// A slope is kept only where it shrinks the residuals' spread to two thirds
// or less (a trend, not noise: on the study's H200 runs, where the true drift
// is 0, a Theil-Sen slope of -1.8 ppm fitted warm-up noise and moved the ends
// of the run by 6 us) and moves the run's ends by more than 200 ns.
constexpr double kDriftSpreadRatio = 2.0 / 3.0;
constexpr double kMinDriftEffectNs = 200.0;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

double median_of(std::vector<double> v) { return median_in_place(v); }  // base/quantile.hpp

// One host's collectives: (key, median end over its ranks), sorted by key.
struct HostEnds {
  std::string name;  // as shown: the hostname, or "(unknown host, rank N)"
  std::vector<std::pair<uint64_t, int64_t>> ends;
  int32_t first_rank = -1;
  int32_t rank_count = 0;
};

void median_per_key(std::vector<CollectiveEnd>& all, std::vector<std::pair<uint64_t, int64_t>>& out) {
  std::sort(all.begin(), all.end(), [](const CollectiveEnd& a, const CollectiveEnd& b) {
    return a.key < b.key || (a.key == b.key && a.end_unix_ns < b.end_unix_ns);
  });
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].key == all[i].key) ++j;
    // Exact in integers (base/quantile.hpp's double cannot hold a Unix time in ns).
    const size_t n = j - i, mid = i + n / 2;
    int64_t m = all[mid].end_unix_ns;
    if (n % 2 == 0) m = all[mid - 1].end_unix_ns + (all[mid].end_unix_ns - all[mid - 1].end_unix_ns) / 2;
    out.push_back({all[i].key, m});
    i = j;
  }
}

struct Fit {
  int64_t offset = 0;
  double slope = 0;  // ns per ns
  int64_t t0 = 0;
  double uncertainty = 0, spread = 0;
  int64_t n = 0, inliers = 0, span = 0;
  int64_t first = 0, last = 0;  // reference-clock times of the first and last inlier
};

using Points = std::vector<std::pair<int64_t, int64_t>>;  // (reference time, difference), sorted by time

// The median of the densest window of width kClusterNs over `v` (sorted in
// place), and how many values it holds. Collectives matched wrongly (a rank
// that numbered two concurrent collectives the other way round: seen in the
// study's H200 traces, 4 in 10 of one run) differ by milliseconds, the right
// ones by microseconds: the densest window is the right ones.
std::pair<double, size_t> densest(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  size_t best_i = 0, best_n = 0;
  for (size_t i = 0, j = 0; i < v.size(); ++i) {
    while (j < v.size() && v[j] - v[i] <= kClusterNs) ++j;
    if (j - i > best_n) {
      best_n = j - i;
      best_i = i;
    }
  }
  if (best_n == 0) return {0, 0};
  const size_t mid = best_i + best_n / 2;
  const double m = best_n % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return {m, best_n};
}

// Siegel's repeated median: for each point the median slope to the others,
// then the median of those. Half the points may be bad, where Theil-Sen
// breaks at 29 %: the study's LLM run has a warm-up cluster 13 us off at its
// start that tilted Theil-Sen by 1.4 ppm (5.2 us at the run's end).
double repeated_median(const std::vector<std::pair<double, double>>& c) {
  std::vector<double> per_point, slopes;
  for (size_t i = 0; i < c.size(); ++i) {
    slopes.clear();
    for (size_t j = 0; j < c.size(); ++j)
      if (c[j].first != c[i].first) slopes.push_back((c[j].second - c[i].second) / (c[j].first - c[i].first));
    if (!slopes.empty()) per_point.push_back(median_of(slopes));
  }
  return median_of(std::move(per_point));
}

// Theil-Sen slope through (time, value) centres: the median of pairwise slopes.
double theil_sen(const std::vector<std::pair<double, double>>& c) {
  std::vector<double> slopes;
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      if (c[j].first > c[i].first) slopes.push_back((c[j].second - c[i].second) / (c[j].first - c[i].first));
  return median_of(std::move(slopes));
}

// Centres of up to kMaxBins time-ordered bins (at least min_per_bin points each):
// each bin's densest window (robust) or its median.
std::vector<std::pair<double, double>> bin_centres(const Points& pts, int64_t t0, bool use_densest,
                                                   size_t min_per_bin) {
  std::vector<std::pair<double, double>> c;
  const size_t n = pts.size();
  const size_t bins = std::min(kMaxBins, n / min_per_bin);
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * n / bins, hi = (b + 1) * n / bins;
    std::vector<double> d;
    for (size_t i = lo; i < hi; ++i) d.push_back(static_cast<double>(pts[i].second));
    const double centre = use_densest ? densest(d).first : median_of(std::move(d));
    c.push_back({static_cast<double>(pts[lo + (hi - lo) / 2].first - t0), centre});
  }
  return c;
}

double residual(const std::pair<int64_t, int64_t>& p, int64_t t0, double offset, double slope) {
  return static_cast<double>(p.second) - offset - slope * static_cast<double>(p.first - t0);
}

// A robust line d = offset + slope (t - t0) through points sorted by t:
// inliers first (the densest band around a rough line), then on them a
// Theil-Sen slope over bin medians, kept only where it shrinks the
// residuals' spread by a third (a trend, not noise), and the median intercept.
Fit fit_line(const Points& all) {
  Fit f;
  f.n = static_cast<int64_t>(all.size());
  int64_t t0 = all[all.size() / 2].first;
  // 1. Inliers: the densest band around a flat line, or around a rough line
  // through the densest window of bins large enough for the right matches to
  // outnumber the wrong ones, whichever holds more.
  Points pts;
  for (bool sloped : {false, true}) {
    double rough = 0;
    if (sloped) {
      if (all.size() < 2 * kMinPerRoughBin || all.back().first <= all.front().first) break;
      rough = theil_sen(bin_centres(all, t0, true, kMinPerRoughBin));
    }
    std::vector<double> r(all.size());
    for (size_t i = 0; i < all.size(); ++i) r[i] = residual(all[i], t0, 0, rough);
    std::vector<double> sorted_r = r;
    const double centre = densest(sorted_r).first;
    Points band;
    for (size_t i = 0; i < all.size(); ++i)
      if (std::abs(r[i] - centre) <= kClusterNs) band.push_back(all[i]);
    if (band.size() > pts.size()) pts = std::move(band);
  }
  const size_t n = pts.size();
  f.inliers = static_cast<int64_t>(n);
  f.first = pts.front().first;
  f.last = pts.back().first;
  f.span = f.last - f.first;
  f.t0 = t0 = pts[n / 2].first;
  // 2. The line through the inliers.
  auto intercept = [&](double slope) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = residual(pts[i], t0, 0, slope);
    return median_of(std::move(v));
  };
  auto mad = [&](double offset, double slope) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = std::abs(residual(pts[i], t0, offset, slope));
    return kMadToSigma * median_of(std::move(v));
  };
  double slope = 0, offset = intercept(0), spread = mad(offset, 0);
  if (n >= 2 * kMinPerBin && f.span > 0) {
    // The repeated median over the points themselves while the pairs stay
    // few, Theil-Sen over bin medians (each robust itself) beyond.
    double s = 0;
    if (n <= kMaxRawTheilSen) {
      std::vector<std::pair<double, double>> points;
      for (const auto& p : pts) points.push_back({static_cast<double>(p.first - t0), static_cast<double>(p.second)});
      s = repeated_median(points);
    } else {
      s = theil_sen(bin_centres(pts, t0, false, kMinPerBin));
    }
    const double o = intercept(s), sp = mad(o, s);
    const double reach = static_cast<double>(std::max(t0 - f.first, f.last - t0));
    if (sp <= kDriftSpreadRatio * spread && std::abs(s) * reach > kMinDriftEffectNs) {
      slope = s;
      offset = o;
      spread = sp;
    }
  }
  f.offset = std::llround(offset);
  f.slope = slope;
  f.spread = spread;
  f.uncertainty = kMedianStdErr * spread / std::sqrt(static_cast<double>(n));
  return f;
}

// Points (reference time, host end - reference time) of the collectives both
// hosts saw; `via` is already measured against the reference.
std::vector<std::pair<int64_t, int64_t>> differences(const HostEnds& host, const HostEnds& via_ends,
                                                     const HostClock& via) {
  std::vector<std::pair<int64_t, int64_t>> pts;
  auto a = host.ends.begin(), b = via_ends.ends.begin();
  while (a != host.ends.end() && b != via_ends.ends.end()) {
    if (a->first < b->first) {
      ++a;
    } else if (b->first < a->first) {
      ++b;
    } else {
      const int64_t t = b->second - via.correction_at(b->second);
      pts.push_back({t, a->second - t});
      ++a;
      ++b;
    }
  }
  std::sort(pts.begin(), pts.end());
  return pts;
}

}  // namespace

uint64_t collective_key(std::string_view communicator, NcclOp op, int64_t sequence) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (char c : communicator) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  h = mix(h ^ static_cast<uint64_t>(op));
  return mix(h ^ static_cast<uint64_t>(sequence));
}

NcclOp nccl_op_of_kernel_name(std::string_view name) {
  const auto parsed = parse_nccl_kernel_name(name);  // the one parser (trace/model/nccl_kernel_name.hpp)
  return parsed ? parsed->op : NcclOp::kUnknown;
}

RankCollectives collectives_of(const Trace& t) {
  RankCollectives out;
  out.hostname = t.meta.hostname;
  std::unordered_map<uint64_t, int64_t> occurrence;  // (communicator, op) -> next order number
  auto push = [&](StringId comm, NcclOp op, int64_t seq, Timestamp end) {
    int64_t& n = occurrence[(uint64_t{comm} << 8) | static_cast<uint8_t>(op)];
    const int64_t sequence = seq >= 0 ? seq : n;
    ++n;
    out.ends.push_back({collective_key(t.strings.view(comm), op, sequence), t.meta.to_unix_ns(end)});
  };
  std::vector<uint32_t> order;
  const NcclTable& nc = t.nccl;
  if (nc.size() > 0) {
    order.resize(nc.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return nc.start[x] < nc.start[y]; });
    for (uint32_t i : order) push(nc.communicator[i], nc.op[i], nc.sequence[i], nc.end[i]);
    return out;
  }
  const KernelTable& k = t.kernels;
  std::vector<NcclOp> op_of_name(t.strings.size(), NcclOp::kUnknown);
  std::vector<uint8_t> is_nccl(t.strings.size(), 0);
  for (StringId id = 0; id < t.strings.size(); ++id) {
    const std::string_view name = t.strings.view(id);
    if (name.find("nccl") == std::string_view::npos) continue;
    is_nccl[id] = 1;
    op_of_name[id] = nccl_op_of_kernel_name(name);
  }
  for (uint32_t i = 0; i < k.size(); ++i)
    if (k.name[i] < is_nccl.size() && is_nccl[k.name[i]]) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return k.start[x] < k.start[y]; });
  for (uint32_t i : order) push(kNoString, op_of_name[k.name[i]], -1, k.end[i]);
  return out;
}

std::string_view to_string(HostClockStatus status) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"reference", "aligned", "agrees", "unmatched", "not applied"});
  return name_by_value<HostClockStatus::kDisabled>(kNames, status, "unknown");
}

int64_t HostClock::correction_at(int64_t unix_ns) const {
  if (drift_ppm == 0) return offset_ns;
  // The line is a function of reference time; the host's own time is off by
  // the offset, which moves the drift term by offset x drift (ns for ms x ppm).
  const double dt = static_cast<double>(unix_ns - offset_ns - reference_unix_ns);
  return offset_ns + std::llround(drift_ppm * 1e-6 * dt);
}

bool ClockAlignment::any_applied() const {
  return std::any_of(hosts.begin(), hosts.end(), [](const HostClock& h) { return h.applied(); });
}

const HostClock* ClockAlignment::find(std::string_view hostname) const {
  for (const HostClock& h : hosts)
    if (h.hostname == hostname) return &h;
  return nullptr;
}

ClockAlignment estimate_clock_alignment(const std::vector<RankCollectives>& ranks, const AlignOptions& options) {
  ClockAlignment result;
  if (ranks.empty()) return result;
  // Hosts in order of first appearance (the caller passes rank order). A
  // process that does not know its host is a clock of its own.
  std::vector<HostEnds> hosts;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<CollectiveEnd>> gathered;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string name =
        ranks[i].hostname.empty() ? fmt::format("(unknown host, process {})", i) : ranks[i].hostname;
    auto [it, fresh] = index.try_emplace(name, hosts.size());
    if (fresh) {
      hosts.push_back({name, {}, -1, 0});
      gathered.emplace_back();
    }
    HostEnds& h = hosts[it->second];
    h.rank_count += 1;
    if (ranks[i].rank >= 0 && (h.first_rank < 0 || ranks[i].rank < h.first_rank)) h.first_rank = ranks[i].rank;
    auto& g = gathered[it->second];
    g.insert(g.end(), ranks[i].ends.begin(), ranks[i].ends.end());
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    median_per_key(gathered[h], hosts[h].ends);
    gathered[h] = {};
  }
  std::vector<HostClock> clocks(hosts.size());
  std::vector<bool> measured(hosts.size(), false);
  for (size_t h = 0; h < hosts.size(); ++h) {
    clocks[h].hostname = hosts[h].name;
    clocks[h].first_rank = hosts[h].first_rank;
    clocks[h].rank_count = hosts[h].rank_count;
  }
  clocks[0].status = HostClockStatus::kReference;
  measured[0] = true;
  std::vector<size_t> order{0};  // measured hosts, in the order they were measured (breadth first)
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t h = 1; h < hosts.size(); ++h) {
      if (measured[h]) continue;
      for (size_t via : order) {
        const auto pts = differences(hosts[h], hosts[via], clocks[via]);
        if (static_cast<int64_t>(pts.size()) < std::max<int64_t>(options.min_matches, 1)) continue;
        const Fit f = fit_line(pts);
        HostClock& c = clocks[h];
        c.measured_against = hosts[via].name;
        c.offset_ns = f.offset;
        c.drift_ppm = f.slope * 1e6;
        c.reference_unix_ns = f.t0;
        c.uncertainty_ns = f.uncertainty;
        c.spread_ns = f.spread;
        c.matched = f.inliers;
        c.rejected = f.n - f.inliers;
        c.span_ns = f.span;
        // The largest correction over the run decides whether to touch it.
        const double f_lo = static_cast<double>(f.offset) + f.slope * static_cast<double>(f.first - f.t0);
        const double f_hi = static_cast<double>(f.offset) + f.slope * static_cast<double>(f.last - f.t0);
        const double largest = std::max(std::abs(f_lo), std::abs(f_hi));
        const double threshold = std::max(static_cast<double>(options.agree_threshold_ns), 3 * f.uncertainty);
        if (largest <= threshold) c.status = HostClockStatus::kAgrees;
        else c.status = options.apply ? HostClockStatus::kAligned : HostClockStatus::kDisabled;
        measured[h] = true;
        order.push_back(h);
        progress = true;
        break;
      }
    }
  }
  // The reference first, then by first rank (unknown last), then by name.
  std::stable_sort(clocks.begin() + 1, clocks.end(), [](const HostClock& a, const HostClock& b) {
    const auto ra = static_cast<uint32_t>(a.first_rank), rb = static_cast<uint32_t>(b.first_rank);
    return ra < rb || (ra == rb && a.hostname < b.hostname);
  });
  result.hosts = std::move(clocks);
  return result;
}

void apply_clock_correction(Trace& t, const HostClock& host) {
  if (!host.applied()) return;
  std::vector<ClockAnchor>& c = t.meta.clock;
  // Two anchors near the data: to_unix_ns() is linear through the first and
  // last, and a correction with drift must stay exact where the events are.
  const auto [lo, hi] = t.time_span();
  if (c.empty()) {
    const Timestamp end = hi > lo ? hi : lo + 1'000'000'000;
    c = {{lo, lo}, {end, end}};
  } else if (c.size() == 1 || c.front().trace_ns == c.back().trace_ns) {
    const ClockAnchor a = c.front();
    const Timestamp reach = hi - a.trace_ns > 1'000'000 ? hi - a.trace_ns : 1'000'000'000;
    c = {a, {a.trace_ns + reach, a.unix_ns + reach}};
  }
  for (ClockAnchor& a : c) a.unix_ns -= host.correction_at(a.unix_ns);
  t.meta.extra["clock_correction"] = fmt::format(
      "offset {} ns at unix {} ns, drift {:.3f} ppm, against {} ({} collectives, +-{:.0f} ns)", host.offset_ns,
      host.reference_unix_ns, host.drift_ppm, host.measured_against, host.matched, host.uncertainty_ns);
}

ClockAlignment align_clocks(std::vector<Trace>& traces, const AlignOptions& options) {
  std::vector<RankCollectives> ranks;
  ranks.reserve(traces.size());
  for (const Trace& t : traces) {
    ranks.push_back(collectives_of(t));
    ranks.back().rank = t.meta.rank;
  }
  ClockAlignment a = estimate_clock_alignment(ranks, options);
  for (size_t i = 0; i < traces.size(); ++i) {
    const std::string name =
        traces[i].meta.hostname.empty() ? fmt::format("(unknown host, process {})", i) : traces[i].meta.hostname;
    if (const HostClock* h = a.find(name)) apply_clock_correction(traces[i], *h);
  }
  return a;
}

}  // namespace scalescope::trace
