// A synthetic 32-node x 8-rank run (256 .sstrace files) loaded, aligned and
// analysed by analyze_path, as `scalescope analyze` does (target: under 60 s
// on the 2-core dev VM, memory bounded by a few traces). Each node's clock is
// off by up to +-20 ms with up to +-20 ppm of drift; each rank arrives at each
// all-reduce up to 200 us late, and all ranks' all-reduces end together.
// Counters: peak RSS (ru_maxrss, whole process, including writing the run
// once), the worst error of the recovered clock corrections, and the matched
// collectives.
#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope;

struct NodeClock {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
};

constexpr int64_t kClockZero = 1'764'000'000'000'000'000;  // the synthetic traces' first anchor (Unix ns)

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::vector<NodeClock> node_clocks(int nodes) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> offset(-20'000'000, 20'000'000);
  std::uniform_real_distribution<double> drift(-20, 20);
  std::vector<NodeClock> c(nodes);
  for (int n = 1; n < nodes; ++n) c[n] = {offset(rng), drift(rng)};  // node 0 is the reference
  return c;
}

// Written once per (nodes, ranks per node, events) and reused.
fs::path make_run_dir(int nodes, int per_node, size_t events) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("scalescope-multinode-bench-{}x{}x{}.ssrun", nodes, per_node, events);
  const std::vector<NodeClock> clocks = node_clocks(nodes);
  if (fs::exists(dir / fmt::format("node{:02}-{}.sstrace", nodes - 1, 1000 + nodes * per_node - 1))) return dir;
  fs::create_directories(dir);
  // One seed for all: every rank's collectives then end at the same instant
  // (as on real GPUs); ranks differ by lateness, host name and clock.
  trace::SyntheticOptions o;
  o.events = events;
  o.seed = 3;
  o.world_size = nodes * per_node;
  const trace::Trace base = trace::make_synthetic_trace(o);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> late(0, 200'000);
  for (int n = 0; n < nodes; ++n) {
    for (int l = 0; l < per_node; ++l) {
      const int rank = n * per_node + l;
      trace::Trace t = base;
      t.meta.rank = rank;
      t.meta.local_rank = l;
      t.meta.pid = static_cast<uint32_t>(1000 + rank);
      t.meta.hostname = fmt::format("node{:02}", n);
      t.meta.extra["node_rank"] = std::to_string(n);
      t.meta.extra["node_count"] = std::to_string(nodes);
      t.meta.clock = {{o.start_ns, kClockZero}};
      for (size_t i = 0; i < t.nccl.size(); ++i)
        t.nccl.start[i] = std::min(t.nccl.start[i] + late(rng), t.nccl.end[i] - 1);
      // This node's clock: anchors at the start and 100 s later.
      const NodeClock& c = clocks[n];
      auto host = [&](int64_t unix) {
        return unix + c.offset_ns + std::llround(c.drift_ppm * 1e-6 * static_cast<double>(unix - kClockZero));
      };
      t.meta.clock = {{o.start_ns, host(kClockZero)},
                      {o.start_ns + 100'000'000'000, host(kClockZero + 100'000'000'000)}};
      trace::write_trace(dir / fmt::format("node{:02}-{}.sstrace", n, 1000 + rank), t);
    }
  }
  return dir;
}

void BM_AnalyzeMultinode(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)), per_node = static_cast<int>(state.range(1));
  const fs::path dir = make_run_dir(nodes, per_node, static_cast<size_t>(state.range(2)));
  const std::vector<NodeClock> clocks = node_clocks(nodes);
  for (auto _ : state) {
    analyze::RunAnalysis run = analyze::analyze_path(dir, analyze::Options{});
    // The worst error of the applied correction at the start and 10 s in.
    double worst = 0;
    int aligned = 0;
    for (int n = 1; n < nodes; ++n) {
      const trace::HostClock* h = run.clocks.find(fmt::format("node{:02}", n));
      if (!h) continue;
      aligned += h->applied();
      for (int64_t t : {kClockZero, kClockZero + 10'000'000'000}) {
        const double truth =
            static_cast<double>(clocks[n].offset_ns) + clocks[n].drift_ppm * 1e-6 * static_cast<double>(t - kClockZero);
        worst = std::max(worst, std::abs(static_cast<double>(h->correction_at(t + std::llround(truth))) - truth));
      }
    }
    state.counters["aligned_hosts"] = aligned;
    state.counters["worst_clock_error_ns"] = worst;
    state.counters["matched_collectives"] = static_cast<double>(run.stragglers.matched_collectives);
    state.counters["stragglers_available"] = run.stragglers.availability.available ? 1 : 0;
    state.counters["nodes"] = static_cast<double>(run.nodes.nodes.size());
  }
  state.counters["peak_rss_mib"] = peak_rss_mib();
}
BENCHMARK(BM_AnalyzeMultinode)->Args({32, 8, 100'000})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
// 64 ranks x 1 M events (8 hosts x 8 ranks), under 15 s and 300 MB
// (bench/analysis_speed/ranks64.sh times the CLI on the directory this writes).
BENCHMARK(BM_AnalyzeMultinode)->Args({8, 8, 1'000'000})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
