// libscalescope-collector.so: loaded into every CUDA process through
// CUDA_INJECTION64_PATH (and NVTX_INJECTION64_PATH). CUPTI fills buffers from
// a fixed pool; one encoder thread decodes them into columnar batches and
// appends them about once a second to <run dir>/<host>-<pid>.sstrace.
//
// It must never harm the job: every failure is one warning line on stderr and
// the job runs on untraced; a forked child makes no CUDA or CUPTI call; exit
// waits are bounded.

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <nlohmann/json.hpp>

#include "collect/api_call_log.hpp"
#include "collect/buffer_pool.hpp"
#include "collect/collector_options.hpp"
#include "collect/cupti_decoder.hpp"
#include "collect/host_facts.hpp"
#include "collect/iteration_sampler.hpp"
#include "collect/node_facts.hpp"
#include "collect/nvml_sampler.hpp"
#include "collect/host_sampler.hpp"
#include "collect/trace_sink.hpp"
#include "scalescope_version.hpp"
#include "trace/error.hpp"
#include "trace/trace_file.hpp"

#define SCALESCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace scalescope::collect {
namespace {

constexpr size_t kBufferBytes = size_t{2} << 20;  // CUPTI's buffers: 2 MiB each
constexpr auto kFlushPeriod = std::chrono::milliseconds(1000);
constexpr auto kExitWait = std::chrono::seconds(10);
constexpr size_t kMaxBatchRows = size_t{1} << 20;
constexpr auto kNvmlMapWait = std::chrono::seconds(30);
constexpr auto kDetachGrace = std::chrono::milliseconds(500);

// Set in a forked child (pthread_atfork): from then on nothing here touches
// CUDA, CUPTI, threads or files.
std::atomic<bool> g_in_child{false};
std::atomic<int> g_pending_signal{0};

void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));
void warn(const char* format, ...) {
  char line[1024];
  int n = std::snprintf(line, sizeof(line), "scalescope: warning: ");
  va_list args;
  va_start(args, format);
  int m = std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 2, format, args);
  va_end(args);
  size_t len = std::min(sizeof(line) - 2, static_cast<size_t>(n) + static_cast<size_t>(std::max(m, 0)));
  line[len] = '\n';
  [[maybe_unused]] auto w = ::write(2, line, len + 1);  // one write: lines of ranks do not interleave
}

// A CUPTI entry point looked up at run time: the CUPTI of the GPU host may
// be older than the headers (cuptiActivityGetNvtxExtPayloadAttr is CUDA 13+).
void* cupti_symbol(const char* name) {
  void* cupti = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (!cupti) cupti = dlopen("libcupti.so", RTLD_LAZY | RTLD_NOLOAD);
  return cupti ? dlsym(cupti, name) : nullptr;
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
  return s;
}

// Test hook: SCALESCOPE_TEST_CLOCK_OFFSET_NS makes this process read the Unix
// clock that far off, as a host whose clock NTP has not caught up with would
// (the simulated two-node test, collect/fakes/two_node_test.cpp). Recorded in
// the trace's extra facts, so such a trace is never mistaken for a real one.
int64_t test_clock_offset_ns() {
  static const int64_t offset = [] {
    const char* v = std::getenv("SCALESCOPE_TEST_CLOCK_OFFSET_NS");
    return v && *v ? std::strtoll(v, nullptr, 10) : int64_t{0};
  }();
  return offset;
}

int64_t unix_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec + test_clock_offset_ns();
}

trace::Timestamp cupti_now() {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return static_cast<trace::Timestamp>(t);
}

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

class Collector {
 public:
  explicit Collector(CollectorOptions options) : options_(std::move(options)) {}
  bool start();
  void finish(const char* why);  // flush, write, close; bounded
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  void buffer_requested(uint8_t** buffer, size_t* size);
  void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid);

 private:
  void enable_tracing();
  void disable_tracing();
  CUptiResult attach_cupti(const char** failed_step, bool lean = false);
  CUptiResult set_up_activity();
  void close_capture_window(bool wait_for_gpu, std::chrono::milliseconds grace = kDetachGrace);
  void on_iteration_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* nvtx, const char* text);
  // Sampled windows: NVTX iteration ranges are the markers once one is seen;
  // until then (a job without them), cudaProfilerStart/Stop pairs are. A job
  // that calls cudaProfilerStart once before a loop of ProfilerStep ranges
  // thus switches to the ranges at the first one.
  static constexpr int kMarkerNvtx = 1, kMarkerProfilerApi = 2;
  bool claim_marker(int kind) {
    if (kind == kMarkerNvtx) {
      marker_kind_.store(kMarkerNvtx);
      return true;
    }
    int none = 0;
    return marker_kind_.compare_exchange_strong(none, kind) || none == kind;
  }
  std::atomic<int> marker_kind_{0};
  void iteration_begin(std::optional<uint64_t> number);
  void iteration_end();
  IterationClass state_now();
  void write_sampling_metadata();
  nlohmann::json sampling_summary();
  void enable_trigger_callbacks();
  void detach_cupti();
  void reattach_cupti();
  void decode_filled(std::vector<BufferPool::Filled>& filled);
  void encoder_loop();
  void start_nvml();
  void start_host_sampler();
  void hand_over_nvml();
  void map_nvml_devices(bool last_chance);
  void flush_batch();
  void write_sidecar(const std::string& status);
  void select_default_apis();
  void set_api_callbacks(bool on);
  void record_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void decode_api_calls();

  CollectorOptions options_;
  trace::Metadata meta_;
  trace::StringTable strings_;
  trace::ProblemCounts problems_;
  std::unique_ptr<CuptiDecoder> decoder_;
  std::unique_ptr<TraceSink> sink_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<NvmlSampler> nvml_;
  std::unique_ptr<HostSampler> host_;  // assigned by the encoder thread
  std::chrono::steady_clock::time_point nvml_start_;
  std::filesystem::path nvml_owner_path_;  // <run dir>/nvml-<host>.rank: a ranked sampler runs on this node
  bool nvml_handed_over_ = false;
  std::filesystem::path trace_path_, sidecar_path_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_CallbackId> runtime_cbids_, driver_cbids_;
  // SCALESCOPE_API_RECORDS=callbacks: the default API calls are timed in the
  // collector's own callbacks for the same ids (enter/exit timestamps) while a
  // window is open, instead of CUPTI's RUNTIME/DRIVER activity records.
  bool api_callbacks_ = false;
  std::atomic<bool> api_callbacks_on_{false};
  std::vector<uint8_t> runtime_selected_, driver_selected_;  // by callback id; fixed before any window
  ApiCallLog api_log_;
  std::atomic<uint32_t> generation_{0};  // attaches after the first: the generation of a logged call
  uint32_t decoded_generation_ = 0;  // encoder thread: the generation the decoder numbers correlations in
  std::vector<LoggedApiCall> api_calls_;  // encoder thread
  uint64_t api_calls_discarded_ = 0;

  std::mutex enable_mutex_;
  bool tracing_ = false;
  bool window_done_ = false;
  std::chrono::steady_clock::time_point init_time_, window_start_;

  trace::Trace batch_;
  std::chrono::steady_clock::time_point last_flush_;
  uint64_t records_discarded_ = 0;
  std::atomic<uint64_t> cupti_dropped_{0};
  std::atomic<uint64_t> encoder_cpu_ns_{0};
  std::atomic<bool> stop_{false};
  std::thread encoder_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool encoder_done_ = false;
  std::atomic<bool> finished_{false};
  uint64_t nvtx_capture_id_ = 0;
  uint64_t windows_opened_ = 0;  // under enable_mutex_; how many times tracing was switched on

  // Detaching CUPTI between windows (cuptiFinalize). Disabling the activity
  // kinds leaves CUPTI's hooks in the job (measured: the job stays 20-35 %
  // slower after its first window), so a closed window detaches CUPTI, and a
  // capture range attaches it again with only its trigger callbacks.
  std::atomic<bool> attached_{false};
  std::atomic<bool> detach_requested_{false};  // the next API exit (of detach_thread_, unless any) detaches
  std::atomic<bool> reattach_requested_{false};  // the encoder attaches again
  std::atomic<bool> generation_pending_{false};  // the decoder starts a new generation before the next buffer
  // A capture window (cudaProfilerStop, or the end of the NVTX range) is
  // detached only after it has stayed closed for kDetachGrace, at an API exit
  // of the thread that closed it: a window that opens again at once (stop,
  // start) keeps CUPTI, because CUPTI attaches again on the encoder thread and
  // a start in between would be missed. (Attaching again inside the callback
  // that detached crashed the job on H200: bench/RESULTS.md.) A timed window
  // (--duration) detaches at any thread's next API exit and stays detached.
  bool close_pending_ = false;  // under enable_mutex_
  std::chrono::steady_clock::time_point closed_at_;  // under enable_mutex_
  std::atomic<pthread_t> detach_thread_{};
  std::atomic<bool> detach_on_any_thread_{false};
  uint64_t stops_without_window_ = 0;  // under enable_mutex_: a stop with no window open (a start missed?)
  std::mutex detach_mutex_;  // one detach at a time
  // Before cuptiFinalize, every flushed buffer is decoded (decoding calls
  // CUPTI, and a CUPTI call after cuptiFinalize initialises it again).
  std::mutex drain_mutex_;
  std::condition_variable drain_cv_;
  uint64_t drain_asked_ = 0, drain_done_ = 0;  // under drain_mutex_
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> detach_failures_{0};
  std::chrono::milliseconds close_grace_ = kDetachGrace;  // under enable_mutex_: of the pending close

  // Sampled windows by iteration (options_.sampled()): the NVTX iteration
  // ranges open and close windows by schedule_, and every iteration is timed
  // (two clock reads, in the NVTX callbacks CUPTI keeps attached between
  // windows) so that the run measures its own perturbation.
  bool sampling_ = false;
  SampleSchedule schedule_;
  std::atomic<uint64_t> state_changes_{0};  // windows opened/closed, detaches, attaches
  std::mutex iteration_mutex_;
  // Under iteration_mutex_:
  bool pre_loop_window_ = false;  // the window open from the start until the first iteration
  uint64_t iterations_seen_ = 0;
  std::optional<uint64_t> first_number_;  // N of the first "NAME#N"
  bool iteration_open_ = false;
  uint64_t iteration_index_ = 0;
  std::chrono::steady_clock::time_point iteration_begin_;
  IterationClass begin_state_ = IterationClass::kOutside;
  uint64_t begin_changes_ = 0;
  uint64_t iteration_range_id_ = 0;  // nvtxRangeStart id of the open iteration
  IterationTimes iteration_times_;
  nlohmann::json sampling_json_;  // computed once at the end (the interval resamples)
  // SCALESCOPE_LEAN_REATTACH=1 (an experiment, bench/RESULTS.md session 7):
  // attach again after a detach with the trigger callbacks only; the activity
  // API (buffers, flush period, metadata kinds) is set up when a window opens.
  bool lean_reattach_ = false;
  bool activity_ready_ = false;  // under enable_mutex_ once the encoder runs
};

