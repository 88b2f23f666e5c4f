#include "collect/capture_window.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <generated_nvtx_meta.h>

#include "collect/collective_ring.hpp"
#include "collect/collector_common.hpp"
#include "collect/python_reader.hpp"
#include "base/error.hpp"
#include <fmt/format.h>

namespace scalescope::collect {
namespace {

constexpr auto kFlushPeriod = std::chrono::milliseconds(1000);  // CUPTI's worker hands over buffers this often
// How often an iteration's beginning looks for windows asked for in control/
// (one stat of the folder), and writes this process's progress there.
constexpr auto kControlPeriod = std::chrono::milliseconds(500);
constexpr auto kProgressPeriod = std::chrono::milliseconds(1000);
// A time-based window starts this far ahead of the process that claims it:
// twice the period of the others' looks at control/, so that they have seen
// it before it begins.
constexpr double kTimeWindowLeadSeconds = 1.0;

}  // namespace

void CaptureWindow::configure(trace::Metadata& meta) {
  init_time_ = std::chrono::steady_clock::now();
  api_callbacks_ = options_.api == ApiMode::kDefault && options_.api_records == ApiRecords::kCallbacks;
  sampling_ = options_.sampled();
  nvtx_hooks_ = nvtx_records_by_hooks();
  meta.extra["nvtx_records"] = nvtx_hooks_ ? "hooks" : "cupti";
  // The hooks tell the window about markers only when it has NVTX markers to watch.
  if (nvtx_hooks_ && (sampling_ || options_.capture == CaptureRange::kNvtx)) NvtxHooks::instance().set_listener(this);
  if (const char* v = std::getenv("SCALESCOPE_LEAN_REATTACH")) lean_reattach_ = std::strcmp(v, "1") == 0;
  if (lean_reattach_) meta.extra["lean_reattach"] = "1";
  schedule_ = SampleSchedule{options_.skip_iterations, options_.iterations, options_.repeat_every};
  if (sampling_) {
    // Traced as today until the first iteration marker: a job without any is traced whole.
    std::lock_guard lock(iteration_mutex_);
    pre_loop_window_ = true;
    rank_ = meta.rank;
    pid_ = meta.pid;
    host_ = meta.hostname;
    if (!options_.run_dir.empty()) control_.emplace(options_.run_dir, kControlPeriod);
    if (options_.windows_every_s > 0) meta.extra["windows_every_s"] = fmt::format("{:g}", options_.windows_every_s);
  }
}

void CaptureWindow::poll(bool stopping) {
  if (reattach_requested_.exchange(false)) reattach_cupti();
  // Detached between windows: attach again only shortly before the next one.
  if (!stopping && reattach_deferred_.load() && window_due_soon()) {
    reattach_deferred_.store(false);
    reattach_cupti();
  }
  if (sampling_ && !stopping) control_tick(std::chrono::steady_clock::now());
  bool request_detach = false;
  {
    std::lock_guard lock(enable_mutex_);
    if (close_pending_ && !tracing_ && std::chrono::steady_clock::now() - closed_at_ >= close_grace_) {
      close_pending_ = false;
      request_detach = attached_.load();
    }
  }
  if (request_detach) request_detach_at_api_exit();  // the closing thread's next one
  if (stopping) return;
  auto now = std::chrono::steady_clock::now();
  double since_init = std::chrono::duration<double>(now - init_time_).count();
  if (options_.capture == CaptureRange::kNone && options_.delay_s > 0 && since_init >= options_.delay_s)
    enable_tracing();
  bool over = false;
  {
    std::lock_guard lock(enable_mutex_);
    over = tracing_ && options_.duration_s > 0 &&
           std::chrono::duration<double>(now - window_start_).count() >= options_.duration_s;
  }
  if (!over) return;
  disable_tracing();
  {
    std::lock_guard lock(enable_mutex_);
    window_done_ = true;
  }
  if (options_.detach && attached_.load()) {
    detach_on_any_thread_.store(true);  // the next API exit on any thread detaches
    request_detach_at_api_exit();
  } else {
    cuptiActivityFlushAll(0);
  }
}

void CaptureWindow::select_default_apis() {
  auto scan = [](CUpti_CallbackDomain domain, trace::ApiDomain ours, uint32_t size,
                 std::vector<CUpti_CallbackId>& out) {
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
void CaptureWindow::set_api_callbacks(bool on) {
  api_callbacks_on_.store(on);
  for (auto cbid : runtime_cbids_) cuptiEnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (auto cbid : driver_cbids_) cuptiEnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  if (!on) enable_trigger_callbacks();
}

namespace {

// The CUPTI kinds of the --activities groups, kernels first: if CUPTI
// refuses the first one, nothing is traced.
std::vector<CUpti_ActivityKind> activity_kinds(uint32_t activities, bool nvtx_hooks) {
  std::vector<CUpti_ActivityKind> kinds;
  // Never CUPTI_ACTIVITY_KIND_KERNEL: it serialises kernels.
  if (activities & kActivityKernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (activities & kActivityMemcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);  // peer-to-peer
  }
  if (activities & kActivityMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (activities & kActivitySync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if ((activities & kActivityNvtx) && !nvtx_hooks) kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
  return kinds;
}

}  // namespace

void CaptureWindow::enable_tracing() {
  std::lock_guard lock(enable_mutex_);
  if (tracing_ || window_done_) return;
  if (!activity_ready_ && set_up_activity() != CUPTI_SUCCESS) ++cupti_errors_;
  auto kinds = activity_kinds(options_.activities, nvtx_hooks_);
  CUptiResult r = kinds.empty() ? CUPTI_SUCCESS : cuptiActivityEnable(kinds.front());
  if (r != CUPTI_SUCCESS) {
    warn(
        "CUPTI activity tracing unavailable (%s; another profiler such as nsys or torch.profiler, or an "
        "unsupported GPU); the job runs untraced",
        cupti_error(r).c_str());
    ++cupti_errors_;
    window_done_ = true;
    return;
  }
  for (size_t i = 1; i < kinds.size(); ++i)
    if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS) ++cupti_errors_;
  if (options_.api == ApiMode::kAll) {
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) ++cupti_errors_;
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS) ++cupti_errors_;
  } else if (options_.api == ApiMode::kDefault && api_callbacks_) {
    set_api_callbacks(true);
  } else if (options_.api == ApiMode::kDefault) {
    // Per callback id: recording every API call is what makes naive collectors slow.
    for (auto cbid : runtime_cbids_)
      if (cuptiActivityEnableRuntimeApi(cbid, 1) != CUPTI_SUCCESS) ++cupti_errors_;
    for (auto cbid : driver_cbids_)
      if (cuptiActivityEnableDriverApi(cbid, 1) != CUPTI_SUCCESS) ++cupti_errors_;
  }
  tracing_ = true;
  if (nvtx_hooks_ && (options_.activities & kActivityNvtx)) NvtxHooks::instance().set_recording(true);
  close_pending_ = false;
  window_start_ = std::chrono::steady_clock::now();
  ++windows_opened_;
  state_changes_.fetch_add(1);
}

void CaptureWindow::disable_tracing() {
  std::lock_guard lock(enable_mutex_);
  if (!tracing_) return;
  for (auto kind : activity_kinds(options_.activities, nvtx_hooks_)) cuptiActivityDisable(kind);
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
  if (nvtx_hooks_) NvtxHooks::instance().set_recording(false);
  state_changes_.fetch_add(1);
}

// NVTX ranges (from CUPTI's NVTX callbacks or the collector's own hooks):
// with --capture-range nvtx:NAME, the push (start) of NAME opens the window
// and its pop (end) closes it; with sampled windows they are iteration markers.
void CaptureWindow::on_nvtx(NvtxOp op, const char* text, uint64_t id) {
  if (sampling_) {
    on_iteration_nvtx(op, text, id);
    return;
  }
  thread_local int depth = -1;  // push depth inside the capture range on this thread, -1 outside
  const bool matches = text && options_.capture_name == text;
  switch (op) {
    case NvtxOp::kPush:
      if (depth >= 0) {
        ++depth;
      } else if (matches) {
        depth = 0;
        enable_tracing();
      }
      break;
    case NvtxOp::kPop:
      if (depth == 0) close_capture_window(false);
      if (depth >= 0) --depth;
      break;
    case NvtxOp::kStart:
      if (matches && id != 0) {
        nvtx_capture_id_ = id;
        enable_tracing();
      }
      break;
    case NvtxOp::kEnd:
      if (nvtx_capture_id_ && id == nvtx_capture_id_) {
        nvtx_capture_id_ = 0;
        close_capture_window(false);
      }
      break;
  }
}

// Capture ranges: NVTX push/pop or start/end of the named range, or
// cudaProfilerStart/Stop, open and close the window (every occurrence).
void CaptureWindow::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    // CUPTI's NVTX handler (SCALESCOPE_NVTX_RECORDS=cupti): the same events the collector's own hooks give.
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    auto attrib_text = [](const nvtxEventAttributes_t* a) -> const char* {
      return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
    };
    const char* text = nullptr;
    NvtxOp op = NvtxOp::kPush;
    uint64_t id = 0;
    switch (cbid) {
      // A start's parameters are laid out as the push's.
      case CUPTI_CBID_NVTX_nvtxRangeStartA: op = NvtxOp::kStart; [[fallthrough]];
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        text = static_cast<const nvtxRangePushA_params*>(nvtx->functionParams)->message;
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartEx: op = NvtxOp::kStart; [[fallthrough]];
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        text = attrib_text(static_cast<const nvtxRangePushEx_params*>(nvtx->functionParams)->eventAttrib);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: op = NvtxOp::kStart; [[fallthrough]];
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        text = attrib_text(static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams)->core.eventAttrib);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop: op = NvtxOp::kPop; break;
      case CUPTI_CBID_NVTX_nvtxRangeEnd:
        op = NvtxOp::kEnd;
        id = static_cast<const nvtxRangeEnd_params*>(nvtx->functionParams)->id;
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        op = NvtxOp::kEnd;
        id = static_cast<const nvtxDomainRangeEnd_params*>(nvtx->functionParams)->core.id;
        break;
      default: return;
    }
    if (op == NvtxOp::kStart) {
      if (!nvtx->functionReturnValue) return;  // no id to match its end with
      id = *static_cast<const nvtxRangeId_t*>(nvtx->functionReturnValue);
    }
    on_nvtx(op, text, id);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (api_callbacks_on_.load(std::memory_order_relaxed)) {
      const auto& selected = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_selected_ : driver_selected_;
      if (cbid < selected.size() && selected[cbid]) encoder_.record_api_call(domain, cbid, cb);
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
void CaptureWindow::close_capture_window(bool wait_for_gpu, std::chrono::milliseconds grace) {
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
  if (grace.count() == 0) encoder_.wake();  // the encoder asks for the detach at once
}

// The iteration ranges (options_.iteration_range or NAME#N) on this thread:
// an iteration begins at the push (start) of one and ends at its pop (end).
// A marker pushed while one is open means the open one's end was missed (a
// detach in between): it is dropped, not timed.
void CaptureWindow::on_iteration_nvtx(NvtxOp op, const char* text, uint64_t id) {
  // Push depth inside the iteration range on this thread, -1 outside. Not
  // reset by a detach: the iteration around it ends at its pop as usual (a
  // transition). A pop missed while detached (a few milliseconds) leaves the
  // iteration open until the next marker, which drops it.
  thread_local int depth = -1;
  std::optional<uint64_t> number;
  const bool matches = text && match_iteration_marker(options_.iteration_range, text, &number);
  switch (op) {
    case NvtxOp::kPush:
      if (matches && claim_marker(kMarkerNvtx)) {
        depth = 0;
        iteration_begin(number, attached_.load());
      } else if (depth >= 0) {
        ++depth;
      }
      break;
    case NvtxOp::kPop:
      if (depth == 0) iteration_end();
      if (depth >= 0) --depth;
      break;
    case NvtxOp::kStart:
      if (matches && id != 0 && claim_marker(kMarkerNvtx)) {
        iteration_begin(number, attached_.load());
        std::lock_guard lock(iteration_mutex_);
        iteration_range_id_ = id;
      }
      break;
    case NvtxOp::kEnd: {
      bool ours = false;
      {
        std::lock_guard lock(iteration_mutex_);
        ours = iteration_range_id_ != 0 && id == iteration_range_id_;
        if (ours) iteration_range_id_ = 0;
      }
      if (ours) iteration_end();
      break;
    }
  }
}

// Unlike CUPTI's NVTX callbacks, step marks also come while CUPTI is
// detached (between a detach and the encoder's attach, a few milliseconds):
// they are timed, but no window opens then, since any CUPTI call would
// attach CUPTI again behind the encoder's back.
int CaptureWindow::on_step_mark(uint64_t step) {
  if (sampling_ && claim_marker(kMarkerStepMark)) {
    iteration_end();
    iteration_begin(step, attached_.load());
  }
  std::lock_guard lock(enable_mutex_);
  return tracing_ ? 1 : 0;
}

// What an iteration starting now would be, if nothing changes before its end.
IterationClass CaptureWindow::state_now() {
  std::lock_guard lock(enable_mutex_);
  if (tracing_) return IterationClass::kInside;
  if (!options_.detach) return IterationClass::kOutside;  // attached, nothing enabled: the user chose that outside
  // Detached, or attached again with only the marker callbacks: the job's own speed.
  if (detaches_.load() > 0 && !close_pending_ && !detach_requested_.load()) return IterationClass::kOutside;
  return IterationClass::kLingering;  // CUPTI still attached after a window, detach pending
}

void CaptureWindow::iteration_begin(std::optional<uint64_t> number, bool may_open) {
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
    CollectiveRing::instance().iteration(index);
    if (control_) note_step(now);
    if (pre_loop_window_) {
      // The first iteration: the job has markers, so from here on windows come from the schedule.
      pre_loop_window_ = false;
      close_pre_loop = !traced(index);
    } else {
      open_window = traced(index);
    }
  }
  // Closed by the job's NVTX iteration ranges, the highest kind of marker:
  // detach at once. Closed by a lower kind (a cudaProfilerStart before the
  // loop, a step mark), stay attached for the grace: with CUPTI's NVTX
  // callbacks, ranges the job also has would be missed while detached, and a
  // missed first ProfilerStep#N would shift the schedule by one step.
  if (close_pre_loop)
    close_capture_window(true, marker_kind_.load() == kMarkerNvtx ? std::chrono::milliseconds(0) : kDetachGrace);
  if (open_window && may_open) enable_tracing();
  const IterationClass state = state_now();
  std::lock_guard lock(iteration_mutex_);
  begin_state_ = state;
  begin_changes_ = state_changes_.load();
  if (state == IterationClass::kInside && !window_logged_open_ && !pre_loop_window_) {
    windows_log_.push_back(window_entry(iteration_index_));
    window_logged_open_ = true;
  }
}

bool CaptureWindow::traced(uint64_t index) const {
  if (schedule_.traced(index)) return true;
  return std::any_of(asked_.begin(), asked_.end(), [&](const AskedWindow& w) { return index >= w.first && index < w.end; });
}

void CaptureWindow::note_step(std::chrono::steady_clock::time_point now) {
  if (last_begin_ != std::chrono::steady_clock::time_point{})
    recent_steps_ns_[recent_steps_++ % recent_steps_ns_.size()] =
        std::chrono::duration<double, std::nano>(now - last_begin_).count();
  last_begin_ = now;
}

// On the encoder thread (every poll, about 10 times a second): every file
// operation of the control folder happens here, none on the job's threads.
void CaptureWindow::control_tick(std::chrono::steady_clock::time_point now) {
  if (!control_) return;
  uint64_t index = 0;
  bool have_iterations = false;
  int64_t iteration_unix_ns = 0;
  std::vector<double> steps;  // the last iterations' times, sorted
  {
    std::lock_guard lock(iteration_mutex_);
    // Without iteration markers (yet) there is nothing to align windows on, nor progress to judge.
    have_iterations = iterations_seen_ > 0;
    index = iteration_index_;
    iteration_unix_ns = unix_now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_begin_).count();
    steps.assign(recent_steps_ns_.begin(), recent_steps_ns_.begin() + std::min(recent_steps_, recent_steps_ns_.size()));
  }
  std::sort(steps.begin(), steps.end());
  try {
    if (have_iterations && now >= next_progress_) {
      next_progress_ = now + kProgressPeriod;
      // The median of the last iterations: the step time others align on.
      const double median_ns = steps.empty() ? 0 : steps[steps.size() / 2];
      write_progress(options_.run_dir, Progress{host_, pid_, rank_, index, median_ns, unix_now_ns(), iteration_unix_ns});
      if (options_.hang_after_s > 0) {
        // Every process judges the whole job from the progress files: all of
        // them dump when no rank has begun an iteration for --hang-after.
        const bool stalled = job_stalled(read_progress(options_.run_dir), options_.hang_after_s, unix_now_ns());
        if (stalled && !hang_dumped_) write_hang_dump("hang-after");
        hang_dumped_ = stalled;
      }
    }
    if (have_iterations && options_.windows_every_s > 0) {
      // One process of the job claims each period's window for all (the
      // first to create its file); the others find it in control/.
      const auto slot = static_cast<int64_t>(static_cast<double>(unix_now_ns()) / 1e9 / options_.windows_every_s);
      if (time_slot_ < 0) time_slot_ = slot;  // the first window one period after the start
      if (slot > time_slot_) {
        time_slot_ = slot;
        // At the fastest recent step: a lead in iterations that is too long
        // only delays the window; one too short lets a process miss its start.
        const double fastest_ns = steps.empty() ? 0 : steps.front();
        const uint64_t lead =
            fastest_ns > 0 ? std::max<uint64_t>(2, static_cast<uint64_t>(kTimeWindowLeadSeconds * 1e9 / fastest_ns))
                           : 2;
        WindowRequest r{"time-" + std::to_string(slot), index + std::min<uint64_t>(lead, 1'000'000),
                        schedule_.active, {}, "time", "", host_ + ":" + std::to_string(pid_), unix_now_ns()};
        create_window_request(options_.run_dir, r);
        control_->look_now();
      }
    }
  } catch (const scalescope::Error&) {
    std::lock_guard lock(iteration_mutex_);
    ++control_errors_;  // an unwritable run directory: the job goes on, the end's summary counts it
  }
  auto fresh = control_->poll(now);
  if (!control_->take_dump_requests().empty()) write_hang_dump("trigger");
  if (fresh.empty()) return;
  std::lock_guard lock(iteration_mutex_);
  // The iteration running now has begun untraced: the earliest a window can open is the next.
  const uint64_t earliest = iteration_index_ + (iteration_open_ ? 1 : 0);
  for (auto& r : fresh) {
    if (!r.ranks.empty() && std::find(r.ranks.begin(), r.ranks.end(), rank_) == r.ranks.end()) continue;
    // A request whose start has passed here (this process was behind, or
    // it came with --start) opens at the next iteration and says how late.
    const uint64_t first = std::max(r.start_iteration, earliest);
    const uint64_t end = first + r.iterations;
    asked_.push_back({std::move(r), first, end});
  }
  skipped_files_ = control_->skipped();
}

