#include "trace/export/export_tracks.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "trace/model/frame_namer.hpp"

namespace scalescope::trace::detail {
namespace {

constexpr uint32_t kAnnotationStream = 0xFFFFFFFF;  // the per-device NVTX track, not a real stream

struct Span {
  int64_t start, end;
  uint32_t* lane;  // where the lane chosen for it is written
};

// Lanes in which spans nest: each span goes on the first lane where it starts
// after the open slices end, or fits inside the innermost open one.
void assign_lanes(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start || (a.start == b.start && a.end > b.end); });
  std::vector<std::vector<int64_t>> open;  // per lane, a stack of open ends
  for (Span& sp : spans) {
    uint32_t lane = 0;
    for (;; ++lane) {
      if (lane == open.size()) open.emplace_back();
      auto& stack = open[lane];
      while (!stack.empty() && stack.back() <= sp.start) stack.pop_back();
      if (stack.empty() || sp.end <= stack.back()) break;
    }
    open[lane].push_back(sp.end);
    *sp.lane = lane;
  }
}

uint64_t thread_key(uint32_t pid, uint32_t tid) { return (uint64_t{pid} << 32) | tid; }

}  // namespace

int64_t export_origin(std::span<const Trace> traces) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Trace& t : traces) {
    auto [first, last] = t.time_span();
    // {0, 0}: no GPU or API event (an agent's trace may hold only NVTX ranges
    // or host samples); its origin comes from those below.
    if (!(first == 0 && last == 0)) origin = std::min(origin, t.meta.to_unix_ns(first));
    if (t.nvtx.size())
      origin = std::min(origin, t.meta.to_unix_ns(*std::min_element(t.nvtx.start.begin(), t.nvtx.start.end())));
    if (t.host_samples.size())
      origin = std::min(origin,
                        t.meta.to_unix_ns(*std::min_element(t.host_samples.time.begin(), t.host_samples.time.end())));
  }
  return origin == std::numeric_limits<int64_t>::max() ? 0 : origin;
}

TrackNumbers::TrackNumbers(std::span<const Trace> traces) {
  for (const Trace& t : traces) {
    host_tids_.insert(t.api.thread.begin(), t.api.thread.end());
    for (size_t i = 0; i < t.nvtx.size(); ++i)
      if (t.nvtx.device[i] < 0) host_tids_.insert(t.nvtx.thread[i]);
  }
}

uint32_t TrackNumbers::next_gpu() {
  while (host_tids_.count(gpu_)) ++gpu_;
  return gpu_++;
}

uint32_t TrackNumbers::next_sampled() {
  while (host_tids_.count(sampled_)) ++sampled_;
  return sampled_++;
}

