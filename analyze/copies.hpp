#pragma once
// Memory copies and sets by kind and memory kinds; pageable and synchronous copies.

#include <unordered_set>
#include <tuple>
#include <map>
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

namespace detail {

// One copy's share of the copy analysis (`d` its duration in the window),
// shared by the whole-trace and the streaming analyses so both count alike.
using CopyGroups = std::map<std::tuple<trace::MemcpyKind, trace::MemoryKind, trace::MemoryKind>, CopyGroup>;
inline void account_copy(const trace::MemcpyTable& m, size_t i, int64_t d, CopyGroups& groups, CopyStats& cp,
                         uint64_t& host_bytes, std::unordered_set<uint32_t>& pageable_correlations) {
  CopyGroup& g = groups[{m.kind[i], m.src_kind[i], m.dst_kind[i]}];
  g.kind = m.kind[i];
  g.src_kind = m.src_kind[i];
  g.dst_kind = m.dst_kind[i];
  g.count += 1;
  g.bytes += m.bytes[i];
  g.time_ns += d;
  if (!m.is_async[i]) {
    g.sync_count += 1;
    g.sync_ns += d;
    cp.sync_copy_count += 1;
    cp.sync_copy_ns += d;
  }
  const bool htod = m.kind[i] == trace::MemcpyKind::kHtoD, dtoh = m.kind[i] == trace::MemcpyKind::kDtoH;
  if (htod) cp.host_to_device_bytes += m.bytes[i];
  if (htod || dtoh) {
    host_bytes += m.bytes[i];
    const trace::MemoryKind host_side = htod ? m.src_kind[i] : m.dst_kind[i];
    if (host_side == trace::MemoryKind::kPageable) {
      cp.pageable_bytes += m.bytes[i];
      cp.pageable_ns += d;
      if (m.correlation[i] != 0) pageable_correlations.insert(m.correlation[i]);
    }
  }
}

// The figures derived from the sums over one window (the sums: window_figures.cpp,
// stream_sweep.cpp); `rows`: whether the trace has rows of the tables read, else skipped.
// cp's sums made by account_copy and the memset sums; `host_bytes`: bytes between host and device.
void finish_copies(CopyStats& cp, CopyGroups& groups, uint64_t host_bytes, bool rows);

}  // namespace detail
}  // namespace scalescope::analyze
