// Trace file throughput and size: write and read events/s and bytes per event
// on a synthetic 10 M-event DDP trace and on the real Kineto trace in
// ../shared (imported in memory, when the importer is built).
//
//   build/trace/trace_file_bench --benchmark_repetitions=5
//
// Counters: events (per iteration), bytes_per_event (whole file / events),
// bytes_per_kernel (a file holding only the kernels and their strings).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "trace/synthetic_trace.hpp"
#include "trace/trace_file.hpp"

#if __has_include("trace/kineto_importer.hpp")
#include "trace/kineto_importer.hpp"
#define SCALESCOPE_HAVE_KINETO 1
#endif

namespace {

using namespace scalescope::trace;
namespace fs = std::filesystem;

fs::path scratch_file(const char* name) {
  return fs::temp_directory_path() / (std::string("sstrace-bench-") + std::to_string(::getpid()) + "-" + name);
}

const Trace& synthetic() {
  static const Trace t = make_synthetic_trace(10'000'000, 1);
  return t;
}

const Trace* real() {
#ifdef SCALESCOPE_HAVE_KINETO
  static const std::unique_ptr<Trace> t = []() -> std::unique_ptr<Trace> {
    const fs::path p = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
    if (!fs::exists(p)) return nullptr;
    try {
      return std::make_unique<Trace>(import_kineto_file(p));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trace_file_bench: cannot import the real trace: %s\n", e.what());
      return nullptr;
    }
  }();
  return t.get();
#else
  return nullptr;
#endif
}

Trace kernels_only(const Trace& t) {
  Trace k;
  k.meta = t.meta;
  k.kernels = t.kernels;
  // Only the strings the kernels use, so bytes_per_kernel counts their names once.
  for (auto& id : k.kernels.name) id = k.strings.intern(t.strings.view(id));
  return k;
}

void write_bench(benchmark::State& state, const Trace* t, const char* name) {
  if (!t) {
    state.SkipWithError("trace not available (importer not built or shared data missing)");
    return;
  }
  const fs::path p = scratch_file(name);
  for (auto _ : state) write_trace(p, *t);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t->event_count()));
  state.counters["events"] = static_cast<double>(t->event_count());
  state.counters["bytes_per_event"] = static_cast<double>(fs::file_size(p)) / static_cast<double>(t->event_count());
  const fs::path pk = scratch_file("kernels");
  write_trace(pk, kernels_only(*t));
  state.counters["kernels"] = static_cast<double>(t->kernels.size());
  state.counters["bytes_per_kernel"] = static_cast<double>(fs::file_size(pk)) / static_cast<double>(t->kernels.size());
  fs::remove(p);
  fs::remove(pk);
}

void read_bench(benchmark::State& state, const Trace* t, const char* name) {
  if (!t) {
    state.SkipWithError("trace not available (importer not built or shared data missing)");
    return;
  }
  const fs::path p = scratch_file(name);
  write_trace(p, *t);
  size_t events = 0;
  for (auto _ : state) {
    Trace back = read_trace(p);
    events = back.event_count();
    benchmark::DoNotOptimize(back.kernels.start.data());
  }
  if (events != t->event_count()) state.SkipWithError("read back a different number of events");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(p)));
  fs::remove(p);
}

void BM_WriteSynthetic10M(benchmark::State& s) { write_bench(s, &synthetic(), "w-syn"); }
void BM_ReadSynthetic10M(benchmark::State& s) { read_bench(s, &synthetic(), "r-syn"); }
void BM_WriteRealTrace(benchmark::State& s) { write_bench(s, real(), "w-real"); }
void BM_ReadRealTrace(benchmark::State& s) { read_bench(s, real(), "r-real"); }

BENCHMARK(BM_WriteSynthetic10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ReadSynthetic10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_WriteRealTrace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadRealTrace)->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace

BENCHMARK_MAIN();
