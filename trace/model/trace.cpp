#include "trace/model/trace.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include "base/enum_names.hpp"
#include "trace/model/table_columns.hpp"

namespace scalescope::trace {

StringTable::StringTable() {
  strings_.emplace_back();
  index_.emplace(std::string_view(strings_.back()), 0);
}

StringId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(text);
  index_.emplace(std::string_view(strings_.back()), id);
  byte_size_ += text.size();
  return id;
}

std::string_view to_string(MemcpyKind kind) {
  static constexpr auto kNames = std::to_array<std::string_view>({"unknown", "HtoD", "DtoH", "DtoD", "PtoP", "HtoH"});
  return name_by_value<MemcpyKind::kHtoH>(kNames, kind, "unknown");
}

std::string_view to_string(MemoryKind kind) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"unknown", "pageable", "pinned", "device", "managed", "array"});
  return name_by_value<MemoryKind::kArray>(kNames, kind, "unknown");
}

std::string_view to_string(SyncKind kind) {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"unknown", "event_synchronize", "stream_wait_event", "stream_synchronize", "device_synchronize"});
  return name_by_value<SyncKind::kDeviceSynchronize>(kNames, kind, "unknown");
}

std::string_view to_string(ApiDomain domain) {
  static constexpr auto kNames = std::to_array<std::string_view>({"runtime", "driver", "nccl", "other"});
  return name_by_value<ApiDomain::kOther>(kNames, domain, "other");
}

std::string_view to_string(NvtxKind kind) { return kind == NvtxKind::kMark ? "mark" : "range"; }

std::string_view to_string(NcclOp op) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"unknown", "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                       "AllToAll", "Send", "Recv", "SendRecv", "Gather", "Scatter", "Barrier"});
  return name_by_value<NcclOp::kBarrier>(kNames, op, "unknown");
}

std::string_view to_string(CounterMetric metric) {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"gpu_utilization_percent", "memory_utilization_percent", "memory_used_bytes", "power_watts", "energy_joules",
       "sm_clock_mhz", "memory_clock_mhz", "pcie_tx_bytes_per_second", "pcie_rx_bytes_per_second",
       "nvlink_tx_bytes_per_second", "nvlink_rx_bytes_per_second", "temperature_celsius", "clocks_event_reasons",
       "sm_clock_max_mhz", "power_limit_watts", "temperature_slowdown_celsius"});
  return name_by_value<CounterMetric::kTemperatureSlowdownCelsius>(kNames, metric, "unknown");
}

NcclOp nccl_op_from_name(std::string_view name) {
  // Normalise: lower case, drop '_' so "all_reduce", "AllReduce", "allreduce" agree.
  std::string key;
  key.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == ' ' || c == '-') continue;
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (key.rfind("nccl:", 0) == 0) key.erase(0, 5);
  if (key == "allreduce" || key == "allreducecoalesced") return NcclOp::kAllReduce;
  if (key == "broadcast") return NcclOp::kBroadcast;
  if (key == "reduce") return NcclOp::kReduce;
  if (key == "allgather" || key == "allgatherintotensor" || key == "allgatherbase" || key == "allgathercoalesced" ||
      key == "allgatherintotensorcoalesced")
    return NcclOp::kAllGather;
  if (key == "reducescatter" || key == "reducescattertensor" || key == "reducescatterbase" ||
      key == "reducescattertensorcoalesced")
    return NcclOp::kReduceScatter;
  if (key == "alltoall" || key == "alltoallbase" || key == "alltoallv") return NcclOp::kAllToAll;
  if (key == "send") return NcclOp::kSend;
  if (key == "recv") return NcclOp::kRecv;
  if (key == "sendrecv") return NcclOp::kSendRecv;
  if (key == "gather") return NcclOp::kGather;
  if (key == "scatter") return NcclOp::kScatter;
  if (key == "barrier") return NcclOp::kBarrier;
  return NcclOp::kUnknown;
}

