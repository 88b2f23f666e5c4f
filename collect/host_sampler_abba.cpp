// The host sampler's cost to the work of the process it samples, measured in
// one process by toggling the sampler: blocks A (off) and B (on) in the order
// A B B A, repeated, so that drift of the machine cancels within each group.
// Busy threads run a fixed integer loop and count iterations; parked threads
// stand for the many idle threads of a training process that the sampler
// still reads every tick. The cost of a group is 1 - rate(B) / rate(A).
//
//   collect_host_sampler_abba --busy 1 --parked 64 --groups 10 --block-ms 1000 --hz 100 --stacks 1
//   collect_host_sampler_abba ... --fixed on     # every block on (whole-process A/B: alternate processes)
//
// Prints one JSON line per block and a summary line (median cost and its
// spread over groups; the sampler thread's CPU as a share of one core).
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collect/host_sampler.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Counter {
  std::atomic<uint64_t> n{0};
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int busy = 1, parked = 64, groups = 10, block_ms = 1000, stacks = 1;
  double hz = 100;
  std::string fixed;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--busy") busy = std::atoi(v);
    else if (k == "--parked") parked = std::atoi(v);
    else if (k == "--groups") groups = std::atoi(v);
    else if (k == "--block-ms") block_ms = std::atoi(v);
    else if (k == "--hz") hz = std::atof(v);
    else if (k == "--stacks") stacks = std::atoi(v);
    else if (k == "--fixed") fixed = v;
    else {
      std::fprintf(stderr, "collect_host_sampler_abba: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (busy < 1 || parked < 0 || groups < 1 || block_ms < 10 || hz <= 0 ||
      (!fixed.empty() && fixed != "on" && fixed != "off")) {
    std::fprintf(stderr, "collect_host_sampler_abba: bad option value\n");
    return 2;
  }

  std::atomic<bool> stop{false};
  std::vector<Counter> counters(static_cast<size_t>(busy));
  std::vector<std::thread> threads;
  for (int b = 0; b < busy; ++b)
    threads.emplace_back([&, b] {
      uint64_t v = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 20000; ++i) v = v * 6364136223846793005ull + 1442695040888963407ull;
        counters[size_t(b)].n.fetch_add(1, std::memory_order_relaxed);
      }
      if (v == 42) std::puts("");  // keep the loop
    });
  std::mutex m;
  std::condition_variable cv;
  for (int p = 0; p < parked; ++p)
    threads.emplace_back([&] {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return stop.load(); });
    });

  auto trace_clock = [] { return static_cast<scalescope::trace::Timestamp>(Clock::now().time_since_epoch().count()); };
  auto total = [&] {
    uint64_t s = 0;
    for (auto& c : counters) s += c.n.load(std::memory_order_relaxed);
    return s;
  };
  // One block: the sampler on or off for block_ms, after 100 ms to settle.
  std::string stack_method;
  auto block = [&](bool on, double* sampler_core_share) {
    std::unique_ptr<scalescope::collect::HostSampler> s;
    if (on) {
      scalescope::collect::HostSamplerOptions o;
      o.pid = static_cast<uint32_t>(getpid());
      o.stack_hz = stacks ? hz : 0;
      std::string error;
      s = scalescope::collect::HostSampler::create(o, trace_clock, &error);
      if (!s) {
        std::fprintf(stderr, "collect_host_sampler_abba: %s\n", error.c_str());
        std::exit(1);
      }
      stack_method = s->stack_method();
      s->start(hz);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t cpu0 = s ? s->thread_cpu_ns() : 0;
    const uint64_t n0 = total();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(block_ms));
    const uint64_t n1 = total();
    const auto t1 = Clock::now();
    const double wall = std::chrono::duration<double>(t1 - t0).count();
    *sampler_core_share = s ? double(s->thread_cpu_ns() - cpu0) / 1e9 / wall : 0;
    if (s) {
      s->stop();
      scalescope::trace::Trace t;
      s->drain(t, t.strings);  // what the collector's encoder would do; not timed
    }
    return double(n1 - n0) / wall;
  };

  std::vector<double> costs, shares;
  for (int g = 0; g < groups; ++g) {
    const bool order[4] = {false, true, true, false};
    double rate[2] = {0, 0};
    for (int i = 0; i < 4; ++i) {
      const bool on = fixed.empty() ? order[i] : fixed == "on";
      double share = 0;
      const double r = block(on, &share);
      rate[order[i]] += r / 2;
      if (on) shares.push_back(share);
      std::printf("{\"group\":%d,\"block\":%d,\"sampler\":\"%s\",\"rate\":%.1f,\"sampler_core_share\":%.5f}\n", g, i,
                  on ? "on" : "off", r, share);
    }
    if (fixed.empty()) costs.push_back(1 - rate[1] / rate[0]);
    std::fflush(stdout);
  }
  stop = true;
  cv.notify_all();
  for (auto& t : threads) t.join();
  std::sort(costs.begin(), costs.end());
  std::printf(
      "{\"summary\":true,\"busy\":%d,\"parked\":%d,\"hz\":%g,\"stacks\":%d,\"stack_method\":\"%s\",\"groups\":%d,"
      "\"block_ms\":%d,\"fixed\":\"%s\",\"cost_median\":%.5f,\"cost_min\":%.5f,\"cost_max\":%.5f,"
      "\"sampler_core_share_median\":%.5f,\"cpus\":%ld}\n",
      busy, parked, hz, stacks, stack_method.c_str(), groups, block_ms, fixed.c_str(), median(costs),
      costs.empty() ? 0 : costs.front(), costs.empty() ? 0 : costs.back(), median(shares),
      sysconf(_SC_NPROCESSORS_ONLN));
  return 0;
}