Collector* g_collector = nullptr;

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  if (g_in_child.load() || !g_collector) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  g_collector->buffer_requested(buffer, size);
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (g_in_child.load() || !g_collector || !buffer) return;
  g_collector->buffer_completed(ctx, stream, buffer, valid);
}

void CUPTIAPI on_cupti_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (g_in_child.load() || !g_collector) return;
  g_collector->on_callback(domain, cbid, data);
}

void on_fork_child() { g_in_child.store(true); }

// Registered when the library loads, before any CUDA work, so that every
// child forked afterwards (DataLoader workers) is marked.
__attribute__((constructor)) void register_fork_handler() { pthread_atfork(nullptr, nullptr, on_fork_child); }

void on_exit() {
  if (g_in_child.load() || !g_collector) return;
  g_collector->finish("exit");
}

void on_signal(int sig) {
  // Async-signal-safe: only note it; the encoder thread finishes the trace
  // and then re-raises the signal with its default action.
  g_pending_signal.store(sig);
}

void Collector::buffer_requested(uint8_t** buffer, size_t* size) {
  uint8_t* b = pool_->acquire();  // never waits: no buffer means CUPTI drops and counts
  *buffer = b;
  *size = b ? pool_->buffer_bytes() : 0;
}

void Collector::buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    cupti_dropped_.fetch_add(dropped);
  pool_->complete(buffer, valid);
}

void Collector::select_default_apis() {
  auto scan = [](CUpti_CallbackDomain domain, trace::ApiDomain ours, uint32_t size, std::vector<CUpti_CallbackId>& out) {
    for (uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name && is_default_api(ours, name))
        out.push_back(cbid);
    }
  };
  scan(CUPTI_CB_DOMAIN_RUNTIME_API, trace::ApiDomain::kRuntime, CUPTI_RUNTIME_TRACE_CBID_SIZE, runtime_cbids_);
  scan(CUPTI_CB_DOMAIN_DRIVER_API, trace::ApiDomain::kDriver, CUPTI_DRIVER_TRACE_CBID_SIZE, driver_cbids_);
  runtime_selected_.assign(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0);
  driver_selected_.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, 0);
  for (auto cbid : runtime_cbids_) runtime_selected_[cbid] = 1;
  for (auto cbid : driver_cbids_) driver_selected_[cbid] = 1;
}

// Under enable_mutex_. The callbacks of the default API ids on or off; the
// window triggers (cudaProfilerStart/Stop are default ids too) stay on.
void Collector::set_api_callbacks(bool on) {
  api_callbacks_on_.store(on);
  for (auto cbid : runtime_cbids_) cuptiEnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (auto cbid : driver_cbids_) cuptiEnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  if (!on) enable_trigger_callbacks();
}

// One default API call, timed at its enter and exit callbacks. Driver calls
// that the runtime makes inside a runtime call being timed on this thread
// are not the application's own (CUPTI's activity records leave them out
// too): they are skipped. A call whose enter came before the window opened,
// or before an attach, has no start here and is not recorded.
void Collector::record_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
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
    if (open.size() < 64) open.push_back({static_cast<uint64_t>(cupti_now()), cbid, runtime, !runtime && inside_runtime});
    return;
  }
  if (open.empty() || open.back().cbid != cbid || open.back().runtime != runtime) return;
  const Open o = open.back();
  open.pop_back();
  if (o.skip || o.start == 0) return;
  LoggedApiCall c;
  c.call.start = o.start;
  c.call.end = static_cast<uint64_t>(cupti_now());
  c.call.thread = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self()));  // as CUPTI's default thread ids
  c.call.cbid = cbid;
  c.call.correlation = cb->correlationId;
  c.call.return_code = cb->functionReturnValue ? *static_cast<const int32_t*>(cb->functionReturnValue) : 0;
  c.call.domain = runtime ? trace::ApiDomain::kRuntime : trace::ApiDomain::kDriver;
  c.generation = generation;
  api_log_.add(c);
}

