#include "trace/model/launcher.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace scalescope::trace {

bool has_gpu_activity(const Trace& t) {
  return t.kernels.size() + t.memcpys.size() + t.memsets.size() + t.nccl.size() > 0;
}

bool is_launcher(int32_t rank, bool gpu_activity, bool any_process_has_gpu_activity) {
  return any_process_has_gpu_activity && rank < 0 && !gpu_activity;
}

std::vector<const Trace*> ranks_of(const std::vector<Trace>& traces, std::vector<std::string>& left_out) {
  const bool any_gpu = std::any_of(traces.begin(), traces.end(), has_gpu_activity);
  std::vector<const Trace*> kept;
  kept.reserve(traces.size());
  for (const Trace& t : traces) {
    if (is_launcher(t.meta.rank, has_gpu_activity(t), any_gpu)) {
      left_out.push_back(t.meta.hostname.empty() && t.meta.pid == 0
                             ? std::string("no rank")
                             : fmt::format("no rank ({} pid {})", t.meta.hostname, t.meta.pid));
      continue;
    }
    kept.push_back(&t);
  }
  return kept;
}

std::vector<std::string> drop_launchers(std::vector<Trace>& traces) {
  std::vector<std::string> labels;
  const std::vector<const Trace*> ranks = ranks_of(traces, labels);
  if (ranks.size() == traces.size()) return labels;
  std::vector<Trace> kept;
  kept.reserve(ranks.size());
  for (const Trace* t : ranks) kept.push_back(std::move(traces[static_cast<size_t>(t - traces.data())]));
  traces = std::move(kept);
  return labels;
}

}  // namespace scalescope::trace
