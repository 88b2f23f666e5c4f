// What the samplers (host threads, native stacks, NVML, Python stacks)
// share: the CPU time of the calling thread, the Unix clock, the loop that samples at a fixed
// rate, and handing pending columns over to a trace.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "trace/model/table_columns.hpp"

namespace scalescope::collect {

// The calling thread's CPU time, in ns (CLOCK_THREAD_CPUTIME_ID).
uint64_t thread_cpu_now();

// The Unix time in ns (CLOCK_REALTIME, a vDSO read): processes and hosts
// compare their records by it.
int64_t realtime_ns();

// Calls tick() every `period` until `stop` is set. A tick that ends late
// moves the schedule on: missed ticks are skipped, never made up in a burst.
// The wait between ticks looks at `stop` at least every 50 ms, so a slow
// rate still stops promptly.
//
//   run_every(std::chrono::milliseconds(10), stop_, [this] { sample_once(); });
void run_every(std::chrono::nanoseconds period, const std::atomic<bool>& stop, const std::function<void()>& tick);

// Moves every row of `from` to the end of `to`, column by column, leaving
// `from` empty (a sampler's pending rows drained into the trace's table).
template <class Table>
void move_rows_to_end(Table& to, Table& from) {
  trace::for_each_column_of<Table>([&](const auto& c) {
    auto& dst = to.*c.values;
    auto& src = from.*c.values;
    dst.insert(dst.end(), src.begin(), src.end());
    src.clear();
  });
}

}  // namespace scalescope::collect
