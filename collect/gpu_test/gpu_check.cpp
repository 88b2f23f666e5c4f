#include "collect/gpu_test/gpu_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "collect/gpu_test/ground_truth_spec.hpp"

namespace scalescope::collect {
namespace {

namespace gt = ground_truth;

GpuCheck exact(std::string name, uint64_t expected, uint64_t got) {
  return {std::move(name), expected == got, fmt::format("expected {}, got {}", expected, got)};
}

std::string_view extra(const trace::Trace& t, const std::string& key) {
  auto it = t.meta.extra.find(key);
  return it == t.meta.extra.end() ? std::string_view() : std::string_view(it->second);
}

bool has_group(std::string_view activities, std::string_view group) {
  // "kernel,memcpy,...": whole names only.
  size_t pos = 0;
  while (pos <= activities.size()) {
    size_t comma = std::min(activities.find(',', pos), activities.size());
    if (activities.substr(pos, comma - pos) == group) return true;
    pos = comma + 1;
  }
  return false;
}

std::string who(const trace::Trace& t) {
  return t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : fmt::format("pid {}", t.meta.pid);
}

uint64_t kernels_named(const trace::Trace& t, std::string_view prefix) {
  uint64_t n = 0;
  for (size_t i = 0; i < t.kernels.size(); ++i) n += t.strings.view(t.kernels.name[i]).starts_with(prefix);
  return n;
}

}  // namespace

int print_checks(const std::vector<GpuCheck>& checks) {
  int failed = 0;
  for (const auto& c : checks) {
    std::printf("%s %s: %s\n", c.pass ? "PASS" : "FAIL", c.name.c_str(), c.detail.c_str());
    failed += !c.pass;
  }
  return failed == 0 ? 0 : 1;
}

std::vector<GpuCheck> check_ground_truth(const std::vector<trace::Trace>& traces) {
  std::vector<GpuCheck> out;
  out.push_back(exact("one traced process", 1, traces.size()));
  if (traces.size() != 1) return out;
  const trace::Trace& t = traces[0];
  out.push_back(exact("gt_add kernels", gt::kAddKernels, kernels_named(t, "gt_add")));
  out.push_back(exact("gt_scale kernels", gt::kScaleKernels, kernels_named(t, "gt_scale")));
  out.push_back(exact("gt_event_kernel kernels", gt::kEventKernels, kernels_named(t, "gt_event_kernel")));
  auto copies = [&](trace::MemcpyKind kind, trace::MemoryKind host_kind, uint64_t bytes) {
    uint64_t n = 0;
    for (size_t i = 0; i < t.memcpys.size(); ++i) {
      auto r = t.memcpys.row(i);
      if (r.kind != kind || r.bytes != bytes) continue;
      auto host = kind == trace::MemcpyKind::kHtoD   ? r.src_kind
                  : kind == trace::MemcpyKind::kDtoH ? r.dst_kind
                                                     : r.src_kind;
      n += host == host_kind;
    }
    return n;
  };
  using MK = trace::MemcpyKind;
  using Mem = trace::MemoryKind;
  out.push_back(
      exact("pageable HtoD copies", gt::kPageableHtoD, copies(MK::kHtoD, Mem::kPageable, gt::kPageableHtoDBytes)));
  out.push_back(exact("pinned HtoD copies", gt::kPinnedHtoD, copies(MK::kHtoD, Mem::kPinned, gt::kPinnedHtoDBytes)));
  out.push_back(exact("pinned DtoH copies", gt::kPinnedDtoH, copies(MK::kDtoH, Mem::kPinned, gt::kPinnedDtoHBytes)));
  out.push_back(
      exact("pageable DtoH copies", gt::kPageableDtoH, copies(MK::kDtoH, Mem::kPageable, gt::kPageableDtoHBytes)));
  out.push_back(exact("DtoD copies", gt::kDtoD, copies(MK::kDtoD, Mem::kDevice, gt::kDtoDBytes)));
  uint64_t memsets = 0;
  for (size_t i = 0; i < t.memsets.size(); ++i) memsets += t.memsets.bytes[i] == gt::kMemsetBytes;
  out.push_back(exact("memsets", gt::kMemsets, memsets));

  // NVTX: the program's ranges and mark, each exactly once.
  std::set<std::string> expected_ranges(std::begin(gt::kRanges), std::end(gt::kRanges));
  uint64_t ranges = 0, marks = 0;
  trace::Timestamp sync_start = -1, sync_end = -1;
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    std::string text(t.strings.view(t.nvtx.text[i]));
    if (t.nvtx.kind[i] == trace::NvtxKind::kMark) {
      marks += text == gt::kMark;
    } else if (expected_ranges.count(text)) {
      ++ranges;
      if (text == "gt_sync") {
        sync_start = t.nvtx.start[i];
        sync_end = t.nvtx.end[i];
      }
    }
  }
  out.push_back(exact("NVTX ranges gt_*", gt::kRangeCount, ranges));
  out.push_back(exact("NVTX mark gt_mark", 1, marks));
  uint64_t by_kind[5] = {};
  using SK = trace::SyncKind;
  if (has_group(extra(t, "activities"), "sync")) {
    for (size_t i = 0; i < t.syncs.size(); ++i)
      if (t.syncs.start[i] >= sync_start && t.syncs.end[i] <= sync_end) ++by_kind[static_cast<int>(t.syncs.kind[i])];
  } else {
    // Without SYNCHRONIZATION records (the default) the program's runtime
    // calls, recorded by --api default, must show every one of them.
    for (size_t i = 0; i < t.api.size(); ++i) {
      if (t.api.start[i] < sync_start || t.api.end[i] > sync_end) continue;
      auto name = t.strings.view(t.api.name[i]);
      if (name.starts_with("cudaStreamSynchronize")) ++by_kind[int(SK::kStreamSynchronize)];
      if (name.starts_with("cudaDeviceSynchronize")) ++by_kind[int(SK::kDeviceSynchronize)];
      if (name.starts_with("cudaEventSynchronize")) ++by_kind[int(SK::kEventSynchronize)];
      if (name.starts_with("cudaStreamWaitEvent")) ++by_kind[int(SK::kStreamWaitEvent)];
    }
  }
  out.push_back(exact("stream synchronizations in gt_sync", gt::kStreamSyncs, by_kind[int(SK::kStreamSynchronize)]));
  out.push_back(exact("device synchronizations in gt_sync", gt::kDeviceSyncs, by_kind[int(SK::kDeviceSynchronize)]));
  out.push_back(exact("event synchronizations in gt_sync", gt::kEventSyncs, by_kind[int(SK::kEventSynchronize)]));
  out.push_back(exact("stream waits in gt_sync", gt::kStreamWaitEvents, by_kind[int(SK::kStreamWaitEvent)]));

