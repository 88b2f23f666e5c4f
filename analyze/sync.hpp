#pragma once
// Host synchronization by kind.

#include <string_view>
#include <optional>
#include <map>
#include <cstdint>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct SyncGroup {
  trace::SyncKind kind = trace::SyncKind::kUnknown;
  int64_t count = 0;
  int64_t total_ns = 0;
};

struct SyncStats {
  Availability availability;
  std::vector<SyncGroup> groups;
  int64_t host_sync_ns = 0;  // stream + device + event synchronize (not StreamWaitEvent: no host wait)
  double fraction = 0;       // host_sync_ns / window wall
};

namespace detail {

// The kind of synchronize call an API name is, if it is one.
std::optional<trace::SyncKind> sync_kind_of_api(std::string_view name);

// The figures derived from the sums over one window (the sums: window_figures.cpp,
// stream_sweep.cpp); `rows`: whether the trace has rows of the tables read, else skipped.
// sy.host_sync_ns set; the groups by kind.
void finish_sync(SyncStats& sy, const std::map<trace::SyncKind, SyncGroup>& groups, int64_t wall, bool rows);

}  // namespace detail
}  // namespace scalescope::analyze
