#include "collect/trace_encoder.hpp"

#include <pthread.h>

#include "collect/collector_common.hpp"

namespace scalescope::collect {
namespace {

constexpr size_t kBufferBytes = size_t{2} << 20;  // CUPTI's buffers: 2 MiB each
constexpr auto kFlushPeriod = std::chrono::milliseconds(1000);
constexpr size_t kMaxBatchRows = size_t{1} << 20;

}  // namespace

bool TraceEncoder::open(const CollectorOptions& options, const trace::Metadata& meta,
                        const std::filesystem::path& trace_path, std::string* error) {
  discard_ = options.discard;
  api_callbacks_ = options.api == ApiMode::kDefault && options.api_records == ApiRecords::kCallbacks;
  nvtx_hooks_ = nvtx_records_by_hooks();
  if (!discard_) {
    sink_ = TraceSink::open(
        trace_path, meta, [](const std::string& line) { warn("%s", line.c_str()); }, error);
    if (!sink_) return false;
  }
  size_t count = std::max<size_t>(2, (size_t{options.buffer_mb} << 20) / kBufferBytes);
  pool_ = std::make_unique<BufferPool>(kBufferBytes, count);
  // NCCL's NVTX payloads are decoded by the schemas NCCL registered, which
  // CUPTI keeps (it is the NVTX extension's handler: InitializeInjectionNvtxExtension).
  using PayloadAttrFn = CUptiResult (*)(uint32_t, uint64_t, CUpti_NvtxExtPayloadAttr*);
  auto payload_attr = reinterpret_cast<PayloadAttrFn>(cupti_symbol("cuptiActivityGetNvtxExtPayloadAttr"));
  NvtxPayloadAttrResolver payloads;
  if (nvtx_hooks_)  // the schemas the collector's own hooks registered
    payloads = [](uint32_t domain, uint64_t id, uint32_t* type, const void** attributes) {
      return NvtxHooks::instance().payload_attr(domain, id, type, attributes);
    };
  else if (payload_attr)
    payloads = [payload_attr](uint32_t domain, uint64_t id, uint32_t* type, const void** attributes) {
      CUpti_NvtxExtPayloadAttr a{};
      a.structSize = sizeof(a);
      if (payload_attr(domain, id, &a) != CUPTI_SUCCESS || !a.attributes) return false;
      *type = a.type;
      *attributes = a.attributes;
      return true;
    };
  decoder_ = std::make_unique<CuptiDecoder>(
      strings_,
      [](trace::ApiDomain d, uint32_t cbid) {
        const char* name = nullptr;
        auto domain = d == trace::ApiDomain::kRuntime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        return cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name ? std::string(name) : std::string();
      },
      std::move(payloads));
  last_flush_ = std::chrono::steady_clock::now();
  return true;
}

void TraceEncoder::buffer_requested(uint8_t** buffer, size_t* size) {
  uint8_t* b = pool_->acquire();  // never waits: no buffer means CUPTI drops and counts
  *buffer = b;
  *size = b ? pool_->buffer_bytes() : 0;
}

void TraceEncoder::buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    cupti_dropped_.fetch_add(dropped);
  pool_->complete(buffer, valid);
}

// One default API call, timed at its enter and exit callbacks. Driver calls
// that the runtime makes inside a runtime call being timed on this thread
// are not the application's own (CUPTI's activity records leave them out
// too): they are skipped. A call whose enter came before the window opened,
// or before an attach, has no start here and is not recorded.
void TraceEncoder::record_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  struct Open {
    uint64_t start;
    uint32_t cbid;
    bool runtime, skip;
  };
  thread_local std::vector<Open> open;  // nested calls of this thread
  thread_local uint32_t open_generation = 0;
  const uint32_t generation = generation_.load(std::memory_order_relaxed);
  if (open_generation != generation) {
    open.clear();  // CUPTI was detached mid-call: those exits never come
    open_generation = generation;
  }
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    bool inside_runtime = false;
    for (const auto& o : open) inside_runtime |= o.runtime;
    if (open.size() < 64)
      open.push_back({static_cast<uint64_t>(cupti_now()), cbid, runtime, !runtime && inside_runtime});
    return;
  }
  if (open.empty() || open.back().cbid != cbid || open.back().runtime != runtime) return;
  const Open o = open.back();
  open.pop_back();
  if (o.skip || o.start == 0) return;
  LoggedApiCall c;
  c.call.start = o.start;
  c.call.end = static_cast<uint64_t>(cupti_now());
  c.call.thread = os_thread_id();  // as CUPTI's records with system thread ids
  c.call.cbid = cbid;
  c.call.correlation = cb->correlationId;
  c.call.return_code = cb->functionReturnValue ? *static_cast<const int32_t*>(cb->functionReturnValue) : 0;
  c.call.domain = runtime ? trace::ApiDomain::kRuntime : trace::ApiDomain::kDriver;
  c.generation = generation;
  api_log_.add(c);
}

