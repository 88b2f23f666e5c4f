// A process without CUDA that loads the real collector over the fake CUPTI
// (LD_LIBRARY_PATH) and plays a job's capture windows, for
// collector_windows_test. Usage: collector_windows_host COLLECTOR MODE
//   repeat: start, 3 kernels, stop, start at once (window reopened), 2
//           kernels, stop; then API exits until CUPTI is detached (for 1.5 s
//           with SCALESCOPE_DETACH=0), then until it is attached again; 4 kernels outside any
//           window; start, 5 kernels, stop.
//   timed:  (run with SCALESCOPE_DURATION) 2 kernels, API exits on another
//           thread until CUPTI is detached, 3 more kernels.
//   missed: a stop with no start, through the runtime, then one through the driver alone.
//   stray-detach: a window, then a stray stop that CUPTI is detached in, then a window.
//   sampler: 400 ms; with HAND_OVER set, a ranked sampler's marker
//           (SCALESCOPE_RUN_DIR/nvml-<host>.rank) appears after 200 ms.
//   nvtx:   (capture range nvtx:capture) push "step", push "capture", 3
//           kernels, pop, pop; API exits until detached, then until attached
//           again; 4 kernels outside; push "capture", 5 kernels, pop.
//   iterations: a training loop of HOST_STEPS (40) iterations, each an NVTX
//           range "ProfilerStep#N" (or HOST_MARKER, unnumbered) around 2
//           kernels starting at N * 1e6 ns and an API exit; 2 kernels at 500 ns
//           before the loop. An iteration sleeps 30 ms while kernels are
//           recorded and 20 ms otherwise (a known perturbation of +50 %). The
//           iteration after a window closes makes API exits until CUPTI is
//           detached and attached again, as a job's launches would.
//           With HOST_LAUNCH set, every kernel comes from a cudaLaunchKernel
//           call (enter and exit callbacks, the same correlation id); the
//           second of each step's with the runtime's nested cuLaunchKernel.
//           With HOST_PROFILER_AROUND set, cudaProfilerStart before the loop
//           and cudaProfilerStop after it; HOST_PROFILER_AROUND=settle then
//           makes API exits back to back for up to 100 ms, stopping at once
//           if CUPTI detaches, before the first iteration's range (a job's
//           setup between the two).
//           With HOST_STEP_MARKS set, the iterations are marked as the
//           Python bootstrap marks optimizer steps: scalescope_step_mark(N)
//           where step N begins (and once after the last), no NVTX range;
//           the host prints mark_windows=K, the marks that answered 1, and
//           detached_steps=K, the steps that began with no CUPTI subscriber.
//           HOST_STEP_MARKS=both: the marks and the NVTX ranges.
//   profiler-iterations: as iterations, but each iteration is a
//           cudaProfilerStart ... cudaProfilerStop pair (no NVTX range).
//   plain:  5 kernels and API exits, no NVTX range at all.
//   hang:   (real NVTX) HOST_STEPS iterations of one "ncclAllReduce" range
//           each (comm 0xC0FFEE, 4096 bytes); at iteration HOST_HANG_AT the
//           rank HOST_HANG_RANK stops before its all-reduce, the others inside
//           it, for HOST_HANG_S seconds (a planted hang).
//   With HOST_NVTX=real, the NVTX ranges of these modes go through NVTX
//   itself (nvtx3, which loads NVTX_INJECTION64_PATH) instead of the fake
//   CUPTI's NVTX callbacks.
//   nvtx-content: (real NVTX; run traced whole) push "outer", push "inner",
//           mark "tick", pop, pop; "across" started on one thread and ended
//           on another; a "worker" range on each of two threads; NCCL's
//           domain, registered string, reduction enum and AllReduce payload
//           schema, and an "ncclAllReduce" range (comm 0xC0FFEE, 4096 bytes,
//           Sum) around the launch of an NCCL kernel; a range pushed in a
//           forked child (which must stay untraced and unharmed).
//   workers: (host sampler) 100 ms, then forks a worker that spins until
//           the sampler holds its stat file open (found), as long again and
//           at least 300 ms more, and 50 ms of its own CPU time (each wait
//           ends by 30 s); reaped; 300 ms more. Prints worker=PID found_ms=N.
// Prints "subscribes=N finalizes=N detach_ms=N tid=N" (tid: the main thread's OS id) and exits 0; the collector
// writes its trace at exit.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "collect/fakes/fake_cupti.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using CountsFn = FakeCuptiCounts (*)();
using ApiFn = void (*)(int, int, int);
using KernelFn = void (*)(uint64_t, uint64_t);
using LaunchFn = void (*)(uint64_t, uint64_t, int);
using PushFn = void (*)(const char*);
using PopFn = void (*)();
using NamedLaunchFn = void (*)(const char*, uint64_t, uint64_t, int);

