// Perfetto's own trace format: a Trace message of TracePackets holding
// TrackDescriptors and TrackEvents with interned names (the format that the
// Perfetto UI and trace_processor read, well past the size at which they
// give up on JSON). Field numbers are those of Perfetto's
// protos/perfetto/trace/ (trace_packet.proto, track_event/*.proto,
// interned_data/interned_data.proto); they never change once released.
//
// The protobuf wire format is written by hand: the few messages needed are
// varints, fixed64s and length-prefixed bytes, and writing them directly
// keeps the exporter one streaming pass with no generated code or copy of
// Perfetto's 200 .proto files (docs/export.md).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "trace/export/export_tracks.hpp"
#include "base/text_output.hpp"
#include "trace/export/exporters.hpp"
#include "base/output_file.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {
namespace {

// Field numbers (Perfetto's protos/perfetto/trace/).
namespace field {
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
// TrackEvent
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint32_t kFlowIds = 47;
constexpr uint32_t kTerminatingFlowIds = 48;
constexpr uint32_t kCorrelationId = 52;
// DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1;
constexpr uint32_t kAnnotationBool = 2;
constexpr uint32_t kAnnotationUint = 3;
constexpr uint32_t kAnnotationInt = 4;
constexpr uint32_t kAnnotationStringIid = 17;
// TrackDescriptor
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;
constexpr uint32_t kChildOrdering = 11;
constexpr uint32_t kSiblingOrderRank = 12;
// ProcessDescriptor and ThreadDescriptor
constexpr uint32_t kPid = 1;
constexpr uint32_t kTid = 2;
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kThreadName = 5;
// InternedData; each entry is {iid = 1, name or str = 2}
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kAnnotationNames = 3;
constexpr uint32_t kAnnotationStrings = 29;
}  // namespace field

constexpr uint64_t kSequence = 1;
constexpr uint64_t kIncrementalStateCleared = 1;  // TracePacket.SequenceFlags
constexpr uint64_t kChildOrderingExplicit = 3;    // TrackDescriptor.ChildTracksOrdering
enum EventType : uint64_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounterEvent = 4 };

// A protobuf message under construction.
class Message {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      s_ += static_cast<char>(v | 0x80);
      v >>= 7;
    }
    s_ += static_cast<char>(v);
  }
  void tag(uint32_t number, uint32_t wire_type) { varint((uint64_t{number} << 3) | wire_type); }
  void uint(uint32_t number, uint64_t v) { tag(number, 0), varint(v); }
  void sint(uint32_t number, int64_t v) { tag(number, 0), varint(static_cast<uint64_t>(v)); }  // int32/int64
  void fixed64(uint32_t number, uint64_t v) {
    tag(number, 1);
    for (int i = 0; i < 8; ++i) s_ += static_cast<char>(v >> (8 * i));
  }
  void float64(uint32_t number, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64(number, bits);
  }
  void bytes(uint32_t number, std::string_view v) {
    tag(number, 2);
    varint(v.size());
    s_ += v;
  }
  // A string field: protobuf strings are UTF-8, so invalid bytes become U+FFFD.
  void text(uint32_t number, std::string_view v) {
    scratch_.clear();
    detail::append_valid_utf8(scratch_, v);
    bytes(number, scratch_);
  }
  void message(uint32_t number, const Message& m) { bytes(number, m.s_); }
  void append(const Message& m) { s_ += m.s_; }
  void clear() { s_.clear(); }
  bool empty() const { return s_.empty(); }
  const std::string& str() const { return s_; }

 private:
  std::string s_, scratch_;
};