void CaptureWindow::write_hang_dump(const char* reason) {
  if (options_.run_dir.empty()) return;
  trace::HangDump d = CollectiveRing::instance().snapshot();
  d.host = host_;
  d.pid = pid_;
  d.rank = rank_;
  d.reason = reason;
  d.unix_ns = unix_now_ns();
  d.stalled = hang_dumped_ || std::strcmp(reason, "hang-after") == 0;
  // Where each Python thread is: a rank that never entered the collective
  // is named with the line it waits on.
  for (auto& t : collect::sample_python_threads_once(pid_, &d.python_note))
    d.python.push_back({t.native_id, std::move(t.frames)});
  try {
    collect::write_hang_dump(options_.run_dir, d);
  } catch (const scalescope::Error&) {
    std::lock_guard lock(iteration_mutex_);
    ++control_errors_;
  }
}

// Under iteration_mutex_: the log entry of a window that opens at `index`.
nlohmann::json CaptureWindow::window_entry(uint64_t index) const {
  nlohmann::json w;
  w["first_iteration"] = index;
  for (const auto& a : asked_) {
    if (index < a.first || index >= a.end) continue;
    w["reason"] = a.request.reason;
    w["request"] = a.request.id;
    if (!a.request.note.empty()) w["note"] = a.request.note;
    if (!a.request.requested_by.empty()) w["requested_by"] = a.request.requested_by;
    w["asked_start_iteration"] = a.request.start_iteration;
    if (a.first > a.request.start_iteration) w["late_by_iterations"] = a.first - a.request.start_iteration;
    return w;
  }
  w["reason"] = "schedule";
  return w;
}

