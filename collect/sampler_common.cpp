#include "collect/sampler_common.hpp"

#include <time.h>

#include <algorithm>
#include <thread>

namespace scalescope::collect {

uint64_t thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void run_every(std::chrono::nanoseconds period, const std::atomic<bool>& stop, const std::function<void()>& tick) {
  auto next = std::chrono::steady_clock::now();
  while (!stop.load(std::memory_order_relaxed)) {
    tick();
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // fell behind: skip, never burst
    while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(
          std::min<std::chrono::nanoseconds>(next - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
  }
}

}  // namespace scalescope::collect
