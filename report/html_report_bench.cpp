// Report generation on a 10 M-event trace: the target is under 10 s and a file
// under 20 MB. BM_ReportFromRunDirectory: the peak memory of a report of a run
// of many ranks (it held every rank's trace), in a child process so
// that writing the run is not counted. Run:
//   build/report/report_html_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Figures are recorded in bench/RESULTS.md (section "Report").

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "report/html_report.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
using scalescope::report::HtmlReport;

const fs::path& trace_file(size_t events) {
  static const fs::path path = [events] {
    fs::path p = fs::temp_directory_path() / ("scalescope-report-bench-" + std::to_string(::getpid()) + ".sstrace");
    scalescope::trace::write_trace(p, scalescope::trace::make_synthetic_trace(events, 1));
    return p;
  }();
  return path;
}

// From the trace in memory: analysis, views and the page.
void BM_ReportFromTrace(benchmark::State& state) {
  const size_t events = static_cast<size_t>(state.range(0));
  std::vector<scalescope::trace::Trace> run;
  run.push_back(scalescope::trace::make_synthetic_trace(events, 1));
  size_t bytes = 0;
  for (auto _ : state) {
    HtmlReport r;
    r.add_run("bench", run);
    bytes = r.html().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["events"] = static_cast<double>(run[0].event_count());
  state.counters["html_MB"] = static_cast<double>(bytes) / 1e6;
}

// From a .sstrace file to report.html on disk, as `scalescope report` does.
void BM_ReportFromFile(benchmark::State& state) {
  const fs::path& in = trace_file(static_cast<size_t>(state.range(0)));
  const fs::path out = fs::temp_directory_path() / ("scalescope-report-bench-" + std::to_string(::getpid()) + ".html");
  for (auto _ : state) {
    HtmlReport r;
    r.add_input(in);
    r.write(out);
  }
  state.counters["trace_MB"] = static_cast<double>(fs::file_size(in)) / 1e6;
  state.counters["html_MB"] = static_cast<double>(fs::file_size(out)) / 1e6;
  fs::remove(out);
}

// A run directory of `ranks` synthetic ranks of `events` each, to report.html,
// as `scalescope report RUN.ssrun` does; in a forked child, whose peak RSS
// (wait4) is the report's alone.
void BM_ReportFromRunDirectory(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const size_t events = static_cast<size_t>(state.range(1));
  const fs::path dir = fs::temp_directory_path() / ("scalescope-report-run-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "job.ssrun");
  size_t trace_bytes = 0;
  for (int r = 0; r < ranks; ++r) {
    scalescope::trace::SyntheticOptions o;
    o.events = events;
    o.rank = r;
    o.world_size = ranks;
    o.seed = static_cast<uint64_t>(r + 1);
    const fs::path p = dir / "job.ssrun" / ("rank" + std::to_string(r) + ".sstrace");
    scalescope::trace::write_trace(p, scalescope::trace::make_synthetic_trace(o));
    trace_bytes += fs::file_size(p);
  }
  double peak_mib = 0, seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t child = ::fork();
    if (child == 0) {
      try {
        HtmlReport r;
        r.add_input(dir / "job.ssrun");
        r.write(dir / "report.html");
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    rusage u{};
    ::wait4(child, &status, 0, &u);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("the report failed");
    peak_mib = static_cast<double>(u.ru_maxrss) / 1024.0;
  }
  state.counters["ranks"] = ranks;
  state.counters["trace_MB"] = static_cast<double>(trace_bytes) / 1e6;
  state.counters["report_peak_MiB"] = peak_mib;
  state.counters["report_s"] = seconds;
  fs::remove_all(dir);
}

BENCHMARK(BM_ReportFromTrace)->Arg(100'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ReportFromFile)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ReportFromRunDirectory)->Args({8, 1'000'000})->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove(fs::temp_directory_path() / ("scalescope-report-bench-" + std::to_string(::getpid()) + ".sstrace"), ec);
  return 0;
}