namespace {

// The lane of each row, per table, within its stream's or thread's track.
struct Lanes {
  std::vector<uint32_t> kernels, memcpys, memsets, nvtx, api;
  explicit Lanes(const Trace& t)
      : kernels(t.kernels.size()),
        memcpys(t.memcpys.size()),
        memsets(t.memsets.size()),
        nvtx(t.nvtx.size()),
        api(t.api.size()) {}
};

using GpuTracks = std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t>;  // (device, stream, lane) -> tid
using HostOverlapTracks = std::map<std::pair<uint32_t, uint32_t>, uint32_t>;     // (OS tid, lane > 0) -> tid

// GPU tracks: kernels, copies and sets share their stream's lanes; GPU
// annotation ranges get a track per device. The tids are set by name_gpu_tracks.
GpuTracks lay_out_gpu_lanes(const Trace& t, Lanes& lanes) {
  GpuTracks gpu_tid;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Span>> by_track;
  for (size_t i = 0; i < t.kernels.size(); ++i)
    by_track[{t.kernels.device[i], t.kernels.stream[i]}].push_back(
        {t.kernels.start[i], std::max(t.kernels.start[i], t.kernels.end[i]), &lanes.kernels[i]});
  for (size_t i = 0; i < t.memcpys.size(); ++i)
    by_track[{t.memcpys.device[i], t.memcpys.stream[i]}].push_back(
        {t.memcpys.start[i], std::max(t.memcpys.start[i], t.memcpys.end[i]), &lanes.memcpys[i]});
  for (size_t i = 0; i < t.memsets.size(); ++i)
    by_track[{t.memsets.device[i], t.memsets.stream[i]}].push_back(
        {t.memsets.start[i], std::max(t.memsets.start[i], t.memsets.end[i]), &lanes.memsets[i]});
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (t.nvtx.device[i] >= 0) {
      const bool mark = t.nvtx.kind[i] == NvtxKind::kMark;
      by_track[{static_cast<uint32_t>(t.nvtx.device[i]), kAnnotationStream}].push_back(
          {t.nvtx.start[i], mark ? t.nvtx.start[i] : std::max(t.nvtx.start[i], t.nvtx.end[i]), &lanes.nvtx[i]});
    }
  for (auto& [key, spans] : by_track) {
    assign_lanes(spans);
    for (const Span& sp : spans) gpu_tid.emplace(std::tuple{key.first, key.second, *sp.lane}, 0);
  }
  return gpu_tid;
}

void name_gpu_tracks(GpuTracks& gpu_tid, TrackNumbers& numbers, TraceTracks& out) {
  for (auto& [key, tid] : gpu_tid) {
    tid = numbers.next_gpu();
    const auto [device, stream, lane] = key;
    std::string name = stream == kAnnotationStream ? fmt::format("GPU {} annotations", device)
                                                   : fmt::format("GPU {} stream {}", device, stream);
    if (lane > 0) name += fmt::format(" (overlap {})", lane);
    // Streams sort after the host threads, in device and stream order.
    out.gpu.push_back({tid, std::move(name), int64_t{tid - TrackNumbers::kGpuBase} + 1000});
  }
}

// Host threads: API calls and host NVTX ranges on their OS thread's track
// (lane 0), the few that break the nesting on an overlap track. The tids are
// set by name_host_overlap_tracks.
HostOverlapTracks lay_out_host_lanes(const Trace& t, Lanes& lanes) {
  HostOverlapTracks host_lane_tid;
  std::map<uint32_t, std::vector<Span>> by_thread;
  for (size_t i = 0; i < t.api.size(); ++i)
    by_thread[t.api.thread[i]].push_back({t.api.start[i], std::max(t.api.start[i], t.api.end[i]), &lanes.api[i]});
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (t.nvtx.device[i] < 0) {
      const bool mark = t.nvtx.kind[i] == NvtxKind::kMark;
      by_thread[t.nvtx.thread[i]].push_back(
          {t.nvtx.start[i], mark ? t.nvtx.start[i] : std::max(t.nvtx.start[i], t.nvtx.end[i]), &lanes.nvtx[i]});
    }
  for (auto& [thread, spans] : by_thread) {
    assign_lanes(spans);
    for (const Span& sp : spans)
      if (*sp.lane > 0) host_lane_tid.emplace(std::pair{thread, *sp.lane}, 0);
  }
  return host_lane_tid;
}

void name_host_overlap_tracks(HostOverlapTracks& host_lane_tid, TrackNumbers& numbers, TraceTracks& out) {
  for (auto& [key, tid] : host_lane_tid) {
    tid = numbers.next_sampled();
    out.host_overlaps.push_back({tid, fmt::format("thread {} (overlap {})", key.first, key.second), 0});
  }
}

// Each row's track.
void place_rows(const Trace& t, const Lanes& lanes, const GpuTracks& gpu_tid, const HostOverlapTracks& host_lane_tid,
                TraceTracks& out) {
  auto gpu_of = [&](uint32_t device, uint32_t stream, uint32_t lane) { return gpu_tid.at({device, stream, lane}); };
  out.kernel_tid.resize(t.kernels.size());
  for (size_t i = 0; i < t.kernels.size(); ++i)
    out.kernel_tid[i] = gpu_of(t.kernels.device[i], t.kernels.stream[i], lanes.kernels[i]);
  out.memcpy_tid.resize(t.memcpys.size());
  for (size_t i = 0; i < t.memcpys.size(); ++i)
    out.memcpy_tid[i] = gpu_of(t.memcpys.device[i], t.memcpys.stream[i], lanes.memcpys[i]);
  out.memset_tid.resize(t.memsets.size());
  for (size_t i = 0; i < t.memsets.size(); ++i)
    out.memset_tid[i] = gpu_of(t.memsets.device[i], t.memsets.stream[i], lanes.memsets[i]);
  auto host_of = [&](uint32_t thread, uint32_t lane) { return lane == 0 ? thread : host_lane_tid.at({thread, lane}); };
  out.api_tid.resize(t.api.size());
  for (size_t i = 0; i < t.api.size(); ++i) out.api_tid[i] = host_of(t.api.thread[i], lanes.api[i]);
  out.nvtx_tid.resize(t.nvtx.size());
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    out.nvtx_tid[i] = t.nvtx.device[i] >= 0
                          ? gpu_of(static_cast<uint32_t>(t.nvtx.device[i]), kAnnotationStream, lanes.nvtx[i])
                          : host_of(t.nvtx.thread[i], lanes.nvtx[i]);
}

void add_kineto_thread_names(const Trace& t, TraceTracks& out) {
  std::unordered_set<uint32_t> host_threads(t.api.thread.begin(), t.api.thread.end());
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (t.nvtx.device[i] < 0) host_threads.insert(t.nvtx.thread[i]);
  for (const auto& [key, value] : t.meta.extra) {
    // Kineto's thread names: "kineto.thread_name.<pid>.<tid>".
    constexpr std::string_view kPrefix = "kineto.thread_name.";
    if (key.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    const size_t dot = key.rfind('.');
    const auto tid = static_cast<uint32_t>(std::strtoul(key.c_str() + dot + 1, nullptr, 10));
    if (host_threads.count(tid)) out.host_thread_names.push_back({tid, value, 0});
  }
}

// The host sampler's threads (format 1.2), then threads with native stacks
// (format 1.3) but no scheduler samples.
void add_sampled_threads(const Trace& t, TrackNumbers& numbers, TraceTracks& out) {
  int64_t sort = 0;
  const HostSampleTable& hs = t.host_samples;
  if (hs.size() > 0) {
    std::map<uint64_t, std::vector<uint32_t>> rows;  // (pid, tid) -> its samples, in time order
    for (size_t i = 0; i < hs.size(); ++i) rows[thread_key(hs.pid[i], hs.tid[i])].push_back(static_cast<uint32_t>(i));
    std::unordered_map<uint64_t, size_t> facts;  // the last thread row of each (pid, tid)
    for (size_t i = 0; i < t.host_threads.size(); ++i)
      facts[thread_key(t.host_threads.pid[i], t.host_threads.tid[i])] = i;
    for (auto& [key, idx] : rows) {
      std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return hs.time[a] < hs.time[b]; });
      SampledThread th;
      th.pid = static_cast<uint32_t>(key >> 32), th.tid = static_cast<uint32_t>(key);
      th.track.tid = numbers.next_sampled();
      std::string label = "host thread";
      if (auto f = facts.find(key); f != facts.end()) {
        const HostThreadTable& ht = t.host_threads;
        label = fmt::format("{} {}", ht.role[f->second] == ProcessRole::kDescendant ? "worker" : "host",
                            t.strings.view(ht.name[f->second]));
        if (ht.is_main[f->second]) label += " (main)";
      }
      th.track.name = label + fmt::format(" pid {} tid {}", th.pid, th.tid);
      th.track.sort_index = 500 + sort++;
      th.rows = std::move(idx);
      out.sampled_of[key] = out.sampled.size();
      out.sampled.push_back(std::move(th));
    }
  }
  const HostStackSampleTable& ss = t.host_stack_samples;
  for (size_t i = 0; i < ss.size(); ++i) {
    const uint64_t key = thread_key(ss.pid[i], ss.tid[i]);
    if (out.sampled_of.count(key)) continue;
    SampledThread th;
    th.pid = ss.pid[i], th.tid = ss.tid[i];
    th.track = {numbers.next_sampled(), fmt::format("host thread pid {} tid {}", ss.pid[i], ss.tid[i]), 500 + sort++};
    out.sampled_of[key] = out.sampled.size();
    out.sampled.push_back(std::move(th));
  }
}

}  // namespace