CountsFn counts;
ApiFn api;
KernelFn kernel;
LaunchFn launch;
PushFn push;
PopFn pop;
uint64_t fake_ns = 1000;

void kernels(int n) {
  for (int i = 0; i < n; ++i, fake_ns += 100) kernel(fake_ns, fake_ns + 50);
}
// As the CUDA runtime does it: cudaProfilerStart/Stop call cuProfilerStart/Stop
// inside, so the driver's callbacks nest within the runtime's (seen on H200:
// one stop used to count twice).
void profiler_start() {
  api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 0);
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 0);
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
  api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 1);
}
void profiler_stop() {
  api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 0);
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 0);
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 1);
  api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 1);
}
// A driver-only program (cuProfilerStop without the runtime).
void driver_profiler_stop() {
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 0);
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 1);
}
// Some other API call (a launch) ending: where the collector may detach.
void other_api_exit() { api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1); }

// How long the host makes API exits for a detach or attach that the scenario
// expects. The wait ends as soon as it comes; the limit only has to outlast a
// loaded machine (under the sanitizers 1.5 s did not).
constexpr std::chrono::milliseconds kExpectedWithin = std::chrono::seconds(20);

template <typename Pred>
bool api_exits_until(Pred done, std::chrono::milliseconds limit = kExpectedWithin) {
  auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    other_api_exit();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// As NCCL (2.18+) does it: its domain, registered names, and payloads by schema.
struct FakeNccl {
  struct AllReduce {
    uint64_t comm;
    size_t bytes;
    int op;
  };
  nvtxDomainHandle_t domain = nullptr;
  nvtxStringHandle_t name = nullptr;
  nvtxPayloadData_t data{};

  static FakeNccl make() {
    FakeNccl f;
    f.domain = nvtxDomainCreateA("NCCL");
    static const nvtxPayloadEnum_t red_ops[] = {{"Sum", 0, 0}, {"Prod", 1, 0}, {"Max", 2, 0}};
    nvtxPayloadEnumAttr_t ops{};
    ops.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                    NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    ops.entries = red_ops;
    ops.numEntries = 3;
    ops.sizeOfEnum = sizeof(int);
    ops.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 0x100;
    nvtxPayloadEnumRegister(f.domain, &ops);
    static const nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(AllReduce, comm), nullptr,
         nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(AllReduce, bytes), nullptr,
         nullptr},
        {0, NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 0x100, "Reduction operation", nullptr, 0, offsetof(AllReduce, op),
         nullptr, nullptr}};
    nvtxPayloadSchemaAttr_t schema{};
    schema.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                       NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                       NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    schema.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    schema.entries = entries;
    schema.numEntries = 3;
    schema.payloadStaticSize = sizeof(AllReduce);
    schema.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
    nvtxPayloadSchemaRegister(f.domain, &schema);
    f.name = nvtxDomainRegisterStringA(f.domain, "ncclAllReduce");
    return f;
  }
  // An "ncclAllReduce" range pushed with `payload` (which must outlive the push).
  void push(const AllReduce* payload) {
    data = {NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5, sizeof(*payload), payload};
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = name;
    attr.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    attr.reserved0 = 1;
    attr.payload.ullValue = reinterpret_cast<uintptr_t>(&data);
    nvtxDomainRangePushEx(domain, &attr);
  }
  void pop() { nvtxDomainRangePop(domain); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  void* collector = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!collector) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  void* cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!cupti || !dlsym(cupti, "fake_cupti_counts")) {
    std::fprintf(stderr, "the collector did not load the fake CUPTI (LD_LIBRARY_PATH)\n");
    return 4;
  }
  counts = reinterpret_cast<CountsFn>(dlsym(cupti, "fake_cupti_counts"));
  api = reinterpret_cast<ApiFn>(dlsym(cupti, "fake_cupti_api"));
  kernel = reinterpret_cast<KernelFn>(dlsym(cupti, "fake_cupti_kernel"));
  push = reinterpret_cast<PushFn>(dlsym(cupti, "fake_cupti_nvtx_push"));
  pop = reinterpret_cast<PopFn>(dlsym(cupti, "fake_cupti_nvtx_pop"));
  launch = reinterpret_cast<LaunchFn>(dlsym(cupti, "fake_cupti_launch"));
  auto init = reinterpret_cast<int (*)()>(dlsym(collector, "InitializeInjection"));
  auto named_launch = reinterpret_cast<NamedLaunchFn>(dlsym(cupti, "fake_cupti_named_launch"));
  if (!init || !counts || !api || !kernel || !push || !pop || !launch || !named_launch) return 5;
  if (const char* v = std::getenv("HOST_NVTX"); v && std::strcmp(v, "real") == 0) {
    push = [](const char* text) { nvtxRangePushA(text); };
    pop = [] { nvtxRangePop(); };
  }
  init();
  long detach_ms = -1;
  if (std::strcmp(argv[2], "repeat") == 0) {
    profiler_start();
    kernels(3);
    profiler_stop();
    profiler_start();  // at once: the same attach must serve it
    kernels(2);
    profiler_stop();
    auto closed = Clock::now();
    // With SCALESCOPE_DETACH=0 no detach may come: 1.5 s is three times the
    // grace after which it would.
    const char* detach = std::getenv("SCALESCOPE_DETACH");
    const bool none_due = detach && std::strcmp(detach, "0") == 0;
    if (api_exits_until([] { return counts().finalizes > 0; },
                        none_due ? std::chrono::milliseconds(1500) : kExpectedWithin))
      detach_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - closed).count();
    api_exits_until([] { return counts().subscribed == 1; });
    kernels(4);  // outside any window
    profiler_start();
    kernels(5);
    profiler_stop();
  } else if (std::strcmp(argv[2], "timed") == 0) {
    kernels(2);
    auto opened = Clock::now();
    std::thread other([&] {  // a timed window detaches at any thread's API exit
      if (api_exits_until([] { return counts().finalizes > 0; }))
        detach_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - opened).count();
    });
    other.join();
    kernels(3);
  } else if (std::strcmp(argv[2], "nvtx") == 0) {
    push("step");
    push("capture");
    kernels(3);
    pop();
    auto closed = Clock::now();
    pop();
    if (api_exits_until([] { return counts().finalizes > 0; }))
      detach_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - closed).count();
    api_exits_until([] { return counts().subscribed == 1; });
    kernels(4);
    push("capture");
    kernels(5);
    pop();
  } else if (std::strcmp(argv[2], "iterations") == 0) {
    const int steps = std::getenv("HOST_STEPS") ? std::atoi(std::getenv("HOST_STEPS")) : 40;
    const char* marker = std::getenv("HOST_MARKER");
    const bool launches = std::getenv("HOST_LAUNCH") != nullptr;
    auto run_kernel = [&](uint64_t start, uint64_t end, int driver_inside) {
      if (launches) launch(start, end, driver_inside);
      else kernel(start, end);
    };
    run_kernel(500, 600, 0);
    run_kernel(700, 800, 1);
    const bool around = std::getenv("HOST_PROFILER_AROUND") != nullptr;
    if (around) profiler_start();
    if (around && std::strcmp(std::getenv("HOST_PROFILER_AROUND"), "settle") == 0) {
      // Back to back, so that the first range follows a detach by microseconds.
      for (auto end = Clock::now() + std::chrono::milliseconds(100); counts().finalizes == 0 && Clock::now() < end;)
        other_api_exit();
    }
    using StepMarkFn = int (*)(uint64_t);
    auto step_mark = std::getenv("HOST_STEP_MARKS")
                         ? reinterpret_cast<StepMarkFn>(dlsym(collector, "scalescope_step_mark"))
                         : nullptr;
    if (std::getenv("HOST_STEP_MARKS") && !step_mark) return 6;
    const bool ranges = !step_mark || std::strcmp(std::getenv("HOST_STEP_MARKS"), "both") == 0;
    int mark_windows = 0, detached_steps = 0;
    bool recorded_before = counts().kernels_enabled != 0;  // the window open before the loop
    for (int step = 0; step < steps; ++step) {
      std::string name = marker ? std::string(marker) : "ProfilerStep#" + std::to_string(step);
      const int finalizes = counts().finalizes;
      if (ranges) push(name.c_str());
      if (step_mark) mark_windows += step_mark(uint64_t(step)) == 1;
      detached_steps += counts().subscribed == 0;
      const bool recorded = counts().kernels_enabled != 0;
      // Marked by step marks alone, the collector stays detached until the
      // next window is near: wait for the detach only.
      if (recorded_before && !recorded)
        api_exits_until(
            [&] { return counts().finalizes > finalizes && (counts().subscribed == 1 || !ranges); });
      const uint64_t t = uint64_t(step) * 1000000 + 1000;
      run_kernel(t, t + 100, 0);
      run_kernel(t + 200, t + 300, 1);
      other_api_exit();
      std::this_thread::sleep_for(std::chrono::milliseconds(recorded ? 30 : 20));
      if (ranges) pop();
      recorded_before = recorded;
    }
    if (step_mark) {
      step_mark(uint64_t(steps));  // the end of the last step
      std::printf("mark_windows=%d detached_steps=%d\n", mark_windows, detached_steps);
    }
    if (around) profiler_stop();
  } else if (std::strcmp(argv[2], "hang") == 0) {
    // A planted hang: every rank runs HOST_STEPS iterations "ProfilerStep#N"
    // of one all-reduce each; at iteration HOST_HANG_AT, rank HOST_HANG_RANK
    // stops before its all-reduce and the others stop inside it, for
    // HOST_HANG_S seconds (or until killed), then return without closing.
    const int steps = std::getenv("HOST_STEPS") ? std::atoi(std::getenv("HOST_STEPS")) : 40;
    const int hang_at = std::getenv("HOST_HANG_AT") ? std::atoi(std::getenv("HOST_HANG_AT")) : -1;
    const bool stops_before = std::getenv("HOST_HANG_RANK") && std::getenv("RANK") &&
                              std::strcmp(std::getenv("HOST_HANG_RANK"), std::getenv("RANK")) == 0;
    const double hang_s = std::getenv("HOST_HANG_S") ? std::atof(std::getenv("HOST_HANG_S")) : 3;
    FakeNccl nccl = FakeNccl::make();
    FakeNccl::AllReduce payload{0xC0FFEE, 4096, 0};
    auto stall = [&] { std::this_thread::sleep_for(std::chrono::duration<double>(hang_s)); };
    for (int step = 0; step < steps; ++step) {
      const std::string name = "ProfilerStep#" + std::to_string(step);
      nvtxRangePushA(name.c_str());
      if (step == hang_at && stops_before) {
        stall();
        break;
      }
      nccl.push(&payload);
      if (step == hang_at) {
        stall();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      nccl.pop();
      nvtxRangePop();
    }
  } else if (std::strcmp(argv[2], "profiler-iterations") == 0) {
    const int steps = std::getenv("HOST_STEPS") ? std::atoi(std::getenv("HOST_STEPS")) : 40;
    kernel(500, 600);
    kernel(700, 800);
    bool recorded_before = counts().kernels_enabled != 0;
    for (int step = 0; step < steps; ++step) {
      const int finalizes = counts().finalizes;
      profiler_start();
      const bool recorded = counts().kernels_enabled != 0;
      if (recorded_before && !recorded)
        api_exits_until([&] { return counts().finalizes > finalizes && counts().subscribed == 1; });
      const uint64_t t = uint64_t(step) * 1000000 + 1000;
      kernel(t, t + 100);
      kernel(t + 200, t + 300);
      other_api_exit();
      std::this_thread::sleep_for(std::chrono::milliseconds(recorded ? 30 : 20));
      profiler_stop();
      recorded_before = recorded;
    }
  } else if (std::strcmp(argv[2], "plain") == 0) {
    kernels(5);
    for (int i = 0; i < 5; ++i) other_api_exit();
  } else if (std::strcmp(argv[2], "workers") == 0) {
    // Waits on conditions, not fixed times, so that a loaded machine (the
    // worker starved of CPU, the sampler's ticks late) only makes it slower:
    // the worker spins until it has used 50 ms of CPU and the parent has
    // seen the sampler find it, and a while longer; every wait ends by 30 s.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int stop_pipe[2];
    if (pipe(stop_pipe) != 0) return 8;
    const auto forked = Clock::now();
    const pid_t worker = fork();
    if (worker == 0) {
      close(stop_pipe[1]);
      fcntl(stop_pipe[0], F_SETFL, O_NONBLOCK);
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      volatile unsigned long x = 0;
      bool told = false;
      char c;
      while (Clock::now() < deadline) {
        for (int i = 0; i < 10000; ++i) x = x + 1;
        told = told || read(stop_pipe[0], &c, 1) >= 0;  // a byte, or EOF: the parent is done waiting
        timespec cpu{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        if (told && cpu.tv_sec * 1000000000ll + cpu.tv_nsec >= 50000000ll) break;
      }
      _exit(0);
    }
    close(stop_pipe[0]);
    // The sampler has found the worker once it holds the worker's stat file open.
    const std::string stat = "/proc/" + std::to_string(worker) + "/task/" + std::to_string(worker) + "/stat";
    auto sampler_holds = [&stat] {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code link_ec;
        if (std::filesystem::read_symlink(e.path(), link_ec) == stat) return true;
      }
      return false;
    };
    const auto found_by = Clock::now() + std::chrono::seconds(30);
    while (!sampler_holds() && Clock::now() < found_by) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const bool was_found = sampler_holds();
    const auto found = Clock::now();
    // Then as long again as finding it took, and at least 300 ms (60 ticks at 200 Hz).
    std::this_thread::sleep_for(
        was_found ? std::max<Clock::duration>(found - forked, std::chrono::milliseconds(300)) : Clock::duration{});
    if (write(stop_pipe[1], "s", 1) != 1) return 9;
    close(stop_pipe[1]);
    int status = 0;
    waitpid(worker, &status, 0);
    std::printf("worker=%d found_ms=%ld ", int(worker),
                was_found ? long(std::chrono::duration_cast<std::chrono::milliseconds>(found - forked).count()) : -1L);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  } else if (std::strcmp(argv[2], "sampler") == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (std::getenv("HAND_OVER")) {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      std::ofstream(std::string(std::getenv("SCALESCOPE_RUN_DIR")) + "/nvml-" + host + ".rank") << "1\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1400));  // the writer looks once a second
  } else if (std::strcmp(argv[2], "stray-detach") == 0) {
    // A stray cudaProfilerStop while a detach is due: CUPTI is finalised at
    // its inner cuProfilerStop exit and its outer exit never comes back. The
    // next window must still open.
    profiler_start();
    kernels(3);
    profiler_stop();
    // Past the grace the collector asks for a detach; the stray stop must come
    // after that.
    auto due = Clock::now() + kExpectedWithin;
    while (!counts().runtime_domain_enabled && Clock::now() < due)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 0);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 0);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 1);  // detaches here
    // The outer exit is lost with the subscriber (CUPTI finalised mid-call).
    api_exits_until([] { return counts().subscribed == 1; });
    profiler_start();
    kernels(5);
    profiler_stop();
  } else if (std::strcmp(argv[2], "nvtx-content") == 0) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxMarkA("tick");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeId_t across = 0;
    std::thread([&] { across = nvtxRangeStartA("across"); }).join();
    std::thread([&] { nvtxRangeEnd(across); }).join();
    std::thread a([] {
      nvtxRangePushA("worker");
      nvtxRangePop();
    });
    std::thread b([] {
      nvtxRangePushA("worker");
      nvtxRangePop();
    });
    a.join();
    b.join();
    FakeNccl nccl = FakeNccl::make();
    FakeNccl::AllReduce payload{0xC0FFEE, 4096, 0};
    nccl.push(&payload);
    payload.bytes = 1;  // the collector copied the payload at the push
    named_launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 5000, 6000, 1);
    nccl.pop();
    const pid_t child = fork();
    if (child == 0) {
      nvtxRangePushA("child");
      nvtxRangePop();
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 7;
  } else if (std::strcmp(argv[2], "missed") == 0) {
    profiler_stop();
    driver_profiler_stop();
  } else {
    return 6;
  }
  auto c = counts();
  std::printf("subscribes=%d finalizes=%d detach_ms=%ld tid=%d\n", c.subscribes, c.finalizes, detach_ms,
              static_cast<int>(gettid()));
  std::fflush(stdout);
  return 0;
}
