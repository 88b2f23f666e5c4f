// Overhead of recording one run (two committed SQLite transactions with
// synchronous=FULL), and of reading a large sweep back for `scaling`.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>

#include "sweep/sweep_store.hpp"

namespace {

namespace fs = std::filesystem;
using scalescope::sweep::PlannedRun;
using scalescope::sweep::ProcessResult;
using scalescope::sweep::RunMetrics;
using scalescope::sweep::SweepStore;

fs::path temp_db(const char* name) {
  auto p = fs::temp_directory_path() / (std::string(name) + std::to_string(::getpid()) + ".db");
  fs::remove(p);
  return p;
}

void BM_RecordOneRun(benchmark::State& state) {
  const auto path = temp_db("sweep_store_bench_record");
  auto store = SweepStore::create(path, "{}", "wall_s", false, 1 << 30, "bench");
  ProcessResult result;
  result.status = scalescope::sweep::RunStatus::kOk;
  result.exit_code = 0;
  result.wall_s = 12.5;
  RunMetrics metrics;
  metrics.values = {{"wall_s", 12.5}, {"regex", 812.0}};
  int index = 0;
  for (auto _ : state) {
    PlannedRun run;
    run.index = index++;
    run.gpus = 8;
    run.config = {{"precision", "bf16"}, {"pin", "1"}};
    store.begin_run(run, R"(["torchrun","--nproc_per_node=8","train.py"])", "/tmp/r", "/tmp/r/log.txt", 1.0);
    store.finish_run(run, result, metrics, "wall_s", "");
  }
  fs::remove(path);
}
BENCHMARK(BM_RecordOneRun)->Unit(benchmark::kMillisecond);

void BM_ReadSweep(benchmark::State& state) {
  const auto path = temp_db("sweep_store_bench_read");
  {
    auto store = SweepStore::create(path, "{}", "wall_s", false, static_cast<int>(state.range(0)), "bench");
    ProcessResult result;
    result.status = scalescope::sweep::RunStatus::kOk;
    RunMetrics metrics;
    metrics.values = {{"wall_s", 12.5}};
    for (int i = 0; i < state.range(0); ++i) {
      PlannedRun run;
      run.index = i;
      run.gpus = 1 << (i % 6);
      run.config = {{"precision", i % 2 ? "bf16" : "fp32"}};
      store.begin_run(run, "[]", "/tmp/r", "/tmp/r/log.txt", 1.0);
      store.finish_run(run, result, metrics, "wall_s", "");
    }
  }
  for (auto _ : state) benchmark::DoNotOptimize(scalescope::sweep::read_sweep(path));
  fs::remove(path);
}
BENCHMARK(BM_ReadSweep)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