TraceTracks layout_tracks(const Trace& t, size_t index, TrackNumbers& numbers) {
  TraceTracks out;
  out.process_name = t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : fmt::format("process {}", index);
  if (!t.meta.hostname.empty() || t.meta.pid) out.process_name += fmt::format(" ({} pid {})", t.meta.hostname, t.meta.pid);
  Lanes lanes(t);
  GpuTracks gpu_tid = lay_out_gpu_lanes(t, lanes);
  name_gpu_tracks(gpu_tid, numbers, out);
  HostOverlapTracks host_lane_tid = lay_out_host_lanes(t, lanes);
  name_host_overlap_tracks(host_lane_tid, numbers, out);
  place_rows(t, lanes, gpu_tid, host_lane_tid, out);
  add_kineto_thread_names(t, out);
  add_sampled_threads(t, numbers, out);
  return out;
}

std::vector<HostStateSlice> TraceTracks::state_slices(const Trace& t, const SampledThread& thread) const {
  const HostSampleTable& hs = t.host_samples;
  const std::vector<uint32_t>& idx = thread.rows;
  std::vector<HostStateSlice> out;
  for (size_t a = 1; a < idx.size();) {
    HostStateSlice s;
    s.state = hs.state[idx[a]];
    s.begin = hs.time[idx[a - 1]];
    size_t b = a;
    for (; b < idx.size() && hs.state[idx[b]] == s.state; ++b) {
      s.cpu_ns += hs.cpu_ns[idx[b]];
      s.run_wait_ns += hs.run_wait_ns[idx[b]];
    }
    s.end = std::max(s.begin, hs.time[idx[b - 1]]);
    s.samples = b - a;
    s.cpu = hs.cpu[idx[b - 1]];
    out.push_back(s);
    a = b;
  }
  return out;
}

StackLabels::StackLabels(const Trace& t) : t_(t) {
  for (size_t i = 0; i < t.host_callsites.size(); ++i) row_of_[t.host_callsites.id[i]] = i;  // the last row wins
}

const std::string& StackLabels::frame(uint32_t id) {
  auto [it, inserted] = frame_.try_emplace(id);
  if (inserted) {
    auto r = row_of_.find(id);
    it->second = id == 0 ? "[no user frame]" : r == row_of_.end() ? "[lost frame]" : frame_label(t_, r->second);
  }
  return it->second;
}

const std::string& StackLabels::stack(uint32_t id) {
  auto [it, inserted] = stack_.try_emplace(id);
  if (inserted) {  // a corrupt file may hold a cycle: at most 64 frames
    std::vector<uint32_t> chain;
    for (uint32_t at = id; at != 0 && chain.size() < 64;) {
      chain.push_back(at);
      auto r = row_of_.find(at);
      if (r == row_of_.end()) break;
      at = t_.host_callsites.parent[r->second];
    }
    std::string text;
    for (size_t k = chain.size(); k-- > 0;) text += frame(chain[k]) + (k ? ";" : "");
    it->second = std::move(text);
  }
  return it->second;
}

}  // namespace scalescope::trace::detail