// The CUPTI kinds of the --activities groups, kernels first: if CUPTI
// refuses the first one, nothing is traced.
std::vector<CUpti_ActivityKind> activity_kinds(uint32_t activities) {
  std::vector<CUpti_ActivityKind> kinds;
  // Never CUPTI_ACTIVITY_KIND_KERNEL: it serialises kernels.
  if (activities & kActivityKernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (activities & kActivityMemcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);  // peer-to-peer
  }
  if (activities & kActivityMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (activities & kActivitySync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (activities & kActivityNvtx) kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
  return kinds;
}

void Collector::enable_tracing() {
  std::lock_guard lock(enable_mutex_);
  if (tracing_ || window_done_) return;
  if (!activity_ready_ && set_up_activity() != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
  auto kinds = activity_kinds(options_.activities);
  CUptiResult r = kinds.empty() ? CUPTI_SUCCESS : cuptiActivityEnable(kinds.front());
  if (r != CUPTI_SUCCESS) {
    warn("CUPTI activity tracing unavailable (%s; another profiler such as nsys or torch.profiler, or an "
         "unsupported GPU); the job runs untraced",
         cupti_error(r).c_str());
    problems_.add(trace::Problem::kCuptiError);
    window_done_ = true;
    return;
  }
  for (size_t i = 1; i < kinds.size(); ++i)
    if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
  if (options_.api == ApiMode::kAll) {
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
  } else if (options_.api == ApiMode::kDefault && api_callbacks_) {
    set_api_callbacks(true);
  } else if (options_.api == ApiMode::kDefault) {
    // Per callback id: recording every API call is what makes naive collectors slow.
    for (auto cbid : runtime_cbids_)
      if (cuptiActivityEnableRuntimeApi(cbid, 1) != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
    for (auto cbid : driver_cbids_)
      if (cuptiActivityEnableDriverApi(cbid, 1) != CUPTI_SUCCESS) problems_.add(trace::Problem::kCuptiError);
  }
  tracing_ = true;
  close_pending_ = false;
  window_start_ = std::chrono::steady_clock::now();
  ++windows_opened_;
  state_changes_.fetch_add(1);
}

void Collector::disable_tracing() {
  std::lock_guard lock(enable_mutex_);
  if (!tracing_) return;
  for (auto kind : activity_kinds(options_.activities)) cuptiActivityDisable(kind);
  if (options_.api == ApiMode::kAll) {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  } else if (options_.api == ApiMode::kDefault && api_callbacks_) {
    set_api_callbacks(false);
  } else if (options_.api == ApiMode::kDefault) {
    for (auto cbid : runtime_cbids_) cuptiActivityEnableRuntimeApi(cbid, 0);
    for (auto cbid : driver_cbids_) cuptiActivityEnableDriverApi(cbid, 0);
  }
  tracing_ = false;
  state_changes_.fetch_add(1);
}

// Capture ranges: NVTX push/pop or start/end of the named range, or
// cudaProfilerStart/Stop, open and close the window (every occurrence).
void Collector::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    thread_local int depth = -1;  // push depth inside the capture range on this thread, -1 outside
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    auto attrib_text = [](const nvtxEventAttributes_t* a) -> const char* {
      return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
    };
    const char* text = nullptr;
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
        text = static_cast<const nvtxRangePushA_params*>(nvtx->functionParams)->message;
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        text = attrib_text(static_cast<const nvtxRangePushEx_params*>(nvtx->functionParams)->eventAttrib);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        text = attrib_text(static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams)->core.eventAttrib);
        break;
      default: break;
    }
    if (sampling_) {
      on_iteration_nvtx(cbid, nvtx, text);
      return;
    }
    bool matches = text && options_.capture_name == text;
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        if (depth >= 0) {
          ++depth;
        } else if (matches) {
          depth = 0;
          enable_tracing();
        }
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (depth == 0) close_capture_window(false);
        if (depth >= 0) --depth;
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        if (matches && nvtx->functionReturnValue) {
          nvtx_capture_id_ = *static_cast<const nvtxRangeId_t*>(nvtx->functionReturnValue);
          enable_tracing();
        }
        break;
      case CUPTI_CBID_NVTX_nvtxRangeEnd:
        if (nvtx_capture_id_ && static_cast<const nvtxRangeEnd_params*>(nvtx->functionParams)->id == nvtx_capture_id_) {
          nvtx_capture_id_ = 0;
          close_capture_window(false);
        }
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        if (nvtx_capture_id_ &&
            static_cast<const nvtxDomainRangeEnd_params*>(nvtx->functionParams)->core.id == nvtx_capture_id_) {
          nvtx_capture_id_ = 0;
          close_capture_window(false);
        }
        break;
      default: break;
    }
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (api_callbacks_on_.load(std::memory_order_relaxed)) {
      const auto& selected = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_selected_ : driver_selected_;
      if (cbid < selected.size() && selected[cbid]) record_api_call(domain, cbid, cb);
    }
    bool start = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) ||
                 (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    // Stop named explicitly: another API callback enabled later must not close the window.
    bool stop = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) ||
                (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    if (cb->callbackSite == CUPTI_API_EXIT && detach_requested_.load(std::memory_order_relaxed) &&
        (detach_on_any_thread_.load() || pthread_equal(detach_thread_.load(), pthread_self()))) {
      detach_cupti();  // the API exit CUPTI wants cuptiFinalize from
    }
    // cudaProfilerStart/Stop call cuProfilerStart/Stop inside, so one call
    // brings both domains' callbacks, nested: act on the outermost only (a
    // stop counted twice looked like a missed start). A detach inside a call
    // loses the rest of its callbacks, so the depth starts over with each
    // attach (and is clamped at 0 for an attach between enter and exit).
    if (start || stop) {
      thread_local int profiler_call_depth = 0;
      thread_local uint64_t depth_detaches = 0;
      if (const uint64_t now = detaches_.load(std::memory_order_relaxed); now != depth_detaches) {
        depth_detaches = now;
        profiler_call_depth = 0;
      }
      // The window actions belong to --capture-range cudaProfilerApi only: in
      // other modes these callbacks come on with the API records of a window
      // (cudaProfilerStart/Stop are default API ids) or with a detach request.
      // Sampled windows take the calls as iteration markers instead (one
      // iteration from a start to its stop), unless the job's NVTX iteration
      // ranges came first.
      const bool windows = options_.capture == CaptureRange::kCudaProfilerApi;
      if (cb->callbackSite == CUPTI_API_ENTER) {
        if (profiler_call_depth++ == 0 && start) {
          if (windows) enable_tracing();
          if (sampling_ && claim_marker(kMarkerProfilerApi)) iteration_begin(std::nullopt);
        }
      } else if (cb->callbackSite == CUPTI_API_EXIT) {
        profiler_call_depth = std::max(0, profiler_call_depth - 1);
        if (profiler_call_depth == 0 && stop) {
          if (windows) close_capture_window(true);
          if (sampling_ && marker_kind_.load() == kMarkerProfilerApi) iteration_end();
        }
      }
    }
  }
}

// At the exit of cudaProfilerStop (wait_for_gpu: the window's last GPU work
// is waited for, or its records would be lost when CUPTI detaches) or at the
// end of an NVTX capture range (no wait: the range may end inside a CUDA graph
// capture, where a synchronisation is an error; the grace time lets the
// window's kernels finish): the encoder asks for a detach if the window stays
// closed for kDetachGrace. With --no-detach the window only closes.
void Collector::close_capture_window(bool wait_for_gpu, std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(enable_mutex_);
    if (!tracing_) {
      // A cudaProfilerStop with no window open (iteration windows close only open ones).
      if (wait_for_gpu && options_.capture == CaptureRange::kCudaProfilerApi) ++stops_without_window_;
      return;
    }
  }
  disable_tracing();  // first: the context synchronisation below is not the job's and is not recorded
  if (!options_.detach) return;
  void* cuda = wait_for_gpu ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  if (cuda) {
    using SyncFn = int (*)();
    if (auto sync = reinterpret_cast<SyncFn>(dlsym(cuda, "cuCtxSynchronize"))) sync();
    dlclose(cuda);
  }
  {
    std::lock_guard lock(enable_mutex_);
    close_pending_ = true;
    close_grace_ = grace;
    closed_at_ = std::chrono::steady_clock::now();
    detach_thread_.store(pthread_self());
  }
  if (grace.count() == 0) pool_->wake();  // the encoder asks for the detach at once
}