void CaptureWindow::iteration_end() {
  const auto now = std::chrono::steady_clock::now();
  bool close = false, arm = false;
  {
    std::lock_guard lock(iteration_mutex_);
    if (!iteration_open_) return;
    iteration_open_ = false;
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - iteration_begin_).count();
    IterationClass c = begin_state_;
    if (iteration_index_ < schedule_.skip) c = IterationClass::kWarmup;
    else if (state_changes_.load() != begin_changes_) c = IterationClass::kTransition;
    iteration_times_.add(c, ns);
    close = !pre_loop_window_ && !traced(iteration_index_ + 1);
    arm = !pre_loop_window_ && !traced(iteration_index_) && traced(iteration_index_ + 1) &&
          marker_kind_.load() == kMarkerNvtx;
  }
  if (arm) arm_marker_records();
  if (!close) return;
  {
    std::lock_guard lock(iteration_mutex_);
    if (window_logged_open_) {
      windows_log_.back()["last_iteration"] = iteration_index_;
      window_logged_open_ = false;
    }
  }
  {
    std::lock_guard lock(enable_mutex_);
    if (!tracing_) return;
  }
  // The last traced iteration: wait for its GPU work (its records), and
  // detach at once (the schedule says no window opens at the next marker).
  close_capture_window(true, std::chrono::milliseconds(0));
}