// Interned strings of one kind (event names, categories, annotation names,
// annotation string values): an id per distinct string, the new ones
// written into the next packet's InternedData.
class Interner {
 public:
  explicit Interner(uint32_t interned_field) : field_(interned_field) {}
  uint64_t id(std::string_view s) {
    auto [it, inserted] = ids_.try_emplace(std::string(s), ids_.size() + 1);
    if (inserted) {
      entry_.clear();
      entry_.uint(1, it->second);
      entry_.text(2, s);
      pending_.message(field_, entry_);
    }
    return it->second;
  }
  // Moves the entries added since the last call into `interned`.
  void take(Message& interned) {
    interned.append(pending_);
    pending_.clear();
  }

 private:
  uint32_t field_;
  std::unordered_map<std::string, uint64_t> ids_;
  Message pending_, entry_;
};

enum class Table : uint8_t { kApi, kKernel, kMemcpy, kMemset, kNvtx, kHostState, kStack, kCounter };

// A slice, instant or counter value to write.
struct Item {
  int64_t begin, end;  // ns from the export's origin
  uint64_t track;      // its track's uuid
  uint32_t row;        // in its table (kHostState: in the slices of its thread)
  Table table;
  bool instant;
};

// When each item begins and ends (or happens).
struct Step {
  int64_t ts;
  uint32_t item;
  EventType type;
};

// Steps in time order such that each track's slices nest: per track, by
// start (the longer first on a tie), a slice ending before the next one
// starts, and a stable sort of all tracks by time (trace_processor sorts by
// time too, keeping the file's order on a tie).
std::vector<Step> order_steps(const std::vector<Item>& items) {
  std::vector<uint32_t> order(items.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Item &x = items[a], &y = items[b];
    if (x.track != y.track) return x.track < y.track;
    if (x.begin != y.begin) return x.begin < y.begin;
    if (x.end != y.end) return x.end > y.end;
    return a < b;
  });
  std::vector<Step> steps;
  steps.reserve(items.size() * 2);
  std::vector<uint32_t> open;
  auto close_until = [&](int64_t ts) {
    while (!open.empty() && items[open.back()].end <= ts) {
      steps.push_back({items[open.back()].end, open.back(), kSliceEnd});
      open.pop_back();
    }
  };
  for (size_t k = 0; k < order.size(); ++k) {
    const Item& it = items[order[k]];
    if (k > 0 && items[order[k - 1]].track != it.track) close_until(std::numeric_limits<int64_t>::max());
    close_until(it.begin);
    if (it.table == Table::kCounter) {
      steps.push_back({it.begin, order[k], kCounterEvent});
    } else if (it.instant) {
      steps.push_back({it.begin, order[k], kInstant});
    } else {
      steps.push_back({it.begin, order[k], kSliceBegin});
      open.push_back(order[k]);
    }
  }
  close_until(std::numeric_limits<int64_t>::max());
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.ts < b.ts; });
  return steps;
}

class PerfettoWriter {
 public:
  explicit PerfettoWriter(detail::OutputFile& file) : file_(file) {}

  // The first packet: the sequence's interned state starts empty here.
  void start() {
    packet_.clear();
    packet_.uint(field::kSequenceId, kSequence);
    packet_.uint(field::kSequenceFlags, kIncrementalStateCleared);
    emit();
  }

  uint64_t new_uuid() { return next_uuid_++; }

  void process_track(uint64_t uuid, int32_t pid, std::string_view name) {
    Message process;
    process.sint(field::kPid, pid);
    process.text(field::kProcessName, name);
    desc_.clear();
    desc_.uint(field::kUuid, uuid);
    desc_.message(field::kProcess, process);
    desc_.uint(field::kChildOrdering, kChildOrderingExplicit);
    descriptor();
  }
  // Perfetto ties a thread track to its process by pid.
  void thread_track(uint64_t uuid, int32_t pid, uint32_t tid, std::string_view name) {
    Message thread;
    thread.sint(field::kPid, pid);
    thread.sint(field::kTid, tid);
    if (!name.empty()) thread.text(field::kThreadName, name);
    desc_.clear();
    desc_.uint(field::kUuid, uuid);
    desc_.message(field::kThread, thread);
    descriptor();
  }
  void named_track(uint64_t uuid, uint64_t parent, std::string_view name, int64_t sort_index, bool counter = false) {
    desc_.clear();
    desc_.uint(field::kUuid, uuid);
    desc_.uint(field::kParentUuid, parent);
    desc_.text(field::kName, name);
    if (counter) desc_.message(field::kCounter, Message{});
    desc_.sint(field::kSiblingOrderRank, sort_index);
    descriptor();
  }

