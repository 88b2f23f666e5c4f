// What the pieces of libscalescope-collector.so share (collector.cpp,
// capture_window.cpp, trace_encoder.cpp, sidecar.cpp): the one-line warning,
// CUPTI's clock and errors, and the fork flag. Built only into the collector.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <cupti.h>

#include "trace/model/trace.hpp"

namespace scalescope::collect {

// Set in a forked child (pthread_atfork): from then on nothing in the
// collector touches CUDA, CUPTI, threads or files.
extern std::atomic<bool> g_in_child;

// One line "scalescope: warning: ..." on stderr in one write, so that the
// lines of ranks do not interleave.
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A CUPTI entry point looked up at run time: the CUPTI of the GPU host may
// be older than the headers (cuptiActivityGetNvtxExtPayloadAttr is CUDA 13+).
void* cupti_symbol(const char* name);

std::string cupti_error(CUptiResult r);

// Test hook: SCALESCOPE_TEST_CLOCK_OFFSET_NS makes this process read the Unix
// clock that far off, as a host whose clock NTP has not caught up with would
// (the simulated two-node test, collect/fakes/two_node_test.cpp). Recorded in
// the trace's extra facts, so such a trace is never mistaken for a real one.
int64_t test_clock_offset_ns();
int64_t unix_now_ns();
trace::Timestamp cupti_now();  // 0 when CUPTI does not answer
// The calling thread's OS id (gettid), the id the host sampler, CUPTI's
// records (cuptiSetThreadIdType SYSTEM) and the API and NVTX records share,
// so that one thread is one track.
uint32_t os_thread_id();

// SCALESCOPE_NVTX_RECORDS=hooks: NVTX is handled by the collector's own hooks
// (nvtx_hooks.hpp) instead of CUPTI's (the default, "cupti"). Read once: NVTX
// may load the collector before CUDA does.
bool nvtx_records_by_hooks();

}  // namespace scalescope::collect