void TraceEncoder::decode_ready(std::chrono::milliseconds wait) {
  uint64_t drain_asked = 0;
  {
    std::lock_guard lock(drain_mutex_);
    drain_asked = drain_asked_;
  }
  filled_.clear();
  pool_->take_filled(filled_, wait);
  decode_filled(filled_);
  if (drain_asked == 0) return;
  std::unique_lock lock(drain_mutex_);
  if (drain_done_ >= drain_asked) return;
  lock.unlock();
  // Everything flushed before the ask is queued by now: decode it all
  // before the detaching thread calls cuptiFinalize.
  filled_.clear();
  pool_->take_filled(filled_, std::chrono::milliseconds(0));
  decode_filled(filled_);
  lock.lock();
  drain_done_ = drain_asked;
  drain_cv_.notify_all();
}

void TraceEncoder::drain_before_detach() {
  std::unique_lock drain(drain_mutex_);
  const uint64_t asked = ++drain_asked_;
  pool_->wake();
  drain_cv_.wait_for(drain, std::chrono::seconds(5), [&] { return drain_done_ >= asked || stop_.load(); });
}

bool TraceEncoder::flush_due(bool stopping) const {
  return std::chrono::steady_clock::now() - last_flush_ >= kFlushPeriod || batch_.event_count() >= kMaxBatchRows ||
         stopping;
}

void TraceEncoder::flush(const AddRows& add_rows, bool stopping) {
  if (add_rows) add_rows(batch_, strings_);
  decoder_->drain_nccl(batch_, stopping);  // NCCL rows whose call is joined, or that waited enough
  if (sink_) sink_->append(batch_, strings_);
  batch_ = trace::Trace();  // fresh columns; the string table lives on in strings_
  last_flush_ = std::chrono::steady_clock::now();
}

// The API calls timed in callbacks so far. A call of a newer attach than the
// decoder's numbering starts the decoder's new generation (if no buffer of it
// has yet): correlation ids start over with each attach.
void TraceEncoder::decode_api_calls() {
  api_calls_.clear();
  api_log_.drain(api_calls_);
  for (const auto& c : api_calls_) {
    if (c.generation != decoded_generation_) {
      if (generation_pending_.exchange(false)) decoder_->new_generation();
      decoded_generation_ = c.generation;
    }
    if (!discard_) decoder_->decode_api_call(c.call, batch_);
  }
}

// The ranges and marks the collector's own NVTX hooks recorded so far.
void TraceEncoder::decode_hooked_nvtx() {
  nvtx_events_.clear();
  NvtxHooks::instance().drain(nvtx_events_);
  if (discard_) return;  // drained all the same: the floor measurement keeps nothing
  for (const auto& e : nvtx_events_) decoder_->decode_hooked_nvtx(e, batch_);
}

void TraceEncoder::decode_filled(std::vector<BufferPool::Filled>& filled) {
  if (api_callbacks_) decode_api_calls();
  if (nvtx_hooks_) decode_hooked_nvtx();
  if (!filled.empty() && generation_pending_.exchange(false)) {
    decoder_->new_generation();
    decoded_generation_ = generation_.load();
  }
  for (const auto& f : filled) {
    if (discard_) {
      ++records_discarded_;  // counts buffers: the floor measurement keeps nothing
    } else {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(f.data, f.valid_bytes, &record) == CUPTI_SUCCESS)
        decoder_->decode(record, batch_);
    }
    pool_->release(f.data);
  }
  filled.clear();
}

void TraceEncoder::add_end_facts(trace::Metadata& meta, trace::ProblemCounts& problems) {
  meta.devices = decoder_->devices();
  if (cupti_dropped_.load() > 0) problems.add(trace::Problem::kDroppedRecords, cupti_dropped_.load());
  if (api_log_.dropped() > 0) problems.add(trace::Problem::kDroppedRecords, api_log_.dropped());
  const auto& nccl = decoder_->nccl_join().stats();
  meta.extra["nccl_kernels_joined"] = std::to_string(nccl.joined);
  meta.extra["nccl_kernels_unjoined"] = std::to_string(nccl.unjoined);
  meta.extra["nccl_calls_dropped"] = std::to_string(nccl.ranges_dropped);
  meta.extra["nccl_payloads_undecoded"] = std::to_string(decoder_->undecoded_payloads());
  if (decoder_->incomplete_records() > 0)
    problems.add(trace::Problem::kIncompleteRecord, decoder_->incomplete_records());
  if (decoder_->unmatched_range_ends() > 0)
    problems.add(trace::Problem::kMalformedEvent, decoder_->unmatched_range_ends());
  meta.extra["cupti_dropped_records"] = std::to_string(cupti_dropped_.load());
  meta.extra["buffer_pool_exhausted"] = std::to_string(pool_->acquire_failures());
  if (nvtx_hooks_) {
    const NvtxHooks& hooks = NvtxHooks::instance();
    if (hooks.dropped() > 0) problems.add(trace::Problem::kDroppedRecords, hooks.dropped());
    meta.extra["nvtx_hooks_installed"] = std::to_string(hooks.installed() ? 1 : 0);
    meta.extra["nvtx_ranges_cut_by_window"] = std::to_string(hooks.cut_by_window());
  }
  if (decoder_->ranges_cut_by_detach() > 0)
    meta.extra["nvtx_ranges_cut_by_detach"] = std::to_string(decoder_->ranges_cut_by_detach());
}

void TraceEncoder::finish_file(const trace::Metadata& meta, const trace::ProblemCounts& problems) {
  if (sink_) sink_->finish(meta, problems);
}

}  // namespace scalescope::collect
