// How fast the encoder thread turns CUPTI records into columns: the
// collector keeps up as long as this beats the job's record rate (a DDP
// MobileNetV2 step on an H200 makes a few thousand records per GPU).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <string>
#include <vector>

#include <cupti_activity.h>

#include "collect/cupti_decoder.hpp"
#include "collect/trace_sink.hpp"

namespace {

using scalescope::collect::CuptiDecoder;

// A buffer laid out as CUPTI's: kernels, copies and API records mixed.
std::vector<CUpti_ActivityKernel10> make_kernels(size_t n) {
  static const char* kNames[] = {"_Z6squarePfi",
                                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                                 "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_"};
  std::vector<CUpti_ActivityKernel10> out(n);
  // Irregular gaps, durations and shapes, as real kernels have: regular
  // synthetic rows would compress far better than a real trace.
  uint64_t x = 88172645463325252ull, t = 0;
  auto next = [&x] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
  for (size_t i = 0; i < n; ++i) {
    std::memset(&out[i], 0, sizeof(out[i]));
    out[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    t += 200 + next() % 20000;
    out[i].start = t;
    out[i].end = t + 1000 + next() % 100000;
    out[i].name = kNames[next() % 3];
    out[i].streamId = 7 + static_cast<uint32_t>(next() % 3);
    out[i].gridX = static_cast<int32_t>(1 + next() % 4096);
    out[i].blockX = 128 << (next() % 3);
    out[i].registersPerThread = static_cast<uint16_t>(16 + next() % 200);
    out[i].correlationId = static_cast<uint32_t>(i * 3 + next() % 3);
  }
  return out;
}

void BM_DecodeKernels(benchmark::State& state) {
  auto records = make_kernels(4096);
  scalescope::trace::StringTable strings;
  CuptiDecoder decoder(strings, nullptr);
  for (auto _ : state) {
    scalescope::trace::Trace batch;
    for (const auto& r : records) decoder.decode(&r, batch);
    decoder.drain_nccl(batch, true);  // NCCL rows wait for their calls until drained
    benchmark::DoNotOptimize(batch.kernels.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
}
BENCHMARK(BM_DecodeKernels);

void BM_DecodeApi(benchmark::State& state) {
  std::vector<CUpti_ActivityAPI> records(4096);
  for (size_t i = 0; i < records.size(); ++i) {
    std::memset(&records[i], 0, sizeof(records[i]));
    records[i].kind = i % 2 ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    records[i].cbid = static_cast<CUpti_CallbackId>(i % 40);
    records[i].start = i;
    records[i].end = i + 1;
  }
  scalescope::trace::StringTable strings;
  CuptiDecoder decoder(strings,
                       [](scalescope::trace::ApiDomain, uint32_t cbid) { return "api" + std::to_string(cbid); });
  for (auto _ : state) {
    scalescope::trace::Trace batch;
    for (const auto& r : records) decoder.decode(&r, batch);
    benchmark::DoNotOptimize(batch.api.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
}
BENCHMARK(BM_DecodeApi);

// Decode + compress + write one second's worth of a busy rank (200k kernels).
void BM_DecodeAndWrite(benchmark::State& state) {
  auto records = make_kernels(200000);
  std::string path = "/tmp/scalescope-decoder-bench-" + std::to_string(getpid()) + ".sstrace";
  scalescope::trace::StringTable strings;
  CuptiDecoder decoder(strings, nullptr);
  std::string error;
  auto sink = scalescope::collect::TraceSink::open(path, {}, nullptr, &error);
  if (!sink) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    scalescope::trace::Trace batch;
    for (const auto& r : records) decoder.decode(&r, batch);
    decoder.drain_nccl(batch, true);
    if (!sink->append(batch, strings)) {
      state.SkipWithError(sink->writer().last_error().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  sink->finish({}, {});
  std::error_code ec;
  state.counters["bytes_per_record"] = static_cast<double>(std::filesystem::file_size(path, ec)) /
                                       static_cast<double>(state.iterations() * records.size());
  std::remove(path.c_str());
}
BENCHMARK(BM_DecodeAndWrite)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