// The iteration ranges (options_.iteration_range or NAME#N) on this thread:
// an iteration begins at the push (start) of one and ends at its pop (end).
// A marker pushed while one is open means the open one's end was missed (a
// detach in between): it is dropped, not timed.
void Collector::on_iteration_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* nvtx, const char* text) {
  // Push depth inside the iteration range on this thread, -1 outside. Not
  // reset by a detach: the iteration around it ends at its pop as usual (a
  // transition). A pop missed while detached (a few milliseconds) leaves the
  // iteration open until the next marker, which drops it.
  thread_local int depth = -1;
  std::optional<uint64_t> number;
  const bool matches = text && match_iteration_marker(options_.iteration_range, text, &number);
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      if (matches && claim_marker(kMarkerNvtx)) {
        depth = 0;
        iteration_begin(number);
      } else if (depth >= 0) {
        ++depth;
      }
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      if (depth == 0) iteration_end();
      if (depth >= 0) --depth;
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      if (matches && nvtx->functionReturnValue && claim_marker(kMarkerNvtx)) {
        iteration_begin(number);
        std::lock_guard lock(iteration_mutex_);
        iteration_range_id_ = *static_cast<const nvtxRangeId_t*>(nvtx->functionReturnValue);
      }
      break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
      const uint64_t id = cbid == CUPTI_CBID_NVTX_nvtxRangeEnd
                              ? static_cast<const nvtxRangeEnd_params*>(nvtx->functionParams)->id
                              : static_cast<const nvtxDomainRangeEnd_params*>(nvtx->functionParams)->core.id;
      bool ours = false;
      {
        std::lock_guard lock(iteration_mutex_);
        ours = iteration_range_id_ != 0 && id == iteration_range_id_;
        if (ours) iteration_range_id_ = 0;
      }
      if (ours) iteration_end();
      break;
    }
    default: break;
  }
}

// What an iteration starting now would be, if nothing changes before its end.
IterationClass Collector::state_now() {
  std::lock_guard lock(enable_mutex_);
  if (tracing_) return IterationClass::kInside;
  if (!options_.detach) return IterationClass::kOutside;  // attached, nothing enabled: the user chose that outside
  // Detached and attached again with only the NVTX callbacks: the job's own speed.
  if (detaches_.load() > 0 && !close_pending_ && !detach_requested_.load()) return IterationClass::kOutside;
  return IterationClass::kLingering;  // CUPTI still attached after a window, detach pending
}

void Collector::iteration_begin(std::optional<uint64_t> number) {
  const auto now = std::chrono::steady_clock::now();
  bool open_window = false, close_pre_loop = false;
  {
    std::lock_guard lock(iteration_mutex_);
    uint64_t index = iterations_seen_;
    // PyTorch numbers its steps: a step missed while CUPTI was detached (a
    // few milliseconds) does not shift the schedule.
    if (number && (!first_number_ || *number >= *first_number_)) {
      if (!first_number_) first_number_ = number;
      index = *number - *first_number_;
    }
    ++iterations_seen_;
    iteration_open_ = true;  // an open one whose end was missed is dropped
    iteration_index_ = index;
    iteration_begin_ = now;
    if (pre_loop_window_) {
      // The first iteration: the job has markers, so from here on windows come from the schedule.
      pre_loop_window_ = false;
      close_pre_loop = !schedule_.traced(index);
    } else {
      open_window = schedule_.traced(index);
    }
  }
  if (close_pre_loop) close_capture_window(true, std::chrono::milliseconds(0));
  if (open_window) enable_tracing();
  const IterationClass state = state_now();
  std::lock_guard lock(iteration_mutex_);
  begin_state_ = state;
  begin_changes_ = state_changes_.load();
}

void Collector::iteration_end() {
  const auto now = std::chrono::steady_clock::now();
  bool close = false;
  {
    std::lock_guard lock(iteration_mutex_);
    if (!iteration_open_) return;
    iteration_open_ = false;
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - iteration_begin_).count();
    IterationClass c = begin_state_;
    if (iteration_index_ < schedule_.skip)
      c = IterationClass::kWarmup;
    else if (state_changes_.load() != begin_changes_)
      c = IterationClass::kTransition;
    iteration_times_.add(c, ns);
    close = !pre_loop_window_ && !schedule_.traced(iteration_index_ + 1);
  }
  if (!close) return;
  {
    std::lock_guard lock(enable_mutex_);
    if (!tracing_) return;
  }
  // The last traced iteration: wait for its GPU work (its records), and
  // detach at once (the schedule says no window opens at the next marker).
  close_capture_window(true, std::chrono::milliseconds(0));
}

nlohmann::json Collector::sampling_summary() {
  nlohmann::json j;
  if (!sampling_) {
    j["mode"] = options_.full ? "full" : "windows";  // --full, or the user's own windows
    return j;
  }
  std::lock_guard lock(iteration_mutex_);
  j["mode"] = "sampled";
  j["iteration_range"] = options_.iteration_range;
  j["skip_iterations"] = schedule_.skip;
  j["iterations"] = schedule_.active;
  j["repeat_every"] = schedule_.every;
  j["iterations_seen"] = iterations_seen_;
  for (auto c : {IterationClass::kWarmup, IterationClass::kInside, IterationClass::kOutside, IterationClass::kTransition,
                 IterationClass::kLingering})
    j[std::string("iterations_") + std::string(to_string(c))] = iteration_times_.count(c);
  if (iterations_seen_ == 0) {
    j["note"] = "no iteration markers (NVTX ranges named " + options_.iteration_range + " or " +
                options_.iteration_range + "#N, or cudaProfilerStart/Stop): traced from start to end";
    return j;
  }
  j["iteration_marker"] = marker_kind_.load() == kMarkerProfilerApi ? "cudaProfilerStart/Stop" : "nvtx";
  const Perturbation p = estimate_perturbation(iteration_times_.durations(IterationClass::kInside),
                                               iteration_times_.durations(IterationClass::kOutside));
  j["perturbation_measured"] = p.measured;
  j["perturbation_text"] = describe_perturbation(p);
  if (p.measured) {
    j["perturbation_pct"] = p.percent;
    j["perturbation_ci_low_pct"] = p.ci_low;
    j["perturbation_ci_high_pct"] = p.ci_high;
    j["iteration_inside_median_ns"] = p.inside_median_ns;
    j["iteration_outside_median_ns"] = p.outside_median_ns;
  }
  return j;
}

// The same facts as trace metadata (strings), for analyze and the report.
void Collector::write_sampling_metadata() {
  sampling_json_ = sampling_summary();
  const nlohmann::json& j = sampling_json_;
  meta_.extra["sampling"] = j.value("mode", "");
  for (const auto& [k, v] : j.items()) {
    if (k == "mode") continue;
    meta_.extra[k == "note" ? "sampling_note" : k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
}

void Collector::enable_trigger_callbacks() {
  if (sampling_ || options_.capture == CaptureRange::kCudaProfilerApi) {
    // Window triggers (capture range), or iteration markers (sampled windows).
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  }
  if (options_.capture == CaptureRange::kNvtx || sampling_) {
    for (auto cbid : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
                      CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePop, CUPTI_CBID_NVTX_nvtxRangeStartA,
                      CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
                      CUPTI_CBID_NVTX_nvtxRangeEnd, CUPTI_CBID_NVTX_nvtxDomainRangeEnd})
      cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid);
  }
}

