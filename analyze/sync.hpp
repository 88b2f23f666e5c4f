#pragma once
// Host synchronization by kind.

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

}  // namespace scalescope::analyze
