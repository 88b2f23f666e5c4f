#pragma once
// API calls timed in the collector's own CUPTI callbacks
// (SCALESCOPE_API_RECORDS=callbacks), on the job's threads, until the
// encoder thread takes them. Each thread appends to a buffer of its own (an
// uncontended lock: the encoder takes it only to swap the buffer out), so
// launching threads never wait on each other.
//
//   ApiCallLog log;
//   log.add({call, generation});   // in the API exit callback, any thread
//   log.drain(out);                // encoder: every call logged so far

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "collect/cupti_decoder.hpp"

namespace scalescope::collect {

struct LoggedApiCall {
  CuptiDecoder::ApiCall call;
  uint32_t generation = 0;  // CUPTI attaches so far: correlation ids start over with each
};

class ApiCallLog {
 public:
  // A thread's calls beyond this many, not yet drained, are dropped and
  // counted (the encoder drains every 100 ms; this bounds memory if it stalls).
  static constexpr size_t kMaxPerThread = size_t{1} << 20;

  void add(const LoggedApiCall& c) {
    Buffer& b = mine();
    std::lock_guard lock(b.mutex);
    if (b.calls.size() >= kMaxPerThread) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    b.calls.push_back(c);
  }

  // Appends every thread's calls to `out`, each thread's in its order.
  void drain(std::vector<LoggedApiCall>& out) {
    std::vector<std::shared_ptr<Buffer>> buffers;
    {
      std::lock_guard lock(registry_mutex_);
      buffers = buffers_;
    }
    std::vector<LoggedApiCall> taken;
    for (auto& b : buffers) {
      {
        std::lock_guard lock(b->mutex);
        taken.swap(b->calls);
      }
      out.insert(out.end(), taken.begin(), taken.end());
      taken.clear();
    }
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Buffer {
    std::mutex mutex;
    std::vector<LoggedApiCall> calls;
  };
  // This thread's buffer in this log, registered on its first call (owned by
  // the registry, so that calls of a thread that has ended are still drained).
  Buffer& mine() {
    // By id, not address: a later log at the same address must not find this one's buffer.
    thread_local uint64_t owner = 0;
    thread_local Buffer* buffer = nullptr;
    if (owner != id_) {
      auto b = std::make_shared<Buffer>();
      std::lock_guard lock(registry_mutex_);
      buffers_.push_back(b);
      owner = id_;
      buffer = b.get();
    }
    return *buffer;
  }

  static uint64_t next_id() {
    static std::atomic<uint64_t> ids{0};
    return ids.fetch_add(1) + 1;
  }

  const uint64_t id_ = next_id();
  std::mutex registry_mutex_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace scalescope::collect
