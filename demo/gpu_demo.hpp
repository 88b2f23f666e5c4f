#pragma once
// `scalescope demo --gpu`: a short real sweep of the reference image workload
// (workloads/image_ddp.py --synthetic) on this machine's GPUs, profiled, with
// the scaling analysis, the advisor and the HTML report of what it measured.
// It is the machinery of `scalescope sweep --profile --launcher torchrun`
// (sweep/sweep.hpp) with a fixed, small plan. The pieces that need no GPU
// (GPU counting, finding the workload, the plan) are separate so tests can
// check them anywhere.
//
//   demo::GpuDemoOptions o;  o.out_dir = "demo";  o.max_gpus = 2;
//   auto result = demo::run_gpu_demo(o, demo::GpuDemoHost::current());

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep.hpp"

namespace scalescope::demo {

struct GpuDemoOptions {
  std::filesystem::path out_dir = "scalescope-demo";
  int max_gpus = 0;  // 0: every visible GPU
  int repeat = 2;    // repetitions of each GPU count
  int steps = 30;    // training steps per run, of which warmup_steps are left out of the figures
  int warmup_steps = 10;
  int image_size = 224;
  int batch_size = 128;  // per GPU
  std::string workload;  // "" = find workloads/image_ddp.py (find_workload)
  std::string python = "python3";
  double run_timeout_s = 240;
};

// What the demo needs to know about the machine; tests substitute a fake one.
struct GpuDemoHost {
  std::filesystem::path dev_dir = "/dev";  // where /dev/nvidiaN device nodes are
  std::string cuda_visible_devices;        // $CUDA_VISIBLE_DEVICES
  bool cuda_visible_devices_set = false;
  std::string path_env;              // $PATH (to find torchrun)
  std::filesystem::path self_exe;    // this scalescope (the sweep profiles through it)
  std::filesystem::path source_dir;  // the source tree this binary was built from
  std::filesystem::path cwd;
  static GpuDemoHost current();
};

// NVIDIA GPUs this process may use: the /dev/nvidiaN nodes, narrowed by
// CUDA_VISIBLE_DEVICES when it is set (as CUDA reads it: entries up to the
// first invalid one; an empty value hides every GPU).
int visible_gpus(const GpuDemoHost& host);

// The GPU counts the demo measures: 1, 2, 4, ... up to n, and n itself.
std::vector<int> demo_gpu_counts(int n);

// The workload script: `explicit_path` when given (it must exist), else
// workloads/image_ddp.py in the source tree, in a parent folder of the
// executable (a build folder inside a checkout), or under the working folder.
// Throws Error saying where it looked.
std::filesystem::path find_workload(const std::string& explicit_path, const GpuDemoHost& host);

// The executable `name` on `path_env` ("" when not found).
std::filesystem::path find_on_path(const std::string& name, const std::string& path_env);

// The command that checks that Python can import torch and torchvision and
// how many CUDA devices torch sees; it prints one line
// "scalescope_torch VERSION CUDA_AVAILABLE DEVICE_COUNT".
std::vector<std::string> torch_check_command(const std::string& python);

struct TorchInfo {
  std::string version;
  bool cuda = false;
  int devices = 0;
};
// Parses the check's output (the last "scalescope_torch" line); false when absent.
bool parse_torch_check(const std::string& output, TorchInfo& info);

// The sweep: GPU counts from demo_gpu_counts(gpus), options.repeat
// repetitions, torchrun, profiled, metric epoch_time_s from the workload's
// result line (seconds per 60,000 images: fixed work, so speedup and E' apply).
sweep::SweepSpec gpu_demo_spec(const GpuDemoOptions& options, int gpus, const std::filesystem::path& workload,
                               const std::filesystem::path& self_exe);

struct GpuDemoResult {
  std::filesystem::path database;  // out_dir/gpu-sweep.db
  std::filesystem::path report;    // out_dir/report.html
  std::vector<std::string> lines;  // what it found, for the terminal
  int runs = 0, ok = 0;
};

// Checks the machine (GPUs, workload, Python with torch, torchrun), runs the
// sweep (continuing an earlier one in the same folder), then writes the report
// of the sweep and of the repetition-0 traces of the smallest and largest GPU
// count. Throws Error with one line for each thing that stops it; a run that
// fails is named with its log. Progress goes to stderr.
GpuDemoResult run_gpu_demo(const GpuDemoOptions& options, const GpuDemoHost& host);

// What the GPU demo found, for --format json: {"findings": [line, ...],
// "sweep", "report" (absolute paths), "runs", "runs_ok"}.
nlohmann::json gpu_demo_json(const GpuDemoResult& result);

}  // namespace scalescope::demo
