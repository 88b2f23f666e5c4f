#include "base/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace scalescope::trace {

unsigned worker_count(unsigned requested, size_t items, unsigned max_auto) {
  unsigned n = requested;
  if (n == 0) {
    n = std::max(1u, std::thread::hardware_concurrency());
    if (max_auto > 0) n = std::min(n, max_auto);
  }
  return static_cast<unsigned>(std::clamp<size_t>(items, 1, n));
}

void parallel_for(size_t count, unsigned threads, const std::function<void(size_t, unsigned)>& work,
                  const std::function<void(size_t, size_t)>& on_done) {
  if (count == 0) return;
  threads = std::clamp<unsigned>(threads, 1, static_cast<unsigned>(std::min<size_t>(count, 1024)));
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards the error and serialises on_done
  std::exception_ptr error;
  size_t error_index = count;
  size_t done = 0;
  auto run = [&](unsigned worker) {
    // Indices are handed out in order, so when item i fails every item below
    // it has started: the lowest failing index is among those that ran.
    for (size_t i; !stop.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < count;) {
      try {
        work(i, worker);
        if (on_done) {
          std::lock_guard lock(mutex);
          on_done(++done, count);
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
        stop = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  try {
    for (unsigned k = 1; k < threads; ++k) pool.emplace_back(run, k);
  } catch (const std::exception&) {
    // No more threads to be had (std::system_error), or no memory for one
    // more (std::bad_alloc): the ones started (and the caller's) do the work.
    // Leaving here would destroy joinable threads, which terminates.
  }
  run(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace scalescope::trace
