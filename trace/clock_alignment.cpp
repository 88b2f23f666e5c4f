#include "trace/clock_alignment.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

namespace scalescope::trace {
namespace {

// Bins of the time-ordered differences for the Theil-Sen slope: 64 bins keep
// the pairwise slopes at 2,016 whatever the run's length, and each bin's
// median is robust to the odd late collective.
constexpr size_t kMaxBins = 64;
constexpr size_t kMinPointsForDrift = 8;
// 1.4826 x MAD estimates a normal standard deviation; the median's standard
// error is sqrt(pi/2) = 1.2533 x sigma / sqrt(n).
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianStdErr = 1.2533;
// A slope is kept only where its largest effect over the run exceeds the
// noise a slope through bin medians has at the run's ends (about 2.2 x the
// offset's standard error; see fit_line) by a wide margin, and 200 ns.
constexpr double kDriftSignificance = 6.0;
constexpr double kMinDriftEffectNs = 200.0;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

template <typename T>
T median_of(std::vector<T> v) {
  if (v.empty()) return T{};
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  T hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  T lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lo + (hi - lo) / 2;
}

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
  int64_t n = 0, span = 0;
  int64_t first = 0, last = 0;  // reference-clock times of the first and last point
};

// A robust line d = offset + slope (t - t0) through points sorted by t.
Fit fit_line(const std::vector<std::pair<int64_t, int64_t>>& pts) {
  Fit f;
  const size_t n = pts.size();
  f.n = static_cast<int64_t>(n);
  f.first = pts.front().first;
  f.last = pts.back().first;
  f.span = f.last - f.first;
  f.t0 = pts[n / 2].first;
  auto intercept = [&](double slope) {
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i)
      r[i] = static_cast<double>(pts[i].second) - slope * static_cast<double>(pts[i].first - f.t0);
    return median_of(std::move(r));
  };
  auto residual_spread = [&](double offset, double slope) {
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i)
      r[i] = std::abs(static_cast<double>(pts[i].second) - offset - slope * static_cast<double>(pts[i].first - f.t0));
    return kMadToSigma * median_of(std::move(r));
  };
  double slope = 0;
  if (n >= kMinPointsForDrift && f.span > 0) {
    const size_t bins = std::min(kMaxBins, n / 4);
    std::vector<std::pair<double, double>> med;  // (median t, median d) per bin
    for (size_t b = 0; b < bins; ++b) {
      const size_t lo = b * n / bins, hi = (b + 1) * n / bins;
      std::vector<double> d;
      for (size_t i = lo; i < hi; ++i) d.push_back(static_cast<double>(pts[i].second));
      med.push_back({static_cast<double>(pts[lo + (hi - lo) / 2].first - f.t0), median_of(std::move(d))});
    }
    std::vector<double> slopes;
    for (size_t i = 0; i < med.size(); ++i)
      for (size_t j = i + 1; j < med.size(); ++j)
        if (med[j].first > med[i].first) slopes.push_back((med[j].second - med[i].second) / (med[j].first - med[i].first));
    slope = median_of(std::move(slopes));
  }
  double offset = intercept(slope);
  double spread = residual_spread(offset, slope);
  double uncertainty = kMedianStdErr * spread / std::sqrt(static_cast<double>(n));
  if (slope != 0) {
    const double reach = static_cast<double>(std::max(f.t0 - f.first, f.last - f.t0));
    if (std::abs(slope) * reach <= std::max(kDriftSignificance * uncertainty, kMinDriftEffectNs)) {
      slope = 0;  // not distinguishable from noise: an offset alone
      offset = intercept(0);
      spread = residual_spread(offset, 0);
      uncertainty = kMedianStdErr * spread / std::sqrt(static_cast<double>(n));
    }
  }
  f.offset = std::llround(offset);
  f.slope = slope;
  f.spread = spread;
  f.uncertainty = uncertainty;
  return f;
}

// Points (reference time, host end - reference time) of the collectives both
// hosts saw; `via` is already measured against the reference.
std::vector<std::pair<int64_t, int64_t>> differences(const HostEnds& host, const HostEnds& via_ends, const HostClock& via) {
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
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_", "nccl"}) {
    if (auto p = name.find(prefix); p != std::string_view::npos) {
      std::string_view rest = name.substr(p + prefix.size());
      static constexpr std::pair<std::string_view, NcclOp> kOps[] = {
          {"AllReduce", NcclOp::kAllReduce}, {"ReduceScatter", NcclOp::kReduceScatter},
          {"AllGather", NcclOp::kAllGather}, {"Broadcast", NcclOp::kBroadcast},
          {"Reduce", NcclOp::kReduce},       {"SendRecv", NcclOp::kSendRecv},
          {"Send", NcclOp::kSend},           {"Recv", NcclOp::kRecv},
          {"AllToAll", NcclOp::kAllToAll},   {"Gather", NcclOp::kGather},
          {"Scatter", NcclOp::kScatter},
      };
      for (auto [text, op] : kOps)
        if (rest.starts_with(text)) return op;
    }
  }
  return NcclOp::kUnknown;
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
  switch (status) {
    case HostClockStatus::kReference: return "reference";
    case HostClockStatus::kAligned: return "aligned";
    case HostClockStatus::kAgrees: return "agrees";
    case HostClockStatus::kUnmatched: return "unmatched";
    case HostClockStatus::kDisabled: return "not applied";
  }
  return "unknown";
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
        c.matched = f.n;
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
  t.meta.extra["clock_correction"] =
      fmt::format("offset {} ns at unix {} ns, drift {:.3f} ppm, against {} ({} collectives, +-{:.0f} ns)", host.offset_ns,
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