// On an application thread at an API exit (CUPTI's advice for cuptiFinalize).
void Collector::detach_cupti() {
  std::lock_guard lock(detach_mutex_);
  detach_requested_.store(false);
  if (!attached_.load()) return;
  {
    std::lock_guard enable(enable_mutex_);
    if (tracing_) {
      // A window opened again before this exit: keep CUPTI, and only the triggers called back.
      cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
      enable_trigger_callbacks();
      if (api_callbacks_on_.load()) set_api_callbacks(true);  // the window's own API callbacks
      return;
    }
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::unique_lock drain(drain_mutex_);
    const uint64_t asked = ++drain_asked_;
    pool_->wake();
    drain_cv_.wait_for(drain, std::chrono::seconds(5), [&] { return drain_done_ >= asked || stop_.load(); });
  }
  if (cuptiFinalize() != CUPTI_SUCCESS) {
    detach_failures_.fetch_add(1);  // CUPTI stays attached with its kinds disabled, as without detaching
    return;
  }
  attached_.store(false);
  detaches_.fetch_add(1);
  state_changes_.fetch_add(1);
  bool again = false;
  {
    std::lock_guard enable(enable_mutex_);
    again = (options_.capture != CaptureRange::kNone || sampling_) && !window_done_;
  }
  if (!again) return;
  reattach_requested_.store(true);
  pool_->wake();
}

// On the encoder thread, after a detach: the same CUPTI set-up as at start,
// so that the next capture window can open. Records of the next generation
// get fresh correlation numbers (CUPTI may start them over).
void Collector::reattach_cupti() {
  std::lock_guard lock(detach_mutex_);
  if (attached_.load()) return;
  generation_pending_.store(true);  // the encoder bumps the decoder before any buffer of the new generation
  const char* step = "";
  CUptiResult r;
  {
    std::lock_guard enable(enable_mutex_);  // activity_ready_
    r = attach_cupti(&step, lean_reattach_);
  }
  state_changes_.fetch_add(1);
  if (r == CUPTI_SUCCESS) generation_.fetch_add(1);
  if (r != CUPTI_SUCCESS) {
    warn("cannot attach CUPTI again after a capture window (%s: %s); later windows are not traced", step,
         cupti_error(r).c_str());
    std::lock_guard enable(enable_mutex_);
    problems_.add(trace::Problem::kCuptiError);
    window_done_ = true;
  }
}

// Subscribes and sets up what stays on while CUPTI is attached: buffers,
// flush period, device and context records, NVTX payload copies and the
// callbacks that open capture windows. The activity kinds come with windows.
CUptiResult Collector::attach_cupti(const char** failed_step, bool lean) {
  CUptiResult r = cuptiSubscribe(&subscriber_, reinterpret_cast<CUpti_CallbackFunc>(on_cupti_callback), nullptr);
  if (r != CUPTI_SUCCESS) {
    *failed_step = "subscribe";
    return r;
  }
  if (!lean) {
    r = set_up_activity();
    if (r != CUPTI_SUCCESS) {
      *failed_step = "buffers";
      cuptiUnsubscribe(subscriber_);
      return r;
    }
  } else {
    activity_ready_ = false;
  }
  if (options_.api == ApiMode::kDefault && runtime_cbids_.empty()) select_default_apis();
  enable_trigger_callbacks();
  attached_.store(true);
  return CUPTI_SUCCESS;
}

CUptiResult Collector::set_up_activity() {
  CUptiResult r = cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  if (r != CUPTI_SUCCESS) return r;
  // CUPTI's worker hands over partly filled buffers every second, so a
  // SIGKILL loses about the last second.
  cuptiActivityFlushPeriod(static_cast<uint32_t>(kFlushPeriod.count()));
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  // NVTX extended payloads (NCCL's bytes per call) come only with MARKER
  // records, so this follows the nvtx activity and its windows. Not when
  // discarding: the decoder frees CUPTI's payload copies.
  if (!options_.discard) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  // No SYNCHRONIZATION records for cudaEventQuery/cudaStreamQuery calls that
  // find the work not yet complete: PyTorch's allocator and the NCCL watchdog
  // poll events all the time, such a query waits for nothing, and the decoder
  // has no sync kind for queries anyway. Syncs that wait are all still kept.
  if (options_.activities & kActivitySync) cuptiActivityEnableAllSyncRecords(0);
  activity_ready_ = true;
  return CUPTI_SUCCESS;
}

bool Collector::start() {
  init_time_ = std::chrono::steady_clock::now();
  meta_.source = "collector";
  meta_.producer_version = std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")";
  Environment env = current_environment();
  fill_host_facts(meta_, env);
  const NodeInfo node = detect_node(env);
  add_node_facts(meta_, node);
  if (test_clock_offset_ns() != 0) meta_.extra["test_clock_offset_ns"] = std::to_string(test_clock_offset_ns());
  meta_.clock.push_back({cupti_now(), unix_now_ns()});
  meta_.extra["api"] = std::string(to_string(options_.api));
  api_callbacks_ = options_.api == ApiMode::kDefault && options_.api_records == ApiRecords::kCallbacks;
  if (options_.api == ApiMode::kDefault) meta_.extra["api_records"] = std::string(to_string(options_.api_records));
  meta_.extra["capture_range"] = format_capture_range(options_);
  meta_.extra["delay_s"] = std::to_string(options_.delay_s);
  meta_.extra["duration_s"] = std::to_string(options_.duration_s);
  meta_.extra["buffer_mb"] = std::to_string(options_.buffer_mb);
  if (options_.discard) meta_.extra["discard"] = "1";
  meta_.extra["activities"] = format_activities(options_.activities);
  meta_.extra["detach"] = options_.detach ? "1" : "0";
  sampling_ = options_.sampled();
  if (const char* v = std::getenv("SCALESCOPE_LEAN_REATTACH")) lean_reattach_ = std::strcmp(v, "1") == 0;
  if (lean_reattach_) meta_.extra["lean_reattach"] = "1";
  schedule_ = SampleSchedule{options_.skip_iterations, options_.iterations, options_.repeat_every};
  if (sampling_) {
    // Traced as today until the first iteration marker: a job without any is traced whole.
    std::lock_guard lock(iteration_mutex_);
    pre_loop_window_ = true;
  }

  std::string stem = meta_.hostname + "-" + std::to_string(meta_.pid);
  trace_path_ = std::filesystem::path(options_.run_dir) / (stem + std::string(trace::kTraceFileExtension));
  sidecar_path_ = std::filesystem::path(options_.run_dir) / (stem + ".json");
  nvml_owner_path_ = std::filesystem::path(options_.run_dir) / ("nvml-" + meta_.hostname + ".rank");
  // The node's facts once per node (local rank 0 writes them; a process
  // without a local rank only when no file is there yet).
  std::error_code node_ec;
  if (meta_.local_rank == 0 ||
      (meta_.local_rank < 0 && !std::filesystem::exists(std::filesystem::path(options_.run_dir) /
                                                            ("node-" + meta_.hostname + ".json"), node_ec)))
    write_node_facts(options_.run_dir, node);
  std::string error;
  if (!options_.discard) {
    sink_ = TraceSink::open(trace_path_, meta_, [](const std::string& line) { warn("%s", line.c_str()); }, &error);
    if (!sink_) {
      warn("cannot write trace %s (%s); the job runs untraced", trace_path_.c_str(), error.c_str());
      return false;
    }
  }

  size_t count = std::max<size_t>(2, (size_t{options_.buffer_mb} << 20) / kBufferBytes);
  pool_ = std::make_unique<BufferPool>(kBufferBytes, count);
  // NCCL's NVTX payloads are decoded by the schemas NCCL registered, which
  // CUPTI keeps (it is the NVTX extension's handler: InitializeInjectionNvtxExtension).
  using PayloadAttrFn = CUptiResult (*)(uint32_t, uint64_t, CUpti_NvtxExtPayloadAttr*);
  auto payload_attr = reinterpret_cast<PayloadAttrFn>(cupti_symbol("cuptiActivityGetNvtxExtPayloadAttr"));
  NvtxPayloadAttrResolver payloads;
  if (payload_attr)
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
  const char* step = "";
  CUptiResult r = attach_cupti(&step);
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      warn("another profiler (nsys, torch.profiler, ...) already uses CUPTI in pid %u; the job runs untraced", meta_.pid);
    else if (std::strcmp(step, "buffers") == 0)
      warn("cannot register CUPTI buffers (%s); the job runs untraced", cupti_error(r).c_str());
    else
      warn("cannot start CUPTI (%s); the job runs untraced", cupti_error(r).c_str());
    write_sidecar("untraced: " + cupti_error(r));
    if (sink_) sink_->finish(meta_, problems_);
    return false;
  }
  if (options_.capture == CaptureRange::kNone && options_.delay_s <= 0) {
    enable_tracing();
  }

  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old{};
    // Only where the job has no handler of its own (Python handles SIGINT).
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
      struct sigaction sa{};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(sig, &sa, nullptr);
    }
  }
  last_flush_ = std::chrono::steady_clock::now();
  encoder_ = std::thread([this] { encoder_loop(); });
  return true;
}

