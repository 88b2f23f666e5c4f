#include "base/file_pool.hpp"

#include <algorithm>
#include <thread>

#include "base/memory_budget.hpp"

namespace scalescope::trace {

unsigned threads_for_files(size_t files, uint64_t bytes_each) {
  uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<uint64_t>(threads, files);
  if (bytes_each > 0) threads = std::min<uint64_t>(threads, available_memory_bytes() / bytes_each);
  return static_cast<unsigned>(std::max<uint64_t>(threads, 1));
}

}  // namespace scalescope::trace