// Sampled windows with CUPTI's MARKER records (not the hooks): CUPTI writes
// an NVTX range's record before it calls the collector back (inferred: the
// callback carries the call's return value; not yet checked on a GPU trace
// after this change), so a window opened in the callback of
// the first traced iteration's push would miss that push's record and keep
// only its end, an unmatched end (on H200 the default window held 19 whole
// ProfilerStep ranges of 20). MARKER records are switched on at the end of
// the iteration before a window, so that its first push is recorded; the
// end of the window's last iteration is recorded before its callback closes
// the window. The kernels still come with the window (the push's callback).
// A job whose iterations end here keeps MARKER records on to its exit.
void CaptureWindow::arm_marker_records() {
  if (nvtx_hooks_ || !(options_.activities & kActivityNvtx)) return;
  std::lock_guard lock(enable_mutex_);
  if (tracing_ || window_done_ || !attached_.load()) return;  // detached: the window opens after the attach
  if (!activity_ready_ && set_up_activity() != CUPTI_SUCCESS) {
    ++cupti_errors_;
    return;
  }
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER) != CUPTI_SUCCESS) ++cupti_errors_;
}

nlohmann::json CaptureWindow::sampling_summary() {
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
  for (auto c : {IterationClass::kWarmup, IterationClass::kInside, IterationClass::kOutside,
                 IterationClass::kTransition, IterationClass::kLingering})
    j[std::string("iterations_") + std::string(to_string(c))] = iteration_times_.count(c);
  if (iterations_seen_ == 0) {
    j["note"] = "no iteration markers (optimizer steps seen by the Python bootstrap, NVTX ranges named " +
                options_.iteration_range + " or " + options_.iteration_range +
                "#N, or cudaProfilerStart/Stop): traced from start to end";
    return j;
  }
  if (!windows_log_.empty()) {
    nlohmann::json log = windows_log_;
    if (window_logged_open_) {
      log.back()["last_iteration"] = iteration_index_;
      log.back()["open_at_exit"] = true;
    }
    j["windows"] = std::move(log);
  }
  if (!skipped_files_.empty()) j["control_files_skipped"] = skipped_files_;
  if (control_errors_ > 0) j["control_write_errors"] = control_errors_;
  const int marker = marker_kind_.load();
  j["iteration_marker"] = marker == kMarkerProfilerApi ? "cudaProfilerStart/Stop"
                          : marker == kMarkerStepMark  ? "optimizer steps"
                                                       : "nvtx";
  // Each window against its detached neighbours when windows repeat
  // (--repeat-every), else every traced iteration against every detached one.
  const Perturbation p = estimate_paired_perturbation(iteration_times_.sequence());
  j["perturbation_measured"] = p.measured;
  j["perturbation_text"] = describe_perturbation(p);
  j["perturbation_method"] = std::string(to_string(p.method));
  j["perturbation_windows"] = p.windows;
  if (p.measured) {
    j["perturbation_pct"] = p.percent;
    j["perturbation_ci_low_pct"] = p.ci_low;
    j["perturbation_ci_high_pct"] = p.ci_high;
    j["iteration_inside_median_ns"] = p.inside_median_ns;
    j["iteration_outside_median_ns"] = p.outside_median_ns;
  }
  return j;
}