// The PCI bus id of every CUDA ordinal of this process (after
// CUDA_VISIBLE_DEVICES), from the driver the job already loaded; false while
// cuInit has not finished, or without a driver.
bool cuda_bus_ids(std::vector<std::string>& out) {
  out.clear();
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return false;
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using BusIdFn = int (*)(char*, int, int);
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(cuda, "cuDeviceGet"));
  auto bus_id = reinterpret_cast<BusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  int n = 0;
  bool ok = count && get && bus_id && count(&n) == 0 && n > 0;
  for (int i = 0; ok && i < n; ++i) {
    int device = 0;
    char bus[64] = {};
    ok = get(&device, i) == 0 && bus_id(bus, sizeof(bus), device) == 0;
    if (ok) out.emplace_back(bus);
  }
  dlclose(cuda);
  return ok;
}

// Counters carry CUDA ordinals, like kernels: NVML's order (PCI order over
// the machine) is matched to this process's CUDA devices by bus id. Until the
// driver answers, samples wait in the sampler (bounded); after kNvmlMapWait,
// or at the end, NVML's order is kept and the metadata says so.
void Collector::map_nvml_devices(bool last_chance) {
  if (!nvml_ || nvml_->has_device_map()) return;
  std::vector<std::string> cuda;
  std::vector<int32_t> map;
  std::string text;
  if (cuda_bus_ids(cuda)) {
    map = map_nvml_to_cuda(nvml_->bus_ids(), cuda);
    for (size_t i = 0; i < map.size(); ++i) text += (i ? "," : "") + std::to_string(map[i]);
  } else if (last_chance || std::chrono::steady_clock::now() - nvml_start_ >= kNvmlMapWait) {
    for (size_t i = 0; i < nvml_->device_count(); ++i) map.push_back(static_cast<int32_t>(i));
    text = "unknown: NVML order kept";
  } else {
    return;
  }
  {
    std::lock_guard lock(enable_mutex_);
    meta_.extra["nvml_cuda_ordinals"] = text;  // per NVML index: the CUDA ordinal, -1 = not visible here
  }
  nvml_->set_device_map(std::move(map));
}

// One sampler per node: a process without a rank (the torchrun agent, which
// loads CUDA and so is traced, or a plain single-process job) samples from
// its start, and stops once a ranked local rank 0 on the same host says it
// samples. Measured without this: the agent's sampler cost 5.7 CPU-s in a
// 58 s job, and its counters are left out with the agent anyway.
void Collector::hand_over_nvml() {
  if (!nvml_ || nvml_handed_over_ || meta_.rank >= 0) return;
  std::error_code ec;
  if (!std::filesystem::exists(nvml_owner_path_, ec)) return;
  nvml_->stop();
  nvml_handed_over_ = true;
  std::lock_guard lock(enable_mutex_);
  meta_.extra["nvml_handed_over"] = "1";
}

void Collector::flush_batch() {
  hand_over_nvml();
  if (nvml_) {
    map_nvml_devices(stop_.load());
    if (nvml_->has_device_map()) {
      std::vector<trace::CounterRecord> counters;
      nvml_->drain(counters);
      for (const auto& c : counters) batch_.counters.push(c);
    }
  }
  if (host_) host_->drain(batch_, strings_);
  decoder_->drain_nccl(batch_, stop_.load());  // NCCL rows whose call is joined, or that waited enough
  if (sink_) sink_->append(batch_, strings_);
  batch_ = trace::Trace();  // fresh columns; the string table lives on in strings_
  last_flush_ = std::chrono::steady_clock::now();
}

void Collector::start_nvml() {
  // One NVML sampler per node: local rank 0, or the only process. Started
  // here, not inside cuInit, so that NVML's own initialisation never runs
  // under the CUDA driver's init.
  if (options_.nvml_hz <= 0 || meta_.local_rank > 0) return;
  NvmlApi api;
  std::string nvml_error;
  if (api.load("libnvidia-ml.so.1", &nvml_error)) nvml_ = NvmlSampler::create(api, cupti_now, &nvml_error);
  std::lock_guard lock(enable_mutex_);
  if (nvml_) {
    nvml_start_ = std::chrono::steady_clock::now();
    nvml_->start(options_.nvml_hz);
    if (meta_.rank >= 0) std::ofstream(nvml_owner_path_) << meta_.pid << '\n';  // see hand_over_nvml()
    meta_.extra["nvml_hz"] = std::to_string(options_.nvml_hz);
    meta_.extra["nvml_devices"] = std::to_string(nvml_->device_count());
  } else {
    problems_.add(trace::Problem::kNvmlUnavailable);
    meta_.extra["nvml"] = nvml_error;
  }
}

// Every traced process samples its own threads and its descendants'
// (DataLoader workers), except descendants with their own collector (the
// ranks under a traced torchrun agent): those have a trace file in the run
// directory.
void Collector::start_host_sampler() {
  if (options_.host_hz <= 0) return;
  HostSamplerOptions o;
  o.pid = meta_.pid;
  o.stack_hz = options_.host_stacks ? options_.host_hz : 0;
  const std::filesystem::path dir = options_.run_dir;
  const std::string host = meta_.hostname;
  o.traced_elsewhere = [dir, host](uint32_t pid) {
    std::error_code ec;
    return std::filesystem::exists(dir / (host + "-" + std::to_string(pid) + std::string(trace::kTraceFileExtension)),
                                   ec);
  };
  std::string error;
  auto sampler = HostSampler::create(std::move(o), cupti_now, &error);
  std::lock_guard lock(enable_mutex_);
  if (!sampler) {
    meta_.extra["host_sampling"] = "off: " + error;
    return;
  }
  host_ = std::move(sampler);
  host_->start(options_.host_hz);
  meta_.extra["host_sampling_method"] = std::string(host_->method());
  meta_.extra["host_sampling_discovery"] = std::string(host_->discovery());
  meta_.extra["host_stack_sampling"] = options_.host_stacks ? host_->stack_method() : "off: SCALESCOPE_HOST_STACKS=0";
  char hz[32];
  std::snprintf(hz, sizeof hz, "%g", options_.host_hz);
  meta_.extra["host_hz"] = hz;
}

