// Ingest of all MLPerf Training v4.1 results (1,309 logs, 266 MB): the target
// is under 10 s on the 2-core CI machine. The tarball from ../shared is
// unpacked once into a temporary folder (page cache warm after the first read).
//
//   build/mlperf/mlperf_ingest_bench --benchmark_repetitions=5
//
// Also measures the MLLOG parser alone on one real log held in memory.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "mlperf/mlperf.hpp"

namespace fs = std::filesystem;
using namespace scalescope::mlperf;

namespace {

// The unpacked v4.1 tree, or empty when ../shared is absent.
const fs::path& results_tree() {
  static const fs::path tree = [] {
    const fs::path tarball = fs::path(SCALESCOPE_SHARED_DIR) / "data" / "mlperf" / "training_results_v4.1.tar.xz";
    if (!fs::exists(tarball)) return fs::path();
    fs::path dir = fs::temp_directory_path() / fmt::format("mlperf_bench_{}", ::getpid());
    fs::create_directories(dir);
    const std::string cmd = fmt::format("tar -xJf '{}' -C '{}'", tarball.string(), dir.string());
    if (std::system(cmd.c_str()) != 0) return fs::path();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / fmt::format("mlperf_bench_{}", ::getpid()), ec);
    });
    return dir;
  }();
  return tree;
}

void BM_IngestAllV41(benchmark::State& state) {
  const fs::path& tree = results_tree();
  if (tree.empty()) {
    state.SkipWithError("no ../shared/data/mlperf/training_results_v4.1.tar.xz");
    return;
  }
  IngestOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  uint64_t bytes = 0, logs = 0;
  for (auto _ : state) {
    const IngestResult r = ingest_results({tree}, options);
    auto scores = score_folders(r.runs, r.folders);
    benchmark::DoNotOptimize(scores);
    bytes = r.bytes;
    logs = r.logs;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["logs"] = static_cast<double>(logs);
}
BENCHMARK(BM_IngestAllV41)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ParseOneLog(benchmark::State& state) {
  const fs::path log = fs::path(SCALESCOPE_SOURCE_DIR) / "mlperf" / "testdata" / "NVIDIA" / "results" /
                       "eos_n8_ngc23.04_pytorch" / "bert" / "result_4.txt";
  std::ifstream in(log, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  if (bytes.empty()) {
    state.SkipWithError("fixture log missing");
    return;
  }
  for (auto _ : state) {
    auto summary = parse_mllog(bytes);
    benchmark::DoNotOptimize(summary);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes.size()) * state.iterations());
}
BENCHMARK(BM_ParseOneLog)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
