#include "trace/file_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "trace/memory_budget.hpp"

namespace scalescope::trace {

unsigned threads_for_files(size_t files, uint64_t bytes_each) {
  uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<uint64_t>(threads, files);
  if (bytes_each > 0) threads = std::min<uint64_t>(threads, available_memory_bytes() / bytes_each);
  return static_cast<unsigned>(std::max<uint64_t>(threads, 1));
}

void for_each_file(size_t n, unsigned threads, const std::function<void(size_t)>& work) {
  threads = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(n, 1)));
  std::atomic<size_t> next{0};
  // The smallest failing index so far (n: none): later indices are not started.
  std::atomic<size_t> stop{n};
  std::mutex mutex;
  std::exception_ptr first_error;  // guarded by mutex, the error of index `stop`
  auto loop = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      if (i > stop.load()) return;  // indices are handed out in order: all later ones are skipped too
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (i < stop.load()) {
          stop = i;
          first_error = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  try {
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(loop);
  } catch (...) {  // no thread could be started: the caller's thread does all the work
  }
  loop();
  for (std::thread& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace scalescope::trace
