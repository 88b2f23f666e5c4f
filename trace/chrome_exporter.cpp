// Chrome trace JSON (the "JSON Array/Object Format" that Perfetto and
// chrome://tracing read). Written in one streaming pass per trace.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>
#include <unordered_set>

#include <fmt/format.h>

#include "trace/export_util.hpp"
#include "trace/frame_namer.hpp"
#include "trace/exporters.hpp"
#include "trace/output_file.hpp"

namespace scalescope::trace {
namespace {

// Track ids that Perfetto keeps apart. Its JSON importer reads pid and tid as
// 32-bit unsigned numbers (larger ones are cut, so every GPU track of a rank
// landed on one track and overlapping kernels broke the nesting), names
// threads by tid alone, and reserves pid 0 (the swapper). So a trace's
// process is pid index + 1, host threads keep their OS tid (Linux tids stay
// below 2^22), and each GPU track (device, stream) gets a tid of its own from
// 2^30 upward, unique in the whole file and never equal to a host tid.
constexpr uint32_t kGpuTidBase = uint32_t{1} << 30;
constexpr uint32_t kHostSampledTidBase = uint32_t{3} << 29;  // host sampler tracks (format 1.2)
constexpr uint32_t kAnnotationStream = 0xFFFFFFFF;           // the per-device NVTX track, not a real stream

// Perfetto nests the slices of one track and cannot show two that overlap
// without one containing the other. Work on one stream can overlap a little
// (Hopper's programmatic dependent launch starts a kernel before the previous
// one ends, by ~0.1 us), so such a slice goes on a second track of its stream,
// "GPU d stream s (overlap 1)", rather than being cut or moved.
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

struct GpuTracks {
  // (device, stream, lane) -> tid; kAnnotationStream marks a device's annotation track.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> tid;
  uint32_t of(uint32_t device, uint32_t stream, uint32_t lane) const { return tid.at({device, stream, lane}); }
};

class ChromeWriter {
 public:
  explicit ChromeWriter(detail::OutputFile& file) : file_(file), out_(file.buffer()) {}

  void begin_event(char ph, size_t pid, uint64_t tid, int64_t ts_ns) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    fmt::format_to(std::back_inserter(out_), R"({{"ph":"{}","pid":{},"tid":{},"ts":)", ph, pid, tid);
    append_us(ts_ns);
  }
  void end_event() {
    out_ += '}';
    file_.maybe_flush();
  }
  void append_us(int64_t ns) {
    if (ns < 0) {
      out_ += '-';
      ns = -ns;
    }
    fmt::format_to(std::back_inserter(out_), "{}.{:03}", ns / 1000, ns % 1000);
  }
  void key_string(std::string_view key, std::string_view value) {
    fmt::format_to(std::back_inserter(out_), R"(,"{}":")", key);
    detail::append_json_escaped(out_, value);
    out_ += '"';
  }
  template <typename T>
  void key_number(std::string_view key, T value) {
    fmt::format_to(std::back_inserter(out_), R"(,"{}":{})", key, value);
  }
  // Metadata events: a track's name ("process_name", "thread_name") and its
  // place in the list ("process_sort_index", "thread_sort_index").
  void metadata_name(std::string_view what, size_t pid, uint64_t tid, std::string_view name) {
    begin_event('M', pid, tid, 0);
    key_string("name", what);
    out_ += R"(,"args":{"name":")";
    detail::append_json_escaped(out_, name);
    out_ += "\"}";
    end_event();
  }
  void metadata_sort_index(std::string_view what, size_t pid, uint64_t tid, int64_t index) {
    begin_event('M', pid, tid, 0);
    key_string("name", what);
    fmt::format_to(std::back_inserter(out_), R"(,"args":{{"sort_index":{}}})", index);
    end_event();
  }
  std::string& raw() { return out_; }

 private:
  detail::OutputFile& file_;
  std::string& out_;
  bool first_ = true;
};

std::string_view counter_name(CounterMetric m) { return to_string(m); }

}  // namespace

