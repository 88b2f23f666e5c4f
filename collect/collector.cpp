// libscalescope-collector.so: loaded into every CUDA process through
// CUDA_INJECTION64_PATH (and NVTX_INJECTION64_PATH). CUPTI fills buffers from
// a fixed pool; one encoder thread decodes them into columnar batches and
// appends them about once a second to <run dir>/<host>-<pid>.sstrace.
//
// It must never harm the job: every failure is one warning line on stderr and
// the job runs on untraced; a forked child makes no CUDA or CUPTI call; exit
// waits are bounded.
//
// The Collector is a composition of three pieces, each with its own locks
// (documented in its header): the capture window (capture_window.hpp: when
// tracing is on, iteration markers, sampled windows, CUPTI attached and
// detached), the encoder (trace_encoder.hpp: CUPTI records -> trace chunks)
// and the sidecar (sidecar.hpp: facts, samplers, the run.json sidecar). It
// owns the encoder thread, which drives all three, and the exit path. Its
// own lock, done_mutex_, only says that the encoder thread has stopped.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include <cupti.h>

#include "collect/capture_window.hpp"
#include "collect/collector_common.hpp"
#include "collect/collector_options.hpp"
#include "collect/nvtx_hooks.hpp"
#include "collect/sampler_common.hpp"
#include "collect/host_facts.hpp"
#include "collect/sidecar.hpp"
#include "collect/trace_encoder.hpp"
#include "base/error.hpp"

#define SCALESCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace scalescope::collect {
namespace {

constexpr auto kExitWait = std::chrono::seconds(10);

std::atomic<int> g_pending_signal{0};

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid);
void CUPTIAPI on_cupti_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

class Collector {
 public:
  explicit Collector(CollectorOptions options)
      : options_(std::move(options)),
        window_(options_, encoder_,
                CuptiHooks{reinterpret_cast<CUpti_CallbackFunc>(on_cupti_callback), on_buffer_requested,
                           on_buffer_completed}),
        sidecar_(options_) {}
  bool start();
  void finish(const char* why);  // flush, write, close; bounded
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
    window_.on_callback(domain, cbid, data);
  }
  TraceEncoder& encoder() { return encoder_; }
  int step_mark(uint64_t step) { return window_.on_step_mark(step); }

 private:
  void encoder_loop();
  void flush_batch() {
    encoder_.flush([this](trace::Trace& batch,
                          trace::StringTable& strings) { sidecar_.add_rows(batch, strings, encoder_.stopping()); },
                   encoder_.stopping());
  }

  const CollectorOptions options_;
  TraceEncoder encoder_;
  CaptureWindow window_;
  Sidecar sidecar_;
  std::filesystem::path trace_path_;
  std::atomic<uint64_t> encoder_cpu_ns_{0};
  std::thread encoder_thread_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool encoder_done_ = false;  // under done_mutex_
  std::atomic<bool> finished_{false};
};

Collector* g_collector = nullptr;

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  if (g_in_child.load() || !g_collector) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  g_collector->encoder().buffer_requested(buffer, size);
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (g_in_child.load() || !g_collector || !buffer) return;
  g_collector->encoder().buffer_completed(ctx, stream, buffer, valid);
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

bool Collector::start() {
  trace_path_ = sidecar_.describe();
  window_.configure(sidecar_.meta());
  std::string error;
  if (!encoder_.open(options_, sidecar_.meta(), trace_path_, &error)) {
    warn("cannot write trace %s (%s); the job runs untraced", trace_path_.c_str(), error.c_str());
    return false;
  }
  const char* step = "";
  CUptiResult r = window_.attach(&step);
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      warn("another profiler (nsys, torch.profiler, ...) already uses CUPTI in pid %u; the job runs untraced",
           sidecar_.meta().pid);
    else if (std::strcmp(step, "buffers") == 0)
      warn("cannot register CUPTI buffers (%s); the job runs untraced", cupti_error(r).c_str());
    else warn("cannot start CUPTI (%s); the job runs untraced", cupti_error(r).c_str());
    sidecar_.write("untraced: " + cupti_error(r), encoder_, window_, encoder_cpu_ns_.load());
    encoder_.finish_file(sidecar_.meta(), sidecar_.problems());
    return false;
  }
  if (options_.capture == CaptureRange::kNone && options_.delay_s <= 0) {
    window_.enable_tracing();
  }

  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old {};
    // Only where the job has no handler of its own (Python handles SIGINT).
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(sig, &sa, nullptr);
    }
  }
  encoder_thread_ = std::thread([this] { encoder_loop(); });
  return true;
}

