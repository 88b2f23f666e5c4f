#include "collect/gpu_test/gpu_check.hpp"

#include <gtest/gtest.h>

#include "collect/gpu_test/ground_truth_spec.hpp"

namespace scalescope::collect {
namespace {

namespace gt = ground_truth;

// A trace with exactly what ground_truth.cu does, plus noise the checker must ignore.
trace::Trace perfect_ground_truth() {
  trace::Trace t;
  auto kernel = [&](const char* name, int n, uint32_t device = 0) {
    for (int i = 0; i < n; ++i) {
      trace::KernelRecord k;
      k.name = t.strings.intern(name);
      k.device = device;
      t.kernels.push(k);
    }
  };
  kernel("gt_add(float*, int)", gt::kAddKernels);
  kernel("gt_scale(float*, int, float)", gt::kScaleKernels);
  kernel("gt_event_kernel(float*)", gt::kEventKernels);
  kernel("void at::native::noise<4>()", 50);
  auto copy = [&](trace::MemcpyKind kind, trace::MemoryKind src, trace::MemoryKind dst, uint64_t bytes, int n) {
    for (int i = 0; i < n; ++i) t.memcpys.push({.bytes = bytes, .kind = kind, .src_kind = src, .dst_kind = dst});
  };
  using MK = trace::MemcpyKind;
  using M = trace::MemoryKind;
  copy(MK::kHtoD, M::kPageable, M::kDevice, gt::kPageableHtoDBytes, gt::kPageableHtoD);
  copy(MK::kHtoD, M::kPinned, M::kDevice, gt::kPinnedHtoDBytes, gt::kPinnedHtoD);
  copy(MK::kDtoH, M::kDevice, M::kPinned, gt::kPinnedDtoHBytes, gt::kPinnedDtoH);
  copy(MK::kDtoH, M::kDevice, M::kPageable, gt::kPageableDtoHBytes, gt::kPageableDtoH);
  copy(MK::kDtoD, M::kDevice, M::kDevice, gt::kDtoDBytes, gt::kDtoD);
  copy(MK::kHtoD, M::kPageable, M::kDevice, 4, 9);  // runtime noise
  for (int i = 0; i < gt::kMemsets; ++i) t.memsets.push({.bytes = gt::kMemsetBytes});
  auto range = [&](const char* text, trace::Timestamp s, trace::Timestamp e) {
    t.nvtx.push({.start = s, .end = e, .kind = trace::NvtxKind::kRange, .text = t.strings.intern(text)});
  };
  for (const char* r : gt::kRanges)
    range(r, r == std::string("gt_sync") ? 1000 : 0, r == std::string("gt_sync") ? 2000 : 10);
  t.nvtx.push({.start = 5, .end = 5, .kind = trace::NvtxKind::kMark, .text = t.strings.intern(gt::kMark)});
  auto sync = [&](trace::SyncKind kind, int n, trace::Timestamp at) {
    for (int i = 0; i < n; ++i) t.syncs.push({.start = at, .end = at + 1, .kind = kind});
  };
  sync(trace::SyncKind::kStreamSynchronize, gt::kStreamSyncs, 1100);
  sync(trace::SyncKind::kDeviceSynchronize, gt::kDeviceSyncs, 1200);
  sync(trace::SyncKind::kEventSynchronize, gt::kEventSyncs, 1300);
  sync(trace::SyncKind::kStreamWaitEvent, gt::kStreamWaitEvents, 1400);
  sync(trace::SyncKind::kStreamSynchronize, 5, 50);  // outside gt_sync: ignored
  for (int r = 0; r < gt::kAllReduces; ++r)
    for (uint32_t d = 0; d < gt::kNcclDevices; ++d) t.nccl.push({.device = d, .op = trace::NcclOp::kAllReduce});
  for (int i = 0; i < gt::kAddKernels + gt::kScaleKernels + gt::kEventKernels; ++i)
    t.api.push({.name = t.strings.intern("cudaLaunchKernel_v7000")});
  t.meta.clock = {{0, 0}, {10, 10}};
  t.meta.extra["activities"] = "kernel,memcpy,memset,sync,nvtx";
  return t;
}

TEST(CollectGpuCheck, GroundTruthPassesOnlyWhenExact) {
  std::vector<trace::Trace> traces;
  traces.push_back(perfect_ground_truth());
  for (const auto& c : check_ground_truth(traces)) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;

  traces[0].memcpys.push({.bytes = gt::kPinnedHtoDBytes,
                          .kind = trace::MemcpyKind::kHtoD,
                          .src_kind = trace::MemoryKind::kPinned});  // one copy too many
  traces[0].syncs.push({.start = 1500, .end = 1501, .kind = trace::SyncKind::kDeviceSynchronize});
  int failed = 0;
  for (const auto& c : check_ground_truth(traces)) {
    if (!c.pass) {
      ++failed;
      EXPECT_TRUE(c.name == "pinned HtoD copies" || c.name == "device synchronizations in gt_sync") << c.name;
    }
  }
  EXPECT_EQ(failed, 2);
  traces.push_back(perfect_ground_truth());  // two processes: not the ground-truth program
  EXPECT_FALSE(check_ground_truth(traces)[0].pass);
}

// The default activities leave SYNCHRONIZATION records out: the program's
// synchronizing runtime calls (API records) must then show every one.
TEST(CollectGpuCheck, GroundTruthSyncsFromApiCallsByDefault) {
  std::vector<trace::Trace> traces;
  traces.push_back(perfect_ground_truth());
  auto& t = traces[0];
  t.meta.extra["activities"] = "kernel,memcpy,memset,nvtx";
  t.syncs = {};
  auto calls = [&](const char* name, int n, trace::Timestamp at) {
    for (int i = 0; i < n; ++i) t.api.push({.start = at, .end = at + 1, .name = t.strings.intern(name)});
  };
  calls("cudaStreamSynchronize_v3020", gt::kStreamSyncs, 1100);
  calls("cudaDeviceSynchronize_v3020", gt::kDeviceSyncs, 1200);
  calls("cudaEventSynchronize_v3020", gt::kEventSyncs, 1300);
  calls("cudaStreamWaitEvent_v3020", gt::kStreamWaitEvents, 1400);
  calls("cudaStreamSynchronize_v3020", 3, 50);  // outside gt_sync: ignored
  for (const auto& c : check_ground_truth(traces)) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;
  calls("cudaEventSynchronize_v3020", 1, 1500);  // one too many
  int failed = 0;
  for (const auto& c : check_ground_truth(traces)) failed += !c.pass;
  EXPECT_EQ(failed, 1);
}

TEST(CollectGpuCheck, Ddp) {
  std::vector<trace::Trace> traces(3);
  for (int r = 0; r < 2; ++r) {
    auto& t = traces[r];
    t.meta.rank = r;
    t.meta.local_rank = r;
    t.kernels.push({});
    t.nccl.push({.op = trace::NcclOp::kAllReduce});
    t.nvtx.push({});
    t.memcpys.push({});
    t.meta.devices.push_back({});
  }
  traces[0].counters.push({});
  // traces[2]: the torchrun agent, no rank, no kernels.
  for (const auto& c : check_ddp(traces, 2)) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;
  traces[0].counters = {};
  traces[1].nccl = {};
  int failed = 0;
  for (const auto& c : check_ddp(traces, 2)) failed += !c.pass;
  EXPECT_EQ(failed, 2);
}

int failures(const std::vector<GpuCheck>& checks) {
  int n = 0;
  for (const auto& c : checks) n += !c.pass;
  return n;
}

TEST(CollectGpuCheck, GroundTruthKernelsOnly) {
  std::vector<trace::Trace> traces;
  traces.push_back(perfect_ground_truth());
  auto& t = traces[0];
  // The full trace has copies, memsets, syncs and NVTX: not a kernel-only run.
  t.meta.extra["activities"] = "kernel";
  EXPECT_EQ(failures(check_ground_truth_kernels(traces)), 4);
  t.memcpys = {};
  t.memsets = {};
  t.syncs = {};
  t.nvtx = {};
  for (const auto& c : check_ground_truth_kernels(traces)) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;
  EXPECT_EQ(failures(check_activities(traces)), 0);
  t.kernels.push({.name = t.strings.intern("gt_add(float*, int)")});
  EXPECT_EQ(failures(check_ground_truth_kernels(traces)), 1);
  t.meta.extra["activities"] = "kernel,memcpy";
  EXPECT_EQ(failures(check_ground_truth_kernels(traces)), 2);
}

TEST(CollectGpuCheck, ActivitiesLeftOutHaveNoRecords) {
  std::vector<trace::Trace> traces(1);
  auto& t = traces[0];
  t.meta.extra["activities"] = "kernel,memset";
  t.kernels.push({});
  t.memsets.push({});
  EXPECT_EQ(failures(check_activities(traces)), 0);
  t.memcpys.push({});  // memcpy was not asked for
  auto checks = check_activities(traces);
  ASSERT_EQ(failures(checks), 1);
  for (const auto& c : checks) {
    if (!c.pass) {
      EXPECT_NE(c.name.find("no memcpy records"), std::string::npos) << c.name;
    }
  }
  t.meta.extra.erase("activities");  // a trace from before --activities: cannot be checked
  EXPECT_EQ(failures(check_activities(traces)), 1);
  EXPECT_EQ(failures(check_activities({})), 1);
}

// The torchrun agent loads CUDA (so it is traced) but launches nothing: only
// ranks, or a lone process, are required to have kernels.
TEST(CollectGpuCheck, RanklessLauncherNeedsNoKernels) {
  std::vector<trace::Trace> traces(2);
  traces[0].meta.rank = 0;
  traces[0].meta.extra["activities"] = "kernel";
  traces[0].kernels.push({});
  traces[1].meta.rank = -1;
  traces[1].meta.extra["activities"] = "kernel";
  EXPECT_EQ(failures(check_activities(traces)), 0);
  traces[0].kernels = {};
  EXPECT_EQ(failures(check_activities(traces)), 1);  // a rank without kernels still fails
  traces.resize(1);
  traces[0].meta.rank = -1;
  EXPECT_EQ(failures(check_activities(traces)), 1);  // a lone process must have kernels
}

TEST(CollectGpuCheck, WindowHoldsExactlyTheStepsInside) {
  std::vector<trace::Trace> traces(3);  // two ranks and the torchrun agent
  for (int r = 0; r < 2; ++r) {
    auto& t = traces[r];
    t.meta.rank = r;
    t.meta.extra["activities"] = "kernel,memcpy,memset,sync,nvtx";
    t.meta.extra["windows_opened"] = "5";
    t.kernels.push({});
    for (int i = 0; i < 120; ++i)
      t.nvtx.push({.kind = trace::NvtxKind::kRange, .text = t.strings.intern("train_step")});
    t.nvtx.push({.kind = trace::NvtxKind::kRange, .text = t.strings.intern("other")});
    t.nvtx.push({.kind = trace::NvtxKind::kMark, .text = t.strings.intern("train_step")});
  }
  traces[2].meta.extra["activities"] = "kernel,memcpy,memset,sync,nvtx";
  traces[2].kernels.push({});
  for (const auto& c : check_window(traces, "train_step", 120, 5)) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;
  EXPECT_EQ(failures(check_window(traces, "train_step", 121, 5)), 2);  // a step outside a window leaked in
  traces[1].meta.extra["windows_opened"] = "4";
  EXPECT_EQ(failures(check_window(traces, "train_step", 120, 5)), 1);
  // Without NVTX recorded, the step count is not checked but no NVTX record may exist.
  for (auto& t : traces) t.meta.extra["activities"] = "kernel";
  traces[1].meta.extra["windows_opened"] = "5";
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 2);
  traces[0].nvtx = {};
  traces[1].nvtx = {};
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 0);
  // With detaching on, CUPTI detached at least once and at most once per window.
  for (int r = 0; r < 2; ++r) {
    traces[r].meta.extra["detach"] = "1";
    traces[r].meta.extra["cupti_detaches"] = r == 0 ? "5" : "3";
  }
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 0);
  traces[1].meta.extra["cupti_detaches"] = "0";
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 1);
  traces[1].meta.extra["cupti_detaches"] = "6";
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 1);
  traces[1].meta.extra["cupti_detaches"] = "3";
  traces[0].meta.extra["capture_stops_without_window"] = "2";  // starts missed
  EXPECT_EQ(failures(check_window(traces, "train_step", 999, 5)), 1);
}

TEST(CollectGpuCheck, NvmlMap) {
  std::vector<trace::Trace> traces(2);  // the sampler's process and one without counters
  auto& t = traces[0];
  t.meta.extra["nvml_cuda_ordinals"] = "1,0";
  t.counters.push({.device = 0});
  t.counters.push({.device = 1});
  for (const auto& c : check_nvml_map(traces, "1,0")) EXPECT_TRUE(c.pass) << c.name << ": " << c.detail;
  EXPECT_EQ(failures(check_nvml_map(traces, "0,1")), 1);
  t.meta.extra["nvml_cuda_ordinals"] = "-1,0";
  EXPECT_EQ(failures(check_nvml_map(traces, "-1,0")), 1);  // a counter on ordinal 1, which is not visible
  t.counters = {};
  t.counters.push({.device = 0});
  EXPECT_EQ(failures(check_nvml_map(traces, "-1,0")), 0);
  t.counters = {};
  EXPECT_EQ(failures(check_nvml_map(traces, "-1,0")), 1);  // nobody sampled
}

}  // namespace
}  // namespace scalescope::collect
