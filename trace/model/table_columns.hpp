#pragma once
// The one column list of each trace table. The file format (column ids and
// transforms), Table::push/row/reserve, the CSV and SQLite exporters and the
// C ABI's columns are all generated from it: a new column is one line here
// (and its members in trace.hpp's Record and Table).

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

// The names of NvtxKind as exports show them: "range", "mark".
std::string_view to_string(NvtxKind kind);

// How the file format stores a column's values; fixed per column id.
enum class ColumnTransform : uint8_t {
  kNone,        // value
  kDelta,       // value - previous value of the column (0 before the first row)
  kMinusStart,  // value - start of the same row (end columns: durations)
};

// What a column's values mean, which decides how exporters show them.
enum class ColumnKind : uint8_t {
  kInteger,
  kTime,     // ns in the trace clock: CSV and SQLite call it <name>_ns
  kString,   // a StringId: the text in CSV, <name>_id into SQLite's strings table
  kEnum,     // shown by its to_string name
  kBool,     // 0 or 1
  kAddress,  // an address or file offset: hex in CSV
  kReal,     // a double: empty in CSV and NULL in SQLite when not finite
};

// One column: its file-format id, its user-facing name, and where its values
// live in the Table (a vector) and in the Record (a field).
template <typename Table, typename Record, typename V, typename F>
struct Column {
  using value_type = V;  // element of the Table's vector
  using field_type = F;  // the Record's field (bool for flags stored as uint8_t)
  int id = 0;
  std::string_view name;
  std::vector<V> Table::*values = nullptr;
  F Record::*field = nullptr;
  ColumnKind kind = ColumnKind::kInteger;
  ColumnTransform transform = ColumnTransform::kNone;
  // Written to trace files only; exporters and the C ABI leave it out.
  bool file_only = false;
  // SQLite stores the text itself rather than an id into `strings`.
  bool sqlite_text = false;

  constexpr Column only_in_file() const {
    Column c = *this;
    c.file_only = true;
    return c;
  }
  constexpr Column text_in_sqlite() const {
    Column c = *this;
    c.sqlite_text = true;
    return c;
  }
};

template <typename Table, typename Record, typename V, typename F>
constexpr Column<Table, Record, V, F> column(int id, std::string_view name, std::vector<V> Table::*values,
                                             F Record::*field, ColumnKind kind = ColumnKind::kInteger,
                                             ColumnTransform transform = ColumnTransform::kNone) {
  return {id, name, values, field, kind, transform};
}

// TableColumns<Table>: `name` (the CSV file, SQLite table and C ABI table),
// `Record`, and `list`, the columns in id order (which is also the order of
// every export). Column ids are never reused; new columns get new ids.
template <typename Table>
struct TableColumns;

// What every table's column list is written with: its Table (T) and Record
// types, short names for kinds and transforms, and the leading columns that
// tables of intervals and tables of samples share.
template <typename Table, typename RecordType>
struct ColumnsOf {
  using T = Table;
  using Record = RecordType;
  static constexpr auto kInt = ColumnKind::kInteger;
  static constexpr auto kTime = ColumnKind::kTime;
  static constexpr auto kString = ColumnKind::kString;
  static constexpr auto kEnum = ColumnKind::kEnum;
  static constexpr auto kBool = ColumnKind::kBool;
  static constexpr auto kAddress = ColumnKind::kAddress;
  static constexpr auto kReal = ColumnKind::kReal;
  static constexpr auto kDelta = ColumnTransform::kDelta;
  static constexpr auto kMinusStart = ColumnTransform::kMinusStart;

  // A table of intervals: start and end (ids 1 and 2; ends are stored as
  // durations), then `rest`.
  template <typename... Rest>
  static constexpr auto intervals(std::tuple<Rest...> rest) {
    return std::tuple_cat(std::tuple{column(1, "start", &T::start, &Record::start, kTime, kDelta),
                                     column(2, "end", &T::end, &Record::end, kTime, kMinusStart)},
                          rest);
  }
  // A table of samples: their time (id 1; 2 is left free), then `rest`.
  template <typename... Rest>
  static constexpr auto samples(std::tuple<Rest...> rest) {
    return std::tuple_cat(std::tuple{column(1, "time", &T::time, &Record::time, kTime, kDelta)}, rest);
  }
};

