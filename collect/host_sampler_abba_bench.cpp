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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collect/host_sampler.hpp"
#include "base/quantile.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using scalescope::trace::median;  // the one median (base/quantile.hpp)

struct alignas(64) Counter {
  std::atomic<uint64_t> n{0};
};

struct AbbaOptions {
  int busy = 1, parked = 64, groups = 10, block_ms = 1000, stacks = 1;
  double hz = 100;
  std::string fixed;  // "", "on" or "off"
};

// The options, or nullopt after saying on stderr what is wrong with them.
std::optional<AbbaOptions> parse_options(int argc, char** argv) {
  AbbaOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--busy") o.busy = std::atoi(v);
    else if (k == "--parked") o.parked = std::atoi(v);
    else if (k == "--groups") o.groups = std::atoi(v);
    else if (k == "--block-ms") o.block_ms = std::atoi(v);
    else if (k == "--hz") o.hz = std::atof(v);
    else if (k == "--stacks") o.stacks = std::atoi(v);
    else if (k == "--fixed") o.fixed = v;
    else {
      std::fprintf(stderr, "collect_host_sampler_abba: unknown option %s\n", k.c_str());
      return std::nullopt;
    }
  }
  if (o.busy < 1 || o.parked < 0 || o.groups < 1 || o.block_ms < 10 || o.hz <= 0 ||
      (!o.fixed.empty() && o.fixed != "on" && o.fixed != "off")) {
    std::fprintf(stderr, "collect_host_sampler_abba: bad option value\n");
    return std::nullopt;
  }
  return o;
}

// Busy threads counting iterations of a fixed integer loop, and parked
// threads that only wait.
class Workload {
 public:
  Workload(int busy, int parked) : counters_(static_cast<size_t>(busy)) {
    for (int b = 0; b < busy; ++b)
      threads_.emplace_back([this, b] {
        uint64_t v = 1;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 20000; ++i) v = v * 6364136223846793005ull + 1442695040888963407ull;
          counters_[size_t(b)].n.fetch_add(1, std::memory_order_relaxed);
        }
        if (v == 42) std::puts("");  // keep the loop
      });
    for (int p = 0; p < parked; ++p)
      threads_.emplace_back([this] {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_.load(); });
      });
  }
  ~Workload() {
    stop_ = true;
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  uint64_t iterations() const {
    uint64_t s = 0;
    for (auto& c : counters_) s += c.n.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<Counter> counters_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

// One block: the sampler on or off for block_ms, after 100 ms to settle.
// Returns the busy threads' iterations per second.
double measure_block(const AbbaOptions& o, const Workload& work, bool on, double* sampler_core_share,
                     std::string* stack_method) {
  auto trace_clock = [] { return static_cast<scalescope::trace::Timestamp>(Clock::now().time_since_epoch().count()); };
  std::unique_ptr<scalescope::collect::HostSampler> s;
  if (on) {
    scalescope::collect::HostSamplerOptions so;
    so.pid = static_cast<uint32_t>(getpid());
    so.stack_hz = o.stacks ? o.hz : 0;
    std::string error;
    s = scalescope::collect::HostSampler::create(so, trace_clock, &error);
    if (!s) {
      std::fprintf(stderr, "collect_host_sampler_abba: %s\n", error.c_str());
      std::exit(1);
    }
    *stack_method = s->stack_method();
    s->start(o.hz);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const uint64_t cpu0 = s ? s->thread_cpu_ns() : 0;
  const uint64_t n0 = work.iterations();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(o.block_ms));
  const uint64_t n1 = work.iterations();
  const auto t1 = Clock::now();
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  *sampler_core_share = s ? double(s->thread_cpu_ns() - cpu0) / 1e9 / wall : 0;
  if (s) {
    s->stop();
    scalescope::trace::Trace t;
    s->drain(t, t.strings);  // what the collector's encoder would do; not timed
  }
  return double(n1 - n0) / wall;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = parse_options(argc, argv);
  if (!parsed) return 2;
  const AbbaOptions& o = *parsed;
  std::string stack_method;
  std::vector<double> costs, shares;
  {
    const Workload work(o.busy, o.parked);
    for (int g = 0; g < o.groups; ++g) {
      const bool order[4] = {false, true, true, false};
      double rate[2] = {0, 0};
      for (int i = 0; i < 4; ++i) {
        const bool on = o.fixed.empty() ? order[i] : o.fixed == "on";
        double share = 0;
        const double r = measure_block(o, work, on, &share, &stack_method);
        rate[order[i]] += r / 2;
        if (on) shares.push_back(share);
        std::printf("{\"group\":%d,\"block\":%d,\"sampler\":\"%s\",\"rate\":%.1f,\"sampler_core_share\":%.5f}\n", g, i,
                    on ? "on" : "off", r, share);
      }
      if (o.fixed.empty()) costs.push_back(1 - rate[1] / rate[0]);
      std::fflush(stdout);
    }
  }
  std::sort(costs.begin(), costs.end());
  std::printf(
      "{\"summary\":true,\"busy\":%d,\"parked\":%d,\"hz\":%g,\"stacks\":%d,\"stack_method\":\"%s\",\"groups\":%d,"
      "\"block_ms\":%d,\"fixed\":\"%s\",\"cost_median\":%.5f,\"cost_min\":%.5f,\"cost_max\":%.5f,"
      "\"sampler_core_share_median\":%.5f,\"cpus\":%ld}\n",
      o.busy, o.parked, o.hz, o.stacks, stack_method.c_str(), o.groups, o.block_ms, o.fixed.c_str(), median(costs),
      costs.empty() ? 0 : costs.front(), costs.empty() ? 0 : costs.back(), median(shares),
      sysconf(_SC_NPROCESSORS_ONLN));
  return 0;
}