// The window's facts, and the sampled windows' summary as trace metadata
// (strings), for analyze and the report.
void CaptureWindow::add_end_facts(trace::Metadata& meta, trace::ProblemCounts& problems) {
  {
    std::lock_guard lock(enable_mutex_);
    if (cupti_errors_ > 0) problems.add(trace::Problem::kCuptiError, cupti_errors_);
    meta.extra["windows_opened"] = std::to_string(windows_opened_);
    if (stops_without_window_ > 0) meta.extra["capture_stops_without_window"] = std::to_string(stops_without_window_);
  }
  meta.extra["cupti_detaches"] = std::to_string(detaches_.load());
  sampling_json_ = sampling_summary();
  const nlohmann::json& j = sampling_json_;
  meta.extra["sampling"] = j.value("mode", "");
  for (const auto& [k, v] : j.items()) {
    if (k == "mode") continue;
    meta.extra[k == "note" ? "sampling_note" : k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  if (detach_failures_.load() > 0) meta.extra["cupti_detach_failures"] = std::to_string(detach_failures_.load());
}

nlohmann::json CaptureWindow::sampling_json() { return sampling_json_.is_null() ? sampling_summary() : sampling_json_; }

uint64_t CaptureWindow::windows_opened() {
  std::lock_guard lock(enable_mutex_);
  return windows_opened_;
}

void CaptureWindow::enable_trigger_callbacks() {
  if (sampling_ || options_.capture == CaptureRange::kCudaProfilerApi) {
    // Window triggers (capture range), or iteration markers (sampled windows).
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  }
  if ((options_.capture == CaptureRange::kNvtx || sampling_) && !nvtx_hooks_) {
    for (auto cbid :
         {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
          CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePop, CUPTI_CBID_NVTX_nvtxRangeStartA,
          CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxRangeEnd,
          CUPTI_CBID_NVTX_nvtxDomainRangeEnd})
      cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid);
  }
}

void CaptureWindow::request_detach_at_api_exit() {
  cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
  detach_requested_.store(true);
}

// On an application thread at an API exit (CUPTI's advice for cuptiFinalize).
void CaptureWindow::detach_cupti() {
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
  encoder_.drain_before_detach();
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
  if (markers_without_cupti() && !window_due_soon()) {
    reattach_deferred_.store(true);  // the encoder attaches when a window is near
    return;
  }
  reattach_requested_.store(true);
  encoder_.wake();
}

// Whether the iteration markers reach the collector while CUPTI is detached:
// the Python bootstrap's step marks, and NVTX ranges through the collector's
// own hooks. cudaProfilerStart/Stop and NVTX through CUPTI come only as
// CUPTI callbacks, so those jobs keep CUPTI attached with the callbacks alone.
bool CaptureWindow::markers_without_cupti() const {
  if (!sampling_ || options_.capture == CaptureRange::kCudaProfilerApi) return false;
  const int kind = marker_kind_.load();
  return kind == kMarkerStepMark || (kind == kMarkerNvtx && nvtx_hooks_);
}

// On the encoder thread, while detached between windows: whether a window
// opens within the next kAttachLeadSeconds of iterations (at the fastest
// recent step), the time an attach needs before the window's first
// iteration. Without step times yet, at once.
bool CaptureWindow::window_due_soon() {
  std::lock_guard lock(iteration_mutex_);
  const size_t known = std::min(recent_steps_, recent_steps_ns_.size());
  if (known == 0) return true;
  const double fastest_ns = *std::min_element(recent_steps_ns_.begin(), recent_steps_ns_.begin() + known);
  uint64_t lead = kMaxAttachLeadIterations;
  if (fastest_ns > 0)
    lead = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(kAttachLeadSeconds * 1e9 / fastest_ns)), 2,
                                kMaxAttachLeadIterations);
  for (uint64_t i = iteration_index_; i <= iteration_index_ + lead; ++i)
    if (traced(i)) return true;
  return false;
}