  uint64_t allreduce = 0, other_nccl = 0;
  std::set<uint32_t> devices;
  for (size_t i = 0; i < t.nccl.size(); ++i) {
    if (t.nccl.op[i] == trace::NcclOp::kAllReduce) {
      ++allreduce;
      devices.insert(t.nccl.device[i]);
    } else {
      ++other_nccl;
    }
  }
  out.push_back(
      exact("NCCL all-reduce kernels (2 devices x 10)", uint64_t(gt::kNcclDevices) * gt::kAllReduces, allreduce));
  out.push_back(exact("devices running all-reduces", gt::kNcclDevices, devices.size()));
  out.push_back(exact("other NCCL kernels", 0, other_nccl));
  uint64_t launches = 0;
  for (size_t i = 0; i < t.api.size(); ++i) {
    auto name = t.strings.view(t.api.name[i]);
    launches += name.starts_with("cudaLaunchKernel");
  }
  // Every <<<>>> launch is one cudaLaunchKernel call (default API selection).
  out.push_back(exact("cudaLaunchKernel calls >= program launches", 1,
                      launches >= uint64_t(gt::kAddKernels + gt::kScaleKernels + gt::kEventKernels)));
  out.push_back(exact("records dropped", 0, t.problems.get(trace::Problem::kDroppedRecords)));
  out.push_back(exact("clock anchors (start and end)", 2, t.meta.clock.size()));
  return out;
}