void Collector::encoder_loop() {
  sidecar_.start_samplers();
  while (true) {
    const bool stopping = encoder_.stopping();
    encoder_.decode_ready(std::chrono::milliseconds(100));
    window_.poll(stopping);
    if (encoder_.flush_due(stopping)) flush_batch();
    encoder_cpu_ns_.store(thread_cpu_now());
    if (stopping) break;
    if (int sig = g_pending_signal.exchange(0)) {
      // A launcher's timeout ends a hung job with SIGTERM: the ring goes to
      // the run directory first (here, not in the handler: file I/O is not
      // async-signal-safe).
      if (sig == SIGTERM) window_.write_hang_dump("sigterm");
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

void Collector::finish(const char* why) {
  if (finished_.exchange(true)) return;
  window_.disable_tracing();
  // Detached: nothing is left in CUPTI, and a CUPTI call would attach it again.
  if (window_.attached()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  encoder_.request_stop();
  {
    std::unique_lock lock(done_mutex_);
    if (!done_cv_.wait_for(lock, kExitWait, [this] { return encoder_done_; })) {
      warn("trace writer did not finish within %d s at %s; %s may miss its last second", int(kExitWait.count()), why,
           trace_path_.c_str());
      encoder_thread_.detach();
      return;
    }
  }
  encoder_thread_.join();
  sidecar_.stop_samplers();                    // writes every live thread's last row
  if (sidecar_.has_samplers()) flush_batch();  // the last samples
  trace::Metadata& meta = sidecar_.meta();
  encoder_.add_end_facts(meta, sidecar_.problems());  // first: the devices
  sidecar_.add_end_facts(encoder_cpu_ns_.load());
  window_.add_end_facts(meta, sidecar_.problems());
  encoder_.finish_file(meta, sidecar_.problems());
  const TraceSink* sink = encoder_.sink();
  sidecar_.write(sink && sink->events_lost() > 0 ? "write errors" : "ok", encoder_, window_, encoder_cpu_ns_.load());
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

// The Python bootstrap (collect/python/) calls this through ctypes after
// every optimizer step: the end of one training step and the start of the
// next, numbered by the bootstrap. Returns 1 when a window is open after the
// mark (the bootstrap then records operator and module ranges), 0 when not,
// -1 when this process is not traced. Costs two clock reads and a few locks
// outside windows.
SCALESCOPE_EXPORT int scalescope_step_mark(uint64_t step) {
  using namespace scalescope::collect;
  if (g_in_child.load() || !g_collector) return -1;
  try {
    return g_collector->step_mark(step);
  } catch (...) {
    return -1;
  }
}

// NVTX calls this when NVTX_INJECTION64_PATH names this library: hand NVTX to
// CUPTI's own implementation, which turns ranges into MARKER records and
// NVTX callbacks (used for --capture-range nvtx:NAME and iteration markers),
// or with SCALESCOPE_NVTX_RECORDS=hooks take it with the collector's own
// hooks (nvtx_hooks.hpp), which do both without CUPTI.
SCALESCOPE_EXPORT int InitializeInjectionNvtx2(const void* get_export_table) {
  if (scalescope::collect::g_in_child.load()) return 0;
  if (scalescope::collect::nvtx_records_by_hooks())
    return scalescope::collect::NvtxHooks::instance().install(get_export_table) ? 1 : 0;
  using Init = int (*)(const void*);
  auto init = reinterpret_cast<Init>(scalescope::collect::cupti_symbol("InitializeInjectionNvtx2"));
  return init ? init(get_export_table) : 0;
}

// NVTX calls this for each extension module (payloads, counters, ...) when
// NVTX_INJECTION64_PATH names this library: CUPTI handles them. For the
// payload extension that means nvtxPayloadSchemaRegister reaches CUPTI, which
// then copies NCCL's payloads into MARKER_DATA records and hands out the
// schemas (cuptiActivityGetNvtxExtPayloadAttr). With SCALESCOPE_NVTX_RECORDS=hooks
// the collector's hooks keep the payload schemas and enums; other extensions
// (counters, memory) are then off.
SCALESCOPE_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  using namespace scalescope::collect;
  if (g_in_child.load()) return 0;
  if (nvtx_records_by_hooks()) return NvtxHooks::instance().install_extension(module_info) ? 1 : 0;
  using Init = CUptiResult (*)(void*);
  if (auto init = reinterpret_cast<Init>(cupti_symbol("cuptiNvtxExtensionInitialize")))
    return init(module_info) == CUPTI_SUCCESS ? 1 : 0;
  using Inject = int (*)(void*);
  auto inject = reinterpret_cast<Inject>(cupti_symbol("InitializeInjectionNvtxExtension"));
  return inject ? inject(module_info) : 0;
}
