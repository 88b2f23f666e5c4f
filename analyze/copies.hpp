#pragma once
// Memory copies and sets by kind and memory kinds; pageable and synchronous copies.

#include <cstdint>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::analyze {

struct CopyGroup {
  trace::MemcpyKind kind = trace::MemcpyKind::kUnknown;
  trace::MemoryKind src_kind = trace::MemoryKind::kUnknown, dst_kind = trace::MemoryKind::kUnknown;
  int64_t count = 0;
  uint64_t bytes = 0;
  int64_t time_ns = 0;
  double bandwidth_gbps = 0;  // GB/s (1e9 bytes) over summed copy time
  int64_t sync_count = 0;     // synchronous (not async) copies
  int64_t sync_ns = 0;
};

struct CopyStats {
  Availability availability;
  std::vector<CopyGroup> groups;  // sorted by time, descending
  int64_t memset_count = 0;
  int64_t memset_ns = 0;
  uint64_t host_to_device_bytes = 0;
  uint64_t pageable_bytes = 0;  // host-side pageable bytes of HtoD/DtoH
  int64_t pageable_ns = 0;
  int64_t pageable_host_ns = 0;  // the calling threads' time in those copies' API calls
  double pageable_fraction = 0;  // of HtoD/DtoH bytes
  int64_t sync_copy_count = 0;   // synchronous copies in the window
  int64_t sync_copy_ns = 0;
};

}  // namespace scalescope::analyze
