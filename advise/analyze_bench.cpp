// Benchmarks of the full analyze (all analyses + advisor):
//  - one rank of 10 M events (target: under 3 s on the 2-core dev VM);
//  - a run directory of 64 ranks x 1 M events, loaded and analysed a few ranks
//    at a time (target: under 30 s, memory bounded by a few traces).
// Peak RSS is reported as a counter (ru_maxrss, whole process).
#include <sys/resource.h>

#include <filesystem>
#include <memory>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_AnalyzeOneRank(benchmark::State& state) {
  static std::unique_ptr<trace::Trace> t;
  if (!t || t->event_count() < static_cast<size_t>(state.range(0)) / 2)
    t = std::make_unique<trace::Trace>(trace::make_synthetic_trace(static_cast<size_t>(state.range(0)), 7));
  for (auto _ : state) {
    analyze::RunAnalysis run = analyze::combine({analyze::analyze_rank(*t, analyze::Options{})});
    auto findings = advise::advise(run);
    benchmark::DoNotOptimize(findings);
  }
  state.counters["events"] = static_cast<double>(t->event_count());
  state.counters["peak_rss_mib"] = peak_rss_mib();
}
BENCHMARK(BM_AnalyzeOneRank)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The cost of attribution (analyze/attribution.hpp): analyze_rank with it off
// (A) and on (B), on the 10 M-event synthetic trace and on the real 712k-event
// Kineto trace in ../shared (skipped when absent). Run A and B interleaved:
//   analyze_bench --benchmark_filter=Attribution --benchmark_repetitions=7
//     --benchmark_enable_random_interleaving=true
void BM_AttributionSynthetic(benchmark::State& state) {
  static std::unique_ptr<trace::Trace> t;
  if (!t) t = std::make_unique<trace::Trace>(trace::make_synthetic_trace(10'000'000, 7));
  analyze::Options o;
  o.attribution = state.range(0) != 0;
  for (auto _ : state) {
    analyze::RankAnalysis r = analyze::analyze_rank(*t, o);
    benchmark::DoNotOptimize(r);
  }
  state.counters["events"] = static_cast<double>(t->event_count());
}
BENCHMARK(BM_AttributionSynthetic)
    ->ArgName("attribution")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_AttributionRealTrace(benchmark::State& state) {
  static std::unique_ptr<trace::Trace> t;
  const fs::path path = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!t) {
    if (!fs::exists(path)) {
      state.SkipWithError("the real trace is not in ../shared");
      return;
    }
    t = std::make_unique<trace::Trace>(trace::import_kineto_file(path));
  }
  analyze::Options o;
  o.attribution = state.range(0) != 0;
  for (auto _ : state) {
    analyze::RankAnalysis r = analyze::analyze_rank(*t, o);
    benchmark::DoNotOptimize(r);
  }
  state.counters["events"] = static_cast<double>(t->event_count());
}
BENCHMARK(BM_AttributionRealTrace)
    ->ArgName("attribution")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Writes the run directory once (64 .sstrace files of ~1 M events each).
fs::path make_run_dir(int ranks, size_t events) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("scalescope-analyze-bench-{}x{}.ssrun", ranks, events);
  if (fs::exists(dir / fmt::format("rank{:03}.sstrace", ranks - 1))) return dir;
  fs::create_directories(dir);
  for (int r = 0; r < ranks; ++r) {
    trace::SyntheticOptions o;
    o.events = events;
    o.seed = static_cast<uint64_t>(r + 1);
    o.rank = r;
    o.world_size = ranks;
    trace::write_trace(dir / fmt::format("rank{:03}.sstrace", r), trace::make_synthetic_trace(o));
  }
  return dir;
}

void BM_AnalyzeRunDirectory(benchmark::State& state) {
  const fs::path dir = make_run_dir(static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)));
  for (auto _ : state) {
    analyze::RunAnalysis run = analyze::analyze_path(dir, analyze::Options{});
    auto findings = advise::advise(run);
    benchmark::DoNotOptimize(findings);
    state.counters["matched_collectives"] = static_cast<double>(run.stragglers.matched_collectives);
  }
  state.counters["peak_rss_mib"] = peak_rss_mib();
}
BENCHMARK(BM_AnalyzeRunDirectory)->Args({64, 1'000'000})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