// ---- tables: one definition, from each table's column list (table_columns.hpp)

template <typename Table, typename Record>
void Rows<Table, Record>::push(const Record& r) {
  push_row(static_cast<Table&>(*this), r);
}
template <typename Table, typename Record>
Record Rows<Table, Record>::row(size_t i) const {
  return row_at(static_cast<const Table&>(*this), i);
}
template <typename Table, typename Record>
void Rows<Table, Record>::reserve(size_t n) {
  reserve_rows(static_cast<Table&>(*this), n);
}
template struct Rows<KernelTable, KernelRecord>;
template struct Rows<MemcpyTable, MemcpyRecord>;
template struct Rows<MemsetTable, MemsetRecord>;
template struct Rows<ApiTable, ApiRecord>;
template struct Rows<SyncTable, SyncRecord>;
template struct Rows<NvtxTable, NvtxRecord>;
template struct Rows<NcclTable, NcclRecord>;
template struct Rows<CounterTable, CounterRecord>;
template struct Rows<HostThreadTable, HostThreadRecord>;
template struct Rows<HostSampleTable, HostSampleRecord>;
template struct Rows<HostCallsiteTable, HostCallsiteRecord>;
template struct Rows<HostModuleTable, HostModuleRecord>;
template struct Rows<HostStackSampleTable, HostStackSampleRecord>;

std::string_view to_string(FrameStatus s) {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"not looked up", "named", "unmapped address", "no file (JIT or vdso)", "module missing", "build-id differs",
       "no symbol", "libdw missing", "no module record", "stack walk cut"});
  return name_by_value<FrameStatus::kWalkCut>(kNames, s, "unknown status");
}

ThreadState thread_state_from_letter(char c) {
  switch (c) {
    case 'R': return ThreadState::kRunning;
    case 'S': return ThreadState::kSleeping;
    case 'D': return ThreadState::kDiskWait;
    case 'T':
    case 't': return ThreadState::kStopped;
    case 'Z':
    case 'X':
    case 'x': return ThreadState::kZombie;
    case 'I': return ThreadState::kIdle;
    default: return ThreadState::kOther;
  }
}

std::string_view to_string(ThreadState state) {
  static constexpr auto kNames = std::to_array<std::string_view>(
      {"unknown", "running", "sleeping", "disk_wait", "stopped", "zombie", "idle", "other"});
  return name_by_value<ThreadState::kOther>(kNames, state, "unknown");
}

std::string_view to_string(ProcessRole role) { return role == ProcessRole::kTraced ? "traced" : "descendant"; }

// ---- metadata, problems, trace -----------------------------------------------

int64_t Metadata::to_unix_ns(Timestamp t) const {
  if (clock.empty()) return t;
  const ClockAnchor& a = clock.front();
  const ClockAnchor& b = clock.back();
  if (clock.size() == 1 || b.trace_ns == a.trace_ns) return t + (a.unix_ns - a.trace_ns);
  // Linear map between the first and last anchor corrects drift between clocks.
  long double slope =
      static_cast<long double>(b.unix_ns - a.unix_ns) / static_cast<long double>(b.trace_ns - a.trace_ns);
  return a.unix_ns + static_cast<int64_t>(static_cast<long double>(t - a.trace_ns) * slope);
}

