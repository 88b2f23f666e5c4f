#include "analyze/nccl_ops.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::analyze {

std::optional<double> NcclOpSize::algorithm_gb_per_s() const {
  if (message_bytes == 0 || time_ns <= 0) return std::nullopt;
  return static_cast<double>(bytes) / static_cast<double>(time_ns);
}

std::optional<double> NcclOpSize::bus_gb_per_s() const {
  if (bus_ns <= 0) return std::nullopt;
  return bus_bytes / static_cast<double>(bus_ns);
}

namespace {

using Key = std::tuple<std::string, uint64_t>;  // (operation, message bytes)

NcclOpSize& group_of(std::map<Key, NcclOpSize>& groups, const std::string& operation, uint64_t message_bytes) {
  NcclOpSize& g = groups[{operation, message_bytes}];
  g.operation = operation;
  g.message_bytes = message_bytes;
  return g;
}

std::vector<NcclOpSize> in_order(std::map<Key, NcclOpSize>& groups) {
  std::vector<NcclOpSize> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace

NcclOpStats summarize_nccl_ops(const trace::Trace& t) {
  std::map<Key, NcclOpSize> groups;
  const trace::NcclTable& n = t.nccl;
  for (size_t i = 0; i < n.size(); ++i) {
    const int64_t d = std::max<int64_t>(0, n.end[i] - n.start[i]);
    NcclOpSize& g = group_of(groups, std::string(trace::to_string(n.op[i])), n.bytes[i]);
    ++g.count;
    g.time_ns += d;
    g.bytes += n.bytes[i];
    if (const double bus = trace::nccl_bus_bytes(t, i); bus > 0) {  // as `stats` computes it
      g.bus_bytes += bus;
      g.bus_ns += d;
    }
  }
  NcclOpStats out;
  out.groups = in_order(groups);
  return out;
}

NcclOpStats combine_nccl_ops(const std::vector<RankAnalysis>& ranks) {
  std::map<Key, NcclOpSize> groups;
  for (const RankAnalysis& r : ranks) {
    if (!r.nccl_ops.available) return {false, fmt::format("{}: {}", r.label, r.nccl_ops.reason), {}};
    for (const NcclOpSize& s : r.nccl_ops.groups) {
      NcclOpSize& g = group_of(groups, s.operation, s.message_bytes);
      g.count += s.count;
      g.time_ns += s.time_ns;
      g.bytes += s.bytes;
      g.bus_bytes += s.bus_bytes;
      g.bus_ns += s.bus_ns;
    }
  }
  NcclOpStats out;
  out.groups = in_order(groups);
  return out;
}

}  // namespace scalescope::analyze
