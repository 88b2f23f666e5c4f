#pragma once
// Python stacks sampled by the Python bootstrap inside windows
// (collect/python/scalescope_bootstrap/_pystacks.py), or read from outside
// by `scalescope profile` (collect/python_reader.hpp): one file per Python
// process of the job, <run dir>/python-stacks-<host>-<pid>.json, forked
// DataLoader workers included (their parent's pid in ppid).
//
//   std::vector<std::string> problems;
//   for (const PythonStacks& p : read_python_stacks("run.ssrun", &problems)) ...

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

inline constexpr std::string_view kPythonStacksPrefix = "python-stacks-";

struct PythonStackFrame {
  std::string file;  // as the interpreter names it (co_filename)
  int32_t line = 0;
  std::string function;
};

struct PythonSampledStack {
  uint32_t thread = 0;  // native thread id (0: a thread the threading module did not know)
  int64_t samples = 0;
  std::vector<PythonStackFrame> frames;  // leaf first
};

struct PythonSampledThread {
  uint32_t id = 0;  // native thread id
  std::string name;
  bool is_main = false;
};

struct PythonStacks {
  std::string file_name;  // python-stacks-<host>-<pid>.json
  uint32_t pid = 0, ppid = 0;
  std::string hostname;
  double hz = 0;
  std::string state;  // "on in windows" or "failed: <why>"
  int64_t samples = 0, thread_samples = 0, dropped = 0, truncated = 0;
  double window_seconds = 0;
  double sampler_cpu_per_second = 0;  // the sampler thread's CPU seconds per second of window
  std::vector<PythonSampledThread> threads;
  std::vector<PythonSampledStack> stacks;
};

// Parses one file's text; throws Error "<file_name>: <problem>" (one line)
// when it is not a stacks file or a field is missing or of the wrong type.
PythonStacks parse_python_stacks(std::string_view text, const std::string& file_name);

// The file's text for p, in the format the bootstrap writes (the outside
// reader, collect/python_reader.hpp, writes its stacks so).
std::string python_stacks_json(const PythonStacks& p);

// Every python-stacks-*.json of run_dir, by file name; a file that cannot be
// read or parsed is left out and its one-line problem added to problems.
std::vector<PythonStacks> read_python_stacks(const std::filesystem::path& run_dir,
                                             std::vector<std::string>* problems);

}  // namespace scalescope::trace
