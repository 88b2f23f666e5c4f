// What the hang dump's ring costs the job's thread per NCCL call: enter (a
// ticket, the communicator's count, one slot written) and leave (one store),
// with one thread and with four threads calling at once (the slots and the
// communicator table are shared), and per iteration marker.
#include <benchmark/benchmark.h>

#include "collect/collective_ring.hpp"

namespace {

using scalescope::collect::CollectiveRing;
using scalescope::trace::NcclOp;

CollectiveRing& ring() {
  static CollectiveRing* r = new CollectiveRing;
  return *r;
}

void BM_CollectiveEnterLeave(benchmark::State& state) {
  uint64_t comm = 0xC0FFEE + static_cast<uint64_t>(state.thread_index() % 4);
  for (auto _ : state) ring().leave(ring().enter(NcclOp::kAllReduce, comm, 4096));
}
BENCHMARK(BM_CollectiveEnterLeave)->Threads(1)->Threads(4)->UseRealTime();

void BM_IterationMark(benchmark::State& state) {
  uint64_t i = 0;
  for (auto _ : state) ring().iteration(i++);
}
BENCHMARK(BM_IterationMark);

void BM_Snapshot(benchmark::State& state) {
  for (int i = 0; i < 100; ++i) ring().leave(ring().enter(NcclOp::kAllReduce, 1, 1));
  for (auto _ : state) benchmark::DoNotOptimize(ring().snapshot());
}
BENCHMARK(BM_Snapshot);

}  // namespace

BENCHMARK_MAIN();
