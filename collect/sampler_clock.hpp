// What the samplers (host threads, NVML, Python stacks) share: the CPU time
// of the calling thread, and the loop that samples at a fixed rate.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace scalescope::collect {

// The calling thread's CPU time, in ns (CLOCK_THREAD_CPUTIME_ID).
uint64_t thread_cpu_now();

// Calls tick() every `period` until `stop` is set. A tick that ends late
// moves the schedule on: missed ticks are skipped, never made up in a burst.
// The wait between ticks looks at `stop` at least every 50 ms, so a slow
// rate still stops promptly.
//
//   run_every(std::chrono::milliseconds(10), stop_, [this] { sample_once(); });
void run_every(std::chrono::nanoseconds period, const std::atomic<bool>& stop, const std::function<void()>& tick);

}  // namespace scalescope::collect
