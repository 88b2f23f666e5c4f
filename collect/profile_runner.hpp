#pragma once
// `scalescope profile`: creates NAME.ssrun/, sets the environment that loads
// the collector into every CUDA process of the job (children and torchrun
// ranks inherit it), runs the command in its own process group, forwards
// SIGINT/SIGTERM/SIGHUP to that group, and writes run.json (at start, and
// again complete at the end) with the per-process summaries the collectors
// leave beside their traces.
//
//   ProfileOptions o;  o.output = "myrun";  o.command = {"torchrun", ...};
//   ProfileResult r = run_profile(o, std::cerr);  // r.exit_code is the job's

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "collect/collector_options.hpp"
#include "collect/host_facts.hpp"
#include "trace/model/python_record.hpp"

namespace scalescope::collect {

// How Python stacks are sampled (--python-stacks): inside, by the
// bootstrap's thread in each Python process, only while a window is open;
// outside, by this `profile` reading each Python process of the job's tree
// (collect/python_outside.hpp) for the whole run; or not at all.
enum class PythonStacksWay { kInside, kOutside, kOff };
// Each way and its name in --python-stacks and run.json.
inline constexpr std::pair<PythonStacksWay, const char*> kPythonStacksWays[] = {
    {PythonStacksWay::kInside, "inside"}, {PythonStacksWay::kOutside, "outside"}, {PythonStacksWay::kOff, "off"}};

struct ProfileOptions {
  std::string output;                // NAME or NAME.ssrun
  CollectorOptions collector;        // run_dir is filled in by run_profile
  bool force = false;                // reuse a non-empty NAME.ssrun
  std::vector<std::string> command;  // the job
  std::string collector_path;        // empty: find_collector()
  // The Python bootstrap (a sitecustomize, collect/python/) goes first on the
  // job's PYTHONPATH unless --no-python. Empty: find_python_bootstrap().
  bool python = true;
  std::string python_bootstrap;
  // The Python stack sampling rate, for either way (inside: the bootstrap's
  // SCALESCOPE_PYTHON_SAMPLING_HZ in the job's environment); 0 = off.
  double python_sampling_hz = 100;
  // Outside by default: the cheaper of the two for the job (bench/RESULTS.md,
  // "Python stacks").
  PythonStacksWay python_stacks = PythonStacksWay::kOutside;
};

struct ProcessSummary {
  uint32_t pid = 0;
  std::string hostname, status, trace_file;
  int32_t rank = -1, local_rank = -1;
  uint64_t events = 0, dropped = 0, bytes = 0, collector_cpu_ns = 0;
  std::string sampling_json;        // the collector's "sampling" object (iteration windows, perturbation), "" if none
  std::string sampling_line;        // what `profile` says about it, "" if nothing
  bool python_interpreter = false;  // the process was a Python interpreter
};

// What the Python bootstrap wrote in one process (trace/model/python_record.hpp).
using trace::PythonRecord;

struct ProfileResult {
  int exit_code = 0;  // the job's, or 128 + signal
  std::filesystem::path run_dir;
  std::vector<ProcessSummary> processes;
  std::vector<std::string> incomplete;  // traces without a summary (killed?)
  std::vector<PythonRecord> python;     // the Python bootstrap's records
  std::vector<std::string> python_stacks_notes;  // why a Python process could not be read from outside
  double duration_s = 0;
};

// NAME.ssrun, claimed by this `profile` for as long as the claim lives: the
// directory is created (or, when it exists, checked) and locked with flock on
// its hidden .profile.lock (.profile-<host>.lock per node), so of two `profile
// -o NAME` started at once exactly one writes into it and the other refuses
// before running anything. Error when the directory exists, is not empty and
// !force, is claimed by another `profile`, or cannot be created. With node_host
// (one `profile` per node of a multi-node job, all writing into one directory
// on a shared filesystem): the directory may exist and hold other nodes' files;
// only this host's files count (and --force removes only them).
//
//   RunDirClaim claim("myrun", false);  // claim.dir() == /abs/myrun.ssrun
class RunDirClaim {
 public:
  RunDirClaim(const std::string& output, bool force, const std::string& node_host = "");
  ~RunDirClaim();
  RunDirClaim(const RunDirClaim&) = delete;
  RunDirClaim& operator=(const RunDirClaim&) = delete;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int lock_fd_ = -1;
};

// The hostname when this `profile` is one of several launched per node (its
// environment gives it a rank or a node id, and more than one node: srun -N4
// scalescope profile ...); "" otherwise. Then it writes run-<host>.json, not run.json.
std::string node_launch_host(const Environment& env);

// The collector library: $SCALESCOPE_COLLECTOR, else beside the running
// binary's build tree (../collect/) or install prefix (../lib/). Error if none.
std::string find_collector(const std::filesystem::path& self_exe);

// The Python bootstrap's folder (the one holding sitecustomize.py):
// $SCALESCOPE_PYTHON_BOOTSTRAP, else beside the running binary's build tree
// (../collect/python) or install prefix (../share/scalescope/python). "" if none.
std::string find_python_bootstrap(const std::filesystem::path& self_exe);

// Reads the <host>-<pid>.json summaries the collectors wrote in run_dir
// (only_host: that host's alone).
std::vector<ProcessSummary> read_process_summaries(const std::filesystem::path& run_dir,
                                                   std::vector<std::string>* incomplete,
                                                   const std::string& only_host = "");

// Runs the whole thing; prints the summary and the next command to `log`.
// The job's end in one word for run.json's "exit_status": "ok" (exit 0),
// "hung" (ended with an error or a signal after a process wrote a hang dump
// for --hang-after: it was killed because it hung), "crashed" (a signal),
// "failed" (a non-zero exit).
std::string exit_status(int exit_code, bool signaled, bool hang_dumped);
// Whether a process of the run wrote a hang dump after finding the job
// stalled for --hang-after (its last dump may be SIGTERM's).
bool hang_dumped(const std::filesystem::path& run_dir);

ProfileResult run_profile(const ProfileOptions& options, std::ostream& log);

}  // namespace scalescope::collect
