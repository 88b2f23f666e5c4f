#pragma once
// Control side of the fake CUPTI (libcupti.so.13 for tests on machines without
// a GPU). The collector links the real CUPTI's entry points; a test process
// that puts this library first on LD_LIBRARY_PATH gets these instead, and
// drives them as CUDA would: API callbacks, kernel records, buffers. It
// models what the collector relies on (one subscriber, callbacks per domain
// and id, activity kinds, kernel and NVTX MARKER records, buffer hand-over,
// cuptiFinalize dropping all of it and correlation ids starting over), not
// CUPTI as a whole.

#include <cstdint>

extern "C" {
// Calls the subscriber's callback for (domain, cbid) at `site` (0 enter, 1
// exit) when that callback is enabled, as CUDA does around an API call.
void fake_cupti_api(int domain, int cbid, int site);
// A kernel launch as the runtime makes it: cudaLaunchKernel's enter and exit
// callbacks (with a correlation id and, when driver_inside, the nested
// cuLaunchKernel callbacks the runtime's own driver call brings), then the
// kernel's record with the same correlation id when CONCURRENT_KERNEL is on.
void fake_cupti_launch(uint64_t start_ns, uint64_t end_ns, int driver_inside);
// The same with the kernel's name (kept by pointer: pass a string literal).
void fake_cupti_named_launch(const char* name, uint64_t start_ns, uint64_t end_ns, int driver_inside);
// nvtxRangePushA(message) / nvtxRangePop() reaching CUPTI's NVTX handler:
// the range's MARKER record (start, end) when MARKER is enabled, then the
// subscriber's NVTX callback when enabled (with the call's return value, as
// CUPTI's: the callback comes after the call was handled).
void fake_cupti_nvtx_push(const char* message);
void fake_cupti_nvtx_pop();
// A kernel that ran from start to end (ns): recorded when
// CONCURRENT_KERNEL is enabled, with the next correlation id.
void fake_cupti_kernel(uint64_t start_ns, uint64_t end_ns);
// The same with a name (kept by pointer until the buffer is handed over: pass
// a string literal), e.g. "ncclDevKernel_AllReduce_Sum_f32_RING_LL".
void fake_cupti_named_kernel(const char* name, uint64_t start_ns, uint64_t end_ns);
// What happened so far: subscribes, cuptiFinalize calls, whether a subscriber
// exists now, whether kernel recording is on, and whether every runtime API
// callback is on (the collector turns the domain on when it wants to detach).
struct FakeCuptiCounts {
  int subscribes;
  int finalizes;
  int subscribed;
  int kernels_enabled;
  int runtime_domain_enabled;
};
FakeCuptiCounts fake_cupti_counts();
}
