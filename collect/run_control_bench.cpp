// What asking for windows of a running job costs each process, on its own
// thread at an iteration's beginning: a look at control/ when nothing
// changed (one stat; done at most every 500 ms), the look after a request
// arrived (reading the folder and the request), and the progress file
// written once a second.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "collect/run_control.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope::collect;

fs::path fresh_dir(const char* what) {
  fs::path d = fs::temp_directory_path() / (std::string("scalescope-control-bench-") + what + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

WindowRequest request(uint64_t id) {
  WindowRequest r;
  r.id = std::to_string(id);
  r.start_iteration = 1000;
  r.iterations = 20;
  r.reason = "trigger";
  r.note = "slow after the checkpoint";
  r.requested_by = "user@host";
  return r;
}

void BM_LookNothingChanged(benchmark::State& state) {
  const fs::path d = fresh_dir("look");
  create_window_request(d, request(1));
  // The folder last changed an hour ago (within the last second it is read
  // again at each look: BM_LookAfterARequest's cost, for that second only).
  fs::last_write_time(control_dir(d), fs::file_time_type::clock::now() - std::chrono::hours(1));
  ControlWatcher w(d, std::chrono::milliseconds(0));  // every call looks
  auto now = std::chrono::steady_clock::now();
  w.poll(now);
  for (auto _ : state) benchmark::DoNotOptimize(w.poll(now += std::chrono::milliseconds(1)));
  state.counters["stats_per_look"] = static_cast<double>(w.checks()) / static_cast<double>(state.iterations() + 1);
  fs::remove_all(d);
}
BENCHMARK(BM_LookNothingChanged);

void BM_LookAfterARequest(benchmark::State& state) {
  const fs::path d = fresh_dir("scan");
  for (uint64_t i = 1; i <= static_cast<uint64_t>(state.range(0)); ++i) create_window_request(d, request(i));
  for (auto _ : state) {
    ControlWatcher w(d, std::chrono::milliseconds(0));
    benchmark::DoNotOptimize(w.poll(std::chrono::steady_clock::now()));
  }
  fs::remove_all(d);
}
BENCHMARK(BM_LookAfterARequest)->Arg(1)->Arg(10);

void BM_WriteProgress(benchmark::State& state) {
  const fs::path d = fresh_dir("progress");
  Progress p{"host", 4242, 3, 0, 88e6, 1};
  for (auto _ : state) {
    ++p.iteration;
    write_progress(d, p);
  }
  fs::remove_all(d);
}
BENCHMARK(BM_WriteProgress);

}  // namespace
BENCHMARK_MAIN();
