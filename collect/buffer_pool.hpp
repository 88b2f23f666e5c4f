#pragma once
// A fixed set of activity buffers allocated once. CUPTI's thread takes empty
// buffers and hands back full ones; the encoder thread drains them. Neither
// side ever waits on the other: when every buffer is in use acquire() returns
// nullptr (CUPTI then drops records and counts them), so memory stays bounded
// and the application never blocks on disk.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace scalescope::collect {

class BufferPool {
 public:
  struct Filled {
    uint8_t* data;
    size_t valid_bytes;
  };

  // buffer_bytes is rounded up to a multiple of 8 (CUPTI's record alignment).
  BufferPool(size_t buffer_bytes, size_t buffer_count);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  uint8_t* acquire();                                // nullptr when all are in use; counted in acquire_failures()
  void complete(uint8_t* data, size_t valid_bytes);  // a full buffer for the consumer
  void release(uint8_t* data);                       // back to the free list after decoding

  // Moves the filled buffers into `out`; waits up to `timeout` when there are
  // none (or until wake() is called).
  void take_filled(std::vector<Filled>& out, std::chrono::milliseconds timeout);
  void wake();

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t free_count() const;
  uint64_t acquire_failures() const { return acquire_failures_.load(std::memory_order_relaxed); }

 private:
  size_t buffer_bytes_;
  size_t count_;
  std::unique_ptr<uint8_t[]> storage_;
  mutable std::mutex mutex_;  // held for a few pointer moves only
  std::condition_variable filled_cv_;
  std::vector<uint8_t*> free_;  // capacity count_: never reallocates
  std::vector<Filled> filled_;  // capacity count_: never reallocates
  std::atomic<uint64_t> acquire_failures_{0};
  bool woken_ = false;
};

}  // namespace scalescope::collect
