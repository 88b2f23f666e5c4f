#pragma once
// The traces behind the golden CLI tests of `analyze` and `diff`
// (tests/golden/analyze/), built from the synthetic generator (deterministic
// for its seeds). One definition for the fixture that writes them
// (golden_inputs_main.cpp) and the tests that analyse them in other ways
// (stream_analyzer_test.cpp).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/model/synthetic_trace.hpp"

namespace scalescope::analyze::golden {

// One rank of a 2-rank DDP run; `pageable`: input copies from pageable memory
// and synchronous (the case `diff` is for).
inline trace::Trace ddp_rank(uint64_t seed, int rank, bool pageable) {
  trace::SyntheticOptions o;
  o.events = 3000;
  o.seed = seed + static_cast<uint64_t>(rank);
  o.rank = rank;
  o.world_size = 2;
  o.device = static_cast<uint32_t>(rank);
  trace::Trace t = trace::make_synthetic_trace(o);
  if (pageable) {
    for (size_t i = 0; i < t.memcpys.size(); ++i) {
      if (t.memcpys.kind[i] != trace::MemcpyKind::kHtoD) continue;
      t.memcpys.src_kind[i] = trace::MemoryKind::kPageable;
      t.memcpys.is_async[i] = 0;
    }
  }
  return t;
}

// Two hosts of two ranks: nodeb's clock 3 ms ahead, its rank 3 late at every
// all-reduce, node 2 of 3 expected missing. One seed for every rank, so that
// all ranks' all-reduces end together as on real GPUs; ranks differ by host,
// clock and lateness.
inline std::vector<trace::Trace> two_host_ranks() {
  trace::SyntheticOptions o;
  o.events = 3000;
  o.seed = 31;
  o.world_size = 4;
  const trace::Trace base = trace::make_synthetic_trace(o);
  constexpr int64_t kUnix = 1'764'000'000'000'000'000;
  std::vector<trace::Trace> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    trace::Trace t = base;
    const int node = rank / 2;
    t.meta.rank = rank;
    t.meta.local_rank = rank % 2;
    t.meta.pid = static_cast<uint32_t>(100 + rank);
    t.meta.hostname = node == 0 ? "nodea" : "nodeb";
    t.meta.extra["node_rank"] = std::to_string(node);
    t.meta.extra["node_count"] = "3";  // the third node never reported
    t.meta.clock = {{o.start_ns, kUnix + (node == 0 ? 0 : 3'000'000)}};
    if (rank == 3)
      for (size_t i = 0; i < t.nccl.size(); ++i)
        t.nccl.start[i] = std::min(t.nccl.start[i] + 150'000, t.nccl.end[i] - 1);
    ranks.push_back(std::move(t));
  }
  return ranks;
}

}  // namespace scalescope::analyze::golden
