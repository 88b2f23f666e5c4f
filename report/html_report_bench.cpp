// Report generation on a 10 M-event trace: the target is under 10 s and a file
// under 20 MB. Run:
//   build/report/report_html_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Figures are recorded in bench/RESULTS.md (section "report").

#include <unistd.h>

#include <filesystem>

#include <benchmark/benchmark.h>

#include "report/html_report.hpp"
#include "trace/synthetic_trace.hpp"
#include "trace/trace_file.hpp"

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

BENCHMARK(BM_ReportFromTrace)->Arg(100'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ReportFromFile)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove(fs::temp_directory_path() / ("scalescope-report-bench-" + std::to_string(::getpid()) + ".sstrace"), ec);
  return 0;
}
