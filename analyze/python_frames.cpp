// The Python bootstrap's stacks (python-stacks-<host>-<pid>.json) summarized
// per rank: its process and its forked workers, the hottest leaf frames of
// each thread and of the workers together.
#include "analyze/python_frames.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/model/python_stacks.hpp"

namespace scalescope::analyze {
namespace {

std::string base_name(const std::string& file) {
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

std::string where(const trace::PythonStackFrame& f) {
  return fmt::format("{}:{} {}", base_name(f.file), f.line, f.function);
}

// Leaf frames of a set of stacks, by samples, each with the stack that ended
// there most often.
class LeafCounter {
 public:
  void add(const trace::PythonSampledStack& s) {
    total_ += s.samples;
    const auto& leaf = s.frames.front();
    Leaf& l = leaves_[{leaf.file, leaf.line, leaf.function}];
    l.samples += s.samples;
    if (l.best == nullptr || s.samples > l.best->samples) l.best = &s;
  }
  int64_t total() const { return total_; }
  std::vector<PythonHotFrame> top(size_t n) const {
    std::vector<PythonHotFrame> out;
    for (const auto& entry : leaves_) {
      const Leaf& l = entry.second;
      PythonHotFrame h;
      const auto& leaf = l.best->frames.front();
      h.where = where(leaf);
      h.file = leaf.file;
      h.line = leaf.line;
      h.function = leaf.function;
      h.samples = l.samples;
      h.share = total_ > 0 ? static_cast<double>(l.samples) / static_cast<double>(total_) : 0;
      for (auto f = l.best->frames.rbegin(); f != l.best->frames.rend(); ++f)
        h.callers += (h.callers.empty() ? "" : ";") + where(*f);
      out.push_back(std::move(h));
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.samples > b.samples; });
    if (out.size() > n) out.resize(n);
    return out;
  }

 private:
  struct Leaf {
    int64_t samples = 0;
    const trace::PythonSampledStack* best = nullptr;
  };
  std::map<std::tuple<std::string, int32_t, std::string>, Leaf> leaves_;
  int64_t total_ = 0;
};

}  // namespace

const PythonThreadFrames* PythonFrames::main_thread() const {
  for (const auto& t : threads)
    if (t.is_main && !t.worker) return &t;
  return nullptr;
}

PythonFrames summarize_python_stacks(const std::vector<trace::PythonStacks>& files, const std::string& hostname,
                                     uint32_t pid) {
  PythonFrames out;
  if (pid == 0) return out;
  LeafCounter workers;
  for (const auto& f : files) {
    if (f.hostname != hostname || (f.pid != pid && f.ppid != pid)) continue;
    const bool worker = f.pid != pid;
    ++out.processes;
    out.worker_processes += worker ? 1 : 0;
    out.hz = std::max(out.hz, f.hz);
    out.samples += f.thread_samples;
    out.dropped += f.dropped;
    out.truncated += f.truncated;
    out.sampler_cpu_per_second = std::max(out.sampler_cpu_per_second, f.sampler_cpu_per_second);
    if (f.state.starts_with("failed")) out.problems.push_back(fmt::format("pid {}: {}", f.pid, f.state));
    // A worker's time is its main thread's, which runs the fetch loop; its
    // other threads (multiprocessing's resource sharer in accept, queue
    // feeders) wait by design and would only dilute the shares.
    auto is_main = [&f](uint32_t tid) {
      return std::any_of(f.threads.begin(), f.threads.end(), [tid](const auto& t) { return t.id == tid && t.is_main; });
    };
    std::map<uint32_t, LeafCounter> by_thread;
    for (const auto& s : f.stacks) {
      by_thread[s.thread].add(s);
      if (worker && is_main(s.thread)) workers.add(s);
    }
    for (const auto& [tid, counter] : by_thread) {
      PythonThreadFrames t;
      t.pid = f.pid;
      t.tid = tid;
      t.worker = worker;
      for (const auto& th : f.threads)
        if (th.id == tid) {
          t.name = th.name;
          t.is_main = th.is_main;
        }
      t.samples = counter.total();
      t.top = counter.top(PythonFrames::kTop);
      out.threads.push_back(std::move(t));
    }
  }
  if (out.processes == 0) return out;
  out.availability = {};
  std::stable_sort(out.threads.begin(), out.threads.end(), [](const auto& a, const auto& b) {
    const bool a_first = a.is_main && !a.worker, b_first = b.is_main && !b.worker;
    if (a_first != b_first) return a_first;
    return a.samples > b.samples;
  });
  out.worker_samples = workers.total();
  out.workers_top = workers.top(PythonFrames::kTop);
  return out;
}

void add_python_stacks(std::vector<RankAnalysis>& ranks, const std::filesystem::path& input) {
  if (trace::detect_input(input).kind != trace::InputKind::kRunDirectory) return;
  std::vector<std::string> problems;
  const std::vector<trace::PythonStacks> stacks = trace::read_python_stacks(input, &problems);
  for (const std::string& p : problems)
    std::fprintf(stderr, "scalescope: warning: %s: Python stacks left out: %s\n", input.string().c_str(), p.c_str());
  if (stacks.empty()) return;
  for (auto& r : ranks) r.python = summarize_python_stacks(stacks, r.hostname, r.pid);
}

}  // namespace scalescope::analyze
