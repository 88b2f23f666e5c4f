// Kineto import throughput on the real trace in ../shared (MB/s of JSON on one
// core) and the peak RSS it needs. The target: >= 300 MB/s, peak < 3x the
// JSON size.
#include <sys/resource.h>
#include <zlib.h>

#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "trace/import/kineto_importer.hpp"

namespace {

namespace fs = std::filesystem;
using scalescope::trace::ImportReport;

fs::path real_trace() {
  return fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Whole-file import of the .json.gz (read, inflate, parse, build tables).
void BM_KinetoImportRealGzip(benchmark::State& state) {
  if (!fs::exists(real_trace())) {
    state.SkipWithError("needs ../shared/data/traces");
    return;
  }
  uint64_t bytes = 0;
  for (auto _ : state) {
    ImportReport rep;
    auto t = scalescope::trace::import_kineto_file(real_trace(), &rep);
    benchmark::DoNotOptimize(t.kernels.size());
    bytes += rep.json_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_KinetoImportRealGzip)->Unit(benchmark::kMillisecond)->UseRealTime();

// Parse and build only, from JSON already in memory (the JSON-rate figure).
void BM_KinetoImportRealJson(benchmark::State& state) {
  if (!fs::exists(real_trace())) {
    state.SkipWithError("needs ../shared/data/traces");
    return;
  }
  std::string json;
  gzFile f = gzopen(real_trace().c_str(), "rb");
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) json.append(buf, static_cast<size_t>(n));
  gzclose(f);
  for (auto _ : state) {
    auto t = scalescope::trace::import_kineto_json(json, "real.json");
    benchmark::DoNotOptimize(t.kernels.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(json.size() * state.iterations()));
}
BENCHMARK(BM_KinetoImportRealJson)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