void export_chrome(std::span<const Trace> traces, const std::filesystem::path& out) {
  // One time origin for all ranks: the earliest Unix-aligned event. Relative
  // times keep ns precision in a double (Perfetto parses ts as double).
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
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;

  detail::OutputFile file(out);
  ChromeWriter w(file);
  std::string& o = w.raw();
  fmt::format_to(
      std::back_inserter(o),
      R"({{"displayTimeUnit":"ns","otherData":{{"producer":"scalescope","origin_unix_ns":{}}},"traceEvents":[)",
      origin);

  std::unordered_set<uint32_t> host_tids;
  for (const Trace& t : traces) {
    host_tids.insert(t.api.thread.begin(), t.api.thread.end());
    for (size_t i = 0; i < t.nvtx.size(); ++i)
      if (t.nvtx.device[i] < 0) host_tids.insert(t.nvtx.thread[i]);
  }
  uint32_t next_gpu_tid = kGpuTidBase;
  // Perfetto keys thread names by tid alone: host-sampled tracks are numbered
  // across all ranks, as the GPU tracks are.
  uint32_t next_sampled_tid = kHostSampledTidBase;
  std::string frames, samples;  // the native stacks' "stackFrames" and "samples" (written last)

  for (size_t index = 0; index < traces.size(); ++index) {
    const Trace& t = traces[index];
    const size_t pid = index + 1;
    auto ts = [&](Timestamp x) { return t.meta.to_unix_ns(x) - origin; };
    const StringTable& s = t.strings;

    // Names: the process, each host thread, each GPU track.
    std::string pname = t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : fmt::format("process {}", index);
    if (!t.meta.hostname.empty() || t.meta.pid) pname += fmt::format(" ({} pid {})", t.meta.hostname, t.meta.pid);
    w.metadata_name("process_name", pid, pid, pname);
    w.metadata_sort_index("process_sort_index", pid, pid, static_cast<int64_t>(pid));

    GpuTracks gpu;
    // Lanes per event: kernels, copies and sets share their stream's tracks.
    std::vector<uint32_t> kernel_lane(t.kernels.size()), memcpy_lane(t.memcpys.size()), memset_lane(t.memsets.size()),
        nvtx_lane(t.nvtx.size());
    {
      std::map<std::pair<uint32_t, uint32_t>, std::vector<Span>> by_track;
      for (size_t i = 0; i < t.kernels.size(); ++i)
        by_track[{t.kernels.device[i], t.kernels.stream[i]}].push_back(
            {t.kernels.start[i], std::max(t.kernels.start[i], t.kernels.end[i]), &kernel_lane[i]});
      for (size_t i = 0; i < t.memcpys.size(); ++i)
        by_track[{t.memcpys.device[i], t.memcpys.stream[i]}].push_back(
            {t.memcpys.start[i], std::max(t.memcpys.start[i], t.memcpys.end[i]), &memcpy_lane[i]});
      for (size_t i = 0; i < t.memsets.size(); ++i)
        by_track[{t.memsets.device[i], t.memsets.stream[i]}].push_back(
            {t.memsets.start[i], std::max(t.memsets.start[i], t.memsets.end[i]), &memset_lane[i]});
      for (size_t i = 0; i < t.nvtx.size(); ++i)
        if (t.nvtx.device[i] >= 0) {
          const bool mark = t.nvtx.kind[i] == NvtxKind::kMark;
          by_track[{static_cast<uint32_t>(t.nvtx.device[i]), kAnnotationStream}].push_back(
              {t.nvtx.start[i], mark ? t.nvtx.start[i] : std::max(t.nvtx.start[i], t.nvtx.end[i]), &nvtx_lane[i]});
        }
      for (auto& [key, spans] : by_track) {
        assign_lanes(spans);
        for (const Span& sp : spans) gpu.tid.emplace(std::tuple{key.first, key.second, *sp.lane}, 0);
      }
    }
    for (auto& [key, tid] : gpu.tid) {
      while (host_tids.count(next_gpu_tid)) ++next_gpu_tid;
      tid = next_gpu_tid++;
      const auto [device, stream, lane] = key;
      std::string name = stream == kAnnotationStream ? fmt::format("GPU {} annotations", device)
                                                     : fmt::format("GPU {} stream {}", device, stream);
      if (lane > 0) name += fmt::format(" (overlap {})", lane);
      w.metadata_name("thread_name", pid, tid, name);
      // Streams sort after the host threads, in device and stream order.
      w.metadata_sort_index("thread_sort_index", pid, tid, int64_t{tid - kGpuTidBase} + 1000);
    }
    std::unordered_set<uint32_t> host_threads(t.api.thread.begin(), t.api.thread.end());
    for (size_t i = 0; i < t.nvtx.size(); ++i)
      if (t.nvtx.device[i] < 0) host_threads.insert(t.nvtx.thread[i]);
    for (const auto& [key, value] : t.meta.extra) {
      // Kineto's thread names: "kineto.thread_name.<pid>.<tid>".
      constexpr std::string_view kPrefix = "kineto.thread_name.";
      if (key.compare(0, kPrefix.size(), kPrefix) != 0) continue;
      size_t dot = key.rfind('.');
      uint32_t tid = static_cast<uint32_t>(std::strtoul(key.c_str() + dot + 1, nullptr, 10));
      if (!host_threads.count(tid)) continue;
      w.metadata_name("thread_name", pid, tid, value);
    }

    // API calls; a flow starts at each call whose correlation id some GPU
    // work carries (so every flow start has an end).
    std::unordered_set<uint32_t> gpu_work;
    gpu_work.insert(t.kernels.correlation.begin(), t.kernels.correlation.end());
    gpu_work.insert(t.memcpys.correlation.begin(), t.memcpys.correlation.end());
    gpu_work.insert(t.memsets.correlation.begin(), t.memsets.correlation.end());
    std::unordered_set<uint32_t> launched;
    for (size_t i = 0; i < t.api.size(); ++i) {
      w.begin_event('X', pid, t.api.thread[i], ts(t.api.start[i]));
      o += R"(,"dur":)";
      w.append_us(std::max<int64_t>(0, t.api.end[i] - t.api.start[i]));
      w.key_string("cat", fmt::format("cuda_{}", to_string(t.api.domain[i])));
      w.key_string("name", s.view(t.api.name[i]));
      fmt::format_to(std::back_inserter(o), R"(,"args":{{"correlation":{},"cbid":{},"return_code":{}}})",
                     t.api.correlation[i], t.api.callback_id[i], t.api.return_code[i]);
      w.end_event();
      uint32_t corr = t.api.correlation[i];
      if (corr == 0 || !gpu_work.count(corr) || !launched.insert(corr).second) continue;
      // Flow start, bound to the enclosing API slice.
      w.begin_event('s', pid, t.api.thread[i], ts(t.api.start[i]));
      fmt::format_to(std::back_inserter(o), R"(,"cat":"launch","name":"launch","id":{})",
                     (uint64_t{index} << 32) | corr);
      w.end_event();
    }
    auto flow_end = [&](uint32_t corr, uint64_t track, Timestamp start) {
      if (corr == 0 || !launched.count(corr)) return;
      w.begin_event('f', pid, track, ts(start));
      fmt::format_to(std::back_inserter(o), R"(,"cat":"launch","name":"launch","bp":"e","id":{})",
                     (uint64_t{index} << 32) | corr);
      w.end_event();
    };

    for (size_t i = 0; i < t.kernels.size(); ++i) {
      const KernelTable& k = t.kernels;
      uint64_t track = gpu.of(k.device[i], k.stream[i], kernel_lane[i]);
      w.begin_event('X', pid, track, ts(k.start[i]));
      o += R"(,"dur":)";
      w.append_us(std::max<int64_t>(0, k.end[i] - k.start[i]));
      o += R"(,"cat":"kernel")";
      w.key_string("name", s.view(k.name[i]));
      fmt::format_to(std::back_inserter(o),
                     R"(,"args":{{"device":{},"stream":{},"correlation":{},"grid":[{},{},{}],"block":[{},{},{}],)"
                     R"("registers per thread":{},"shared memory":{}}})",
                     k.device[i], k.stream[i], k.correlation[i], k.grid_x[i], k.grid_y[i], k.grid_z[i], k.block_x[i],
                     k.block_y[i], k.block_z[i], k.registers_per_thread[i], k.shared_memory_bytes[i]);
      w.end_event();
      flow_end(k.correlation[i], track, k.start[i]);
    }
    for (size_t i = 0; i < t.memcpys.size(); ++i) {
      const MemcpyTable& m = t.memcpys;
      uint64_t track = gpu.of(m.device[i], m.stream[i], memcpy_lane[i]);
      w.begin_event('X', pid, track, ts(m.start[i]));
      o += R"(,"dur":)";
      w.append_us(std::max<int64_t>(0, m.end[i] - m.start[i]));
      fmt::format_to(std::back_inserter(o), R"J(,"cat":"memcpy","name":"Memcpy {} ({} -> {})")J", to_string(m.kind[i]),
                     to_string(m.src_kind[i]), to_string(m.dst_kind[i]));
      fmt::format_to(std::back_inserter(o), R"(,"args":{{"bytes":{},"correlation":{},"async":{}}})", m.bytes[i],
                     m.correlation[i], m.is_async[i] ? "true" : "false");
      w.end_event();
      flow_end(m.correlation[i], track, m.start[i]);
    }
    for (size_t i = 0; i < t.memsets.size(); ++i) {
      const MemsetTable& m = t.memsets;
      uint64_t track = gpu.of(m.device[i], m.stream[i], memset_lane[i]);
      w.begin_event('X', pid, track, ts(m.start[i]));
      o += R"(,"dur":)";
      w.append_us(std::max<int64_t>(0, m.end[i] - m.start[i]));
      fmt::format_to(std::back_inserter(o), R"J(,"cat":"memset","name":"Memset ({})")J", to_string(m.dst_kind[i]));
      fmt::format_to(std::back_inserter(o), R"(,"args":{{"bytes":{},"correlation":{}}})", m.bytes[i], m.correlation[i]);
      w.end_event();
      flow_end(m.correlation[i], track, m.start[i]);
    }
    for (size_t i = 0; i < t.nvtx.size(); ++i) {
      const NvtxTable& n = t.nvtx;
      uint64_t track =
          n.device[i] >= 0 ? gpu.of(static_cast<uint32_t>(n.device[i]), kAnnotationStream, nvtx_lane[i]) : n.thread[i];
      bool mark = n.kind[i] == NvtxKind::kMark;
      w.begin_event(mark ? 'i' : 'X', pid, track, ts(n.start[i]));
      if (mark) {
        o += R"(,"s":"t")";
      } else {
        o += R"(,"dur":)";
        w.append_us(std::max<int64_t>(0, n.end[i] - n.start[i]));
      }
      w.key_string("cat", s.view(n.domain[i]).empty() ? std::string_view("nvtx") : s.view(n.domain[i]));
      w.key_string("name", s.view(n.text[i]));
      w.end_event();
    }
    for (size_t i = 0; i < t.counters.size(); ++i) {
      const CounterTable& c = t.counters;
      w.begin_event('C', pid, pid, ts(c.time[i]));
      fmt::format_to(std::back_inserter(o), R"(,"name":"GPU {} {}","args":{{"value":{}}})", c.device[i],
                     counter_name(c.metric[i]), std::isfinite(c.value[i]) ? c.value[i] : 0.0);
      w.end_event();
    }
    // The host sampler (format 1.2): one track per sampled thread, its
    // scheduler state as slices. A sample covers the time since the thread's
    // previous one; consecutive samples in one state make one slice.
    std::unordered_map<uint64_t, uint32_t> host_track;  // (pid, tid) -> its track
    int sort = 0;
    if (t.host_samples.size() > 0) {
      const HostSampleTable& hs = t.host_samples;
      std::map<uint64_t, std::vector<uint32_t>> rows;  // (pid, tid) -> its samples, in time order
      for (size_t i = 0; i < hs.size(); ++i)
        rows[(uint64_t{hs.pid[i]} << 32) | hs.tid[i]].push_back(static_cast<uint32_t>(i));
      std::unordered_map<uint64_t, size_t> facts;  // the last thread row of each (pid, tid)
      for (size_t i = 0; i < t.host_threads.size(); ++i)
        facts[(uint64_t{t.host_threads.pid[i]} << 32) | t.host_threads.tid[i]] = i;
      for (auto& [key, idx] : rows) {
        std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return hs.time[a] < hs.time[b]; });
        while (host_tids.count(next_sampled_tid)) ++next_sampled_tid;
        const uint32_t track = next_sampled_tid++;
        host_track[key] = track;
        const uint32_t os_pid = static_cast<uint32_t>(key >> 32), os_tid = static_cast<uint32_t>(key);
        std::string label = "host thread";
        if (auto f = facts.find(key); f != facts.end()) {
          const HostThreadTable& th = t.host_threads;
          label = fmt::format("{} {}", th.role[f->second] == ProcessRole::kDescendant ? "worker" : "host",
                              s.view(th.name[f->second]));
          if (th.is_main[f->second]) label += " (main)";
        }
        label += fmt::format(" pid {} tid {}", os_pid, os_tid);
        w.metadata_name("thread_name", pid, track, label);
        w.metadata_sort_index("thread_sort_index", pid, track, 500 + sort++);
        for (size_t a = 1; a < idx.size();) {
          const ThreadState state = hs.state[idx[a]];
          const Timestamp begin = hs.time[idx[a - 1]];
          uint64_t cpu = 0, wait = 0;
          size_t b = a;
          for (; b < idx.size() && hs.state[idx[b]] == state; ++b) {
            cpu += hs.cpu_ns[idx[b]];
            wait += hs.run_wait_ns[idx[b]];
          }
          const Timestamp end = hs.time[idx[b - 1]];
          w.begin_event('X', pid, track, ts(begin));
          o += R"(,"dur":)";
          w.append_us(std::max<int64_t>(0, end - begin));
          fmt::format_to(std::back_inserter(o),
                         R"(,"cat":"host","name":"{}","args":{{"cpu_ns":{},"run_wait_ns":{},"samples":{},"cpu":{}}})",
                         to_string(state), cpu, wait, b - a, hs.cpu[idx[b - 1]]);
          w.end_event();
          a = b;
        }
      }
    }
    // Native stacks (format 1.3): each sample an instant on its thread's
    // track, named by its leaf frame, the whole stack in args (Perfetto's
    // JSON importer reads no stack tables); and the Trace Event Format's
    // "stackFrames" and "samples" (chrome://tracing, speedscope), written
    // after the events. Frame ids are "<process>.<callsite id>".
    if (t.host_stack_samples.size() > 0) {
      const HostCallsiteTable& c = t.host_callsites;
      const HostStackSampleTable& ss = t.host_stack_samples;
      std::unordered_map<uint32_t, size_t> row_of;  // the last row of an id wins
      for (size_t i = 0; i < c.size(); ++i) row_of[c.id[i]] = i;
      std::unordered_map<uint32_t, std::string> label;
      auto label_of = [&](uint32_t id) -> const std::string& {
        auto [it, inserted] = label.try_emplace(id);
        if (inserted) {
          auto r = row_of.find(id);
          it->second = id == 0 ? "[no user frame]" : r == row_of.end() ? "[lost frame]" : frame_label(t, r->second);
        }
        return it->second;
      };
      for (const auto& [id, row] : row_of) {
        frames += frames.empty() ? "\n" : ",\n";
        fmt::format_to(std::back_inserter(frames), R"("{}.{}":{{"name":")", pid, id);
        detail::append_json_escaped(frames, label_of(id));
        std::string_view module = s.view(c.module[row]);
        if (const size_t slash = module.rfind('/'); slash != std::string_view::npos) module.remove_prefix(slash + 1);
        frames += R"(","category":")";
        detail::append_json_escaped(frames, module.empty() ? std::string_view("native") : module);
        frames += '"';
        if (c.parent[row] != 0) fmt::format_to(std::back_inserter(frames), R"(,"parent":"{}.{}")", pid, c.parent[row]);
        frames += '}';
      }
      std::unordered_map<uint32_t, std::string> stack_text;
      for (size_t i = 0; i < ss.size(); ++i) {
        const uint64_t key = (uint64_t{ss.pid[i]} << 32) | ss.tid[i];
        auto tr = host_track.find(key);
        if (tr == host_track.end()) {  // a thread with stacks but no scheduler samples
          while (host_tids.count(next_sampled_tid)) ++next_sampled_tid;
          tr = host_track.emplace(key, next_sampled_tid++).first;
          w.metadata_name("thread_name", pid, tr->second,
                          fmt::format("host thread pid {} tid {}", ss.pid[i], ss.tid[i]));
          w.metadata_sort_index("thread_sort_index", pid, tr->second, 500 + sort++);
        }
        auto [st, inserted] = stack_text.try_emplace(ss.callsite[i]);
        if (inserted) {  // "outer;...;leaf", at most 64 frames (a corrupt file may hold a cycle)
          std::vector<uint32_t> chain;
          for (uint32_t id = ss.callsite[i]; id != 0 && chain.size() < 64;) {
            chain.push_back(id);
            auto r = row_of.find(id);
            if (r == row_of.end()) break;
            id = c.parent[r->second];
          }
          for (size_t k = chain.size(); k-- > 0;) st->second += label_of(chain[k]) + (k ? ";" : "");
        }
        w.begin_event('i', pid, tr->second, ts(ss.time[i]));
        o += R"(,"s":"t","cat":"host_stack")";
        w.key_string("name", label_of(ss.callsite[i]));
        o += R"(,"args":{"stack":")";
        detail::append_json_escaped(o, st->second);
        o += "\"}";
        w.end_event();
        samples += samples.empty() ? "\n" : ",\n";
        fmt::format_to(std::back_inserter(samples), R"({{"pid":{},"tid":{},"ts":)", pid, tr->second);
        const int64_t at = ts(ss.time[i]);
        fmt::format_to(std::back_inserter(samples), "{}{}.{:03}", at < 0 ? "-" : "", std::abs(at) / 1000,
                       std::abs(at) % 1000);
        if (ss.callsite[i] != 0) fmt::format_to(std::back_inserter(samples), R"(,"sf":"{}.{}")", pid, ss.callsite[i]);
        samples += R"(,"name":"cpu","weight":1})";
      }
    }
  }
  o += "\n]";
  if (!frames.empty()) {
    o += ",\n\"stackFrames\":{";
    o += frames;
    o += "\n},\n\"samples\":[";
    o += samples;
    o += "\n]";
  }
  o += "}\n";
  file.commit();
}

}  // namespace scalescope::trace
