// Host synchronization of a window from its sums per kind, and which API calls synchronize.
#include "analyze/sync.hpp"

#include <map>

#include "analyze/detail.hpp"

namespace scalescope::analyze {

namespace detail {

std::optional<trace::SyncKind> sync_kind_of_api(std::string_view name) {
  if (contains_ci(name, "StreamSynchronize")) return trace::SyncKind::kStreamSynchronize;
  if (contains_ci(name, "DeviceSynchronize") || contains_ci(name, "CtxSynchronize"))
    return trace::SyncKind::kDeviceSynchronize;
  if (contains_ci(name, "EventSynchronize")) return trace::SyncKind::kEventSynchronize;
  return std::nullopt;
}

}  // namespace detail

void detail::finish_sync(SyncStats& sy, const std::map<trace::SyncKind, SyncGroup>& groups, int64_t wall, bool rows) {
  if (!rows) sy.availability = {false, "skipped: the trace has no synchronization records and no CUDA API calls"};
  for (const auto& [kind, g] : groups) sy.groups.push_back(g);
  sy.fraction = wall > 0 ? static_cast<double>(sy.host_sync_ns) / static_cast<double>(wall) : 0;
}

}  // namespace scalescope::analyze
