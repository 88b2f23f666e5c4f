#pragma once
// Options of the injected collector. `scalescope profile` turns its command
// line into SCALESCOPE_* environment variables (inherited by every child and
// torchrun rank); the collector parses them back in each process.
//
//   auto env = to_environment(options);           // profile side
//   auto opts = parse_collector_options(env);     // collector side

#include <cstdint>
#include <string>
#include <string_view>

#include "collect/host_facts.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

enum class ApiMode : uint8_t { kDefault = 0, kAll, kNone };
enum class CaptureRange : uint8_t { kNone = 0, kNvtx, kCudaProfilerApi };
// How the API calls of --api default are recorded (SCALESCOPE_API_RECORDS):
// the collector's own enter/exit timestamps taken in CUPTI's callbacks for
// the chosen ids (the default), or CUPTI's RUNTIME/DRIVER activity records
// (cuptiActivityEnableRuntimeApi per callback id). Same fields either way:
// name, thread, start, end, correlation id, return code. On H200 with CUDA
// 13.0 the activity records of the chosen ids never came in sampled or
// cudaProfilerApi windows (0 launch calls for 98,100 kernels, bench/RESULTS.md
// while the callbacks gave every kernel its launch. --api all
// always uses the activity records.
enum class ApiRecords : uint8_t { kCallbacks = 0, kActivity };

// CUPTI activity groups (--activities), a bit set like nsys's --trace groups:
// kernel = CONCURRENT_KERNEL, memcpy = MEMCPY + MEMCPY2, memset = MEMSET,
// sync = SYNCHRONIZATION, nvtx = MARKER. API records stay under --api.
inline constexpr uint32_t kActivityKernel = 1u << 0;
inline constexpr uint32_t kActivityMemcpy = 1u << 1;
inline constexpr uint32_t kActivityMemset = 1u << 2;
inline constexpr uint32_t kActivitySync = 1u << 3;
inline constexpr uint32_t kActivityNvtx = 1u << 4;
inline constexpr uint32_t kAllActivities =
    kActivityKernel | kActivityMemcpy | kActivityMemset | kActivitySync | kActivityNvtx;
// The default leaves out SYNCHRONIZATION records: CUPTI's hooks for them cost
// about 20 % of a DDP step (bench/RESULTS.md), while the synchronizing calls
// themselves are already recorded as API calls (--api default), which is
// what the analyses fall back to. `sync` adds the records (stream and event ids).
inline constexpr uint32_t kDefaultActivities = kAllActivities & ~kActivitySync;

struct CollectorOptions {
  std::string run_dir;                         // SCALESCOPE_RUN_DIR (required to trace)
  ApiMode api = ApiMode::kDefault;             // SCALESCOPE_API=default|all|none
  double delay_s = 0;                          // SCALESCOPE_DELAY: start tracing this long after CUDA init
  double duration_s = 0;                       // SCALESCOPE_DURATION: stop after this long (0 = until exit)
  CaptureRange capture = CaptureRange::kNone;  // SCALESCOPE_CAPTURE_RANGE=nvtx:NAME|cudaProfilerApi
  std::string capture_name;                    // the NVTX range name for kNvtx
  double nvml_hz = 10;                         // SCALESCOPE_NVML_HZ (0 = off)
  double host_hz = 100;                      // SCALESCOPE_HOST_HZ: host thread sampler, every traced process (0 = off)
  bool host_stacks = true;                   // SCALESCOPE_HOST_STACKS=0: no native call stacks (perf_event_open)
  uint32_t buffer_mb = 64;                   // SCALESCOPE_BUFFER_MB: the whole pool, bounded memory
  bool discard = false;                      // SCALESCOPE_DISCARD=1: enable CUPTI, keep nothing (overhead floor)
  uint32_t activities = kDefaultActivities;  // SCALESCOPE_ACTIVITIES=kernel,memcpy,memset,nvtx
  ApiRecords api_records = ApiRecords::kCallbacks;  // SCALESCOPE_API_RECORDS=callbacks|activity
  // SCALESCOPE_DETACH=0 keeps CUPTI attached between capture windows. By
  // default a window that closes detaches CUPTI (cuptiFinalize) and attaches
  // it again with only the window's trigger callbacks, because disabling the
  // activity kinds leaves CUPTI's hooks in place and the job slow.
  bool detach = true;
  // Sampled windows by iteration (the default when no --delay, --duration or
  // --capture-range is given, and not --full): iterations are NVTX ranges
  // named iteration_range or iteration_range#N (PyTorch's ProfilerStep#N);
  // skip warm-up iterations, trace `iterations`, detach, and open a new window
  // every `repeat_every` iterations (0: once). A job without such ranges is
  // traced from start to end. SCALESCOPE_FULL=1, SCALESCOPE_ITERATION_RANGE,
  // SCALESCOPE_SKIP_ITERATIONS, SCALESCOPE_ITERATIONS, SCALESCOPE_REPEAT_EVERY.
  bool full = false;
  std::string iteration_range = "ProfilerStep";
  uint64_t skip_iterations = 10;
  uint64_t iterations = 20;
  uint64_t repeat_every = 0;
  // SCALESCOPE_WINDOWS_EVERY (seconds; 0: off): a window of `iterations`
  // about this often by the clock, for long jobs; like `scalescope trigger`,
  // it goes through the run directory's control/ folder, so every process
  // of the job opens it at the same iteration.
  double windows_every_s = 0;
  // --hang-after: when no process of the job has begun an iteration for this
  // long, every process writes its hang dump (control/hang/); 0 = off. Also
  // takes NVTX through the collector's own hooks, which feed the ring of
  // NCCL calls the dump holds.
  double hang_after_s = 0;
  // True when the windows come from iterations (see above).
  bool sampled() const { return !full && capture == CaptureRange::kNone && delay_s <= 0 && duration_s <= 0; }
};

// Parses the SCALESCOPE_* variables; Error naming the variable on bad values.
CollectorOptions parse_collector_options(const Environment& env);
// The inverse: every option, defaults included (so that none is inherited
// from a variable the user exported), plus the run dir.
Environment to_environment(const CollectorOptions& options);

// Error when a repeated window would leave no iteration untraced, or the
// iteration range name is empty.
void validate_sampling(const CollectorOptions& options);
// "nvtx:NAME" / "cudaProfilerApi" / "" -> capture fields; Error otherwise.
void parse_capture_range(std::string_view text, CollectorOptions& options);
std::string format_capture_range(const CollectorOptions& options);
ApiMode parse_api_mode(std::string_view text);  // Error on unknown
// "kernel,memcpy" -> kActivityKernel | kActivityMemcpy; "all" -> kAllActivities.
// Error on an unknown or empty name, or an empty list.
uint32_t parse_activities(std::string_view text);
std::string format_activities(uint32_t activities);  // "kernel,memcpy,memset,sync,nvtx" order
std::string_view to_string(ApiMode mode);
ApiRecords parse_api_records(std::string_view text);  // "activity" | "callbacks"; Error otherwise
std::string_view to_string(ApiRecords records);

// The API calls that matter, recorded by default (--api default): kernel
// launches (incl. cuLaunchKernelEx, which NCCL uses), copies, sets,
// synchronizations, stream waits, malloc/free, graph launches and the
// profiler start/stop calls. `name` is CUPTI's callback name
// ("cudaLaunchKernel_v7000" or "cuLaunchKernelEx").
bool is_default_api(trace::ApiDomain domain, std::string_view name);

}  // namespace scalescope::collect