void Collector::encoder_loop() {
  start_nvml();
  start_host_sampler();
  std::vector<BufferPool::Filled> filled;
  while (true) {
    bool stopping = stop_.load();
    uint64_t drain_asked = 0;
    {
      std::lock_guard lock(drain_mutex_);
      drain_asked = drain_asked_;
    }
    filled.clear();
    pool_->take_filled(filled, std::chrono::milliseconds(100));
    decode_filled(filled);
    if (drain_asked > 0) {
      std::unique_lock lock(drain_mutex_);
      if (drain_done_ < drain_asked) {
        lock.unlock();
        // Everything flushed before the ask is queued by now: decode it all
        // before the detaching thread calls cuptiFinalize.
        filled.clear();
        pool_->take_filled(filled, std::chrono::milliseconds(0));
        decode_filled(filled);
        lock.lock();
        drain_done_ = drain_asked;
        drain_cv_.notify_all();
      }
    }
    if (reattach_requested_.exchange(false)) reattach_cupti();
    bool request_detach = false;
    {
      std::lock_guard lock(enable_mutex_);
      if (close_pending_ && !tracing_ && std::chrono::steady_clock::now() - closed_at_ >= close_grace_) {
        close_pending_ = false;
        request_detach = attached_.load();
      }
    }
    if (request_detach) {
      // At the closing thread's next API exit (CUPTI's advice for cuptiFinalize).
      // The flag goes up last: the detach it allows must not overtake these calls.
      cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
      detach_requested_.store(true);
    }
    auto now = std::chrono::steady_clock::now();
    if (!stopping) {
      double since_init = std::chrono::duration<double>(now - init_time_).count();
      if (options_.capture == CaptureRange::kNone && options_.delay_s > 0 && since_init >= options_.delay_s)
        enable_tracing();
      bool over = false;
      {
        std::lock_guard lock(enable_mutex_);
        over = tracing_ && options_.duration_s > 0 &&
               std::chrono::duration<double>(now - window_start_).count() >= options_.duration_s;
      }
      if (over) {
        disable_tracing();
        {
          std::lock_guard lock(enable_mutex_);
          window_done_ = true;
        }
        if (options_.detach && attached_.load()) {
          // cuptiFinalize belongs at an API exit: the next one on any thread detaches.
          detach_on_any_thread_.store(true);
          cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
          cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
          detach_requested_.store(true);  // last: the detach must not overtake the calls above
        } else {
          cuptiActivityFlushAll(0);
        }
      }
    }
    if (now - last_flush_ >= kFlushPeriod || batch_.event_count() >= kMaxBatchRows || stopping) flush_batch();
    encoder_cpu_ns_.store(thread_cpu_ns());
    if (stopping) break;
    if (int sig = g_pending_signal.exchange(0)) {
      // finish() from this thread, then die of the signal as the job would have.
      std::thread([this, sig] {
        finish("signal");
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
      }).detach();
    }
  }
  std::lock_guard lock(done_mutex_);
  encoder_done_ = true;
  done_cv_.notify_all();
}

// The API calls timed in callbacks so far. A call of a newer attach than the
// decoder's numbering starts the decoder's new generation (if no buffer of it
// has yet): correlation ids start over with each attach.
void Collector::decode_api_calls() {
  api_calls_.clear();
  api_log_.drain(api_calls_);
  for (const auto& c : api_calls_) {
    if (c.generation != decoded_generation_) {
      if (generation_pending_.exchange(false)) decoder_->new_generation();
      decoded_generation_ = c.generation;
    }
    if (options_.discard)
      ++api_calls_discarded_;
    else
      decoder_->decode_api_call(c.call, batch_);
  }
}

void Collector::decode_filled(std::vector<BufferPool::Filled>& filled) {
  if (api_callbacks_) decode_api_calls();
  if (!filled.empty() && generation_pending_.exchange(false)) {
    decoder_->new_generation();
    decoded_generation_ = generation_.load();
  }
  for (const auto& f : filled) {
    if (options_.discard) {
      ++records_discarded_;  // counts buffers: the floor measurement keeps nothing
    } else {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(f.data, f.valid_bytes, &record) == CUPTI_SUCCESS) decoder_->decode(record, batch_);
    }
    pool_->release(f.data);
  }
  filled.clear();
}

