// The collector's capture window: when tracing is on and off. Capture ranges
// (--capture-range nvtx:NAME or cudaProfilerApi), --delay/--duration, the
// sampled windows by iteration (NVTX ProfilerStep#N or cudaProfilerStart/Stop
// as markers, every iteration timed for the self-measured perturbation), and
// CUPTI attached, detached between windows and attached again. One piece of
// libscalescope-collector.so (collector.cpp composes it with the encoder and
// the sidecar).
//
// Threads and locks: on_callback runs on the job's threads (CUPTI's
// callbacks), poll on the encoder thread, enable/disable_tracing on either
// and at exit. Three locks, always taken in this order:
// - detach_mutex_: one detach or attach at a time (held across cuptiFinalize,
//   the encoder's drain and cuptiSubscribe);
// - enable_mutex_: the window's state (tracing_, window_done_, the pending
//   close, counters of windows) and every CUPTI enable/disable call;
// - iteration_mutex_: the iterations seen and their times; never held while
//   taking enable_mutex_.
#pragma once

#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <cupti.h>
#include <nlohmann/json.hpp>

#include "collect/collector_options.hpp"
#include "collect/iteration_sampler.hpp"
#include "collect/nvtx_hooks.hpp"
#include "collect/run_control.hpp"
#include "collect/trace_encoder.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

// The C entry points CUPTI calls (collector.cpp routes them to the pieces).
struct CuptiHooks {
  CUpti_CallbackFunc callback = nullptr;
  CUpti_BuffersCallbackRequestFunc buffer_requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc buffer_completed = nullptr;
};

class CaptureWindow final : public NvtxListener {
 public:
  static constexpr auto kDetachGrace = std::chrono::milliseconds(500);

  CaptureWindow(const CollectorOptions& options, TraceEncoder& encoder, CuptiHooks hooks)
      : options_(options), encoder_(encoder), hooks_(hooks) {}

  // Before the first attach: the schedule and the modes fixed for the run
  // (their facts go into meta).
  void configure(trace::Metadata& meta);
  // Subscribes and sets up what stays on while CUPTI is attached; the step
  // that failed is named in failed_step.
  CUptiResult attach(const char** failed_step) { return attach_cupti(failed_step); }
  bool attached() const { return attached_.load(); }

  void enable_tracing();
  void disable_tracing();

  // Every CUPTI callback (the job's threads).
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  // Every NVTX range push, pop, start and end (CUPTI's NVTX callbacks, or
  // the collector's own hooks with SCALESCOPE_NVTX_RECORDS=hooks).
  void on_nvtx(NvtxOp op, const char* text, uint64_t id) override;
  // NVTX ranges and marks come from the collector's own hooks, not CUPTI.
  bool nvtx_hooks() const { return nvtx_hooks_; }
  // A step mark from the Python bootstrap (scalescope_step_mark, the job's
  // thread that stepped the optimizer): ends the iteration open and begins
  // the next, numbered `step`. Returns 1 when a window is open afterwards.
  int on_step_mark(uint64_t step);
  // The encoder thread, about every 100 ms: attach again after a detach, ask
  // for a detach once a closed window stays closed, --delay and --duration.
  void poll(bool stopping);

  // Writes this process's hang dump (the collective ring) into the run
  // directory's control/hang/; reason "hang-after", "trigger" or "sigterm".
  // The encoder thread's (or the exit's, once it has stopped).
  void write_hang_dump(const char* reason);

  // At the end: windows, detaches and the sampled windows' summary.
  void add_end_facts(trace::Metadata& meta, trace::ProblemCounts& problems);
  nlohmann::json sampling_json();  // for the sidecar: the end's summary once computed
  uint64_t windows_opened();
  uint64_t detaches() const { return detaches_.load(); }

 private:
  CUptiResult attach_cupti(const char** failed_step, bool lean = false);
  CUptiResult set_up_activity();
  void close_capture_window(bool wait_for_gpu, std::chrono::milliseconds grace = kDetachGrace);
  void on_iteration_nvtx(NvtxOp op, const char* text, uint64_t id);
  // Sampled windows: the job's own NVTX iteration ranges are the markers
  // once one is seen; else the Python bootstrap's step marks (optimizer
  // steps); else cudaProfilerStart/Stop pairs. A kind of marker takes over
  // from every kind below it: a job that calls cudaProfilerStart once before
  // a loop of ProfilerStep ranges switches to the ranges at the first one.
  static constexpr int kMarkerProfilerApi = 1, kMarkerStepMark = 2, kMarkerNvtx = 3;
  bool claim_marker(int kind) {
    int current = marker_kind_.load();
    while (current < kind && !marker_kind_.compare_exchange_weak(current, kind)) {}
    return current <= kind;
  }
  // may_open: a window due at this iteration may open now (false while
  // CUPTI is detached: the window then opens at the first iteration after
  // the attach that the schedule still traces).
  void iteration_begin(std::optional<uint64_t> number, bool may_open = true);
  // Under iteration_mutex_: whether iteration `index` is traced, by the
  // schedule or by a window asked for while the job runs.
  bool traced(uint64_t index) const;
  // At an iteration's beginning (iteration_mutex_ held): its time from the last one's.
  void note_step(std::chrono::steady_clock::time_point now);
  // The encoder thread: windows asked for in the run directory's control/
  // folder (scalescope trigger, --windows-every), and this process's
  // progress for the next request's alignment.
  void control_tick(std::chrono::steady_clock::time_point now);
  nlohmann::json window_entry(uint64_t index) const;
  void iteration_end();
  void arm_marker_records();  // CUPTI's MARKER records on before the push that opens a window
  IterationClass state_now();
  nlohmann::json sampling_summary();
  void enable_trigger_callbacks();
  // Every API calls back, so that the detach comes at the next API exit (CUPTI's
  // advice for cuptiFinalize); the flag goes up last: the detach it allows must
  // not overtake these calls.
  void request_detach_at_api_exit();
  void detach_cupti();
  void reattach_cupti();
  void select_default_apis();
  void set_api_callbacks(bool on);

