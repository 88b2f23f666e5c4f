#include "trace/stats/stats.hpp"

#include "base/json_fields.hpp"
#include "base/text_output.hpp"
#include "trace/model/kernel_short_name.hpp"
#include "base/quantile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace scalescope::trace {
namespace {

// Summarizes in place (reorders `d`).
DurationStats summarize_in_place(std::vector<int64_t>& d) {
  DurationStats s;
  s.count = d.size();
  if (d.empty()) return s;
  s.min = std::numeric_limits<int64_t>::max();
  s.max = std::numeric_limits<int64_t>::min();
  long double sum = 0;
  for (int64_t x : d) {
    s.total += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
  }
  s.avg = static_cast<double>(sum / static_cast<long double>(d.size()));
  if (d.size() > 1) {
    long double sq = 0;
    for (int64_t x : d) {
      long double dx = static_cast<long double>(x) - s.avg;
      sq += dx * dx;
    }
    s.stddev = static_cast<double>(std::sqrt(sq / static_cast<long double>(d.size() - 1)));
  }
  s.median = median_in_place(d);
  return s;
}

// Groups keyed by text (so that several traces' string tables agree), with a
// per-trace StringId -> group cache so that the hot loop does no hashing.
template <typename Extra>
struct Groups {
  struct Group {
    std::string key;
    std::vector<int64_t> durations;
    Extra extra{};
  };
  std::vector<Group> groups;
  std::unordered_map<std::string, uint32_t> index;

  uint32_t find_or_add(std::string_view key) {
    auto it = index.find(std::string(key));
    if (it != index.end()) return it->second;
    auto id = static_cast<uint32_t>(groups.size());
    groups.push_back(Group{std::string(key), {}, {}});
    index.emplace(std::string(key), id);
    return id;
  }
};

struct NoExtra {};

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

int64_t duration(Timestamp start, Timestamp end) { return end > start ? end - start : 0; }

// Each row's fraction of the rows' total time.
template <typename Row>
void set_shares(std::vector<Row>& rows) {
  int64_t all = 0;
  for (const auto& r : rows) all += r.time.total;
  for (auto& r : rows) r.share = all > 0 ? static_cast<double>(r.time.total) / static_cast<double>(all) : 0;
}

// Most total time first; ties in the order of `key(row)`.
template <typename Row, typename Key>
void sort_by_time(std::vector<Row>& rows, Key key) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (a.time.total != b.time.total) return a.time.total > b.time.total;
    return key(a) < key(b);
  });
}

std::vector<NamedDurationRow> named_rows(Groups<NoExtra>& g) {
  std::vector<NamedDurationRow> rows;
  rows.reserve(g.groups.size());
  for (auto& grp : g.groups) {
    rows.push_back({grp.key, summarize_in_place(grp.durations), 0});
    std::vector<int64_t>().swap(grp.durations);
  }
  set_shares(rows);
  sort_by_time(rows, [](const NamedDurationRow& r) { return std::string_view(r.name); });
  return rows;
}

// Name-keyed duration groups over one StringId column of every trace.
template <typename Table>
std::vector<NamedDurationRow> by_name(std::span<const Trace* const> traces, const Table Trace::*table) {
  Groups<NoExtra> g;
  std::vector<uint32_t> cache;
  for (const Trace* t : traces) {
    const Table& tab = t->*table;
    cache.assign(t->strings.size(), kNone);
    for (size_t i = 0; i < tab.size(); ++i) {
      StringId id = tab.name[i];
      uint32_t gi = cache[id];
      if (gi == kNone) gi = cache[id] = g.find_or_add(t->strings.view(id));
      g.groups[gi].durations.push_back(duration(tab.start[i], tab.end[i]));
    }
  }
  return named_rows(g);
}

struct SizeExtra {
  std::string kind, src, dst;
  uint64_t total = 0, min = std::numeric_limits<uint64_t>::max(), max = 0;
};

