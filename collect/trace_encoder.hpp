// The collector's encoder: CUPTI activity buffers (from a fixed pool) and
// the API calls timed in callbacks -> columnar batches -> the rank's
// .sstrace, about once a second. One piece of libscalescope-collector.so
// (collector.cpp composes it with the capture window and the sidecar).
//
// Threads and locks: buffer_requested/buffer_completed run on CUPTI's
// threads, record_api_call on the job's threads (the pool and the API call
// log lock inside); decode_ready/flush/finish_file on the encoder thread (or
// at exit after it stopped), which alone touches the decoder, the batch and
// the sink. drain_mutex_ is the one lock of its own: the detach handshake
// (drain_before_detach on the detaching thread, answered in decode_ready).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cupti.h>

#include "collect/api_call_log.hpp"
#include "collect/buffer_pool.hpp"
#include "collect/collector_options.hpp"
#include "collect/cupti_decoder.hpp"
#include "collect/nvtx_hooks.hpp"
#include "collect/trace_sink.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

class TraceEncoder {
 public:
  // Rows the encoder thread adds to each batch beside CUPTI's (the samplers').
  using AddRows = std::function<void(trace::Trace& batch, trace::StringTable& strings)>;

  // The trace file (not with --discard), the buffer pool and the decoder.
  // False (error set) when the trace file cannot be written.
  bool open(const CollectorOptions& options, const trace::Metadata& meta, const std::filesystem::path& trace_path,
            std::string* error);

  // CUPTI's buffer callbacks: never wait (no free buffer means CUPTI drops and counts).
  void buffer_requested(uint8_t** buffer, size_t* size);
  void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid);

  // SCALESCOPE_API_RECORDS=callbacks: one default API call, timed at its
  // enter and exit callbacks on the job's thread.
  void record_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

  // CUPTI attached again: records of the next attach get fresh correlation
  // numbers (CUPTI may start them over). attach_starting before the attach,
  // attached_again after it succeeded.
  void attach_starting() { generation_pending_.store(true); }
  void attached_again() { generation_.fetch_add(1); }

  // Encoder thread: decodes what CUPTI handed over (waiting up to `wait` for
  // it) and answers a drain_before_detach asked before the call.
  void decode_ready(std::chrono::milliseconds wait);
  bool flush_due(bool stopping) const;
  void flush(const AddRows& add_rows, bool stopping);

  // The thread about to call cuptiFinalize, after cuptiActivityFlushAll:
  // waits (at most 5 s) until the encoder decoded every flushed buffer
  // (decoding calls CUPTI, and a CUPTI call after cuptiFinalize initialises it again).
  void drain_before_detach();
  void wake() { pool_->wake(); }
  void request_stop() {
    stop_.store(true);
    pool_->wake();
  }
  bool stopping() const { return stop_.load(); }

  // At the end (the encoder thread has stopped): the decoder's facts into the
  // trace's metadata and problems, then the file's last bytes.
  void add_end_facts(trace::Metadata& meta, trace::ProblemCounts& problems);
  void finish_file(const trace::Metadata& meta, const trace::ProblemCounts& problems);

  // What the sidecar summarises.
  const TraceSink* sink() const { return sink_.get(); }
  uint64_t cupti_dropped() const { return cupti_dropped_.load(); }
  uint64_t incomplete_records() const { return decoder_ ? decoder_->incomplete_records() : 0; }
  uint64_t pool_exhausted() const { return pool_ ? pool_->acquire_failures() : 0; }
  uint64_t buffers_discarded() const { return records_discarded_; }

 private:
  void decode_filled(std::vector<BufferPool::Filled>& filled);
  void decode_hooked_nvtx();
  void decode_api_calls();

  bool discard_ = false;
  bool api_callbacks_ = false;
  bool nvtx_hooks_ = false;  // NVTX ranges from the collector's own hooks (nvtx_hooks.hpp)
  std::vector<HookedNvtxEvent> nvtx_events_;
  trace::StringTable strings_;
  std::unique_ptr<CuptiDecoder> decoder_;
  std::unique_ptr<TraceSink> sink_;
  std::unique_ptr<BufferPool> pool_;
  trace::Trace batch_;
  std::chrono::steady_clock::time_point last_flush_;
  std::vector<BufferPool::Filled> filled_;
  uint64_t records_discarded_ = 0;
  std::atomic<uint64_t> cupti_dropped_{0};
  std::atomic<bool> stop_{false};

  ApiCallLog api_log_;
  std::atomic<uint32_t> generation_{0};          // attaches after the first: the generation of a logged call
  std::atomic<bool> generation_pending_{false};  // the decoder starts a new generation before the next buffer
  uint32_t decoded_generation_ = 0;              // the generation the decoder numbers correlations in
  std::vector<LoggedApiCall> api_calls_;

  std::mutex drain_mutex_;
  std::condition_variable drain_cv_;
  uint64_t drain_asked_ = 0, drain_done_ = 0;  // under drain_mutex_
};

}  // namespace scalescope::collect
