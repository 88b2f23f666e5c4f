// What the samplers (host threads, native stacks, NVML, Python stacks)
// share: the CPU time of the calling thread, the loop that samples at a fixed
// rate, and handing pending columns over to a trace.
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

// Moves every value of `from` to the end of `to`, leaving `from` empty (a
// pending column drained into the trace's).
template <class Column>
void move_to_end(Column& to, Column& from) {
  to.insert(to.end(), from.begin(), from.end());
  from.clear();
}

}  // namespace scalescope::collect
