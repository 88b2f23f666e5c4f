// The host sampler's own CPU cost on the real /proc: one sample of a process
// with N threads (sleeping on a condition variable, as most of a training
// process's threads are). CPU per second at rate R = R x the time per sample.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collect/host_sampler.hpp"

namespace {

using scalescope::collect::HostSampler;
using scalescope::collect::HostSamplerOptions;

struct Parked {
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::thread> threads;
  explicit Parked(int n) {
    for (int i = 0; i < n; ++i)
      threads.emplace_back([this] {
        std::unique_lock lock(m);
        cv.wait(lock, [this] { return go; });
      });
  }
  ~Parked() {
    {
      std::lock_guard lock(m);
      go = true;
    }
    cv.notify_all();
    for (auto& t : threads) t.join();
  }
};

void BM_SampleOnce(benchmark::State& state) {
  Parked parked(static_cast<int>(state.range(0)) - 1);  // + this thread
  HostSamplerOptions o;
  o.pid = static_cast<uint32_t>(getpid());
  o.discover_every = 10;  // the default: children files every 10th sample
  std::string err;
  auto s = HostSampler::create(
      o, [] { return scalescope::trace::Timestamp(std::chrono::steady_clock::now().time_since_epoch().count()); },
      &err);
  if (!s) {
    state.SkipWithError(err.c_str());
    return;
  }
  scalescope::trace::Trace sink;
  uint64_t n = 0;
  for (auto _ : state) {
    s->sample_once();
    if (++n % 100 == 0) {  // the collector drains about once a second
      s->drain(sink, sink.strings);
      sink = scalescope::trace::Trace();
    }
  }
  state.counters["threads"] = static_cast<double>(state.range(0));
  // CPU time per sample x 100 samples a second x 100 %: percent of one core at 100 Hz.
  state.counters["pct_core_at_100hz"] = benchmark::Counter(static_cast<double>(state.iterations()) / 1e4,
                                                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SampleOnce)->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
