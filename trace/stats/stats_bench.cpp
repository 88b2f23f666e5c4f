// `stats` on a synthetic 10 M-event trace (under 3 s and under 1.5 GB
// peak on the 2-core machine). BM_LoadAndStats10M covers what the command
// does: read the .sstrace file and compute every summary. The file is written
// once to $TMPDIR/scalescope-stats-bench-10M.sstrace and kept, so the CLI can
// be timed on the same input:
//   /usr/bin/time -v build/cli/scalescope stats /tmp/scalescope-stats-bench-10M.sstrace --format csv >/dev/null
#include <sys/resource.h>

#include <filesystem>

#include <benchmark/benchmark.h>

#include "trace/stats/stats.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/trace_source.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope::trace;

fs::path bench_file() { return fs::temp_directory_path() / "scalescope-stats-bench-10M.sstrace"; }

void ensure_file() {
  if (fs::exists(bench_file())) return;
  Trace t = make_synthetic_trace(10'000'000, 1);
  fs::path tmp = bench_file();
  tmp += ".tmp";
  write_trace(tmp, t);
  fs::rename(tmp, bench_file());
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_ComputeStats(benchmark::State& state) {
  Trace t = make_synthetic_trace(static_cast<size_t>(state.range(0)), 1);
  for (auto _ : state) {
    TraceStats s = compute_stats(t);
    benchmark::DoNotOptimize(s.kernels.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(t.event_count() * state.iterations()));
}
BENCHMARK(BM_ComputeStats)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadAndStats10M(benchmark::State& state) {
  ensure_file();
  size_t events = 0;
  for (auto _ : state) {
    std::vector<Trace> traces = load_traces(bench_file());
    TraceStats s = compute_stats(traces.front());
    events = traces.front().event_count();
    benchmark::DoNotOptimize(s.kernels.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(events * state.iterations()));
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_LoadAndStats10M)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
