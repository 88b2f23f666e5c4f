#include "collect/buffer_pool.hpp"

#include <cstdlib>

namespace scalescope::collect {

BufferPool::BufferPool(size_t buffer_bytes, size_t buffer_count)
    : buffer_bytes_((buffer_bytes + 7) & ~size_t{7}), count_(buffer_count) {
  // One allocation, 8-byte aligned by new[] of a fundamental type array start
  // plus sizes that are multiples of 8.
  storage_.reset(new uint8_t[buffer_bytes_ * count_ + 8]);
  auto base = reinterpret_cast<uintptr_t>(storage_.get());
  uint8_t* aligned = storage_.get() + ((8 - (base & 7)) & 7);
  free_.reserve(count_);
  filled_.reserve(count_);
  for (size_t i = count_; i-- > 0;) free_.push_back(aligned + i * buffer_bytes_);
}

uint8_t* BufferPool::acquire() {
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    acquire_failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint8_t* b = free_.back();
  free_.pop_back();
  return b;
}

void BufferPool::complete(uint8_t* data, size_t valid_bytes) {
  {
    std::lock_guard lock(mutex_);
    filled_.push_back({data, valid_bytes});  // at most count_ buffers exist: no reallocation
  }
  filled_cv_.notify_one();
}

void BufferPool::release(uint8_t* data) {
  std::lock_guard lock(mutex_);
  free_.push_back(data);
}

void BufferPool::take_filled(std::vector<Filled>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (filled_.empty() && !woken_) filled_cv_.wait_for(lock, timeout, [this] { return !filled_.empty() || woken_; });
  woken_ = false;
  out.insert(out.end(), filled_.begin(), filled_.end());
  filled_.clear();
}

void BufferPool::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  filled_cv_.notify_one();
}

size_t BufferPool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

}  // namespace scalescope::collect
