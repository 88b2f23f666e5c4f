// SQLite export: one database, the tables of docs/export-sqlite.md. Enums are
// stored as text (readable SQL); names go through one global strings table.

#include <sqlite3.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "trace/error.hpp"
#include "trace/export_util.hpp"
#include "trace/exporters.hpp"

namespace scalescope::trace {
namespace {

constexpr const char* kSchema = R"SQL(
CREATE TABLE processes (id INTEGER PRIMARY KEY, rank INTEGER, local_rank INTEGER, world_size INTEGER,
  hostname TEXT, pid INTEGER, source TEXT, producer_version TEXT, launcher TEXT, command_line TEXT);
CREATE TABLE devices (process_id INTEGER, id INTEGER, name TEXT, uuid TEXT, pci_bus_id TEXT, numa_node INTEGER,
  sm_count INTEGER, memory_bytes INTEGER, compute_major INTEGER, compute_minor INTEGER);
CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE kernels (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, device INTEGER, stream INTEGER,
  name_id INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
  registers_per_thread INTEGER, shared_memory_bytes INTEGER, correlation INTEGER);
CREATE TABLE memcpy (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, device INTEGER, stream INTEGER,
  correlation INTEGER, bytes INTEGER, kind TEXT, src_kind TEXT, dst_kind TEXT, is_async INTEGER, peer_device INTEGER);
CREATE TABLE memset (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, device INTEGER, stream INTEGER,
  correlation INTEGER, bytes INTEGER, dst_kind TEXT, is_async INTEGER);
CREATE TABLE api (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, thread INTEGER, domain TEXT,
  callback_id INTEGER, name_id INTEGER, correlation INTEGER, return_code INTEGER);
CREATE TABLE sync (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, kind TEXT, device INTEGER, stream INTEGER,
  event INTEGER, thread INTEGER, correlation INTEGER);
CREATE TABLE nvtx (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, kind TEXT, domain_id INTEGER,
  text_id INTEGER, thread INTEGER, device INTEGER, correlation INTEGER);
CREATE TABLE nccl (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, device INTEGER, stream INTEGER, op TEXT,
  bytes INTEGER, count INTEGER, datatype_id INTEGER, algorithm_id INTEGER, protocol_id INTEGER,
  communicator_id INTEGER, sequence INTEGER, group_size INTEGER, correlation INTEGER);
CREATE TABLE counters (process_id INTEGER, time_ns INTEGER, device INTEGER, metric TEXT, value REAL);
CREATE TABLE problems (process_id INTEGER, problem TEXT, severity TEXT, count INTEGER);
CREATE TABLE host_threads (process_id INTEGER, start_ns INTEGER, end_ns INTEGER, pid INTEGER, tid INTEGER,
  parent_pid INTEGER, name_id INTEGER, is_main INTEGER, role TEXT);
CREATE TABLE host_samples (process_id INTEGER, time_ns INTEGER, pid INTEGER, tid INTEGER, state TEXT, cpu INTEGER,
  cpu_ns INTEGER, run_wait_ns INTEGER, voluntary_switches INTEGER, involuntary_switches INTEGER);
CREATE TABLE host_callsites (process_id INTEGER, id INTEGER, parent INTEGER, function_id INTEGER, module_id INTEGER,
  address INTEGER, name_status TEXT);
CREATE TABLE host_modules (process_id INTEGER, pid INTEGER, path_id INTEGER, build_id TEXT, map_start INTEGER,
  map_end INTEGER, map_offset INTEGER);
CREATE TABLE host_stack_samples (process_id INTEGER, time_ns INTEGER, pid INTEGER, tid INTEGER, callsite INTEGER);
)SQL";

class Db {
 public:
  Db(const std::filesystem::path& path, const std::filesystem::path& shown) : shown_(shown) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      fail("{}: cannot create SQLite database: {}", shown_.string(), msg);
    }
  }
  ~Db() {
    for (auto* s : statements_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      fail("{}: SQLite error: {}", shown_.string(), msg);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      fail("{}: SQLite error: {}", shown_.string(), sqlite3_errmsg(db_));
    statements_.push_back(s);
    return s;
  }
  void step(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail("{}: SQLite error: {}", shown_.string(), sqlite3_errmsg(db_));
    sqlite3_reset(s);
  }
  void close() {
    for (auto* s : statements_) sqlite3_finalize(s);
    statements_.clear();
    if (sqlite3_close(db_) != SQLITE_OK) fail("{}: SQLite error on close: {}", shown_.string(), sqlite3_errmsg(db_));
    db_ = nullptr;
  }

 private:
  std::filesystem::path shown_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

// Binds a row's values in order: integers, text, doubles.
struct Binder {
  sqlite3_stmt* s;
  int i = 1;
  Binder& operator()(int64_t v) {
    sqlite3_bind_int64(s, i++, v);
    return *this;
  }
  Binder& operator()(std::string_view v) {
    sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Binder& operator()(double v) {
    if (std::isfinite(v)) sqlite3_bind_double(s, i++, v);
    else sqlite3_bind_null(s, i++);
    return *this;
  }
};

int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

void export_sqlite(std::span<const Trace> traces, const std::filesystem::path& out) {
  const std::filesystem::path tmp = detail::temp_path_for(out);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  struct Cleanup {
    const std::filesystem::path& p;
    bool keep = false;
    ~Cleanup() {
      std::error_code e;
      if (!keep) std::filesystem::remove(p, e);
    }
  } cleanup{tmp};
  {
    Db db(tmp, out);
    // A fresh file written once: no journal and no fsync until the end.
    db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
    db.exec(kSchema);
    db.exec("BEGIN");
    auto* proc = db.prepare("INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?)");
    auto* dev = db.prepare("INSERT INTO devices VALUES (?,?,?,?,?,?,?,?,?,?)");
    auto* str = db.prepare("INSERT INTO strings VALUES (?,?)");
    auto* ker = db.prepare("INSERT INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    auto* cpy = db.prepare("INSERT INTO memcpy VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    auto* set = db.prepare("INSERT INTO memset VALUES (?,?,?,?,?,?,?,?,?)");
    auto* api = db.prepare("INSERT INTO api VALUES (?,?,?,?,?,?,?,?,?)");
    auto* syn = db.prepare("INSERT INTO sync VALUES (?,?,?,?,?,?,?,?,?)");
    auto* nvt = db.prepare("INSERT INTO nvtx VALUES (?,?,?,?,?,?,?,?,?)");
    auto* ncc = db.prepare("INSERT INTO nccl VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    auto* cnt = db.prepare("INSERT INTO counters VALUES (?,?,?,?,?)");
    auto* prb = db.prepare("INSERT INTO problems VALUES (?,?,?,?)");
    auto* hth = db.prepare("INSERT INTO host_threads VALUES (?,?,?,?,?,?,?,?,?)");
    auto* hsm = db.prepare("INSERT INTO host_samples VALUES (?,?,?,?,?,?,?,?,?,?)");
    auto* hcs = db.prepare("INSERT INTO host_callsites VALUES (?,?,?,?,?,?,?)");
    auto* hmd = db.prepare("INSERT INTO host_modules VALUES (?,?,?,?,?,?,?)");
    auto* hss = db.prepare("INSERT INTO host_stack_samples VALUES (?,?,?,?,?)");

    // One global string table: each trace's ids map to global ids on first use.
    std::unordered_map<std::string, int64_t> global;
    auto intern = [&](std::string_view text) {
      auto [it, inserted] = global.try_emplace(std::string(text), static_cast<int64_t>(global.size()));
      if (inserted) {
        Binder{str}(it->second)(text);
        db.step(str);
      }
      return it->second;
    };
    intern("");
    for (size_t p = 0; p < traces.size(); ++p) {
      const Trace& t = traces[p];
      const int64_t pid = static_cast<int64_t>(p);
      std::vector<int64_t> ids(t.strings.size(), -1);
      auto sid = [&](StringId id) {
        if (id >= ids.size()) return int64_t{0};
        if (ids[id] < 0) ids[id] = intern(t.strings.view(id));
        return ids[id];
      };
      const Metadata& m = t.meta;
      Binder{proc}(pid)(int64_t{m.rank})(int64_t{m.local_rank})(int64_t{m.world_size})(std::string_view(m.hostname))(
          int64_t{m.pid})(std::string_view(m.source))(std::string_view(m.producer_version))(
          std::string_view(m.launcher))(std::string_view(m.command_line));
      db.step(proc);
      for (const DeviceInfo& d : m.devices) {
        Binder{dev}(pid)(int64_t{d.id})(std::string_view(d.name))(std::string_view(d.uuid))(
            std::string_view(d.pci_bus_id))(int64_t{d.numa_node})(int64_t{d.sm_count})(i64(d.memory_bytes))(
            int64_t{d.compute_major})(int64_t{d.compute_minor});
        db.step(dev);
      }
      for (size_t i = 0; i < t.kernels.size(); ++i) {
        const KernelTable& k = t.kernels;
        Binder{ker}(pid)(k.start[i])(k.end[i])(int64_t{k.device[i]})(int64_t{k.stream[i]})(sid(k.name[i]))(
            int64_t{k.grid_x[i]})(int64_t{k.grid_y[i]})(int64_t{k.grid_z[i]})(int64_t{k.block_x[i]})(
            int64_t{k.block_y[i]})(int64_t{k.block_z[i]})(int64_t{k.registers_per_thread[i]})(
            int64_t{k.shared_memory_bytes[i]})(int64_t{k.correlation[i]});
        db.step(ker);
      }
      for (size_t i = 0; i < t.memcpys.size(); ++i) {
        const MemcpyTable& c = t.memcpys;
        Binder{cpy}(pid)(c.start[i])(c.end[i])(int64_t{c.device[i]})(int64_t{c.stream[i]})(int64_t{c.correlation[i]})(
            i64(c.bytes[i]))(to_string(c.kind[i]))(to_string(c.src_kind[i]))(to_string(c.dst_kind[i]))(
            int64_t{c.is_async[i]})(int64_t{c.peer_device[i]});
        db.step(cpy);
      }
      for (size_t i = 0; i < t.memsets.size(); ++i) {
        const MemsetTable& c = t.memsets;
        Binder{set}(pid)(c.start[i])(c.end[i])(int64_t{c.device[i]})(int64_t{c.stream[i]})(int64_t{c.correlation[i]})(
            i64(c.bytes[i]))(to_string(c.dst_kind[i]))(int64_t{c.is_async[i]});
        db.step(set);
      }
      for (size_t i = 0; i < t.api.size(); ++i) {
        const ApiTable& a = t.api;
        Binder{api}(pid)(a.start[i])(a.end[i])(int64_t{a.thread[i]})(to_string(a.domain[i]))(int64_t{a.callback_id[i]})(
            sid(a.name[i]))(int64_t{a.correlation[i]})(int64_t{a.return_code[i]});
        db.step(api);
      }
      for (size_t i = 0; i < t.syncs.size(); ++i) {
        const SyncTable& y = t.syncs;
        Binder{syn}(pid)(y.start[i])(y.end[i])(to_string(y.kind[i]))(int64_t{y.device[i]})(int64_t{y.stream[i]})(
            i64(y.event[i]))(int64_t{y.thread[i]})(int64_t{y.correlation[i]});
        db.step(syn);
      }
      for (size_t i = 0; i < t.nvtx.size(); ++i) {
        const NvtxTable& n = t.nvtx;
        Binder{nvt}(pid)(n.start[i])(n.end[i])(std::string_view(n.kind[i] == NvtxKind::kMark ? "mark" : "range"))(
            sid(n.domain[i]))(sid(n.text[i]))(int64_t{n.thread[i]})(int64_t{n.device[i]})(int64_t{n.correlation[i]});
        db.step(nvt);
      }
      for (size_t i = 0; i < t.nccl.size(); ++i) {
        const NcclTable& n = t.nccl;
        Binder{ncc}(pid)(n.start[i])(n.end[i])(int64_t{n.device[i]})(int64_t{n.stream[i]})(to_string(n.op[i]))(
            i64(n.bytes[i]))(i64(n.count[i]))(sid(n.datatype[i]))(sid(n.algorithm[i]))(sid(n.protocol[i]))(
            sid(n.communicator[i]))(n.sequence[i])(int64_t{n.group_size[i]})(int64_t{n.correlation[i]});
        db.step(ncc);
      }
      for (size_t i = 0; i < t.counters.size(); ++i) {
        const CounterTable& c = t.counters;
        Binder{cnt}(pid)(c.time[i])(int64_t{c.device[i]})(to_string(c.metric[i]))(c.value[i]);
        db.step(cnt);
      }
      // The collector's host sampler (format 1.2) and its native stacks (1.3).
      for (size_t i = 0; i < t.host_threads.size(); ++i) {
        const HostThreadTable& h = t.host_threads;
        Binder{hth}(pid)(h.start[i])(h.end[i])(int64_t{h.pid[i]})(int64_t{h.tid[i]})(int64_t{h.parent_pid[i]})(
            sid(h.name[i]))(int64_t{h.is_main[i]})(to_string(h.role[i]));
        db.step(hth);
      }
      for (size_t i = 0; i < t.host_samples.size(); ++i) {
        const HostSampleTable& h = t.host_samples;
        Binder{hsm}(pid)(h.time[i])(int64_t{h.pid[i]})(int64_t{h.tid[i]})(to_string(h.state[i]))(int64_t{h.cpu[i]})(i64(
            h.cpu_ns[i]))(i64(h.run_wait_ns[i]))(int64_t{h.voluntary_switches[i]})(int64_t{h.involuntary_switches[i]});
        db.step(hsm);
      }
      for (size_t i = 0; i < t.host_callsites.size(); ++i) {
        const HostCallsiteTable& h = t.host_callsites;
        Binder{hcs}(pid)(int64_t{h.id[i]})(int64_t{h.parent[i]})(sid(h.function[i]))(sid(h.module[i]))(
            i64(h.address[i]))(to_string(h.status[i]));
        db.step(hcs);
      }
      for (size_t i = 0; i < t.host_modules.size(); ++i) {
        const HostModuleTable& h = t.host_modules;
        Binder{hmd}(pid)(int64_t{h.pid[i]})(sid(h.path[i]))(t.strings.view(h.build_id[i]))(i64(h.map_start[i]))(
            i64(h.map_end[i]))(i64(h.map_offset[i]));
        db.step(hmd);
      }
      for (size_t i = 0; i < t.host_stack_samples.size(); ++i) {
        const HostStackSampleTable& h = t.host_stack_samples;
        Binder{hss}(pid)(h.time[i])(int64_t{h.pid[i]})(int64_t{h.tid[i]})(int64_t{h.callsite[i]});
        db.step(hss);
      }
      for (int p2 = 0; p2 < kProblemCount; ++p2) {
        uint64_t n = t.problems.counts[p2];
        if (!n) continue;
        Severity sev = severity_of(static_cast<Problem>(p2));
        Binder{prb}(pid)(to_string(static_cast<Problem>(p2)))(std::string_view(sev == Severity::kDataLoss ? "data loss"
                                                                               : sev == Severity::kError
                                                                                   ? "error"
                                                                                   : "info"))(i64(n));
        db.step(prb);
      }
    }
    db.exec("COMMIT");
    db.close();
  }
  detail::commit_output(tmp, out);
  cleanup.keep = true;
}

}  // namespace scalescope::trace
