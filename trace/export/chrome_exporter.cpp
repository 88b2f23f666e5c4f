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

#include "trace/export/export_tracks.hpp"
#include "base/text_output.hpp"
#include "trace/export/exporters.hpp"
#include "base/output_file.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {
namespace {

class ChromeWriter {
 public:
  explicit ChromeWriter(detail::OutputFile& file) : file_(file), out_(file.buffer()) {}

  void begin_event(char ph, size_t pid, uint64_t tid, int64_t ts_ns) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    fmt::format_to(std::back_inserter(out_), R"({{"ph":"{}","pid":{},"tid":{},"ts":)", ph, pid, tid);
    append_us(ts_ns);
  }
  // A complete event ("X"); a negative duration is written as 0.
  void begin_span(size_t pid, uint64_t tid, int64_t ts_ns, int64_t dur_ns) {
    begin_event('X', pid, tid, ts_ns);
    out_ += R"(,"dur":)";
    append_us(std::max<int64_t>(0, dur_ns));
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

// One trace being written: its process id in the file and its tracks; its
// parts are written in the order of the write_ functions.
struct ChromeTrace {
  ChromeWriter& w;
  const Trace& t;
  size_t index;  // in the traces exported
  size_t pid;
  int64_t origin;
  const detail::TraceTracks& tracks;
  std::string& o = w.raw();
  const StringTable& s = t.strings;

  int64_t ts(Timestamp x) const { return t.meta.to_unix_ns(x) - origin; }
  void write_track_names() const;
  std::unordered_set<uint32_t> write_api_calls() const;
  void write_gpu_work(const std::unordered_set<uint32_t>& launched) const;
  void write_nvtx_and_counters() const;
  void write_host_thread_states() const;
  void write_native_stacks(std::string& frames, std::string& samples) const;
};

void ChromeTrace::write_track_names() const {
  w.metadata_name("process_name", pid, pid, tracks.process_name);
  w.metadata_sort_index("process_sort_index", pid, pid, static_cast<int64_t>(pid));
  for (const detail::ExportTrack& g : tracks.gpu) {
    w.metadata_name("thread_name", pid, g.tid, g.name);
    w.metadata_sort_index("thread_sort_index", pid, g.tid, g.sort_index);
  }
  for (const detail::ExportTrack& h : tracks.host_thread_names) w.metadata_name("thread_name", pid, h.tid, h.name);
  for (const detail::ExportTrack& h : tracks.host_overlaps) w.metadata_name("thread_name", pid, h.tid, h.name);
}

// API calls; a flow starts at each call whose correlation id some GPU
// work carries (so every flow start has an end). Returns those ids.
std::unordered_set<uint32_t> ChromeTrace::write_api_calls() const {
  std::unordered_set<uint32_t> gpu_work;
  gpu_work.insert(t.kernels.correlation.begin(), t.kernels.correlation.end());
  gpu_work.insert(t.memcpys.correlation.begin(), t.memcpys.correlation.end());
  gpu_work.insert(t.memsets.correlation.begin(), t.memsets.correlation.end());
  std::unordered_set<uint32_t> launched;
  for (size_t i = 0; i < t.api.size(); ++i) {
    w.begin_span(pid, tracks.api_tid[i], ts(t.api.start[i]), t.api.end[i] - t.api.start[i]);
    w.key_string("cat", fmt::format("cuda_{}", to_string(t.api.domain[i])));
    w.key_string("name", s.view(t.api.name[i]));
    fmt::format_to(std::back_inserter(o), R"(,"args":{{"{}":{},"cbid":{},"{}":{}}})",
                   column_name(&ApiTable::correlation), t.api.correlation[i], t.api.callback_id[i],
                   column_name(&ApiTable::return_code), t.api.return_code[i]);
    w.end_event();
    uint32_t corr = t.api.correlation[i];
    if (corr == 0 || !gpu_work.count(corr) || !launched.insert(corr).second) continue;
    // Flow start, bound to the enclosing API slice.
    w.begin_event('s', pid, tracks.api_tid[i], ts(t.api.start[i]));
    fmt::format_to(std::back_inserter(o), R"(,"cat":"launch","name":"launch","id":{})", (uint64_t{index} << 32) | corr);
    w.end_event();
  }
  return launched;
}

// Kernels, copies and sets, each ending the flow of the call that launched it.
void ChromeTrace::write_gpu_work(const std::unordered_set<uint32_t>& launched) const {
  // Each row of a GPU table as a complete event on its track (its name and
  // args written by body(i)), then the end of its launch's flow.
  auto write_spans = [&](const auto& table, const std::vector<uint32_t>& tids, auto&& body) {
    for (size_t i = 0; i < table.size(); ++i) {
      w.begin_span(pid, tids[i], ts(table.start[i]), table.end[i] - table.start[i]);
      body(i);
      w.end_event();
      const uint32_t corr = table.correlation[i];
      if (corr == 0 || !launched.count(corr)) continue;
      w.begin_event('f', pid, tids[i], ts(table.start[i]));
      fmt::format_to(std::back_inserter(o), R"(,"cat":"launch","name":"launch","bp":"e","id":{})",
                     (uint64_t{index} << 32) | corr);
      w.end_event();
    }
  };
  const KernelTable& k = t.kernels;
  write_spans(k, tracks.kernel_tid, [&](size_t i) {
    o += R"(,"cat":"kernel")";
    w.key_string("name", s.view(k.name[i]));
    fmt::format_to(std::back_inserter(o),
                   R"(,"args":{{"{}":{},"{}":{},"{}":{},"grid":[{},{},{}],"block":[{},{},{}],)"
                   R"("registers per thread":{},"shared memory":{}}})",
                   column_name(&KernelTable::device), k.device[i], column_name(&KernelTable::stream), k.stream[i],
                   column_name(&KernelTable::correlation), k.correlation[i], k.grid_x[i], k.grid_y[i], k.grid_z[i],
                   k.block_x[i], k.block_y[i], k.block_z[i], k.registers_per_thread[i], k.shared_memory_bytes[i]);
  });
  const MemcpyTable& mc = t.memcpys;
  write_spans(mc, tracks.memcpy_tid, [&](size_t i) {
    fmt::format_to(std::back_inserter(o), R"J(,"cat":"memcpy","name":"Memcpy {} ({} -> {})")J", to_string(mc.kind[i]),
                   to_string(mc.src_kind[i]), to_string(mc.dst_kind[i]));
    fmt::format_to(std::back_inserter(o), R"(,"args":{{"{}":{},"{}":{},"async":{}}})", column_name(&MemcpyTable::bytes),
                   mc.bytes[i], column_name(&MemcpyTable::correlation), mc.correlation[i],
                   mc.is_async[i] ? "true" : "false");
  });
  const MemsetTable& ms = t.memsets;
  write_spans(ms, tracks.memset_tid, [&](size_t i) {
    fmt::format_to(std::back_inserter(o), R"J(,"cat":"memset","name":"Memset ({})")J", to_string(ms.dst_kind[i]));
    fmt::format_to(std::back_inserter(o), R"(,"args":{{"{}":{},"{}":{}}})", column_name(&MemsetTable::bytes),
                   ms.bytes[i], column_name(&MemsetTable::correlation), ms.correlation[i]);
  });
}

void ChromeTrace::write_nvtx_and_counters() const {
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    const NvtxTable& n = t.nvtx;
    const uint64_t track = tracks.nvtx_tid[i];
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
    const CounterTable& ct = t.counters;
    w.begin_event('C', pid, pid, ts(ct.time[i]));
    fmt::format_to(std::back_inserter(o), R"(,"name":"GPU {} {}","args":{{"{}":{}}})", ct.device[i],
                   to_string(ct.metric[i]), column_name(&CounterTable::value),
                   std::isfinite(ct.value[i]) ? ct.value[i] : 0.0);
    w.end_event();
  }
}

// The host sampler (format 1.2): one track per sampled thread, its
// scheduler state as slices.
void ChromeTrace::write_host_thread_states() const {
  for (const detail::SampledThread& th : tracks.sampled) {
    w.metadata_name("thread_name", pid, th.track.tid, th.track.name);
    w.metadata_sort_index("thread_sort_index", pid, th.track.tid, th.track.sort_index);
    for (const detail::HostStateSlice& sl : tracks.state_slices(t, th)) {
      w.begin_span(pid, th.track.tid, ts(sl.begin), sl.end - sl.begin);
      fmt::format_to(std::back_inserter(o),
                     R"(,"cat":"host","name":"{}","args":{{"cpu_ns":{},"run_wait_ns":{},"samples":{},"cpu":{}}})",
                     to_string(sl.state), sl.cpu_ns, sl.run_wait_ns, sl.samples, sl.cpu);
      w.end_event();
    }
  }
}

// Native stacks (format 1.3): each sample an instant on its thread's
// track, named by its leaf frame, the whole stack in args (Perfetto's
// JSON importer reads no stack tables); and the Trace Event Format's
// "stackFrames" and "samples" (chrome://tracing, speedscope), written
// after the events. Frame ids are "<process>.<callsite id>".
void ChromeTrace::write_native_stacks(std::string& frames, std::string& samples) const {
  if (t.host_stack_samples.size() == 0) return;
  const HostCallsiteTable& c = t.host_callsites;
  const HostStackSampleTable& ss = t.host_stack_samples;
  detail::StackLabels labels(t);
  for (const auto& [id, row] : labels.rows()) {
    frames += frames.empty() ? "\n" : ",\n";
    fmt::format_to(std::back_inserter(frames), R"("{}.{}":{{"name":")", pid, id);
    detail::append_json_escaped(frames, labels.frame(id));
    std::string_view module = s.view(c.module[row]);
    if (const size_t slash = module.rfind('/'); slash != std::string_view::npos) module.remove_prefix(slash + 1);
    frames += R"(","category":")";
    detail::append_json_escaped(frames, module.empty() ? std::string_view("native") : module);
    frames += '"';
    if (c.parent[row] != 0) fmt::format_to(std::back_inserter(frames), R"(,"parent":"{}.{}")", pid, c.parent[row]);
    frames += '}';
  }
  for (size_t i = 0; i < ss.size(); ++i) {
    const uint32_t track = tracks.sampled[tracks.sampled_of.at((uint64_t{ss.pid[i]} << 32) | ss.tid[i])].track.tid;
    w.begin_event('i', pid, track, ts(ss.time[i]));
    o += R"(,"s":"t","cat":"host_stack")";
    w.key_string("name", labels.frame(ss.callsite[i]));
    o += R"(,"args":{"stack":")";
    detail::append_json_escaped(o, labels.stack(ss.callsite[i]));
    o += "\"}";
    w.end_event();
    samples += samples.empty() ? "\n" : ",\n";
    fmt::format_to(std::back_inserter(samples), R"({{"pid":{},"tid":{},"ts":)", pid, track);
    const int64_t at = ts(ss.time[i]);
    fmt::format_to(std::back_inserter(samples), "{}{}.{:03}", at < 0 ? "-" : "", std::abs(at) / 1000,
                   std::abs(at) % 1000);
    if (ss.callsite[i] != 0) fmt::format_to(std::back_inserter(samples), R"(,"sf":"{}.{}")", pid, ss.callsite[i]);
    samples += R"(,"name":"cpu","weight":1})";
  }
}

}  // namespace

void export_chrome(std::span<const Trace> traces, const std::filesystem::path& out) {
  // One time origin for all ranks. Relative times keep ns precision in a
  // double (Perfetto parses ts as double).
  const int64_t origin = detail::export_origin(traces);

  detail::OutputFile file(out);
  ChromeWriter w(file);
  std::string& o = w.raw();
  fmt::format_to(
      std::back_inserter(o),
      R"({{"displayTimeUnit":"ns","otherData":{{"producer":"scalescope","origin_unix_ns":{}}},"traceEvents":[)",
      origin);

  detail::TrackNumbers numbers(traces);
  std::string frames, samples;  // the native stacks' "stackFrames" and "samples" (written last)

  for (size_t index = 0; index < traces.size(); ++index) {
    const detail::TraceTracks tracks = detail::layout_tracks(traces[index], index, numbers);
    const ChromeTrace c{w, traces[index], index, index + 1, origin, tracks};
    c.write_track_names();
    c.write_gpu_work(c.write_api_calls());
    c.write_nvtx_and_counters();
    c.write_host_thread_states();
    c.write_native_stacks(frames, samples);
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
