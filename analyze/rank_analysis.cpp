// Who a rank is, and the analyses a window without time leaves skipped.
#include "analyze/rank_analysis.hpp"

#include <charconv>

#include <fmt/format.h>

namespace scalescope::analyze {

// Who the rank is: identity, node facts, the collector's sampling facts,
// and the data lost while tracing.
void detail::describe_rank(const trace::Trace& t, bool gpu_activity, RankAnalysis& r) {
  r.rank = t.meta.rank;
  r.label = t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : std::string("rank ?");
  r.source = t.meta.source;
  r.hostname = t.meta.hostname;
  r.pid = t.meta.pid;
  r.process_groups = t.meta.process_groups;
  r.world_size = t.meta.world_size;
  auto extra_int = [&](const char* key) {
    auto it = t.meta.extra.find(key);
    int32_t v = -1;
    if (it != t.meta.extra.end()) {
      auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
      if (ec != std::errc() || p != it->second.data() + it->second.size() || v < 0) v = -1;
    }
    return v;
  };
  r.node_rank = extra_int("node_rank");
  r.node_count = extra_int("node_count");
  if (auto it = t.meta.extra.find("node_list"); it != t.meta.extra.end()) r.node_list = it->second;
  r.perturbation = read_perturbation(t.meta.extra);
  r.gpu_activity = gpu_activity;
  for (int p = 0; p < trace::kProblemCount; ++p) {
    const auto problem = static_cast<trace::Problem>(p);
    if (trace::severity_of(problem) == trace::Severity::kDataLoss && t.problems.get(problem) > 0)
      r.data_loss.push_back(fmt::format("{} x{}", trace::to_string(problem), t.problems.get(problem)));
  }
}

// A window past this rank's end (or inside a gap of zero length) leaves no
// time to share out: say so instead of printing zeros.
static std::string empty_window_reason(const WindowSpec& w) {
  return fmt::format("skipped: the window {} holds no time of this rank's trace", w.to_string());
}

void detail::mark_empty_window(const Options& o, int64_t wall, RankAnalysis& r) {
  if (!o.window || wall != 0) return;
  const std::string why = empty_window_reason(*o.window);
  for (Availability* a :
       {&r.breakdown.availability, &r.launch.availability, &r.copies.availability, &r.sync.availability,
        &r.precision.availability, &r.layout.availability, &r.input.availability, &r.idle_cover.availability,
        &r.idle_breakdown.availability})
    if (a->available) *a = {false, why};
}

void detail::mark_empty_window(const Options& o, int64_t wall, Attribution& a) {
  if (!o.window || wall != 0 || !a.available) return;
  a.available = false;
  a.reason = empty_window_reason(*o.window);
}

}  // namespace scalescope::analyze
