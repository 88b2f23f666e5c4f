// The Python bootstrap's stacks summarized per rank: its own process and its
// forked workers (by parent pid), on its host only.
#include <gtest/gtest.h>

#include "analyze/analyze.hpp"

namespace scalescope::analyze {
namespace {

trace::PythonSampledStack stack(uint32_t thread, int64_t samples, std::vector<trace::PythonStackFrame> frames) {
  return {thread, samples, std::move(frames)};
}

trace::PythonStacks process(const std::string& host, uint32_t pid, uint32_t ppid) {
  trace::PythonStacks p;
  p.hostname = host;
  p.pid = pid;
  p.ppid = ppid;
  p.hz = 100;
  p.threads = {{pid, "MainThread", true}, {pid + 1, "pin_memory", false}};
  p.state = "on in windows";
  return p;
}

const trace::PythonStackFrame kGetItem{"/job/data/dataset.py", 41, "__getitem__"};
const trace::PythonStackFrame kDecode{"/job/data/dataset.py", 63, "decode"};
const trace::PythonStackFrame kWorkerLoop{"/usr/lib/python3.12/site-packages/torch/utils/data/_utils/worker.py", 349,
                                          "_worker_loop"};
const trace::PythonStackFrame kTrain{"/job/train.py", 80, "main"};
const trace::PythonStackFrame kAccept{"/usr/lib/python3.12/socket.py", 295, "accept"};
const trace::PythonStackFrame kWait{"/usr/lib/python3.12/threading.py", 320, "wait"};

TEST(PythonFrames, TheRanksProcessAndItsForkedWorkers) {
  std::vector<trace::PythonStacks> files;
  auto rank = process("h", 100, 1);
  rank.thread_samples = 100;
  rank.stacks = {stack(100, 70, {kWait, kTrain}), stack(100, 30, {kTrain}), stack(101, 100, {kWait})};
  files.push_back(rank);
  for (uint32_t w : {201u, 202u}) {
    auto worker = process("h", w, 100);
    worker.thread_samples = 200;
    // Its main thread runs the fetch loop; another thread (multiprocessing's
    // resource sharer) only waits in accept: not where the worker's time goes.
    worker.stacks = {stack(w, 50, {kGetItem, kWorkerLoop}), stack(w, 10, {kGetItem}), stack(w, 40, {kDecode, kGetItem}),
                     stack(w + 1, 100, {kAccept})};
    files.push_back(worker);
  }
  files.push_back(process("other-host", 201, 100));  // another node's process of the same pid
  auto unrelated = process("h", 300, 1);
  unrelated.stacks = {stack(300, 999, {kTrain})};
  unrelated.state = "failed: RuntimeError: boom";
  files.push_back(unrelated);

  const PythonFrames p = summarize_python_stacks(files, "h", 100);
  ASSERT_TRUE(p.availability.available);
  EXPECT_EQ(p.processes, 3);
  EXPECT_EQ(p.worker_processes, 2);
  EXPECT_EQ(p.samples, 500);
  EXPECT_TRUE(p.problems.empty());  // the failed sampler is another process's
  const PythonThreadFrames* main = p.main_thread();
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(&p.threads.front(), main);  // the rank's main thread first
  EXPECT_EQ(main->pid, 100u);
  EXPECT_EQ(main->samples, 100);
  ASSERT_EQ(main->top.size(), 2u);
  EXPECT_EQ(main->top[0].where, "threading.py:320 wait");
  EXPECT_DOUBLE_EQ(main->top[0].share, 0.7);
  EXPECT_EQ(main->top[0].callers, "train.py:80 main;threading.py:320 wait");
  EXPECT_EQ(main->top[1].where, "train.py:80 main");
  // The workers' main threads together: __getitem__ 60 of 100 samples in each, from the
  // stack seen most often (through the worker loop).
  EXPECT_EQ(p.worker_samples, 200);
  ASSERT_EQ(p.workers_top.size(), 2u);
  EXPECT_EQ(p.workers_top[0].where, "dataset.py:41 __getitem__");
  EXPECT_EQ(p.workers_top[0].file, "/job/data/dataset.py");
  EXPECT_EQ(p.workers_top[0].line, 41);
  EXPECT_DOUBLE_EQ(p.workers_top[0].share, 0.6);
  EXPECT_EQ(p.workers_top[0].callers, "worker.py:349 _worker_loop;dataset.py:41 __getitem__");
  EXPECT_EQ(p.workers_top[1].where, "dataset.py:63 decode");
  // Threads: 2 of the rank (main, pin_memory) and 2 of each worker.
  EXPECT_EQ(p.threads.size(), 6u);
  for (const auto& t : p.threads) EXPECT_EQ(t.worker, t.pid != 100u) << t.pid;
}

TEST(PythonFrames, NothingForAnotherProcessOrNoPid) {
  std::vector<trace::PythonStacks> files{process("h", 300, 1)};
  files[0].state = "failed: RuntimeError: boom";
  EXPECT_FALSE(summarize_python_stacks(files, "h", 100).availability.available);
  EXPECT_FALSE(summarize_python_stacks(files, "h", 0).availability.available);
  const PythonFrames own = summarize_python_stacks(files, "h", 300);
  ASSERT_TRUE(own.availability.available);
  EXPECT_EQ(own.problems, std::vector<std::string>{"pid 300: failed: RuntimeError: boom"});
}

}  // namespace
}  // namespace scalescope::analyze