namespace {

// Each problem's name, severity and description, in the order of its value.
struct ProblemFacts {
  std::string_view name;
  Severity severity;
  std::string_view description;
};
constexpr auto kProblemFacts = std::to_array<ProblemFacts>({
    {"torn_tail", Severity::kDataLoss,
     "torn: the file ends inside a chunk (writer killed or disk full); that chunk and any after it are lost"},
    {"checksum_mismatch", Severity::kDataLoss, "a chunk failed its checksum and was skipped; its rows are lost"},
    {"unknown_chunk", Severity::kInfo, "a chunk of a newer format was skipped"},
    {"dropped_records", Severity::kDataLoss, "the collector dropped records (its buffers were full)"},
    {"cupti_error", Severity::kError, "a CUPTI call failed while collecting"},
    {"malformed_event", Severity::kError,
     "events missing required fields were skipped, or kept with unreadable fields read as unknown"},
    {"unknown_event", Severity::kInfo, "events of an unknown category were not mapped"},
    {"unmatched_correlation", Severity::kInfo, "GPU events without an API call of the same correlation id"},
    {"negative_duration", Severity::kError, "events ending before they start were clamped"},
    {"nvml_unavailable", Severity::kInfo, "GPU counters were not sampled (NVML unavailable)"},
    {"clock_anchor_missing", Severity::kInfo, "no clock anchor: ranks may not line up in time"},
    {"corrupt_chunk", Severity::kDataLoss,
     "a chunk passed its checksum but its content was invalid; its rows are lost"},
    {"incomplete_record", Severity::kDataLoss,  // the work ran; its times are lost
     "records without a valid time (unfinished GPU records; imported rows whose time, type or id is missing "
     "or not a number) were left out"},
    {"end_missing", Severity::kDataLoss,
     "torn: the file ends at a chunk boundary without its end record (writer killed); the chunks written "
     "after the last complete one are lost, how many is unknown"},
    {"end_not_recorded", Severity::kInfo,
     "end not recorded: a format 1.0 file (older build) cannot say whether it is complete"},
    {"run_incomplete", Severity::kDataLoss,
     "run directory incomplete: a file its manifest lists is missing, short or changed"},
    {"run_no_manifest", Severity::kInfo,
     "run directory without manifest (older build, or its writer died): ranks cannot be checked for completeness"},
    {"invalid_utf8", Severity::kError, "invalid UTF-8 bytes in the input were replaced by U+FFFD"},
});
static_assert(kProblemFacts.size() == kProblemCount, "the facts of every problem");

const ProblemFacts* facts_of(Problem p) {
  const auto i = static_cast<size_t>(p);
  return i < kProblemFacts.size() ? &kProblemFacts[i] : nullptr;
}

}  // namespace

Severity severity_of(Problem p) { return facts_of(p) ? facts_of(p)->severity : Severity::kInfo; }

std::string_view severity_name(Severity s) {
  static constexpr auto kNames = std::to_array<std::string_view>({"info", "error", "data loss"});
  return name_by_value<Severity::kDataLoss>(kNames, s, "info");
}

std::string_view to_string(Problem p) { return facts_of(p) ? facts_of(p)->name : "unknown_problem"; }

std::string_view describe(Problem p) { return facts_of(p) ? facts_of(p)->description : "unknown problem"; }

bool ProblemCounts::any_data_loss() const {
  for (int i = 0; i < kProblemCount; ++i)
    if (counts[i] != 0 && severity_of(static_cast<Problem>(i)) == Severity::kDataLoss) return true;
  return false;
}

size_t Trace::event_count() const {
  return kernels.size() + memcpys.size() + memsets.size() + api.size() + syncs.size() + nvtx.size() + nccl.size() +
         counters.size() + host_samples.size();
}

bool Trace::empty() const {
  return event_count() == 0 && host_threads.size() == 0 && host_callsites.size() == 0 &&
         host_stack_samples.size() == 0 && host_modules.size() == 0;
}

std::pair<Timestamp, Timestamp> Trace::time_span() const {
  Timestamp lo = std::numeric_limits<Timestamp>::max();
  Timestamp hi = std::numeric_limits<Timestamp>::min();
  auto scan = [&](const std::vector<Timestamp>& s, const std::vector<Timestamp>& e) {
    for (Timestamp t : s) lo = std::min(lo, t);
    for (Timestamp t : e) hi = std::max(hi, t);
  };
  scan(kernels.start, kernels.end);
  scan(memcpys.start, memcpys.end);
  scan(memsets.start, memsets.end);
  scan(api.start, api.end);
  if (lo > hi) return {0, 0};
  return {lo, hi};
}

}  // namespace scalescope::trace