uint32_t memory_group(Groups<SizeExtra>& g, std::string_view kind, std::string_view src, std::string_view dst) {
  std::string key;
  key.append(kind).append("\x1f").append(src).append("\x1f").append(dst);
  uint32_t gi = g.find_or_add(key);
  auto& e = g.groups[gi].extra;
  if (e.kind.empty()) e.kind = kind, e.src = src, e.dst = dst;
  return gi;
}

void add_memory(Groups<SizeExtra>::Group& grp, int64_t dur, uint64_t bytes) {
  grp.durations.push_back(dur);
  grp.extra.total += bytes;
  grp.extra.min = std::min(grp.extra.min, bytes);
  grp.extra.max = std::max(grp.extra.max, bytes);
}

}  // namespace

double nccl_bus_factor(NcclOp op, int32_t ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  switch (op) {
    case NcclOp::kAllReduce: return 2 * (n - 1) / n;
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
    case NcclOp::kAllToAll: return n - 1;
    case NcclOp::kBroadcast:
    case NcclOp::kReduce:
    case NcclOp::kSend:
    case NcclOp::kRecv:
    case NcclOp::kSendRecv: return 1;
    default: return 0;
  }
}

double nccl_bus_bytes(const Trace& t, size_t i) {
  const NcclTable& n = t.nccl;
  const int32_t ranks = n.group_size[i] > 0 ? n.group_size[i] : t.meta.world_size;
  const double f = nccl_bus_factor(n.op[i], ranks);
  if (f <= 0 || n.bytes[i] == 0) return 0;
  uint64_t message = n.bytes[i];
  if (n.op[i] == NcclOp::kReduceScatter && t.meta.source == "kineto") message /= static_cast<uint64_t>(ranks);
  return static_cast<double>(message) * f;
}

DurationStats summarize_durations(std::vector<int64_t> durations) { return summarize_in_place(durations); }

