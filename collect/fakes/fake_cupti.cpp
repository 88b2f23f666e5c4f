// A fake libcupti.so.13: see fake_cupti.hpp. Thread-safe; callbacks run
// without the fake's lock held, as CUPTI's may call back into it.
#include "collect/fakes/fake_cupti.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

// Records of every kind the fake makes, in slots of one size (the fake's own
// cuptiActivityGetNextRecord steps by it).
constexpr size_t kSlot = (std::max(sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityMarker2)) + 7) / 8 * 8;
struct Slot {
  alignas(8) uint8_t bytes[kSlot];
};

struct FakeState {
  std::mutex mutex;
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<int> domains;                // whole domains enabled
  std::set<std::pair<int, int>> cbids;  // (domain, cbid) enabled
  std::set<int> kinds;                  // activity kinds enabled
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::vector<Slot> pending;
  uint32_t next_correlation = 1;
  uint32_t next_marker = 1;
  std::deque<std::string> names;  // MARKER records' names, alive until the process ends
  int subscribes = 0, finalizes = 0;
  CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
};

FakeState& state() {
  static FakeState s;
  return s;
}

constexpr char kKernelName[] = "fake_kernel";

}  // namespace

extern "C" {

CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  return CUPTI_SUCCESS;
}

// Names the few API ids the fake calls (the collector's default selection
// takes them); every other id is unknown.
CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  *name = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) *name = "cudaLaunchKernel_v7000";
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) *name = "cudaProfilerStart_v4000";
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) *name = "cudaProfilerStop_v4000";
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) *name = "cuLaunchKernel";
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) *name = "cuProfilerStart";
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) *name = "cuProfilerStop";
  }
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  ++s.subscribes;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  s.domains.clear();
  s.cbids.clear();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) s.cbids.insert({domain, static_cast<int>(cbid)});
  else s.cbids.erase({domain, static_cast<int>(cbid)});
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) {
    s.domains.insert(domain);
  } else {
    // As in CUPTI: every callback of the domain is off afterwards.
    s.domains.erase(domain);
    for (auto it = s.cbids.begin(); it != s.cbids.end();) it = it->first == domain ? s.cbids.erase(it) : std::next(it);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId, uint8_t) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId, uint8_t) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityEnableAllSyncRecords(uint8_t) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }

// Which thread ids the records carry: pthread_self values by default, OS
// thread ids (gettid) with CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM.
CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}

// Hands every pending record over in buffers from the collector's pool.
CUptiResult cuptiActivityFlushAll(uint32_t) {
  auto& s = state();
  std::vector<Slot> records;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    std::lock_guard lock(s.mutex);
    records.swap(s.pending);
    request = s.request;
    complete = s.complete;
  }
  size_t next = 0;
  while (next < records.size() && request && complete) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    if (!buffer || size < kSlot) break;  // no buffer: dropped, as CUPTI would
    size_t used = 0;
    while (next < records.size() && used + kSlot <= size) {
      std::memcpy(buffer + used, records[next++].bytes, kSlot);
      used += kSlot;
    }
    complete(nullptr, 0, buffer, size, used);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* at = *record ? reinterpret_cast<uint8_t*>(*record) + kSlot : buffer;
  if (at + kSlot > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(at);
  return CUPTI_SUCCESS;
}

// Detaches everything, as cuptiFinalize does; the next attach numbers
// correlations from 1 again.
CUptiResult cuptiFinalize() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  s.callback = nullptr;
  s.domains.clear();
  s.cbids.clear();
  s.kinds.clear();
  s.request = nullptr;
  s.complete = nullptr;
  s.pending.clear();
  s.next_correlation = 1;
  s.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;  // assumed: the next attach sets it again
  ++s.finalizes;
  return CUPTI_SUCCESS;
}

namespace {
// The subscriber's callback for (domain, cbid), if enabled, called without the lock.
void call_back(int domain, int cbid, const void* data) {
  auto& s = state();
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock(s.mutex);
    if (!s.subscribed || !(s.domains.count(domain) || s.cbids.count({domain, cbid}))) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  callback(userdata, static_cast<CUpti_CallbackDomain>(domain), static_cast<CUpti_CallbackId>(cbid), data);
}
}  // namespace

void fake_cupti_api(int domain, int cbid, int site) {
  CUpti_CallbackData data;
  std::memset(&data, 0, sizeof(data));
  data.callbackSite = site == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT;
  data.functionName = "fake_api";
  call_back(domain, cbid, &data);
}

