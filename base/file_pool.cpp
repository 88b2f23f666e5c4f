#include "base/file_pool.hpp"

#include <algorithm>
#include <thread>

#include "base/memory_budget.hpp"
#include "base/parallel_for.hpp"

namespace scalescope::trace {

unsigned threads_for_files(size_t files, uint64_t bytes_each) {
  uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<uint64_t>(threads, files);
  if (bytes_each > 0) threads = std::min<uint64_t>(threads, available_memory_bytes() / bytes_each);
  return static_cast<unsigned>(std::max<uint64_t>(threads, 1));
}

void for_each_file(size_t n, unsigned threads, const std::function<void(size_t)>& work) {
  // The one pool (parallel_for.hpp): items go out in index order and the
  // lowest failing index's error wins, which is this function's contract.
  parallel_for(n, threads, [&work](size_t i, unsigned) { work(i); });
}

}  // namespace scalescope::trace