std::vector<GpuCheck> check_ddp(const std::vector<trace::Trace>& traces, int world_size) {
  std::vector<GpuCheck> out;
  std::set<int> ranks;
  uint64_t counters = 0;
  for (const auto& t : traces) {
    if (t.meta.rank < 0) continue;
    ranks.insert(t.meta.rank);
    std::string who = fmt::format("rank {}", t.meta.rank);
    out.push_back({who + " has kernels", t.kernels.size() > 0, fmt::format("{} kernels", t.kernels.size())});
    uint64_t allreduce = 0;
    for (size_t i = 0; i < t.nccl.size(); ++i) allreduce += t.nccl.op[i] == trace::NcclOp::kAllReduce;
    out.push_back({who + " has NCCL all-reduces", allreduce > 0,
                   fmt::format("{} all-reduce of {} NCCL kernels", allreduce, t.nccl.size())});
    out.push_back({who + " has NVTX ranges", t.nvtx.size() > 0, fmt::format("{} ranges", t.nvtx.size())});
    out.push_back({who + " has copies", t.memcpys.size() > 0, fmt::format("{} copies", t.memcpys.size())});
    out.push_back({who + " has devices in metadata", !t.meta.devices.empty(),
                   fmt::format("{} devices, first bus id '{}'", t.meta.devices.size(),
                               t.meta.devices.empty() ? "" : t.meta.devices[0].pci_bus_id)});
    if (t.meta.local_rank == 0) counters += t.counters.size();
  }
  out.push_back(exact("ranks traced", uint64_t(world_size), ranks.size()));
  // Forked DataLoader workers make no trace: one trace per rank, plus none.
  uint64_t rankless_with_kernels = 0;
  for (const auto& t : traces) rankless_with_kernels += t.meta.rank < 0 && t.kernels.size() > 0;
  out.push_back(exact("traces without a rank that ran kernels", 0, rankless_with_kernels));
  out.push_back({"NVML counters on local rank 0", counters > 0, fmt::format("{} samples", counters)});
  return out;
}

std::vector<GpuCheck> check_activities(const std::vector<trace::Trace>& traces) {
  std::vector<GpuCheck> out;
  for (const auto& t : traces) {
    std::string_view activities = extra(t, "activities");
    if (activities.empty()) {
      out.push_back({who(t) + " records its activities", false, "no 'activities' in the trace's metadata"});
      continue;
    }
    auto absent = [&](std::string_view group, size_t records) {
      if (has_group(activities, group)) return;
      out.push_back({fmt::format("{} has no {} records (not in '{}')", who(t), group, activities), records == 0,
                     fmt::format("{} records", records)});
    };
    absent("kernel", t.kernels.size());
    absent("memcpy", t.memcpys.size());
    absent("memset", t.memsets.size());
    absent("sync", t.syncs.size());
    absent("nvtx", t.nvtx.size());
    // A launcher process without a rank (the torchrun agent loads CUDA but
    // runs no kernel) is traced too; only ranks, or a lone process, must have kernels.
    if (has_group(activities, "kernel") && (t.meta.rank >= 0 || traces.size() == 1))
      out.push_back({who(t) + " has kernels", t.kernels.size() > 0, fmt::format("{} kernels", t.kernels.size())});
  }
  if (traces.empty()) out.push_back({"traces found", false, "none"});
  return out;
}

std::vector<GpuCheck> check_ground_truth_kernels(const std::vector<trace::Trace>& traces) {
  std::vector<GpuCheck> out;
  out.push_back(exact("one traced process", 1, traces.size()));
  if (traces.size() != 1) return out;
  const trace::Trace& t = traces[0];
  out.push_back({"activities are 'kernel'", extra(t, "activities") == "kernel", std::string(extra(t, "activities"))});
  out.push_back(exact("gt_add kernels", gt::kAddKernels, kernels_named(t, "gt_add")));
  out.push_back(exact("gt_scale kernels", gt::kScaleKernels, kernels_named(t, "gt_scale")));
  out.push_back(exact("gt_event_kernel kernels", gt::kEventKernels, kernels_named(t, "gt_event_kernel")));
  uint64_t allreduce = 0;
  for (size_t i = 0; i < t.nccl.size(); ++i) allreduce += t.nccl.op[i] == trace::NcclOp::kAllReduce;
  out.push_back(
      exact("NCCL all-reduce kernels (2 devices x 10)", uint64_t(gt::kNcclDevices) * gt::kAllReduces, allreduce));
  out.push_back(exact("copies", 0, t.memcpys.size()));
  out.push_back(exact("memsets", 0, t.memsets.size()));
  out.push_back(exact("synchronizations", 0, t.syncs.size()));
  out.push_back(exact("NVTX records", 0, t.nvtx.size()));
  out.push_back(exact("records dropped", 0, t.problems.get(trace::Problem::kDroppedRecords)));
  return out;
}

