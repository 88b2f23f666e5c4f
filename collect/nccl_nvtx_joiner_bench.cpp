// What the NCCL join costs the encoder thread: per NCCL call one range, one
// launch and one kernel, plus the launches of compute kernels around it
// (PyTorch launches ~10-100 compute kernels per collective), drained once per
// batch as the collector drains once a flush.
#include <benchmark/benchmark.h>

#include "collect/nccl_nvtx_joiner.hpp"

namespace {

using scalescope::collect::NcclNvtxCall;
using scalescope::collect::NcclNvtxJoiner;

void BM_NcclJoin(benchmark::State& state) {
  const int compute_launches = static_cast<int>(state.range(0));
  constexpr int kCallsPerBatch = 1000;
  scalescope::trace::StringTable strings;
  const auto f32 = strings.intern("f32");
  NcclNvtxJoiner joiner;
  NcclNvtxCall call;
  call.op = scalescope::trace::NcclOp::kAllReduce;
  call.communicator = 0x1234;
  call.bytes = 4 << 20;
  int64_t t = 0;
  uint32_t correlation = 0;
  for (auto _ : state) {
    scalescope::trace::NcclTable out;
    for (int c = 0; c < kCallsPerBatch; ++c) {
      for (int k = 0; k < compute_launches; ++k) joiner.add_launch(1, t += 1000, ++correlation);
      const int64_t start = t += 1000;
      joiner.add_launch(1, t += 1000, ++correlation);
      scalescope::trace::NcclRecord row;
      row.correlation = correlation;
      row.datatype = f32;
      joiner.add_range(1, start, t += 1000, call);
      joiner.add_kernel(row);
    }
    joiner.drain(out, strings, false);
    benchmark::DoNotOptimize(out.size());
  }
  state.SetItemsProcessed(state.iterations() * kCallsPerBatch);
  state.counters["joined"] = static_cast<double>(joiner.stats().joined);
}
BENCHMARK(BM_NcclJoin)->Arg(0)->Arg(10)->Arg(100);

}  // namespace

BENCHMARK_MAIN();