  // A TrackEvent; the caller fills event() (name, category, arguments)
  // after begin_event and before end_event.
  Message& begin_event(EventType type, int64_t ts, uint64_t track) {
    event_.clear();
    annotations_.clear();
    event_.uint(field::kType, type);
    event_.uint(field::kTrackUuid, track);
    ts_ = ts;
    return event_;
  }
  void name(std::string_view category, std::string_view name) {
    event_.uint(field::kCategoryIids, categories_.id(category));
    event_.uint(field::kNameIid, names_.id(name));
  }
  void arg_uint(std::string_view key, uint64_t v) { annotation(key).uint(field::kAnnotationUint, v), add_annotation(); }
  void arg_int(std::string_view key, int64_t v) { annotation(key).sint(field::kAnnotationInt, v), add_annotation(); }
  void arg_bool(std::string_view key, bool v) { annotation(key).uint(field::kAnnotationBool, v), add_annotation(); }
  void arg_string(std::string_view key, std::string_view v) {
    const uint64_t value = strings_.id(v);
    annotation(key).uint(field::kAnnotationStringIid, value);
    add_annotation();
  }
  void end_event() {
    packet_.clear();
    packet_.uint(field::kTimestamp, static_cast<uint64_t>(ts_));
    packet_.uint(field::kSequenceId, kSequence);
    event_.append(annotations_);
    packet_.message(field::kTrackEvent, event_);
    interned_.clear();
    names_.take(interned_);
    categories_.take(interned_);
    annotation_names_.take(interned_);
    strings_.take(interned_);
    if (!interned_.empty()) packet_.message(field::kInternedData, interned_);
    emit();
  }

 private:
  Message& annotation(std::string_view key) {
    one_.clear();
    one_.uint(field::kAnnotationNameIid, annotation_names_.id(key));
    return one_;
  }
  void add_annotation() { annotations_.message(field::kDebugAnnotations, one_); }
  void descriptor() {
    packet_.clear();
    packet_.uint(field::kSequenceId, kSequence);
    packet_.message(field::kTrackDescriptor, desc_);
    emit();
  }
  void emit() {
    std::string& out = file_.buffer();
    Message head;
    head.tag(field::kTracePacket, 2);
    head.varint(packet_.str().size());
    out += head.str();
    out += packet_.str();
    file_.maybe_flush();
  }

  detail::OutputFile& file_;
  Message packet_, event_, annotations_, one_, desc_, interned_;
  Interner names_{field::kEventNames}, categories_{field::kEventCategories},
      annotation_names_{field::kAnnotationNames}, strings_{field::kAnnotationStrings};
  int64_t ts_ = 0;
  uint64_t next_uuid_ = 1;
};

// The launch configuration of a kernel as one string: it repeats across
// launches, so the file holds it once.
std::string launch_text(const KernelTable& k, size_t i) {
  return fmt::format("grid [{},{},{}] block [{},{},{}] registers per thread {} shared memory {}", k.grid_x[i],
                     k.grid_y[i], k.grid_z[i], k.block_x[i], k.block_y[i], k.block_z[i], k.registers_per_thread[i],
                     k.shared_memory_bytes[i]);
}