// A kernel activity record for the next flush, when kernels are enabled; s.mutex held.
static void queue_kernel(FakeState& s, const char* name, uint64_t start_ns, uint64_t end_ns, uint32_t correlation) {
  if (!s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start_ns;
  k.end = end_ns;
  k.correlationId = correlation;
  k.name = name;
  Slot slot{};
  std::memcpy(slot.bytes, &k, sizeof k);
  s.pending.push_back(slot);
}

// A MARKER record (a range's start or end) when MARKER is enabled; s.mutex held.
static void queue_marker(FakeState& s, uint32_t flags, uint32_t id, const char* name) {
  if (!s.kinds.count(CUPTI_ACTIVITY_KIND_MARKER)) return;
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  cuptiGetTimestamp(&m.timestamp);
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = static_cast<uint32_t>(getpid());
  // As CUPTI: the calling thread's pthread_self value, or its OS id when asked for system ids.
  m.objectId.pt.threadId = s.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                               ? static_cast<uint32_t>(gettid())
                               : static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self()));
  if (name) {
    s.names.emplace_back(name);
    m.name = s.names.back().c_str();
  }
  Slot slot{};
  std::memcpy(slot.bytes, &m, sizeof m);
  s.pending.push_back(slot);
}

void fake_cupti_launch(uint64_t start_ns, uint64_t end_ns, int driver_inside) {
  fake_cupti_named_launch(kKernelName, start_ns, end_ns, driver_inside);
}

void fake_cupti_named_launch(const char* name, uint64_t start_ns, uint64_t end_ns, int driver_inside) {
  auto& s = state();
  uint32_t correlation = 0;
  {
    std::lock_guard lock(s.mutex);
    correlation = s.next_correlation++;
  }
  int32_t result = 0;
  uint64_t correlation_data = 0;
  CUpti_CallbackData data;
  std::memset(&data, 0, sizeof(data));
  data.functionName = "cudaLaunchKernel";
  data.correlationId = correlation;
  data.correlationData = &correlation_data;
  data.callbackSite = CUPTI_API_ENTER;
  call_back(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
  if (driver_inside) {
    CUpti_CallbackData inner = data;
    inner.functionName = "cuLaunchKernel";
    inner.callbackSite = CUPTI_API_ENTER;
    call_back(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &inner);
    inner.callbackSite = CUPTI_API_EXIT;
    inner.functionReturnValue = &result;
    call_back(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &inner);
  }
  data.callbackSite = CUPTI_API_EXIT;
  data.functionReturnValue = &result;
  call_back(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
  std::lock_guard lock(s.mutex);
  queue_kernel(s, name, start_ns, end_ns, correlation);
}

// This thread's pushed ranges (their MARKER ids), kept whether or not MARKER
// records are on, as CUPTI's NVTX handler keeps its own stack.
static thread_local std::vector<uint32_t> t_marker_stack;

// CUPTI handles the NVTX call (its MARKER record, when MARKER is on) and then
// calls the subscriber back: the callback carries the call's return value
// (functionReturnValue: the push level, nvtxRangeStart's id), so it comes
// after the call was handled.
void fake_cupti_nvtx_push(const char* message) {
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    const uint32_t id = s.next_marker++;
    t_marker_stack.push_back(id);
    queue_marker(s, CUPTI_ACTIVITY_FLAG_MARKER_START, id, message);
  }
  int level = static_cast<int>(t_marker_stack.size()) - 1;
  nvtxRangePushA_params params{message};
  CUpti_NvtxData data{"fake_nvtx", &params, &level};
  call_back(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &data);
}

void fake_cupti_nvtx_pop() {
  auto& s = state();
  int level = -1;
  if (!t_marker_stack.empty()) {
    std::lock_guard lock(s.mutex);
    level = static_cast<int>(t_marker_stack.size()) - 1;
    queue_marker(s, CUPTI_ACTIVITY_FLAG_MARKER_END, t_marker_stack.back(), nullptr);
    t_marker_stack.pop_back();
  }
  CUpti_NvtxData data{"fake_nvtx", nullptr, &level};
  call_back(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &data);
}

void fake_cupti_kernel(uint64_t start_ns, uint64_t end_ns) { fake_cupti_named_kernel(kKernelName, start_ns, end_ns); }

void fake_cupti_named_kernel(const char* name, uint64_t start_ns, uint64_t end_ns) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
    queue_kernel(s, name, start_ns, end_ns, s.next_correlation++);
}

FakeCuptiCounts fake_cupti_counts() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return {s.subscribes, s.finalizes, s.subscribed ? 1 : 0, s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ? 1 : 0,
          s.domains.count(CUPTI_CB_DOMAIN_RUNTIME_API) ? 1 : 0};
}

}  // extern "C"
