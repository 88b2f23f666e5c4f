#pragma once
// `scalescope profile --python-stacks outside`: Python stacks of every
// Python process of the job's process tree (the job, its ranks, their
// DataLoader workers), read from outside (collect/python_reader.hpp) on
// profile's own thread at a fixed rate for the whole run, counted per
// (OS thread, stack) as the bootstrap counts them, and handed back as the
// same records (trace/model/python_stacks.hpp) that `profile` writes to
// python-stacks-<host>-<pid>.json. The job runs no code of ours for it: its
// cost to the job is the reads (process_vm_readv) and this thread's CPU.
//
//   OutsidePythonSampler s({.root_pid = child, .hz = 100, .hostname = host});
//   s.start();  ...  s.stop();
//   for (const trace::PythonStacks& p : s.results()) ...

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collect/python_reader.hpp"
#include "trace/model/python_stacks.hpp"

namespace scalescope::collect {

struct OutsidePythonOptions {
  uint32_t root_pid = 0;  // the job; its descendants are found as they start
  double hz = 100;
  std::string hostname;
};

class OutsidePythonSampler {
 public:
  explicit OutsidePythonSampler(OutsidePythonOptions options);
  ~OutsidePythonSampler();
  OutsidePythonSampler(const OutsidePythonSampler&) = delete;
  OutsidePythonSampler& operator=(const OutsidePythonSampler&) = delete;

  void start();
  void stop();  // joins the thread; results() is complete after it

  // One record per Python process read at least once, by pid.
  std::vector<trace::PythonStacks> results() const;
  // One line per distinct reason a Python process could not be read
  // ("python stacks from outside: CPython 3.13 not supported").
  std::vector<std::string> notes() const;

 private:
  struct Process;
  void run();
  void discover();
  void sample_all();

  OutsidePythonOptions options_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::map<uint32_t, std::unique_ptr<Process>> processes_;
  std::vector<std::string> notes_;
};

}  // namespace scalescope::collect