namespace {

// Memory copies and sets by (kind, src, dst): few distinct ones, so a small
// cache per trace beats hashing the texts per row.
void add_memory_rows(std::span<const Trace* const> traces, TraceStats& out) {
  Groups<SizeExtra> g;
  for (const Trace* t : traces) {
    const MemcpyTable& m = t->memcpys;
    std::unordered_map<uint32_t, uint32_t> cache;
    for (size_t i = 0; i < m.size(); ++i) {
      uint32_t k = static_cast<uint32_t>(m.kind[i]) << 16 | static_cast<uint32_t>(m.src_kind[i]) << 8 |
                   static_cast<uint32_t>(m.dst_kind[i]);
      auto it = cache.find(k);
      uint32_t gi =
          it != cache.end()
              ? it->second
              : (cache[k] = memory_group(g, to_string(m.kind[i]), to_string(m.src_kind[i]), to_string(m.dst_kind[i])));
      add_memory(g.groups[gi], duration(m.start[i], m.end[i]), m.bytes[i]);
    }
    const MemsetTable& s = t->memsets;
    cache.clear();
    for (size_t i = 0; i < s.size(); ++i) {
      uint32_t k = static_cast<uint32_t>(s.dst_kind[i]);
      auto it = cache.find(k);
      uint32_t gi =
          it != cache.end() ? it->second : (cache[k] = memory_group(g, "memset", "", to_string(s.dst_kind[i])));
      add_memory(g.groups[gi], duration(s.start[i], s.end[i]), s.bytes[i]);
    }
  }
  for (auto& grp : g.groups) {
    MemorySizeRow size{grp.extra.kind,  grp.extra.src,
                       grp.extra.dst,   grp.durations.size(),
                       grp.extra.total, grp.durations.empty() ? 0 : grp.extra.min,
                       grp.extra.max,   0};
    size.avg_bytes = size.count ? static_cast<double>(size.total_bytes) / static_cast<double>(size.count) : 0;
    out.memory_size.push_back(size);
    out.memory_time.push_back({grp.extra.kind, grp.extra.src, grp.extra.dst, summarize_in_place(grp.durations), 0});
  }
  set_shares(out.memory_time);
  sort_by_time(out.memory_time, [](const MemoryTimeRow& r) { return std::tie(r.kind, r.src, r.dst); });
  std::sort(out.memory_size.begin(), out.memory_size.end(), [](const MemorySizeRow& a, const MemorySizeRow& b) {
    if (a.total_bytes != b.total_bytes) return a.total_bytes > b.total_bytes;
    return std::tie(a.kind, a.src, a.dst) < std::tie(b.kind, b.src, b.dst);
  });
}

// NVTX ranges (marks have no duration and are left out), by (domain, text).
std::vector<NvtxRow> nvtx_rows(std::span<const Trace* const> traces) {
  struct NvtxExtra {
    std::string domain, text;
  };
  Groups<NvtxExtra> g;
  std::unordered_map<uint64_t, uint32_t> cache;
  for (const Trace* t : traces) {
    cache.clear();
    const NvtxTable& n = t->nvtx;
    for (size_t i = 0; i < n.size(); ++i) {
      if (n.kind[i] != NvtxKind::kRange) continue;
      uint64_t k = uint64_t{n.domain[i]} << 32 | n.text[i];
      auto it = cache.find(k);
      uint32_t gi;
      if (it != cache.end()) {
        gi = it->second;
      } else {
        std::string_view d = t->strings.view(n.domain[i]), x = t->strings.view(n.text[i]);
        std::string key;
        key.append(d).append("\x1f").append(x);
        gi = g.find_or_add(key);
        if (g.groups[gi].extra.domain.empty() && g.groups[gi].extra.text.empty())
          g.groups[gi].extra = {std::string(d), std::string(x)};
        cache.emplace(k, gi);
      }
      g.groups[gi].durations.push_back(duration(n.start[i], n.end[i]));
    }
  }
  std::vector<NvtxRow> rows;
  for (auto& grp : g.groups) rows.push_back({grp.extra.domain, grp.extra.text, summarize_in_place(grp.durations)});
  sort_by_time(rows, [](const NvtxRow& r) { return std::tie(r.domain, r.text); });
  return rows;
}

// NCCL collectives by (op, algorithm, protocol, datatype).
std::vector<NcclRow> nccl_rows(std::span<const Trace* const> traces) {
  struct NcclExtra {
    NcclRow row;
    double bus_bytes = 0;
    int64_t bus_ns = 0;
  };
  Groups<NcclExtra> g;
  for (const Trace* t : traces) {
    const NcclTable& n = t->nccl;
    for (size_t i = 0; i < n.size(); ++i) {
      std::string_view op = to_string(n.op[i]), alg = t->strings.view(n.algorithm[i]),
                       proto = t->strings.view(n.protocol[i]), dt = t->strings.view(n.datatype[i]);
      std::string key;
      key.append(op).append("\x1f").append(alg).append("\x1f").append(proto).append("\x1f").append(dt);
      uint32_t gi = g.find_or_add(key);
      auto& grp = g.groups[gi];
      if (grp.durations.empty()) {
        grp.extra.row.op = op;
        grp.extra.row.algorithm = alg;
        grp.extra.row.protocol = proto;
        grp.extra.row.datatype = dt;
      }
      grp.durations.push_back(duration(n.start[i], n.end[i]));
      grp.extra.row.total_bytes += n.bytes[i];
      if (const double bus = nccl_bus_bytes(*t, i); bus > 0) {
        grp.extra.bus_bytes += bus;
        grp.extra.bus_ns += duration(n.start[i], n.end[i]);
        ++grp.extra.row.busbw_count;
      }
    }
  }
  std::vector<NcclRow> rows;
  for (auto& grp : g.groups) {
    NcclRow r = grp.extra.row;
    r.time = summarize_in_place(grp.durations);
    r.bus_bytes_per_s =
        r.time.total > 0 ? static_cast<double>(r.total_bytes) * 1e9 / static_cast<double>(r.time.total) : 0;
    r.busbw_bytes_per_s = grp.extra.bus_ns > 0 ? grp.extra.bus_bytes * 1e9 / static_cast<double>(grp.extra.bus_ns) : 0;
    rows.push_back(std::move(r));
  }
  sort_by_time(rows, [](const NcclRow& r) { return std::tie(r.op, r.algorithm, r.protocol, r.datatype); });
  return rows;
}

}  // namespace

