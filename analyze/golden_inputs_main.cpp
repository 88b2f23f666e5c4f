// Writes the inputs of the golden CLI tests of `analyze` and `diff`
// (tests/golden/analyze/): two small 2-rank runs from the synthetic generator
// (trace/synthetic_trace.hpp, deterministic for its seeds), so no binary trace
// needs to be committed and the goldens follow the current file format.
//   OUT/a.ssrun/rank{0,1}.sstrace   DDP steps, pinned input copies
//   OUT/b.ssrun/rank{0,1}.sstrace   other seeds, input copies from pageable
//                                   memory and synchronous (the case diff is for)
//   OUT/nodes.ssrun/node{a,b}-*.sstrace  two hosts of two ranks: nodeb's clock
//                                   3 ms ahead, its rank 3 late at every
//                                   all-reduce, node 2 of 3 expected missing
// Usage: analyze_golden_inputs OUT_DIR
#include <algorithm>
#include <cstdio>
#include <string>
#include <exception>
#include <filesystem>

#include <fmt/format.h>

#include "trace/synthetic_trace.hpp"
#include "trace/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope;

void write_run(const fs::path& dir, uint64_t seed, bool pageable) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) {
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
    trace::write_trace(dir / fmt::format("rank{}.sstrace", rank), t);
  }
}

// One seed for every rank, so that all ranks' all-reduces end together as on
// real GPUs; ranks differ by host, clock and lateness.
void write_two_host_run(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  trace::SyntheticOptions o;
  o.events = 3000;
  o.seed = 31;
  o.world_size = 4;
  const trace::Trace base = trace::make_synthetic_trace(o);
  constexpr int64_t kUnix = 1'764'000'000'000'000'000;
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
    trace::write_trace(dir / fmt::format("{}-{}.sstrace", t.meta.hostname, t.meta.pid), t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: analyze_golden_inputs OUT_DIR\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    write_run(out / "a.ssrun", 11, false);
    write_run(out / "b.ssrun", 21, true);
    write_two_host_run(out / "nodes.ssrun");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "analyze_golden_inputs: %s\n", e.what());
    return 1;
  }
  return 0;
}