std::vector<GpuCheck> check_window(const std::vector<trace::Trace>& traces, std::string_view range, uint64_t steps,
                                   uint64_t windows) {
  std::vector<GpuCheck> out;
  size_t ranked = 0;
  for (const auto& t : traces) {
    if (t.meta.rank < 0) continue;
    ++ranked;
    std::string opened(extra(t, "windows_opened"));
    out.push_back({who(t) + " opened every window", opened == std::to_string(windows),
                   fmt::format("expected {}, got '{}'", windows, opened)});
    if (extra(t, "detach") == "1") {
      // CUPTI is detached once a window has stayed closed for the grace time:
      // at least once, at most once per window (windows reopened at once share one).
      std::string detaches(extra(t, "cupti_detaches"));
      uint64_t n = 0;
      bool number = !detaches.empty() && detaches.find_first_not_of("0123456789") == std::string::npos;
      if (number) n = std::stoull(detaches);
      out.push_back({who(t) + " detached CUPTI between windows", number && n >= 1 && n <= windows,
                     fmt::format("{} windows, {} detaches", windows, detaches)});
    }
    if (auto missed = extra(t, "capture_stops_without_window"); !missed.empty())
      out.push_back({who(t) + " saw every window's start", false,
                     fmt::format("{} cudaProfilerStop calls without an open window", missed)});
    if (!has_group(extra(t, "activities"), "nvtx")) continue;
    uint64_t n = 0;
    for (size_t i = 0; i < t.nvtx.size(); ++i)
      n += t.nvtx.kind[i] == trace::NvtxKind::kRange && t.strings.view(t.nvtx.text[i]) == range;
    out.push_back(exact(fmt::format("{} NVTX ranges '{}' (steps inside the windows)", who(t), range), steps, n));
  }
  out.push_back({"ranks traced", ranked > 0, fmt::format("{} traces with a rank", ranked)});
  auto activities = check_activities(traces);
  out.insert(out.end(), activities.begin(), activities.end());
  return out;
}

std::vector<GpuCheck> check_nvml_map(const std::vector<trace::Trace>& traces, std::string_view expected) {
  std::vector<GpuCheck> out;
  std::set<uint32_t> allowed;
  size_t pos = 0;
  while (pos <= expected.size()) {
    size_t comma = std::min(expected.find(',', pos), expected.size());
    std::string item(expected.substr(pos, comma - pos));
    if (!item.empty() && item[0] != '-') allowed.insert(static_cast<uint32_t>(std::stoul(item)));
    pos = comma + 1;
  }
  size_t sampled = 0;
  for (const auto& t : traces) {
    if (t.counters.size() == 0) continue;
    ++sampled;
    out.push_back({who(t) + " NVML index -> CUDA ordinal", extra(t, "nvml_cuda_ordinals") == expected,
                   fmt::format("expected '{}', got '{}'", expected, extra(t, "nvml_cuda_ordinals"))});
    std::set<uint32_t> seen;
    for (size_t i = 0; i < t.counters.size(); ++i) seen.insert(t.counters.device[i]);
    bool only_allowed = std::includes(allowed.begin(), allowed.end(), seen.begin(), seen.end());
    out.push_back({who(t) + " counters only on visible CUDA ordinals", only_allowed && seen == allowed,
                   fmt::format("{} devices with counters, {} expected", seen.size(), allowed.size())});
  }
  out.push_back(exact("processes with GPU counters", 1, sampled));
  return out;
}

}  // namespace scalescope::collect
