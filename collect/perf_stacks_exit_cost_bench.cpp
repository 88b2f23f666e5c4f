// What native stacks cost at the end of a sampled process: a child workload
// (default: python3 with numpy imported, multiplying matrices: tens of
// mapped modules) is sampled through PerfStacks for --seconds, then the
// collector's exit path is timed: the last poll and drain(final), which is
// all the process waits for. Since format 1.4 that drain writes modules and
// build-ids only; names come offline, and the tool times that too
// (FrameNamer over the drained trace, what `scalescope analyze` does).
//
//   collect_perf_stacks_exit_cost --seconds 5 [-- command args...]
//
// Prints one JSON line: samples, callsites, module_rows, exit_drain_wall_ms,
// exit_drain_cpu_ms, modules_cpu_ms_all_drains (1.4: build-ids, read at the
// drains while sampling runs), offline_naming_wall_ms, frames_named. Built
// against the format 1.3 sources (no trace/model/frame_namer.hpp) it measures the
// old exit path, which named every frame in drain(final).
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collect/perf_stacks.hpp"
#if __has_include("trace/model/frame_namer.hpp")
#include "trace/model/frame_namer.hpp"
#define SCALESCOPE_HAS_FRAME_NAMER 1
#endif

namespace {

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace scalescope;
  double seconds = 5;
  std::vector<std::string> cmd = {"python3", "-c",
                                  "import numpy as np, time\n"
                                  "a = np.random.rand(256, 256)\n"
                                  "t = time.time()\n"
                                  "while time.time() - t < 600:\n"
                                  "    b = a @ a; s = sorted(str(i) for i in range(2000)); c = np.fft.fft(a[0])\n"};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--")) {
      cmd.assign(argv + i + 1, argv + argc);
      break;
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S] [-- command args...]\n", argv[0]);
      return 2;
    }
  }
  if (cmd.empty()) return 2;
  const pid_t child = fork();
  if (child == 0) {
    std::vector<char*> av;
    for (auto& a : cmd) av.push_back(a.data());
    av.push_back(nullptr);
    execvp(av[0], av.data());
    _exit(127);
  }
  std::string why;
  collect::PerfStacksOptions o;
  auto stacks = collect::PerfStacks::create(o, static_cast<uint32_t>(gettid()), &why);
  if (!stacks) {
    std::fprintf(stderr, "perf_stacks_exit_cost: %s\n", why.c_str());
    kill(child, SIGKILL);
    return 1;
  }
  trace::Trace t;
  const auto start = std::chrono::steady_clock::now();
  while (ms_since(start) < seconds * 1e3) {
    // Threads of the child as they appear (BLAS threads start with numpy).
    const std::string task = "/proc/" + std::to_string(child) + "/task";
    if (DIR* d = opendir(task.c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.')
          stacks->add_thread(static_cast<uint32_t>(child), static_cast<uint32_t>(std::atoi(e->d_name)));
      closedir(d);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stacks->poll(0);
    stacks->drain(t, t.strings);  // the collector drains while sampling runs
  }
  // The exit path: last read, final drain (the collector does this after the traced steps).
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_ms();
  stacks->poll(0);
  stacks->drain(t, t.strings);
  const double exit_wall = ms_since(t0), exit_cpu = thread_cpu_ms() - c0;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  double naming_wall = 0;
  size_t module_rows = 0;
  double modules_cpu_ms = 0;  // build-ids read at every drain (1.4)
#ifdef SCALESCOPE_HAS_FRAME_NAMER
  module_rows = t.host_modules.size();
  modules_cpu_ms = static_cast<double>(stacks->modules_ns()) / 1e6;
  const auto n0 = std::chrono::steady_clock::now();
  trace::FrameNamer namer;
  namer.name(t);
  naming_wall = ms_since(n0);
#endif
  // Distinct callsites (a 1.3 collector writes named rows again at the final drain).
  std::vector<bool> seen;
  size_t callsites = 0, named = 0;
  for (size_t i = 0; i < t.host_callsites.size(); ++i) {
    const uint32_t id = t.host_callsites.id[i];
    if (seen.size() <= id) seen.resize(id + 1);
    if (!t.strings.view(t.host_callsites.function[i]).empty()) ++named;  // the named row of an id comes last
    if (!seen[id]) ++callsites;
    seen[id] = true;
  }
  std::printf(
      "{\"samples\": %llu, \"callsites\": %zu, \"module_rows\": %zu, \"exit_drain_wall_ms\": %.3f, "
      "\"exit_drain_cpu_ms\": %.3f, \"modules_cpu_ms_all_drains\": %.3f, \"offline_naming_wall_ms\": %.3f, "
      "\"frames_named\": %zu}\n",
      static_cast<unsigned long long>(stacks->samples()), callsites, module_rows, exit_wall, exit_cpu, modules_cpu_ms,
      naming_wall, named);
  return 0;
}