TraceStats compute_stats(std::span<const Trace* const> traces) {
  TraceStats out;
  out.traces = traces.size();
  out.api = by_name(traces, &Trace::api);
  out.kernels = by_name(traces, &Trace::kernels);
  add_memory_rows(traces, out);
  out.nvtx = nvtx_rows(traces);
  out.nccl = nccl_rows(traces);
  // Problems: summed over traces, listed when counted.
  for (int p = 0; p < kProblemCount; ++p) {
    uint64_t n = 0;
    for (const Trace* t : traces) n += t->problems.counts[p];
    if (n == 0) continue;
    Severity sev = severity_of(static_cast<Problem>(p));
    out.problems.push_back(
        {std::string(to_string(static_cast<Problem>(p))), std::string(severity_name(sev)), n});
  }
  return out;
}

// ---- JSON ------------------------------------------------------------------

void to_json(nlohmann::json& j, const DurationStats& d) {
  j = {{"count", d.count}, {"total_ns", d.total}, {"avg_ns", d.avg},      {"median_ns", d.median},
       {"min_ns", d.min},  {"max_ns", d.max},     {"stddev_ns", d.stddev}};
}

void to_json(nlohmann::json& j, const TraceStats& s) {
  auto timed = [](const DurationStats& time, nlohmann::json fields) {
    nlohmann::json row = time;
    row.update(fields);
    return row;
  };
  nlohmann::json api = nlohmann::json::array(), kernels = nlohmann::json::array();
  nlohmann::json memory_time = nlohmann::json::array(), memory_size = nlohmann::json::array();
  nlohmann::json nvtx = nlohmann::json::array(), nccl = nlohmann::json::array(), problems = nlohmann::json::array();
  for (const auto& r : s.api) api.push_back(timed(r.time, SCALESCOPE_JSON_FIELDS(r, name, share)));
  std::vector<std::string_view> names;
  for (const auto& r : s.kernels) names.push_back(r.name);
  const std::vector<std::string> short_names = distinct_short_names(names);
  for (size_t i = 0; i < s.kernels.size(); ++i)
    kernels.push_back(
        timed(s.kernels[i].time,
              {{"short_name", short_names[i]}, {"name", s.kernels[i].name}, {"share", s.kernels[i].share}}));
  for (const auto& r : s.memory_time)
    memory_time.push_back(timed(r.time, SCALESCOPE_JSON_FIELDS(r, kind, src, dst, share)));
  for (const auto& r : s.memory_size)
    memory_size.push_back(
        SCALESCOPE_JSON_FIELDS(r, kind, src, dst, count, total_bytes, avg_bytes, min_bytes, max_bytes));
  for (const auto& r : s.nvtx) nvtx.push_back(timed(r.time, {{"domain", r.domain}, {"range", r.text}}));
  for (const auto& r : s.nccl)
    nccl.push_back(
        timed(r.time, json_with(SCALESCOPE_JSON_FIELDS(r, op, algorithm, protocol, datatype, total_bytes, busbw_count),
                                {{"payload_bytes_per_s", r.bus_bytes_per_s},
                                 {"busbw_bytes_per_s", r.busbw_count > 0 ? nlohmann::json(r.busbw_bytes_per_s)
                                                                         : nlohmann::json(nullptr)}})));
  for (const auto& r : s.problems) problems.push_back(SCALESCOPE_JSON_FIELDS(r, problem, severity, count));
  j = {{"traces", s.traces},
       {"api", std::move(api)},
       {"kernels", std::move(kernels)},
       {"memory_time", std::move(memory_time)},
       {"memory_size", std::move(memory_size)},
       {"nvtx", std::move(nvtx)},
       {"nccl", std::move(nccl)},
       {"problems", std::move(problems)}};
}

}  // namespace scalescope::trace