// Time 0 is the Chrome export's origin, or earlier where counters or
// stack samples come first (Perfetto's timestamps are unsigned).
int64_t perfetto_origin(std::span<const Trace> traces) {
  int64_t origin = detail::export_origin(traces);
  for (const Trace& t : traces) {
    for (Timestamp x : t.counters.time) origin = std::min(origin, t.meta.to_unix_ns(x));
    for (Timestamp x : t.host_stack_samples.time) origin = std::min(origin, t.meta.to_unix_ns(x));
  }
  return origin;
}

// The uuids of one trace's tracks.
struct TrackUuids {
  std::unordered_map<uint32_t, uint64_t> by_tid;   // a track's tid -> uuid
  std::unordered_map<uint64_t, uint64_t> counter;  // (device, metric) -> uuid
};

uint64_t counter_key(const CounterTable& c, size_t i) {
  return (uint64_t{c.device[i]} << 8) | static_cast<uint8_t>(c.metric[i]);
}

// Tracks: the process, its host threads (with Kineto's names), their
// overlap tracks, GPU streams, host-sampler threads and counters.
TrackUuids declare_tracks(PerfettoWriter& w, const Trace& t, int32_t pid, const detail::TraceTracks& tracks) {
  TrackUuids out;
  const uint64_t process = w.new_uuid();
  w.process_track(process, pid, tracks.process_name);
  std::unordered_map<uint32_t, uint64_t>& uuid = out.by_tid;
  std::unordered_map<uint32_t, std::string_view> thread_name;
  for (const detail::ExportTrack& h : tracks.host_thread_names) thread_name[h.tid] = h.name;
  auto host_thread = [&](uint32_t tid) {
    auto [it, inserted] = uuid.try_emplace(tid, 0);
    if (inserted) {
      it->second = w.new_uuid();
      auto name = thread_name.find(tid);
      w.thread_track(it->second, pid, tid, name == thread_name.end() ? "" : name->second);
    }
  };
  for (uint32_t tid : t.api.thread) host_thread(tid);
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (t.nvtx.device[i] < 0) host_thread(t.nvtx.thread[i]);
  for (const detail::ExportTrack& h : tracks.host_overlaps) {
    uuid[h.tid] = w.new_uuid();
    w.named_track(uuid[h.tid], process, h.name, h.sort_index);
  }
  for (const detail::ExportTrack& g : tracks.gpu) {
    uuid[g.tid] = w.new_uuid();
    w.named_track(uuid[g.tid], process, g.name, g.sort_index);
  }
  for (const detail::SampledThread& th : tracks.sampled) {
    uuid[th.track.tid] = w.new_uuid();
    w.named_track(uuid[th.track.tid], process, th.track.name, th.track.sort_index);
  }
  for (size_t i = 0; i < t.counters.size(); ++i) {
    auto [it, inserted] = out.counter.try_emplace(counter_key(t.counters, i), 0);
    if (!inserted) continue;
    it->second = w.new_uuid();
    w.named_track(it->second, process, fmt::format("GPU {} {}", t.counters.device[i], to_string(t.counters.metric[i])),
                  2000, true);
  }
  return out;
}

