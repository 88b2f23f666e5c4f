// Launch-rate probe of the collector's cost, the worst case for a
// CUPTI collector: empty kernels launched back to back from
// one thread, timed in blocks. A launch-bound job pays every API callback and
// every kernel record in full, so the figure bounds what a real job pays.
// Each block reports wall time and the launching thread's CPU time: on a
// shared GPU host the uninjected job's wall-clock blocks ranged
// 219-308 K launches/s (other tenants' load), which hides a 1 % effect; the
// thread's CPU time per launch does not count time taken by other processes.
//
//   launch_rate [--pairs N] [--lead N] [--launches N] [--on cuda-profiler|nothing] [--settle-ms MS]
//               [--call launch|get-device|stream-query]
//
// --call picks what a block repeats (the JSON keeps the name "launches"):
// launch (default) an empty kernel; get-device cudaGetDevice (a runtime call
// that stays in the runtime: tens of ns); stream-query cudaStreamQuery on an
// idle stream (runtime and driver). The cheap calls magnify a hook that runs
// on every API call: one of a few ns is a large fraction of them, where it
// is lost in a launch's ~4 us and in the noise between processes.
//
// Order: a warm-up block, N lead blocks (before any window), then N pairs of
// blocks in ABBA order (off,on / on,off / ...). An "on" block is a
// cudaProfilerStart/Stop window (run under `scalescope profile
// --capture-range cudaProfilerApi`); with --on nothing both blocks are plain
// (the method's own noise, and the uninjected speed). Before each "off" block
// that follows an "on" block the thread sleeps --settle-ms (default 800) around
// one API call (in every job, so that the GPU idles alike), so that the collector has detached CUPTI (0.5 s after the
// window closed, at the next API exit) and attached it again: the "off" block then measures the state between windows,
// not the grace time.
//
// One JSON line per block on stdout: phase (warmup|lead|off|on), pair,
// launches, seconds, launches_per_s, cpu_seconds (the launching thread's),
// launches_per_cpu_s, enqueue_seconds (the launch loop without the final
// synchronisation), instructions (user-mode instructions the launching thread
// retired in the launch loop, from perf_event_open; null where the host does
// not allow it) and launches_per_ginstr.
//
// Why instructions: on the H200 hosts the thread's CPU time equal to its wall
// time block for block (the thread never waits), so both carry the same
// +-15 % of CPU speed that other tenants cause. The instructions a launch
// executes do not depend on clock speed or cache contention: a per-call hook
// that stays installed between windows shows up in them directly.
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

__global__ void empty_kernel() {}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "launch_rate: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// User-mode instructions retired by this thread (a hardware counter through
// perf_event_open); fd -1 where the kernel or the container refuses it.
class InstructionCounter {
 public:
  InstructionCounter() {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2; the launch path is user-mode
    attr.exclude_hv = 1;
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1, -1, 0));
  }
  ~InstructionCounter() {
    if (fd_ >= 0) close(fd_);
  }
  bool available() const { return fd_ >= 0; }
  long long read_now() const {
    long long v = -1;
    if (fd_ < 0 || ::read(fd_, &v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) return -1;
    return v;
  }

 private:
  int fd_ = -1;
};

// Wall time, the launching thread's CPU time and its instructions of one block.
struct BlockTime {
  double seconds, cpu_seconds, enqueue_seconds;
  long long instructions;  // -1: not available
};

enum class Call { kLaunch, kGetDevice, kStreamQuery };

BlockTime time_block(cudaStream_t stream, long launches, const InstructionCounter& counter, Call call) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_seconds();
  const long long i0 = counter.read_now();
  int device = 0;
  switch (call) {
    case Call::kLaunch:
      for (long i = 0; i < launches; ++i) empty_kernel<<<1, 1, 0, stream>>>();
      break;
    case Call::kGetDevice:
      for (long i = 0; i < launches; ++i) check(cudaGetDevice(&device), "cudaGetDevice");
      break;
    case Call::kStreamQuery:
      for (long i = 0; i < launches; ++i) check(cudaStreamQuery(stream), "cudaStreamQuery");
      break;
  }
  const long long i1 = counter.read_now();
  auto t1 = std::chrono::steady_clock::now();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), thread_cpu_seconds() - c0,
          std::chrono::duration<double>(t1 - t0).count(), i0 >= 0 && i1 >= i0 ? i1 - i0 : -1};
}