template <>
struct TableColumns<KernelTable> : ColumnsOf<KernelTable, KernelRecord> {
  static constexpr std::string_view name = "kernels";
  static constexpr auto list = intervals(std::tuple{
      column(3, "device", &T::device, &Record::device),
      column(4, "stream", &T::stream, &Record::stream),
      column(5, "name", &T::name, &Record::name, kString),
      column(6, "grid_x", &T::grid_x, &Record::grid_x),
      column(7, "grid_y", &T::grid_y, &Record::grid_y),
      column(8, "grid_z", &T::grid_z, &Record::grid_z),
      column(9, "block_x", &T::block_x, &Record::block_x),
      column(10, "block_y", &T::block_y, &Record::block_y),
      column(11, "block_z", &T::block_z, &Record::block_z),
      column(12, "registers_per_thread", &T::registers_per_thread, &Record::registers_per_thread),
      column(13, "shared_memory_bytes", &T::shared_memory_bytes, &Record::shared_memory_bytes),
      column(14, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
  });
};

template <>
struct TableColumns<MemcpyTable> : ColumnsOf<MemcpyTable, MemcpyRecord> {
  static constexpr std::string_view name = "memcpy";
  static constexpr auto list = intervals(std::tuple{
      column(3, "device", &T::device, &Record::device),
      column(4, "stream", &T::stream, &Record::stream),
      column(5, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
      column(6, "bytes", &T::bytes, &Record::bytes),
      column(7, "kind", &T::kind, &Record::kind, kEnum),
      column(8, "src_kind", &T::src_kind, &Record::src_kind, kEnum),
      column(9, "dst_kind", &T::dst_kind, &Record::dst_kind, kEnum),
      column(10, "is_async", &T::is_async, &Record::is_async, kBool),
      column(11, "peer_device", &T::peer_device, &Record::peer_device),
  });
};

template <>
struct TableColumns<MemsetTable> : ColumnsOf<MemsetTable, MemsetRecord> {
  static constexpr std::string_view name = "memset";
  static constexpr auto list = intervals(std::tuple{
      column(3, "device", &T::device, &Record::device),
      column(4, "stream", &T::stream, &Record::stream),
      column(5, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
      column(6, "bytes", &T::bytes, &Record::bytes),
      column(7, "dst_kind", &T::dst_kind, &Record::dst_kind, kEnum),
      column(8, "is_async", &T::is_async, &Record::is_async, kBool),
  });
};

template <>
struct TableColumns<ApiTable> : ColumnsOf<ApiTable, ApiRecord> {
  static constexpr std::string_view name = "api";
  static constexpr auto list = intervals(std::tuple{
      column(3, "thread", &T::thread, &Record::thread),
      column(4, "domain", &T::domain, &Record::domain, kEnum),
      column(5, "callback_id", &T::callback_id, &Record::callback_id),
      column(6, "name", &T::name, &Record::name, kString),
      column(7, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
      column(8, "return_code", &T::return_code, &Record::return_code),
  });
};

template <>
struct TableColumns<SyncTable> : ColumnsOf<SyncTable, SyncRecord> {
  static constexpr std::string_view name = "sync";
  static constexpr auto list = intervals(std::tuple{
      column(3, "kind", &T::kind, &Record::kind, kEnum),
      column(4, "device", &T::device, &Record::device),
      column(5, "stream", &T::stream, &Record::stream),
      column(6, "event", &T::event, &Record::event),
      column(7, "thread", &T::thread, &Record::thread),
      column(8, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
  });
};

template <>
struct TableColumns<NvtxTable> : ColumnsOf<NvtxTable, NvtxRecord> {
  static constexpr std::string_view name = "nvtx";
  static constexpr auto list = intervals(std::tuple{
      column(3, "kind", &T::kind, &Record::kind, kEnum),
      column(4, "domain", &T::domain, &Record::domain, kString),
      column(5, "text", &T::text, &Record::text, kString),
      column(6, "thread", &T::thread, &Record::thread),
      column(7, "device", &T::device, &Record::device),
      column(8, "correlation", &T::correlation, &Record::correlation),
      // format 1.1
      column(9, "link", &T::link, &Record::link).only_in_file(),
  });
};

template <>
struct TableColumns<NcclTable> : ColumnsOf<NcclTable, NcclRecord> {
  static constexpr std::string_view name = "nccl";
  static constexpr auto list = intervals(std::tuple{
      column(3, "device", &T::device, &Record::device),
      column(4, "stream", &T::stream, &Record::stream),
      column(5, "op", &T::op, &Record::op, kEnum),
      column(6, "bytes", &T::bytes, &Record::bytes),
      column(7, "count", &T::count, &Record::count),
      column(8, "datatype", &T::datatype, &Record::datatype, kString),
      column(9, "algorithm", &T::algorithm, &Record::algorithm, kString),
      column(10, "protocol", &T::protocol, &Record::protocol, kString),
      column(11, "communicator", &T::communicator, &Record::communicator, kString),
      column(12, "sequence", &T::sequence, &Record::sequence, kInt, kDelta),
      column(13, "group_size", &T::group_size, &Record::group_size),
      column(14, "correlation", &T::correlation, &Record::correlation, kInt, kDelta),
  });
};

template <>
struct TableColumns<CounterTable> : ColumnsOf<CounterTable, CounterRecord> {
  static constexpr std::string_view name = "counters";
  static constexpr auto list = samples(std::tuple{
      column(3, "device", &T::device, &Record::device),
      column(4, "metric", &T::metric, &Record::metric, kEnum),
      column(5, "value", &T::value, &Record::value, kReal),
  });
};

template <>
struct TableColumns<HostThreadTable> : ColumnsOf<HostThreadTable, HostThreadRecord> {  // format 1.2
  static constexpr std::string_view name = "host_threads";
  static constexpr auto list = intervals(std::tuple{
      column(3, "pid", &T::pid, &Record::pid),
      column(4, "tid", &T::tid, &Record::tid),
      column(5, "parent_pid", &T::parent_pid, &Record::parent_pid),
      column(6, "name", &T::name, &Record::name, kString),
      column(7, "is_main", &T::is_main, &Record::is_main, kBool),
      column(8, "role", &T::role, &Record::role, kEnum),
  });
};

template <>
struct TableColumns<HostSampleTable> : ColumnsOf<HostSampleTable, HostSampleRecord> {  // format 1.2
  static constexpr std::string_view name = "host_samples";
  static constexpr auto list = samples(std::tuple{
      column(3, "pid", &T::pid, &Record::pid),
      column(4, "tid", &T::tid, &Record::tid),
      column(5, "state", &T::state, &Record::state, kEnum),
      column(6, "cpu", &T::cpu, &Record::cpu),
      column(7, "cpu_ns", &T::cpu_ns, &Record::cpu_ns),
      column(8, "run_wait_ns", &T::run_wait_ns, &Record::run_wait_ns),
      column(9, "voluntary_switches", &T::voluntary_switches, &Record::voluntary_switches),
      column(10, "involuntary_switches", &T::involuntary_switches, &Record::involuntary_switches),
  });
};

template <>
struct TableColumns<HostCallsiteTable> : ColumnsOf<HostCallsiteTable, HostCallsiteRecord> {  // format 1.3
  static constexpr std::string_view name = "host_callsites";
  static constexpr auto list = std::tuple{
      column(1, "id", &T::id, &Record::id, kInt, kDelta),
      column(3, "parent", &T::parent, &Record::parent),
      column(4, "function", &T::function, &Record::function, kString),
      column(5, "module", &T::module, &Record::module, kString),
      column(6, "address", &T::address, &Record::address, kAddress),
      column(7, "name_status", &T::status, &Record::status, kEnum),  // format 1.4
  };
};

template <>
struct TableColumns<HostModuleTable> : ColumnsOf<HostModuleTable, HostModuleRecord> {  // format 1.4
  static constexpr std::string_view name = "host_modules";
  static constexpr auto list = std::tuple{
      column(1, "pid", &T::pid, &Record::pid),
      column(3, "path", &T::path, &Record::path, kString),
      // One per module: an id into `strings` would save nothing.
      column(4, "build_id", &T::build_id, &Record::build_id, kString).text_in_sqlite(),
      column(5, "map_start", &T::map_start, &Record::map_start, kAddress),
      column(6, "map_end", &T::map_end, &Record::map_end, kAddress),
      column(7, "map_offset", &T::map_offset, &Record::map_offset, kAddress),
  };
};

template <>
struct TableColumns<HostStackSampleTable> : ColumnsOf<HostStackSampleTable, HostStackSampleRecord> {  // format 1.3
  static constexpr std::string_view name = "host_stack_samples";
  static constexpr auto list = samples(std::tuple{
      column(3, "pid", &T::pid, &Record::pid),
      column(4, "tid", &T::tid, &Record::tid),
      column(5, "callsite", &T::callsite, &Record::callsite),
  });
};

// Calls f(column) for every column of Table, in id order.
template <typename Table, typename F>
constexpr void for_each_column_of(F&& f) {
  std::apply([&](const auto&... c) { (f(c), ...); }, TableColumns<Table>::list);
}

// The list's name of the column whose values are `values`: for exports that
// show a few columns under their own names (Chrome and Perfetto args).
template <typename Table, typename V>
constexpr std::string_view column_name(std::vector<V> Table::*values) {
  std::string_view name;
  for_each_column_of<Table>([&](const auto& c) {
    if constexpr (std::is_same_v<decltype(c.values), std::vector<V> Table::*>)
      if (c.values == values) name = c.name;
  });
  return name;
}

// Every table of a trace, in export order (CSV files, SQLite tables, the
// C ABI's tables).
inline constexpr auto kTraceTables = std::tuple{
    &Trace::kernels,        &Trace::memcpys,      &Trace::memsets,           &Trace::api,          &Trace::syncs,
    &Trace::nvtx,           &Trace::nccl,         &Trace::counters,          &Trace::host_threads, &Trace::host_samples,
    &Trace::host_callsites, &Trace::host_modules, &Trace::host_stack_samples};

// Calls f(table) for every table of a trace, in export order. `TraceT` may be const.
template <typename TraceT, typename F>
void for_each_trace_table(TraceT& t, F&& f) {
  std::apply([&](auto... member) { (f(t.*member), ...); }, kTraceTables);
}

// Calls f(std::type_identity<Table>{}) for every table type, in export order.
template <typename F>
void for_each_table_type(F&& f) {
  std::apply([&](auto... member) { (f(std::type_identity<std::remove_cvref_t<decltype(Trace{}.*member)>>{}), ...); },
             kTraceTables);
}

// A column's name in CSV and SQLite: times carry their unit.
inline std::string exported_name(std::string_view name, ColumnKind kind) {
  std::string s(name);
  if (kind == ColumnKind::kTime) s += "_ns";
  return s;
}

// Table::push, row and reserve, one definition for all tables.
template <typename Table>
void push_row(Table& t, const typename TableColumns<Table>::Record& r) {
  for_each_column_of<Table>([&](const auto& c) {
    using V = typename std::remove_cvref_t<decltype(c)>::value_type;
    (t.*c.values).push_back(static_cast<V>(r.*c.field));
  });
}

template <typename Table>
typename TableColumns<Table>::Record row_at(const Table& t, size_t i) {
  typename TableColumns<Table>::Record r;
  for_each_column_of<Table>([&](const auto& c) {
    using F = typename std::remove_cvref_t<decltype(c)>::field_type;
    r.*c.field = static_cast<F>((t.*c.values)[i]);
  });
  return r;
}

template <typename Table>
void reserve_rows(Table& t, size_t n) {
  for_each_column_of<Table>([&](const auto& c) { (t.*c.values).reserve(n); });
}

// Each enum column's number of values (code = position), for lists of its names.
template <typename E>
inline constexpr int kEnumCount = 0;
template <>
inline constexpr int kEnumCount<MemcpyKind> = static_cast<int>(MemcpyKind::kHtoH) + 1;
template <>
inline constexpr int kEnumCount<MemoryKind> = static_cast<int>(MemoryKind::kArray) + 1;
template <>
inline constexpr int kEnumCount<SyncKind> = static_cast<int>(SyncKind::kDeviceSynchronize) + 1;
template <>
inline constexpr int kEnumCount<ApiDomain> = static_cast<int>(ApiDomain::kOther) + 1;
template <>
inline constexpr int kEnumCount<NvtxKind> = static_cast<int>(NvtxKind::kMark) + 1;
template <>
inline constexpr int kEnumCount<NcclOp> = static_cast<int>(NcclOp::kBarrier) + 1;
template <>
inline constexpr int kEnumCount<CounterMetric> = kCounterMetricCount;
template <>
inline constexpr int kEnumCount<ThreadState> = kThreadStateCount;
template <>
inline constexpr int kEnumCount<ProcessRole> = static_cast<int>(ProcessRole::kDescendant) + 1;
template <>
inline constexpr int kEnumCount<FrameStatus> = static_cast<int>(FrameStatus::kWalkCut) + 1;

}  // namespace scalescope::trace