// Every slice, instant and counter value of the trace; states gets the
// kHostState items' rows.
std::vector<Item> collect_items(const Trace& t, int64_t origin, const detail::TraceTracks& tracks,
                                const TrackUuids& uuids, std::vector<detail::HostStateSlice>& states) {
  auto ts = [&](Timestamp x) { return t.meta.to_unix_ns(x) - origin; };
  const std::unordered_map<uint32_t, uint64_t>& uuid = uuids.by_tid;
  std::vector<Item> items;
  items.reserve(t.api.size() + t.kernels.size() + t.memcpys.size() + t.memsets.size() + t.nvtx.size() +
                t.counters.size() + t.host_stack_samples.size());
  auto add = [&](Table table, size_t row, uint32_t tid, Timestamp start, Timestamp end) {
    const int64_t b = ts(start);
    items.push_back({b, b + std::max<int64_t>(0, end - start), uuid.at(tid), static_cast<uint32_t>(row), table, false});
  };
  for (size_t i = 0; i < t.api.size(); ++i) add(Table::kApi, i, tracks.api_tid[i], t.api.start[i], t.api.end[i]);
  for (size_t i = 0; i < t.kernels.size(); ++i)
    add(Table::kKernel, i, tracks.kernel_tid[i], t.kernels.start[i], t.kernels.end[i]);
  for (size_t i = 0; i < t.memcpys.size(); ++i)
    add(Table::kMemcpy, i, tracks.memcpy_tid[i], t.memcpys.start[i], t.memcpys.end[i]);
  for (size_t i = 0; i < t.memsets.size(); ++i)
    add(Table::kMemset, i, tracks.memset_tid[i], t.memsets.start[i], t.memsets.end[i]);
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    add(Table::kNvtx, i, tracks.nvtx_tid[i], t.nvtx.start[i], t.nvtx.end[i]);
    if (t.nvtx.kind[i] == NvtxKind::kMark) items.back().end = items.back().begin, items.back().instant = true;
  }
  for (size_t i = 0; i < t.counters.size(); ++i) {
    const int64_t at = ts(t.counters.time[i]);
    items.push_back(
        {at, at, uuids.counter.at(counter_key(t.counters, i)), static_cast<uint32_t>(i), Table::kCounter, true});
  }
  for (const detail::SampledThread& th : tracks.sampled)
    for (const detail::HostStateSlice& sl : tracks.state_slices(t, th)) {
      add(Table::kHostState, states.size(), th.track.tid, sl.begin, sl.end);
      states.push_back(sl);
    }
  const HostStackSampleTable& ss = t.host_stack_samples;
  for (size_t i = 0; i < ss.size(); ++i) {
    const uint32_t tid = tracks.sampled[tracks.sampled_of.at((uint64_t{ss.pid[i]} << 32) | ss.tid[i])].track.tid;
    add(Table::kStack, i, tid, ss.time[i], ss.time[i]);
    items.back().instant = true;
  }
  return items;
}

// Flows: from a launching API call to the GPU work of its correlation id
// (the first call of an id, as in the Chrome export).
struct Flows {
  std::unordered_set<uint32_t> launched;  // correlation ids with a flow
  std::vector<uint8_t> starts_flow;       // per API call
};

Flows find_flows(const Trace& t) {
  Flows f;
  std::unordered_set<uint32_t> gpu_work;
  gpu_work.insert(t.kernels.correlation.begin(), t.kernels.correlation.end());
  gpu_work.insert(t.memcpys.correlation.begin(), t.memcpys.correlation.end());
  gpu_work.insert(t.memsets.correlation.begin(), t.memsets.correlation.end());
  f.starts_flow.assign(t.api.size(), 0);
  for (size_t i = 0; i < t.api.size(); ++i) {
    const uint32_t corr = t.api.correlation[i];
    f.starts_flow[i] = corr != 0 && gpu_work.count(corr) && f.launched.insert(corr).second;
  }
  return f;
}