void report(const char* phase, int pair, long launches, BlockTime t) {
  std::printf(
      "{\"phase\": \"%s\", \"pair\": %d, \"launches\": %ld, \"seconds\": %.6f, \"launches_per_s\": %.1f, "
      "\"cpu_seconds\": %.6f, \"launches_per_cpu_s\": %.1f, \"enqueue_seconds\": %.6f, ",
      phase, pair, launches, t.seconds, launches / t.seconds, t.cpu_seconds,
      t.cpu_seconds > 0 ? launches / t.cpu_seconds : 0.0, t.enqueue_seconds);
  if (t.instructions > 0)
    std::printf("\"instructions\": %lld, \"launches_per_ginstr\": %.1f}\n", t.instructions,
                launches / (t.instructions * 1e-9));
  else std::printf("\"instructions\": null, \"launches_per_ginstr\": null}\n");
  std::fflush(stdout);
}

long parse_long(const char* flag, const char* text, long min) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end || v < min) {
    std::fprintf(stderr, "launch_rate: %s: expected an integer >= %ld, got '%s'\n", flag, min, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long pairs = 10, lead = 3, launches = 100000, settle_ms = 800;
  bool windows = true;
  Call call = Call::kLaunch;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "launch_rate: %s needs a value\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--pairs") pairs = parse_long("--pairs", v, 1);
    else if (a == "--lead") lead = parse_long("--lead", v, 0);
    else if (a == "--launches") launches = parse_long("--launches", v, 1);
    else if (a == "--settle-ms") settle_ms = parse_long("--settle-ms", v, 0);
    else if (a == "--call") {
      if (std::strcmp(v, "launch") == 0) call = Call::kLaunch;
      else if (std::strcmp(v, "get-device") == 0) call = Call::kGetDevice;
      else if (std::strcmp(v, "stream-query") == 0) call = Call::kStreamQuery;
      else {
        std::fprintf(stderr, "launch_rate: --call: launch, get-device or stream-query, got '%s'\n", v);
        return 2;
      }
    } else if (a == "--on") {
      if (std::strcmp(v, "cuda-profiler") == 0) windows = true;
      else if (std::strcmp(v, "nothing") == 0) windows = false;
      else {
        std::fprintf(stderr, "launch_rate: --on: cuda-profiler or nothing, got '%s'\n", v);
        return 2;
      }
    } else {
      std::fprintf(stderr, "launch_rate: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const InstructionCounter counter;
  if (!counter.available())
    std::fprintf(stderr, "launch_rate: no instruction counter here (perf_event_open: %s); instructions are null\n",
                 std::strerror(errno));
  report("warmup", -1, launches, time_block(stream, launches, counter, call));
  for (int i = 0; i < lead; ++i) report("lead", -1, launches, time_block(stream, launches, counter, call));
  bool after_stop = false;
  for (int p = 0; p < pairs; ++p) {
    const bool on_first = p % 2 == 1;  // ABBA: off,on / on,off / off,on ...
    for (int k = 0; k < 2; ++k) {
      const bool on = (k == 0) == on_first;
      if (!on && after_stop && settle_ms > 0) {
        // Let the closed window pass its grace time, give the collector the
        // API exit it detaches at, then time to attach again.
        std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms * 3 / 4));
        int device = 0;
        check(cudaGetDevice(&device), "cudaGetDevice");
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms / 4));
      }
      if (on && windows) check(cudaProfilerStart(), "cudaProfilerStart");
      const BlockTime s = time_block(stream, launches, counter, call);
      if (on && windows) check(cudaProfilerStop(), "cudaProfilerStop");
      after_stop = on;  // the uninjected job settles at the same places: the GPU idles alike
      report(on ? "on" : "off", p, launches, s);
    }
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
