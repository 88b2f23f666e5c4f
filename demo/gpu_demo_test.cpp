// `demo --gpu` without a GPU: GPU counting, finding the workload, the Python
// check, the sweep it plans, its one-line errors, and the whole pipeline with
// a fake torchrun and a fake workload (profiled through the real scalescope
// binary when it is built: no CUDA, so the traces are empty and left out).
#include "demo/gpu_demo.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sweep/sweep.hpp"
#include "base/error.hpp"

namespace scalescope::demo {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GpuDemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scalescope-gpu-demo-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "dev");
    host_.dev_dir = dir_ / "dev";
    host_.path_env = (dir_ / "bin").string();
    host_.self_exe = dir_ / "build" / "cli" / "scalescope";
    host_.cwd = dir_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void touch(const fs::path& p, const std::string& text = "", bool exec = false) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    if (exec) ::chmod(p.c_str(), 0755);
  }
  // A python that prints `out` (stdout) and exits with `rc`.
  std::string fake_python(const std::string& out, int rc) {
    const fs::path p = dir_ / "py" / "python3";
    touch(p, "#!/bin/sh\nprintf '%s\\n' \"" + out + "\"\nexit " + std::to_string(rc) + "\n", true);
    return p.string();
  }
  std::string error_of(const GpuDemoOptions& o) {
    try {
      run_gpu_demo(o, host_);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  GpuDemoOptions options() {
    GpuDemoOptions o;
    o.out_dir = dir_ / "out";
    o.workload = std::string(SCALESCOPE_SOURCE_DIR) + "/workloads/image_ddp.py";
    return o;
  }

  fs::path dir_;
  GpuDemoHost host_;
};

TEST_F(GpuDemoTest, CountsDeviceNodesNarrowedByCudaVisibleDevices) {
  EXPECT_EQ(visible_gpus(host_), 0);
  for (const char* n : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-modeset"}) touch(host_.dev_dir / n);
  EXPECT_EQ(visible_gpus(host_), 2);
  host_.cuda_visible_devices_set = true;
  host_.cuda_visible_devices = "1";
  EXPECT_EQ(visible_gpus(host_), 1);
  host_.cuda_visible_devices = "";
  EXPECT_EQ(visible_gpus(host_), 0);
  host_.cuda_visible_devices = "0,5,1";  // CUDA stops at the first invalid index
  EXPECT_EQ(visible_gpus(host_), 1);
  host_.cuda_visible_devices = "GPU-8d4c1a2b, 1";
  EXPECT_EQ(visible_gpus(host_), 2);
  host_.cuda_visible_devices = "-1";
  EXPECT_EQ(visible_gpus(host_), 0);
  host_.cuda_visible_devices = "0,1,0,1";  // never more than the machine has
  EXPECT_EQ(visible_gpus(host_), 2);
}

TEST_F(GpuDemoTest, GpuCountsArePowersOfTwoAndTheMaximum) {
  EXPECT_THAT(demo_gpu_counts(1), ElementsAre(1));
  EXPECT_THAT(demo_gpu_counts(2), ElementsAre(1, 2));
  EXPECT_THAT(demo_gpu_counts(6), ElementsAre(1, 2, 4, 6));
  EXPECT_THAT(demo_gpu_counts(8), ElementsAre(1, 2, 4, 8));
  EXPECT_TRUE(demo_gpu_counts(0).empty());
}

TEST_F(GpuDemoTest, FindsTheWorkloadInTheSourceTreeOrAboveTheBinary) {
  EXPECT_THAT([&] { find_workload("", host_); }, ::testing::ThrowsMessage<Error>(HasSubstr("--workload PATH")));
  EXPECT_THAT([&] { find_workload((dir_ / "nope.py").string(), host_); },
              ::testing::ThrowsMessage<Error>(HasSubstr("nope.py: no such file")));
  // Binaries carried inside a checkout: REPO/.devcarry/build/cli/scalescope.
  touch(dir_ / "repo" / "workloads" / "image_ddp.py");
  host_.self_exe = dir_ / "repo" / ".devcarry" / "build" / "cli" / "scalescope";
  EXPECT_EQ(find_workload("", host_), dir_ / "repo" / "workloads" / "image_ddp.py");
  host_.source_dir = SCALESCOPE_SOURCE_DIR;  // the source tree wins
  EXPECT_EQ(find_workload("", host_), fs::path(SCALESCOPE_SOURCE_DIR) / "workloads" / "image_ddp.py");
}

TEST_F(GpuDemoTest, ParsesTheTorchCheck) {
  TorchInfo info;
  EXPECT_FALSE(parse_torch_check("Traceback ...\nModuleNotFoundError: No module named 'torch'\n", info));
  ASSERT_TRUE(parse_torch_check("warning: noise\nscalescope_torch 2.11.0+cu130 1 2\n", info));
  EXPECT_EQ(info.version, "2.11.0+cu130");
  EXPECT_TRUE(info.cuda);
  EXPECT_EQ(info.devices, 2);
  const auto cmd = torch_check_command("/usr/bin/python3");
  ASSERT_EQ(cmd.size(), 3u);
  EXPECT_EQ(cmd[0], "/usr/bin/python3");
  EXPECT_THAT(cmd[2], HasSubstr("import torch, torchvision"));
}

TEST_F(GpuDemoTest, PlansAProfiledTorchrunSweepOfTheWorkload) {
  GpuDemoOptions o;
  o.steps = 30;
  o.warmup_steps = 10;
  const auto spec = gpu_demo_spec(o, 2, "/repo/workloads/image_ddp.py", "/b/cli/scalescope");
  EXPECT_THAT(spec.gpus, ElementsAre(1, 2));
  EXPECT_EQ(spec.repeat, 2);
  EXPECT_TRUE(spec.profile);
  EXPECT_EQ(spec.launcher, sweep::LauncherKind::kTorchrun);
  EXPECT_EQ(spec.metric.kind, sweep::MetricKind::kRegex);
  EXPECT_FALSE(spec.metric.higher_is_better);
  const auto plan = sweep::plan_runs(spec);
  ASSERT_EQ(plan.size(), 4u);
  const auto* two = &plan[0];
  for (const auto& r : plan)
    if (r.gpus == 2 && r.rep == 1) two = &r;
  const auto argv = sweep::launch_command(spec, *two, "/out/runs/x", {});
  const std::vector<std::string> tail = {"torchrun",
                                         "--standalone",
                                         "--nnodes=1",
                                         "--nproc_per_node=2",
                                         "/repo/workloads/image_ddp.py",
                                         "--synthetic",
                                         "--image-size",
                                         "224",
                                         "--batch-size",
                                         "128",
                                         "--steps",
                                         "30",
                                         "--warmup-steps",
                                         "10",
                                         "--log-every",
                                         "0",
                                         "--seed",
                                         "1"};
  ASSERT_GE(argv.size(), tail.size() + 3);
  EXPECT_EQ(argv[0], "/b/cli/scalescope");
  EXPECT_EQ(argv[1], "profile");
  EXPECT_EQ(std::vector<std::string>(argv.end() - static_cast<long>(tail.size()), argv.end()), tail);
  // The workload's result line gives the metric.
  sweep::ProcessResult ok;
  ok.status = sweep::RunStatus::kOk;
  touch(dir_ / "log.txt", "scalescope_result workload=image_ddp throughput_images_per_s=3000 epoch_time_s=20.5 x=1\n");
  auto specless = spec;
  specless.profile = false;
  const auto m = sweep::extract_metrics(specless, ok, dir_ / "log.txt", dir_);
  ASSERT_TRUE(m.values.contains(spec.metric.name()));
  EXPECT_DOUBLE_EQ(m.values.at(spec.metric.name()), 20.5);
}

TEST_F(GpuDemoTest, RefusesBadOptions) {
  GpuDemoOptions o;
  o.steps = 10;
  o.warmup_steps = 10;
  EXPECT_THAT([&] { gpu_demo_spec(o, 1, "w.py", "s"); }, ::testing::ThrowsMessage<Error>(HasSubstr("--steps 10")));
  o = {};
  o.repeat = 0;
  EXPECT_THAT([&] { gpu_demo_spec(o, 1, "w.py", "s"); }, ::testing::ThrowsMessage<Error>(HasSubstr("--repeat 0")));
}

TEST_F(GpuDemoTest, NoGpuIsOneClearError) {
  EXPECT_THAT(error_of(options()), HasSubstr("no NVIDIA GPU on this machine"));
  touch(host_.dev_dir / "nvidia0");
  host_.cuda_visible_devices_set = true;
  host_.cuda_visible_devices = "";
  EXPECT_THAT(error_of(options()), HasSubstr("CUDA_VISIBLE_DEVICES=''"));
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "nothing is written before the checks pass";
}

TEST_F(GpuDemoTest, PythonTorchAndTorchrunAreCheckedFirst) {
  touch(host_.dev_dir / "nvidia0");
  auto o = options();
  o.python = (dir_ / "no-such-python").string();
  EXPECT_THAT(error_of(o), HasSubstr("cannot run '" + o.python + "'"));
  o.python = fake_python("ModuleNotFoundError: No module named 'torch'", 1);
  EXPECT_THAT(error_of(o),
              HasSubstr("cannot import torch and torchvision: ModuleNotFoundError: No module named 'torch'"));
  o.python = fake_python("scalescope_torch 2.11.0+cpu 0 0", 0);
  EXPECT_THAT(error_of(o), HasSubstr("torch 2.11.0+cpu sees no CUDA device"));
  o.python = fake_python("scalescope_torch 2.11.0 1 1", 0);
  EXPECT_THAT(error_of(o), HasSubstr("torchrun is not on PATH"));
  o.workload = (dir_ / "missing.py").string();
  EXPECT_THAT(error_of(o), HasSubstr("missing.py: no such file"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "gpu-sweep.db"));
}

// The whole pipeline on fakes: 2 "GPUs", a fake torchrun that runs the job, a
// fake workload printing the result line, the real scalescope for --profile.
TEST_F(GpuDemoTest, RunsTheSweepAndWritesTheReportWithFakes) {
  const fs::path exe = fs::path(SCALESCOPE_BINARY_DIR) / "cli" / "scalescope";
  if (!fs::exists(exe) || !fs::exists(fs::path(SCALESCOPE_BINARY_DIR) / "collect" / "libscalescope-collector.so"))
    GTEST_SKIP() << "needs the scalescope binary and the collector built in " << SCALESCOPE_BINARY_DIR;
  touch(host_.dev_dir / "nvidia0");
  touch(host_.dev_dir / "nvidia1");
  host_.self_exe = exe;
  const std::string fake_bin = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fake_jobs/bin";
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", (fake_bin + ":" + old_path).c_str(), 1);
  // Under ASan, `scalescope profile` (collect/) reports a 73,728-byte leak at
  // exit, which abort_on_error turns into a crash of every run; this test is
  // about the demo, so the children run without leak checking (this process
  // keeps it: LSan reads its options at start).
  const std::string old_asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  ::setenv("ASAN_OPTIONS", (old_asan + (old_asan.empty() ? "" : ":") + "detect_leaks=0").c_str(), 1);
  host_.path_env = fake_bin + ":" + old_path;
  auto o = options();
  o.python = fake_python("scalescope_torch 2.11.0 1 2", 0);
  o.workload = (dir_ / "fake_image_ddp.py").string();
  // Ideal scaling, a little noise by repetition: 20 s per epoch on 1 GPU.
  touch(o.workload,
        "#!/bin/sh\necho \"step noise\"\n"
        "awk -v g=\"$SCALESCOPE_SWEEP_GPUS\" -v r=\"$SCALESCOPE_SWEEP_REP\" "
        "'BEGIN { printf \"scalescope_result workload=fake epoch_time_s=%.4f\\n\", 20 / g * (1 + 0.01 * r) }'\n",
        true);
  const auto result = run_gpu_demo(o, host_);
  EXPECT_EQ(result.runs, 4);
  EXPECT_EQ(result.ok, 4);
  EXPECT_TRUE(fs::exists(result.report));
  const auto stored = sweep::read_sweep(result.database);
  EXPECT_EQ(stored.runs.size(), 4u);
  std::string all;
  for (const auto& l : result.lines) all += l + "\n";
  EXPECT_THAT(all, HasSubstr("2 GPU(s): 10.05 s per 60k images (median of 2), speedup 2.00"));
  EXPECT_THAT(all, HasSubstr("E' 1.00"));
  // Run again: the sweep is complete, so nothing runs and the report is rewritten.
  const auto again = run_gpu_demo(o, host_);
  EXPECT_EQ(again.ok, 4);
  // Other options in the same folder: one line saying so, the earlier sweep kept.
  o.repeat = 3;
  EXPECT_THAT(error_of(o), HasSubstr("the earlier demo in " + o.out_dir.string() + " ran with other options"));
  EXPECT_EQ(sweep::read_sweep(result.database).runs.size(), 4u);
  ::setenv("PATH", old_path.c_str(), 1);
  ::setenv("ASAN_OPTIONS", old_asan.c_str(), 1);
}

// --format json: what the GPU demo found and wrote, typed, its run counts as numbers.
TEST(GpuDemoJson, FindingsPathsAndRunCounts) {
  GpuDemoResult r;
  r.database = "/tmp/g/gpu-sweep.db";
  r.report = "/tmp/g/report.html";
  r.lines = {"2 GPUs: 1.8x faster"};
  r.runs = 4;
  r.ok = 3;
  const nlohmann::json j = gpu_demo_json(r);
  EXPECT_EQ(j["findings"], nlohmann::json({"2 GPUs: 1.8x faster"}));
  EXPECT_EQ(j["sweep"], "/tmp/g/gpu-sweep.db");
  EXPECT_EQ(j["report"], "/tmp/g/report.html");
  EXPECT_EQ(j["runs"], 4);
  EXPECT_EQ(j["runs_ok"], 3);
}

}  // namespace
}  // namespace scalescope::demo