  const CollectorOptions& options_;
  TraceEncoder& encoder_;
  const CuptiHooks hooks_;
  std::atomic<int> marker_kind_{0};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_CallbackId> runtime_cbids_, driver_cbids_;
  // SCALESCOPE_API_RECORDS=callbacks: the default API calls are timed in the
  // collector's own callbacks for the same ids (enter/exit timestamps) while a
  // window is open, instead of CUPTI's RUNTIME/DRIVER activity records.
  bool api_callbacks_ = false;
  // SCALESCOPE_NVTX_RECORDS=hooks: NVTX goes to the collector's own hooks
  // (nvtx_hooks.hpp), which record ranges while a window is open, instead of
  // CUPTI's MARKER records and NVTX callbacks.
  bool nvtx_hooks_ = false;
  std::atomic<bool> api_callbacks_on_{false};
  std::vector<uint8_t> runtime_selected_, driver_selected_;  // by callback id; fixed before any window

  std::mutex enable_mutex_;
  bool tracing_ = false;
  bool window_done_ = false;
  uint64_t cupti_errors_ = 0;  // under enable_mutex_: kCuptiError problems
  std::chrono::steady_clock::time_point init_time_, window_start_;
  uint64_t nvtx_capture_id_ = 0;
  uint64_t windows_opened_ = 0;  // under enable_mutex_; how many times tracing was switched on

  // Detaching CUPTI between windows (cuptiFinalize). Disabling the activity
  // kinds leaves CUPTI's hooks in the job (measured: the job stays 20-35 %
  // slower after its first window), so a closed window detaches CUPTI, and a
  // capture range attaches it again with only its trigger callbacks.
  std::atomic<bool> attached_{false};
  std::atomic<bool> detach_requested_{false};    // the next API exit (of detach_thread_, unless any) detaches
  std::atomic<bool> reattach_requested_{false};  // the encoder attaches again
  // Between windows, when the iteration markers need no CUPTI callback
  // (markers_without_cupti): no subscriber at all, so that the job runs as
  // if never profiled; the encoder attaches again kAttachLeadSeconds before
  // the next window (window_due_soon).
  std::atomic<bool> reattach_deferred_{false};
  static constexpr double kAttachLeadSeconds = 0.5;
  static constexpr uint64_t kMaxAttachLeadIterations = 10'000;
  bool markers_without_cupti() const;
  bool window_due_soon();
  // A capture window (cudaProfilerStop, or the end of the NVTX range) is
  // detached only after it has stayed closed for kDetachGrace, at an API exit
  // of the thread that closed it: a window that opens again at once (stop,
  // start) keeps CUPTI, because CUPTI attaches again on the encoder thread and
  // a start in between would be missed. (Attaching again inside the callback
  // that detached crashed the job on H200: bench/RESULTS.md.) A timed window
  // (--duration) detaches at any thread's next API exit and stays detached.
  bool close_pending_ = false;                       // under enable_mutex_
  std::chrono::steady_clock::time_point closed_at_;  // under enable_mutex_
  std::atomic<pthread_t> detach_thread_{};
  std::atomic<bool> detach_on_any_thread_{false};
  uint64_t stops_without_window_ = 0;  // under enable_mutex_: a stop with no window open (a start missed?)
  std::mutex detach_mutex_;            // one detach at a time
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> detach_failures_{0};
  std::chrono::milliseconds close_grace_ = kDetachGrace;  // under enable_mutex_: of the pending close

  // Sampled windows by iteration (options_.sampled()): the iteration
  // markers open and close windows by schedule_, and every iteration is timed
  // (two clock reads where its marker arrives) so that the run measures its
  // own perturbation.
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
  // Windows asked for while the job runs (under iteration_mutex_).
  struct AskedWindow {
    WindowRequest request;
    uint64_t first = 0, end = 0;  // iteration indices [first, end)
  };
  std::vector<AskedWindow> asked_;
  std::optional<ControlWatcher> control_;  // the encoder thread's alone (control_tick)
  std::vector<std::string> skipped_files_;  // control files that could not be read
  int32_t rank_ = -1;
  uint32_t pid_ = 0;
  std::string host_;
  std::chrono::steady_clock::time_point next_progress_{};  // the encoder thread's
  std::chrono::steady_clock::time_point last_begin_{};
  std::array<double, 16> recent_steps_ns_{};  // the last iterations' times, beginning to beginning
  size_t recent_steps_ = 0;                    // how many were recorded (the ring's write position)
  bool hang_dumped_ = false;  // the encoder thread's: --hang-after wrote a dump for the stall going on now
  int64_t time_slot_ = -1;  // the encoder thread's; --windows-every: the last period (unix time / period) a window was claimed in
  uint64_t control_errors_ = 0;  // control files that could not be written
  // Every window of the run, in order: its iterations and why it opened.
  nlohmann::json windows_log_ = nlohmann::json::array();
  bool window_logged_open_ = false;
  nlohmann::json sampling_json_;  // computed once at the end (the interval resamples)
  // SCALESCOPE_LEAN_REATTACH=1 (an experiment, bench/RESULTS.md):
  // attach again after a detach with the trigger callbacks only; the activity
  // API (buffers, flush period, metadata kinds) is set up when a window opens.
  bool lean_reattach_ = false;
  bool activity_ready_ = false;  // under enable_mutex_ once the encoder runs
};

}  // namespace scalescope::collect