// On the encoder thread, after a detach: the same CUPTI set-up as at start,
// so that the next capture window can open. Records of the next generation
// get fresh correlation numbers (CUPTI may start them over).
void CaptureWindow::reattach_cupti() {
  std::lock_guard lock(detach_mutex_);
  if (attached_.load()) return;
  encoder_.attach_starting();  // the encoder bumps the decoder before any buffer of the new generation
  const char* step = "";
  CUptiResult r;
  {
    std::lock_guard enable(enable_mutex_);  // activity_ready_
    r = attach_cupti(&step, lean_reattach_);
  }
  state_changes_.fetch_add(1);
  if (r == CUPTI_SUCCESS) encoder_.attached_again();
  if (r != CUPTI_SUCCESS) {
    warn("cannot attach CUPTI again after a capture window (%s: %s); later windows are not traced", step,
         cupti_error(r).c_str());
    std::lock_guard enable(enable_mutex_);
    ++cupti_errors_;
    window_done_ = true;
  }
}

// Subscribes and sets up what stays on while CUPTI is attached: buffers,
// flush period, device and context records, NVTX payload copies and the
// callbacks that open capture windows. The activity kinds come with windows.
CUptiResult CaptureWindow::attach_cupti(const char** failed_step, bool lean) {
  CUptiResult r = cuptiSubscribe(&subscriber_, hooks_.callback, nullptr);
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

CUptiResult CaptureWindow::set_up_activity() {
  CUptiResult r = cuptiActivityRegisterCallbacks(hooks_.buffer_requested, hooks_.buffer_completed);
  if (r != CUPTI_SUCCESS) return r;
  // OS thread ids in CUPTI's records (by default they carry pthread_self
  // values), as in the host sampler's rows and the collector's own API and
  // NVTX records: one thread is one track. Set again at every attach.
  if (cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) != CUPTI_SUCCESS) ++cupti_errors_;
  // CUPTI's worker hands over partly filled buffers every second, so a
  // SIGKILL loses about the last second.
  cuptiActivityFlushPeriod(static_cast<uint32_t>(kFlushPeriod.count()));
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  // NVTX extended payloads (NCCL's bytes per call) come only with MARKER
  // records, so this follows the nvtx activity and its windows. Not when
  // discarding: the decoder frees CUPTI's payload copies.
  if (!options_.discard && !nvtx_hooks_) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  // No SYNCHRONIZATION records for cudaEventQuery/cudaStreamQuery calls that
  // find the work not yet complete: PyTorch's allocator and the NCCL watchdog
  // poll events all the time, such a query waits for nothing, and the decoder
  // has no sync kind for queries anyway. Syncs that wait are all still kept.
  if (options_.activities & kActivitySync) cuptiActivityEnableAllSyncRecords(0);
  activity_ready_ = true;
  return CUPTI_SUCCESS;
}

}  // namespace scalescope::collect
