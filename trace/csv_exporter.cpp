// CSV export: one file per event kind in a new directory, names as text.

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "trace/error.hpp"
#include "trace/export_util.hpp"
#include "trace/exporters.hpp"
#include "trace/output_file.hpp"

namespace scalescope::trace {
namespace {

// A CSV file being written: header on open, fields appended with separators.
class CsvFile {
 public:
  CsvFile(const std::filesystem::path& path, std::initializer_list<std::string_view> columns)
      : file_(std::make_unique<detail::OutputFile>(path)) {
    for (auto c : columns) field(c);
    end_row();
  }
  CsvFile& field(std::string_view s) {
    sep();
    detail::append_csv_field(file_->buffer(), s);
    return *this;
  }
  template <typename T>
  CsvFile& num(T v) {
    sep();
    fmt::format_to(std::back_inserter(file_->buffer()), "{}", v);
    return *this;
  }
  void end_row() {
    file_->buffer() += '\n';
    first_ = true;
    file_->maybe_flush();
  }
  void commit() { file_->commit(); }

 private:
  void sep() {
    if (!first_) file_->buffer() += ',';
    first_ = false;
  }
  std::unique_ptr<detail::OutputFile> file_;
  bool first_ = true;
};

}  // namespace

void export_csv(std::span<const Trace> traces, const std::filesystem::path& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) {
    if (!std::filesystem::is_directory(out, ec)) fail("{}: exists and is not a directory", out.string());
    if (!std::filesystem::is_empty(out, ec))
      fail("{}: directory is not empty (CSV export does not overwrite)", out.string());
  }
  const std::filesystem::path tmp = detail::temp_path_for(out);
  std::filesystem::remove_all(tmp, ec);
  if (!std::filesystem::create_directories(tmp, ec) || ec)
    fail("{}: cannot create directory: {}", out.string(), ec.message());
  try {
    auto p = [&](const char* name) { return tmp / name; };
    CsvFile proc(p("processes.csv"), {"process", "rank", "local_rank", "world_size", "hostname", "pid", "source"});
    CsvFile dev(p("devices.csv"), {"process", "rank", "id", "name", "uuid", "pci_bus_id", "numa_node", "sm_count",
                                   "memory_bytes", "compute_major", "compute_minor"});
    CsvFile ker(p("kernels.csv"),
                {"process", "rank", "start_ns", "end_ns", "device", "stream", "name", "grid_x", "grid_y", "grid_z",
                 "block_x", "block_y", "block_z", "registers_per_thread", "shared_memory_bytes", "correlation"});
    CsvFile cpy(p("memcpy.csv"), {"process", "rank", "start_ns", "end_ns", "device", "stream", "correlation", "bytes",
                                  "kind", "src_kind", "dst_kind", "is_async", "peer_device"});
    CsvFile set(p("memset.csv"), {"process", "rank", "start_ns", "end_ns", "device", "stream", "correlation", "bytes",
                                  "dst_kind", "is_async"});
    CsvFile api(p("api.csv"), {"process", "rank", "start_ns", "end_ns", "thread", "domain", "callback_id", "name",
                               "correlation", "return_code"});
    CsvFile syn(p("sync.csv"), {"process", "rank", "start_ns", "end_ns", "kind", "device", "stream", "event", "thread",
                                "correlation"});
    CsvFile nvt(p("nvtx.csv"),
                {"process", "rank", "start_ns", "end_ns", "kind", "domain", "text", "thread", "device", "correlation"});
    CsvFile ncc(p("nccl.csv"),
                {"process", "rank", "start_ns", "end_ns", "device", "stream", "op", "bytes", "count", "datatype",
                 "algorithm", "protocol", "communicator", "sequence", "group_size", "correlation"});
    CsvFile cnt(p("counters.csv"), {"process", "rank", "time_ns", "device", "metric", "value"});
    CsvFile prb(p("problems.csv"), {"process", "rank", "problem", "severity", "count"});
    // The collector's host sampler (format 1.2) and its native stacks (1.3).
    CsvFile hth(p("host_threads.csv"),
                {"process", "rank", "start_ns", "end_ns", "pid", "tid", "parent_pid", "name", "is_main", "role"});
    CsvFile hsm(p("host_samples.csv"), {"process", "rank", "time_ns", "pid", "tid", "state", "cpu", "cpu_ns",
                                        "run_wait_ns", "voluntary_switches", "involuntary_switches"});
    CsvFile hcs(p("host_callsites.csv"),
                {"process", "rank", "id", "parent", "function", "module", "address", "name_status"});
    CsvFile hmd(p("host_modules.csv"),
                {"process", "rank", "pid", "path", "build_id", "map_start", "map_end", "map_offset"});
    CsvFile hss(p("host_stack_samples.csv"), {"process", "rank", "time_ns", "pid", "tid", "callsite"});
    for (size_t pi = 0; pi < traces.size(); ++pi) {
      const Trace& t = traces[pi];
      const StringTable& s = t.strings;
      const int32_t rank = t.meta.rank;
      proc.num(pi)
          .num(rank)
          .num(t.meta.local_rank)
          .num(t.meta.world_size)
          .field(t.meta.hostname)
          .num(t.meta.pid)
          .field(t.meta.source)
          .end_row();
      for (const DeviceInfo& d : t.meta.devices) {
        dev.num(pi)
            .num(rank)
            .num(d.id)
            .field(d.name)
            .field(d.uuid)
            .field(d.pci_bus_id)
            .num(d.numa_node)
            .num(d.sm_count)
            .num(d.memory_bytes)
            .num(d.compute_major)
            .num(d.compute_minor)
            .end_row();
      }
      const KernelTable& k = t.kernels;
      for (size_t i = 0; i < k.size(); ++i) {
        ker.num(pi)
            .num(rank)
            .num(k.start[i])
            .num(k.end[i])
            .num(k.device[i])
            .num(k.stream[i])
            .field(s.view(k.name[i]))
            .num(k.grid_x[i])
            .num(k.grid_y[i])
            .num(k.grid_z[i])
            .num(k.block_x[i])
            .num(k.block_y[i])
            .num(k.block_z[i])
            .num(k.registers_per_thread[i])
            .num(k.shared_memory_bytes[i])
            .num(k.correlation[i])
            .end_row();
      }
      const MemcpyTable& c = t.memcpys;
      for (size_t i = 0; i < c.size(); ++i) {
        cpy.num(pi)
            .num(rank)
            .num(c.start[i])
            .num(c.end[i])
            .num(c.device[i])
            .num(c.stream[i])
            .num(c.correlation[i])
            .num(c.bytes[i])
            .field(to_string(c.kind[i]))
            .field(to_string(c.src_kind[i]))
            .field(to_string(c.dst_kind[i]))
            .num(int{c.is_async[i]})
            .num(c.peer_device[i])
            .end_row();
      }
      const MemsetTable& m = t.memsets;
      for (size_t i = 0; i < m.size(); ++i) {
        set.num(pi)
            .num(rank)
            .num(m.start[i])
            .num(m.end[i])
            .num(m.device[i])
            .num(m.stream[i])
            .num(m.correlation[i])
            .num(m.bytes[i])
            .field(to_string(m.dst_kind[i]))
            .num(int{m.is_async[i]})
            .end_row();
      }
      const ApiTable& a = t.api;
      for (size_t i = 0; i < a.size(); ++i) {
        api.num(pi)
            .num(rank)
            .num(a.start[i])
            .num(a.end[i])
            .num(a.thread[i])
            .field(to_string(a.domain[i]))
            .num(a.callback_id[i])
            .field(s.view(a.name[i]))
            .num(a.correlation[i])
            .num(a.return_code[i])
            .end_row();
      }
      const SyncTable& y = t.syncs;
      for (size_t i = 0; i < y.size(); ++i) {
        syn.num(pi)
            .num(rank)
            .num(y.start[i])
            .num(y.end[i])
            .field(to_string(y.kind[i]))
            .num(y.device[i])
            .num(y.stream[i])
            .num(y.event[i])
            .num(y.thread[i])
            .num(y.correlation[i])
            .end_row();
      }
      const NvtxTable& n = t.nvtx;
      for (size_t i = 0; i < n.size(); ++i) {
        nvt.num(pi)
            .num(rank)
            .num(n.start[i])
            .num(n.end[i])
            .field(n.kind[i] == NvtxKind::kMark ? "mark" : "range")
            .field(s.view(n.domain[i]))
            .field(s.view(n.text[i]))
            .num(n.thread[i])
            .num(n.device[i])
            .num(n.correlation[i])
            .end_row();
      }
      const NcclTable& cc = t.nccl;
      for (size_t i = 0; i < cc.size(); ++i) {
        ncc.num(pi)
            .num(rank)
            .num(cc.start[i])
            .num(cc.end[i])
            .num(cc.device[i])
            .num(cc.stream[i])
            .field(to_string(cc.op[i]))
            .num(cc.bytes[i])
            .num(cc.count[i])
            .field(s.view(cc.datatype[i]))
            .field(s.view(cc.algorithm[i]))
            .field(s.view(cc.protocol[i]))
            .field(s.view(cc.communicator[i]))
            .num(cc.sequence[i])
            .num(cc.group_size[i])
            .num(cc.correlation[i])
            .end_row();
      }
      const CounterTable& ct = t.counters;
      for (size_t i = 0; i < ct.size(); ++i) {
        cnt.num(pi).num(rank).num(ct.time[i]).num(ct.device[i]).field(to_string(ct.metric[i]));
        if (std::isfinite(ct.value[i])) cnt.num(ct.value[i]);
        else cnt.field("");
        cnt.end_row();
      }
      const HostThreadTable& ht = t.host_threads;
      for (size_t i = 0; i < ht.size(); ++i) {
        hth.num(pi)
            .num(rank)
            .num(ht.start[i])
            .num(ht.end[i])
            .num(ht.pid[i])
            .num(ht.tid[i])
            .num(ht.parent_pid[i])
            .field(s.view(ht.name[i]))
            .num(int{ht.is_main[i]})
            .field(to_string(ht.role[i]))
            .end_row();
      }
      const HostSampleTable& hs = t.host_samples;
      for (size_t i = 0; i < hs.size(); ++i) {
        hsm.num(pi)
            .num(rank)
            .num(hs.time[i])
            .num(hs.pid[i])
            .num(hs.tid[i])
            .field(to_string(hs.state[i]))
            .num(hs.cpu[i])
            .num(hs.cpu_ns[i])
            .num(hs.run_wait_ns[i])
            .num(hs.voluntary_switches[i])
            .num(hs.involuntary_switches[i])
            .end_row();
      }
      const HostCallsiteTable& hc = t.host_callsites;
      for (size_t i = 0; i < hc.size(); ++i) {
        hcs.num(pi)
            .num(rank)
            .num(hc.id[i])
            .num(hc.parent[i])
            .field(s.view(hc.function[i]))
            .field(s.view(hc.module[i]))
            .field(fmt::format("0x{:x}", hc.address[i]))
            .field(to_string(hc.status[i]))
            .end_row();
      }
      const HostModuleTable& hm = t.host_modules;
      for (size_t i = 0; i < hm.size(); ++i) {
        hmd.num(pi)
            .num(rank)
            .num(hm.pid[i])
            .field(s.view(hm.path[i]))
            .field(s.view(hm.build_id[i]))
            .field(fmt::format("0x{:x}", hm.map_start[i]))
            .field(fmt::format("0x{:x}", hm.map_end[i]))
            .field(fmt::format("0x{:x}", hm.map_offset[i]))
            .end_row();
      }
      const HostStackSampleTable& hst = t.host_stack_samples;
      for (size_t i = 0; i < hst.size(); ++i) {
        hss.num(pi).num(rank).num(hst.time[i]).num(hst.pid[i]).num(hst.tid[i]).num(hst.callsite[i]).end_row();
      }
      for (int q = 0; q < kProblemCount; ++q) {
        if (!t.problems.counts[q]) continue;
        Severity sev = severity_of(static_cast<Problem>(q));
        prb.num(pi)
            .num(rank)
            .field(to_string(static_cast<Problem>(q)))
            .field(sev == Severity::kDataLoss ? "data loss"
                   : sev == Severity::kError  ? "error"
                                              : "info")
            .num(t.problems.counts[q])
            .end_row();
      }
    }
    for (CsvFile* f : {&proc, &dev, &ker, &cpy, &set, &api, &syn, &nvt, &ncc, &cnt, &prb, &hth, &hsm, &hcs, &hmd, &hss})
      f->commit();
  } catch (...) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
  // An empty existing directory is replaced by the finished one.
  std::filesystem::remove(out, ec);
  detail::commit_output(tmp, out);
}

}  // namespace scalescope::trace