void write_items(PerfettoWriter& w, const Trace& t, size_t index, const std::vector<Item>& items,
                 const std::vector<detail::HostStateSlice>& states) {
  const StringTable& s = t.strings;
  const HostStackSampleTable& ss = t.host_stack_samples;
  detail::StackLabels labels(t);
  const Flows flows = find_flows(t);
  const std::unordered_set<uint32_t>& launched = flows.launched;
  const std::vector<uint8_t>& starts_flow = flows.starts_flow;
  auto flow_id = [&](uint32_t corr) { return (uint64_t{index} << 32) | corr; };
  // GPU work ends the flow of the call that launched it.
  auto end_flow = [&](Message& e, uint32_t corr) {
    if (corr != 0 && launched.count(corr)) e.fixed64(field::kTerminatingFlowIds, flow_id(corr));
  };

  for (const Step& step : order_steps(items)) {
    const Item& it = items[step.item];
    Message& e = w.begin_event(step.type, step.ts, it.track);
    if (step.type == kSliceEnd) {
      w.end_event();
      continue;
    }
    const size_t i = it.row;
    switch (it.table) {
      case Table::kApi: {
        w.name(fmt::format("cuda_{}", to_string(t.api.domain[i])), s.view(t.api.name[i]));
        e.uint(field::kCorrelationId, t.api.correlation[i]);
        w.arg_uint("cbid", t.api.callback_id[i]);
        if (t.api.return_code[i] != 0) w.arg_int(column_name(&ApiTable::return_code), t.api.return_code[i]);
        if (starts_flow[i]) e.fixed64(field::kFlowIds, flow_id(t.api.correlation[i]));
        break;
      }
      case Table::kKernel: {
        const KernelTable& k = t.kernels;
        w.name("kernel", s.view(k.name[i]));
        e.uint(field::kCorrelationId, k.correlation[i]);
        w.arg_string("launch", launch_text(k, i));
        end_flow(e, k.correlation[i]);
        break;
      }
      case Table::kMemcpy: {
        const MemcpyTable& m = t.memcpys;
        w.name("memcpy", fmt::format("Memcpy {} ({} -> {})", to_string(m.kind[i]), to_string(m.src_kind[i]),
                                     to_string(m.dst_kind[i])));
        e.uint(field::kCorrelationId, m.correlation[i]);
        w.arg_uint(column_name(&MemcpyTable::bytes), m.bytes[i]);
        w.arg_bool("async", m.is_async[i]);
        end_flow(e, m.correlation[i]);
        break;
      }
      case Table::kMemset: {
        const MemsetTable& m = t.memsets;
        w.name("memset", fmt::format("Memset ({})", to_string(m.dst_kind[i])));
        e.uint(field::kCorrelationId, m.correlation[i]);
        w.arg_uint(column_name(&MemsetTable::bytes), m.bytes[i]);
        end_flow(e, m.correlation[i]);
        break;
      }
      case Table::kNvtx: {
        const std::string_view domain = s.view(t.nvtx.domain[i]);
        w.name(domain.empty() ? std::string_view("nvtx") : domain, s.view(t.nvtx.text[i]));
        break;
      }
      case Table::kHostState: {
        const detail::HostStateSlice& sl = states[i];
        w.name("host", to_string(sl.state));
        w.arg_uint("cpu_ns", sl.cpu_ns);
        w.arg_uint("run_wait_ns", sl.run_wait_ns);
        w.arg_uint("samples", sl.samples);
        w.arg_int("cpu", sl.cpu);
        break;
      }
      case Table::kStack: {
        w.name("host_stack", labels.frame(ss.callsite[i]));
        w.arg_string("stack", labels.stack(ss.callsite[i]));
        break;
      }
      case Table::kCounter: {
        const double v = t.counters.value[i];
        e.float64(field::kDoubleCounterValue, std::isfinite(v) ? v : 0.0);
        break;
      }
    }
    w.end_event();
  }
}

}  // namespace

void export_perfetto(std::span<const Trace> traces, const std::filesystem::path& out) {
  const int64_t origin = perfetto_origin(traces);
  detail::OutputFile file(out);
  PerfettoWriter w(file);
  w.start();
  detail::TrackNumbers numbers(traces);
  for (size_t index = 0; index < traces.size(); ++index) {
    const Trace& t = traces[index];
    const detail::TraceTracks tracks = detail::layout_tracks(t, index, numbers);
    const TrackUuids uuids = declare_tracks(w, t, static_cast<int32_t>(index + 1), tracks);
    std::vector<detail::HostStateSlice> states;
    const std::vector<Item> items = collect_items(t, origin, tracks, uuids, states);
    write_items(w, t, index, items, states);
  }
  file.commit();
}

}  // namespace scalescope::trace
