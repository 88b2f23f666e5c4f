#pragma once
// Python stacks from the Python bootstrap's sampler, python-stacks-*.json (python_frames.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/availability.hpp"
#include "trace/model/python_stacks.hpp"

namespace scalescope::analyze {

// One frame where Python samples ended (the leaf), with its share.
struct PythonHotFrame {
  std::string where;  // "dataset.py:41 __getitem__" (the file's base name)
  std::string file;   // the whole path, as the interpreter named it
  int32_t line = 0;
  std::string function;
  int64_t samples = 0;
  double share = 0;  // of the thread's (or the workers') samples
  // The stack that ended here most often, outermost first:
  // "train.py:80 main;loader.py:12 __next__;dataset.py:41 __getitem__".
  std::string callers;
};

// One thread of the rank's process or of one of its forked workers.
struct PythonThreadFrames {
  uint32_t pid = 0, tid = 0;
  std::string name;
  bool is_main = false;  // its process's main thread
  bool worker = false;   // of a process forked by the rank's (a DataLoader worker)
  int64_t samples = 0;
  std::vector<PythonHotFrame> top;  // by samples, at most PythonFrames::kTop
};

// The rank's Python stacks over its windows: wall-time samples of every
// Python thread of the rank's process and of its forked workers.
struct PythonFrames {
  static constexpr size_t kTop = 5;
  Availability availability{false, "no Python stacks (not a run directory, or none sampled)"};
  double hz = 0;
  int32_t processes = 0, worker_processes = 0;
  int64_t samples = 0;  // thread samples, all processes
  int64_t dropped = 0, truncated = 0;
  double sampler_cpu_per_second = 0;  // the most of any of its processes
  std::vector<std::string> problems;  // a sampler that failed: "pid 12: failed: RuntimeError: ..."
  std::vector<PythonThreadFrames> threads;  // the rank's main thread first, then by samples
  // Every worker process's main thread together (the one running the fetch
  // loop): where the workers' time went.
  int64_t worker_samples = 0;
  std::vector<PythonHotFrame> workers_top;
  const PythonThreadFrames* main_thread() const;  // the rank's process's main thread, or null
};

// The rank's (hostname, pid) Python stacks and its forked workers' (ppid ==
// pid), from the files of its run directory.
PythonFrames summarize_python_stacks(const std::vector<trace::PythonStacks>& files, const std::string& hostname,
                                     uint32_t pid);

}  // namespace scalescope::analyze