void Collector::finish(const char* why) {
  if (finished_.exchange(true)) return;
  disable_tracing();
  // Detached: nothing is left in CUPTI, and a CUPTI call would attach it again.
  if (attached_.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  stop_.store(true);
  pool_->wake();
  {
    std::unique_lock lock(done_mutex_);
    if (!done_cv_.wait_for(lock, kExitWait, [this] { return encoder_done_; })) {
      warn("trace writer did not finish within %d s at %s; %s may miss its last second", int(kExitWait.count()), why,
           trace_path_.c_str());
      encoder_.detach();
      return;
    }
  }
  encoder_.join();
  if (nvml_) nvml_->stop();  // assigned by the encoder thread: stable only now
  if (host_) host_->stop();  // writes every live thread's last row
  if (nvml_ || host_) flush_batch();  // the last samples
  meta_.clock.push_back({cupti_now(), unix_now_ns()});
  if (auto maps = read_text_file("/proc/self/numa_maps"))
    meta_.pages_at_end = parse_numa_maps(*maps, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  meta_.devices = decoder_->devices();
  // PCI bus ids come from the driver the job already loaded (no new CUDA init).
  if (void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    using BusIdFn = int (*)(char*, int, int);
    if (auto fn = reinterpret_cast<BusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId")))
      for (auto& d : meta_.devices) {
        char bus[64] = {};
        if (fn(bus, sizeof(bus), static_cast<int>(d.id)) == 0) {
          d.pci_bus_id = normalize_pci_bus_id(bus);
          d.numa_node = read_pci_numa_node(d.pci_bus_id);
        }
      }
    dlclose(cuda);
  }
  if (cupti_dropped_.load() > 0) problems_.add(trace::Problem::kDroppedRecords, cupti_dropped_.load());
  if (api_log_.dropped() > 0) problems_.add(trace::Problem::kDroppedRecords, api_log_.dropped());
  const auto& nccl = decoder_->nccl_join().stats();
  meta_.extra["nccl_kernels_joined"] = std::to_string(nccl.joined);
  meta_.extra["nccl_kernels_unjoined"] = std::to_string(nccl.unjoined);
  meta_.extra["nccl_calls_dropped"] = std::to_string(nccl.ranges_dropped);
  meta_.extra["nccl_payloads_undecoded"] = std::to_string(decoder_->undecoded_payloads());
  if (decoder_->incomplete_records() > 0)
    problems_.add(trace::Problem::kIncompleteRecord, decoder_->incomplete_records());
  if (decoder_->unmatched_range_ends() > 0)
    problems_.add(trace::Problem::kMalformedEvent, decoder_->unmatched_range_ends());
  uint64_t cpu = encoder_cpu_ns_.load() + (nvml_ ? nvml_->thread_cpu_ns() : 0) + (host_ ? host_->thread_cpu_ns() : 0);
  meta_.extra["collector_cpu_ns"] = std::to_string(cpu);
  if (host_) {
    meta_.extra["host_sampler_cpu_ns"] = std::to_string(host_->thread_cpu_ns());
    meta_.extra["host_samples_taken"] = std::to_string(host_->samples_taken());
    meta_.extra["host_threads_seen"] = std::to_string(host_->threads_seen());
    meta_.extra["host_processes_seen"] = std::to_string(host_->processes_seen());
    if (host_->samples_dropped() > 0) meta_.extra["host_samples_dropped"] = std::to_string(host_->samples_dropped());
    if (host_->stacks()) {
      meta_.extra["host_stack_samples"] = std::to_string(host_->stack_samples());
      meta_.extra["host_stack_samples_lost"] = std::to_string(host_->stack_samples_lost());
      meta_.extra["host_stack_threads_refused"] = std::to_string(host_->stack_threads_refused());
      meta_.extra["host_stack_modules_cpu_ns"] = std::to_string(host_->stack_modules_ns());
    }
  }
  if (nvml_) {
    meta_.extra["nvml_samples_unmapped"] = std::to_string(nvml_->unmapped_samples());
    meta_.extra["nvml_cpu_ns"] = std::to_string(nvml_->thread_cpu_ns());
    for (size_t q = 0; q < static_cast<size_t>(NvmlQuery::kCount); ++q)
      meta_.extra[std::string("nvml_cpu_ns_") + nvml_query_name(NvmlQuery(q))] =
          std::to_string(nvml_->query_cpu_ns(NvmlQuery(q)));
  }
  meta_.extra["cupti_dropped_records"] = std::to_string(cupti_dropped_.load());
  meta_.extra["buffer_pool_exhausted"] = std::to_string(pool_->acquire_failures());
  {
    std::lock_guard lock(enable_mutex_);
    meta_.extra["windows_opened"] = std::to_string(windows_opened_);
    if (stops_without_window_ > 0) meta_.extra["capture_stops_without_window"] = std::to_string(stops_without_window_);
  }
  meta_.extra["cupti_detaches"] = std::to_string(detaches_.load());
  write_sampling_metadata();
  if (detach_failures_.load() > 0) meta_.extra["cupti_detach_failures"] = std::to_string(detach_failures_.load());
  if (decoder_->ranges_cut_by_detach() > 0)
    meta_.extra["nvtx_ranges_cut_by_detach"] = std::to_string(decoder_->ranges_cut_by_detach());
  if (sink_) sink_->finish(meta_, problems_);
  write_sidecar(sink_ && sink_->events_lost() > 0 ? "write errors" : "ok");
}

void Collector::write_sidecar(const std::string& status) {
  // What `scalescope profile` summarises in run.json without reading traces.
  nlohmann::json j;
  j["pid"] = meta_.pid;
  j["hostname"] = meta_.hostname;
  j["rank"] = meta_.rank;
  j["local_rank"] = meta_.local_rank;
  j["world_size"] = meta_.world_size;
  j["launcher"] = meta_.launcher;
  j["command_line"] = meta_.command_line;
  j["status"] = status;
  j["trace_file"] = sink_ ? trace_path_.filename().string() : "";
  j["events_written"] = sink_ ? sink_->events_written() : 0;
  j["events_lost_on_write"] = sink_ ? sink_->events_lost() : 0;
  j["cupti_dropped_records"] = cupti_dropped_.load();
  j["cupti_incomplete_records"] = decoder_ ? decoder_->incomplete_records() : 0;
  j["buffer_pool_exhausted"] = pool_ ? pool_->acquire_failures() : 0;
  j["buffers_discarded"] = records_discarded_;
  j["bytes_written"] = sink_ ? sink_->bytes_written() : 0;
  j["collector_cpu_ns"] = encoder_cpu_ns_.load() + (nvml_ ? nvml_->thread_cpu_ns() : 0) + (host_ ? host_->thread_cpu_ns() : 0);
  j["host_sampler_cpu_ns"] = host_ ? host_->thread_cpu_ns() : 0;  // of collector_cpu_ns
  j["nvml"] = nvml_ != nullptr;
  j["nvml_cpu_ns"] = nvml_ ? nvml_->thread_cpu_ns() : 0;  // of collector_cpu_ns
  if (nvml_) {  // of nvml_cpu_ns, per query family: which counter costs what
    nlohmann::json by_query;
    for (size_t q = 0; q < static_cast<size_t>(NvmlQuery::kCount); ++q)
      by_query[nvml_query_name(NvmlQuery(q))] = nvml_->query_cpu_ns(NvmlQuery(q));
    j["nvml_query_cpu_ns"] = std::move(by_query);
  }
  j["devices"] = meta_.devices.size();
  j["activities"] = format_activities(options_.activities);
  {
    std::lock_guard lock(enable_mutex_);
    j["windows_opened"] = windows_opened_;
  }
  j["cupti_detaches"] = detaches_.load();
  j["sampling"] = sampling_json_.is_null() ? sampling_summary() : sampling_json_;
  std::error_code ec;
  auto tmp = sidecar_path_;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(1) << '\n';
    if (!out) return;  // no space: the trace itself still has everything
  }
  std::filesystem::rename(tmp, sidecar_path_, ec);
}

}  // namespace
}  // namespace scalescope::collect

// CUDA calls this once per process during cuInit (CUDA_INJECTION64_PATH).
SCALESCOPE_EXPORT int InitializeInjection(void) {
  using namespace scalescope::collect;
  static std::atomic<bool> initialised{false};
  if (g_in_child.load() || initialised.exchange(true)) return 1;
  try {
    CollectorOptions options = parse_collector_options(current_environment());
    if (options.run_dir.empty()) {
      warn("SCALESCOPE_RUN_DIR is not set (run the job under `scalescope profile`); the job runs untraced");
      return 1;
    }
    auto* collector = new Collector(std::move(options));  // lives until exit: callbacks may come late
    g_collector = collector;
    if (!collector->start()) {
      // Nothing was registered with CUPTI (or it was unsubscribed): safe to free.
      g_collector = nullptr;
      delete collector;
      return 1;
    }
    std::atexit(on_exit);
  } catch (const scalescope::Error& e) {
    warn("%s; the job runs untraced", e.what());
    g_collector = nullptr;
  } catch (const std::exception& e) {
    warn("collector failed to start (%s); the job runs untraced", e.what());
    g_collector = nullptr;
  }
  return 1;
}

// NVTX calls this when NVTX_INJECTION64_PATH names this library: hand NVTX to
// CUPTI's own implementation, which turns ranges into MARKER records and
// NVTX callbacks (used for --capture-range nvtx:NAME).
SCALESCOPE_EXPORT int InitializeInjectionNvtx2(const void* get_export_table) {
  if (scalescope::collect::g_in_child.load()) return 0;
  void* cupti = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (!cupti) cupti = dlopen("libcupti.so", RTLD_LAZY | RTLD_NOLOAD);
  if (!cupti) return 0;
  using Init = int (*)(const void*);
  auto init = reinterpret_cast<Init>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return init ? init(get_export_table) : 0;
}

// NVTX calls this for each extension module (payloads, counters, ...) when
// NVTX_INJECTION64_PATH names this library: CUPTI handles them. For the
// payload extension that means nvtxPayloadSchemaRegister reaches CUPTI, which
// then copies NCCL's payloads into MARKER_DATA records and hands out the
// schemas (cuptiActivityGetNvtxExtPayloadAttr).
SCALESCOPE_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  using namespace scalescope::collect;
  if (g_in_child.load()) return 0;
  using Init = CUptiResult (*)(void*);
  if (auto init = reinterpret_cast<Init>(cupti_symbol("cuptiNvtxExtensionInitialize")))
    return init(module_info) == CUPTI_SUCCESS ? 1 : 0;
  using Inject = int (*)(void*);
  auto inject = reinterpret_cast<Inject>(cupti_symbol("InitializeInjectionNvtxExtension"));
  return inject ? inject(module_info) : 0;
}
