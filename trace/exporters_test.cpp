#include "trace/exporters.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "trace/error.hpp"
#include "trace/export_util.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

// One rank with a launch (API call + kernel of the same correlation), a copy,
// a set, NVTX ranges (host and GPU), an NCCL kernel and a counter.
Trace small_trace(int32_t rank) {
  Trace t;
  t.meta.rank = rank;
  t.meta.world_size = 2;
  t.meta.pid = 100 + static_cast<uint32_t>(rank);
  t.meta.clock.push_back({0, 1'000'000'000});
  t.meta.devices.push_back(DeviceInfo{0, "NVIDIA H200", "", "", -1, 132, 141, 9, 0});
  ApiRecord a;
  a.start = 1000, a.end = 1500, a.thread = 7, a.correlation = 42;
  a.name = t.strings.intern("cudaLaunchKernel");
  t.api.push(a);
  KernelRecord k;
  k.start = 2000, k.end = 3001, k.stream = 7, k.correlation = 42, k.grid_x = 4;
  k.name = t.strings.intern("gemm<\"quoted\", \\slash>\n\xff");  // escapes and invalid UTF-8
  t.kernels.push(k);
  MemcpyRecord m;
  m.start = 3500, m.end = 3600, m.stream = 7, m.bytes = 64, m.kind = MemcpyKind::kHtoD;
  m.src_kind = MemoryKind::kPinned, m.dst_kind = MemoryKind::kDevice;
  t.memcpys.push(m);
  MemsetRecord z;
  z.start = 3700, z.end = 3710, z.stream = 7, z.bytes = 4;
  t.memsets.push(z);
  NvtxRecord n;
  n.start = 900, n.end = 5000, n.thread = 7;
  n.domain = t.strings.intern("user_annotation");
  n.text = t.strings.intern("ProfilerStep#1");
  t.nvtx.push(n);
  n.device = 0;
  n.text = t.strings.intern("DDP.forward");
  t.nvtx.push(n);
  NcclRecord c;
  c.op = NcclOp::kAllReduce;
  c.bytes = 4000;
  c.algorithm = t.strings.intern("RING");
  t.nccl.push(c);
  CounterRecord r;
  r.time = 1000, r.metric = CounterMetric::kPowerWatts, r.value = 300.5;
  t.counters.push(r);
  t.problems.add(Problem::kUnknownEvent, 2);
  return t;
}

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("scalescope_export_test_" + std::to_string(::getpid()) + "_" + name);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Exporters, ChromeIsValidJsonWithTracksAndFlows) {
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(0));
  ranks.push_back(small_trace(1));
  fs::path out = temp("chrome.json");
  export_chrome(ranks, out);
  nlohmann::json j = nlohmann::json::parse(slurp(out));  // throws on invalid JSON
  fs::remove(out);
  int kernels = 0, flow_s = 0, flow_f = 0, counters = 0, names = 0;
  std::set<int> pids;
  for (const auto& e : j["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    std::string ph = e["ph"];
    if (ph == "X" && e["cat"] == "kernel") {
      ++kernels;
      EXPECT_EQ(e["name"].get<std::string>(), "gemm<\"quoted\", \\slash>\n\xEF\xBF\xBD");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.1);  // 2000 ns - the earliest event (the NVTX range at 900 ns)
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.001);
    }
    if (ph == "s") ++flow_s;
    if (ph == "f") ++flow_f;
    if (ph == "C") ++counters;
    if (ph == "M" && e["name"] == "thread_name") ++names;
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(flow_s, 2);
  EXPECT_EQ(flow_f, 2);
  EXPECT_EQ(counters, 2);
  EXPECT_EQ(names, 4);                     // per rank: GPU 0 stream 7, GPU 0 annotations
  EXPECT_EQ(pids, (std::set<int>{1, 2}));  // pid 0 is Perfetto's swapper
}

// The host sampler's tables (format 1.2): one track per sampled thread,
// named after it, with consecutive samples of one state merged into a slice
// from the previous sample's time; a trace with only host samples (a torchrun
// agent without GPU events) still gets a sane time origin.
TEST(Exporters, ChromeDrawsOneTrackPerHostSampledThread) {
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(0));
  Trace& t = ranks[0];
  t.host_threads.push({500, 900, 77, 77, 1, t.strings.intern("python"), 1, ProcessRole::kTraced});
  t.host_threads.push({500, 900, 88, 88, 77, t.strings.intern("pt_data_worker"), 1, ProcessRole::kDescendant});
  const ThreadState main_states[] = {ThreadState::kRunning, ThreadState::kRunning, ThreadState::kSleeping,
                                     ThreadState::kSleeping, ThreadState::kRunning};
  for (int i = 0; i < 5; ++i) {
    t.host_samples.push({500 + 100 * i, 77, 77, main_states[i], 3, 100, 7, 0, 0});
    t.host_samples.push({500 + 100 * i, 77 + 11, 88, ThreadState::kDiskWait, 1, 10, 0, 0, 0});
  }
  Trace agent;  // host samples only
  agent.meta.rank = -1;
  agent.meta.clock = t.meta.clock;
  agent.host_threads.push({400, 900, 5, 5, 1, agent.strings.intern("pt_elastic"), 1, ProcessRole::kTraced});
  for (int i = 0; i < 3; ++i) agent.host_samples.push({400 + 100 * i, 5, 5, ThreadState::kSleeping, 0, 0, 0, 0, 0});
  ranks.push_back(std::move(agent));
  fs::path out = temp("chrome-host.json");
  export_chrome(ranks, out);
  nlohmann::json j = nlohmann::json::parse(slurp(out));
  fs::remove(out);
  EXPECT_EQ(j["otherData"]["origin_unix_ns"].get<int64_t>(), 1'000'000'400);  // the agent's first sample
  std::map<int64_t, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int64_t>()] = e["args"]["name"];
  std::vector<std::pair<std::string, std::string>> slices;  // (track name, state)
  std::vector<double> main_ts, main_dur;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "host") continue;
    const std::string track = names[e["tid"].get<int64_t>()];
    slices.emplace_back(track, e["name"]);
    if (track.find("python (main) pid 77 tid 77") != std::string::npos) {
      main_ts.push_back(e["ts"].get<double>());
      main_dur.push_back(e["dur"].get<double>());
    }
  }
  // Main: running (500-600), sleeping (600-800), running (800-900).
  const std::vector<std::pair<std::string, std::string>> want_main = {{"host python (main) pid 77 tid 77", "running"},
                                                                      {"host python (main) pid 77 tid 77", "sleeping"},
                                                                      {"host python (main) pid 77 tid 77", "running"}};
  std::vector<std::pair<std::string, std::string>> got_main;
  for (const auto& s : slices)
    if (s.first == want_main[0].first) got_main.push_back(s);
  EXPECT_EQ(got_main, want_main);
  EXPECT_EQ(main_ts, (std::vector<double>{0.1, 0.2, 0.4}));  // us after the origin (400 ns)
  EXPECT_EQ(main_dur, (std::vector<double>{0.1, 0.2, 0.1}));
  EXPECT_NE(
      std::find(slices.begin(), slices.end(),
                std::make_pair(std::string("worker pt_data_worker (main) pid 88 tid 88"), std::string("disk_wait"))),
      slices.end());
  EXPECT_NE(std::find(slices.begin(), slices.end(),
                      std::make_pair(std::string("host pt_elastic (main) pid 5 tid 5"), std::string("sleeping"))),
            slices.end());
}

// Native stacks (format 1.3/1.4): each stack sample is an instant on its
// thread's host track named by the leaf (with the whole stack in args), and
// the Trace Event Format's stackFrames/samples hold the same tree.
TEST(Exporters, ChromeCarriesNativeStackSamples) {
  std::vector<Trace> ranks;
  Trace t = small_trace(0);
  t.host_threads.push({500, 900, 77, 77, 1, t.strings.intern("python"), 1, ProcessRole::kTraced});
  for (int i = 0; i < 3; ++i) t.host_samples.push({500 + 100 * i, 77, 77, ThreadState::kRunning, 3, 100, 7, 0, 0});
  const StringId exe = t.strings.intern("/usr/bin/python3");
  t.host_callsites.push({1, 0, t.strings.intern("main"), exe, 0x1040, FrameStatus::kNamed});
  t.host_callsites.push({2, 1, kNoString, t.strings.intern("/opt/libgone.so"), 0x30, FrameStatus::kModuleMissing});
  t.host_stack_samples.push({550, 77, 77, 2});
  t.host_stack_samples.push({650, 77, 78, 1});  // a thread without scheduler samples gets a track
  ranks.push_back(std::move(t));
  fs::path out = temp("chrome-stacks.json");
  export_chrome(ranks, out);
  nlohmann::json j = nlohmann::json::parse(slurp(out));
  fs::remove(out);
  std::map<int64_t, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int64_t>()] = e["args"]["name"];
  std::vector<std::tuple<std::string, std::string, std::string>> instants;  // track, name, stack
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "i" && e["cat"] == "host_stack")
      instants.emplace_back(names[e["tid"].get<int64_t>()], e["name"], e["args"]["stack"]);
  ASSERT_EQ(instants.size(), 2u);
  EXPECT_EQ(instants[0], std::make_tuple(std::string("host python (main) pid 77 tid 77"),
                                         std::string("libgone.so+0x30 [module missing]"),
                                         std::string("main;libgone.so+0x30 [module missing]")));
  EXPECT_EQ(std::get<0>(instants[1]), "host thread pid 77 tid 78");
  EXPECT_EQ(std::get<1>(instants[1]), "main");
  ASSERT_TRUE(j.contains("stackFrames"));
  EXPECT_EQ(j["stackFrames"]["1.2"]["name"], "libgone.so+0x30 [module missing]");
  EXPECT_EQ(j["stackFrames"]["1.2"]["parent"], "1.1");
  EXPECT_EQ(j["stackFrames"]["1.1"]["category"], "python3");
  EXPECT_FALSE(j["stackFrames"]["1.1"].contains("parent"));
  ASSERT_EQ(j["samples"].size(), 2u);
  EXPECT_EQ(j["samples"][0]["sf"], "1.2");
  EXPECT_EQ(j["samples"][1]["sf"], "1.1");
  // A trace without stacks has neither key.
  std::vector<Trace> plain;
  plain.push_back(small_trace(0));
  export_chrome(plain, out);
  const nlohmann::json p = nlohmann::json::parse(slurp(out));
  fs::remove(out);
  EXPECT_FALSE(p.contains("stackFrames"));
  EXPECT_FALSE(p.contains("samples"));
}

// Perfetto's JSON importer (src/trace_processor/importers/json/
// json_trace_parser_impl.cc) reads pid and tid as uint32, keys thread names by
// tid alone and needs the X slices of one (pid, tid) track to nest. Checks
// those rules on an export whose streams overlap in time, as real GPUs do.
TEST(Exporters, ChromeTracksFollowPerfettoJsonRules) {
  std::vector<Trace> ranks;
  for (int32_t rank : {0, 1}) {
    Trace t = small_trace(rank);
    // Two more streams on device 0 and one on device 1, overlapping stream 7's kernel.
    // And one that starts before stream 7's kernel ends (programmatic dependent
    // launch): it must go on a track of its own, not break the nesting.
    KernelRecord early;
    early.start = 2900, early.end = 3200, early.stream = 7;
    early.name = t.strings.intern("splitKreduce_kernel");
    t.kernels.push(early);
    for (auto [device, stream] : {std::pair{0u, 13u}, std::pair{0u, 21u}, std::pair{1u, 7u}}) {
      KernelRecord k;
      k.start = 2500, k.end = 4000, k.device = device, k.stream = stream, k.correlation = 0;
      k.name = t.strings.intern("nccl:all_reduce");
      t.kernels.push(k);
    }
    ranks.push_back(std::move(t));
  }
  fs::path out = temp("perfetto.json");
  export_chrome(ranks, out);
  nlohmann::json j = nlohmann::json::parse(slurp(out));
  fs::remove(out);
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<double, double>>> slices;
  std::map<uint64_t, std::set<uint64_t>> pids_of_named_tid;
  std::set<std::pair<uint64_t, uint64_t>> kernel_tracks, named;
  std::map<uint64_t, std::string> process_names;
  for (const auto& e : j["traceEvents"]) {
    const uint64_t pid = e["pid"].get<uint64_t>(), tid = e["tid"].get<uint64_t>();
    EXPECT_NE(pid, 0u);
    EXPECT_LT(pid, uint64_t{1} << 31);
    EXPECT_LT(tid, uint64_t{1} << 31);  // positive even where a tool reads int32
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") {
      named.insert({pid, tid});
      pids_of_named_tid[tid].insert(pid);
    }
    if (ph == "M" && e["name"] == "process_name") process_names[pid] = e["args"]["name"];
    if (ph == "X") {
      const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
      slices[{pid, tid}].push_back({ts, ts + dur});
      if (e["cat"] == "kernel") kernel_tracks.insert({pid, tid});
    }
  }
  EXPECT_EQ(process_names.size(), 2u);
  EXPECT_EQ(process_names[1].rfind("rank 0", 0), 0u) << process_names[1];
  EXPECT_EQ(kernel_tracks.size(), 10u);  // 4 (device, stream) tracks per rank, none merged, plus an overlap track
  std::set<std::string> track_names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names.insert(e["args"]["name"].get<std::string>());
  EXPECT_TRUE(track_names.count("GPU 0 stream 7 (overlap 1)"));
  EXPECT_TRUE(track_names.count("GPU 1 stream 7"));
  for (const auto& track : kernel_tracks) {
    EXPECT_TRUE(named.count(track)) << "GPU track without a thread_name: tid " << track.second;
    EXPECT_NE(track.second, 7u) << "a GPU track took a host thread's tid";
  }
  // A thread name must not rename a thread of another process.
  for (const auto& [tid, pids] : pids_of_named_tid) EXPECT_EQ(pids.size(), 1u) << "tid " << tid;
  for (auto& [track, spans] : slices) {
    std::sort(spans.begin(), spans.end(),
              [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open_ends;  // a stack of enclosing slices
    for (const auto& [begin, end] : spans) {
      while (!open_ends.empty() && open_ends.back() <= begin) open_ends.pop_back();
      EXPECT_TRUE(open_ends.empty() || end <= open_ends.back())
          << "slices overlap without nesting on pid " << track.first << " tid " << track.second;
      open_ends.push_back(end);
    }
  }
}

int64_t query(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW) << sql;
  int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

TEST(Exporters, SqliteHasDocumentedTables) {
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(0));
  ranks.push_back(small_trace(1));
  fs::path out = temp("t.sqlite");
  export_sqlite(ranks, out);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM kernels"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM processes"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM devices"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM memcpy WHERE kind='HtoD' AND src_kind='pinned'"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM memset"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM api a JOIN strings s ON s.id=a.name_id WHERE s.value='cudaLaunchKernel'"),
            2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM nvtx WHERE device=0"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM nccl n JOIN strings s ON s.id=n.algorithm_id WHERE s.value='RING'"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM counters WHERE metric='power_watts' OR value > 300"), 2);
  EXPECT_EQ(query(db, "SELECT SUM(count) FROM problems"), 4);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM sync"), 0);
  // One global string table: the kernel name is stored once for both ranks.
  EXPECT_EQ(query(db, "SELECT COUNT(DISTINCT name_id) FROM kernels"), 1);
  sqlite3_close(db);
  fs::remove(out);
}

TEST(Exporters, CsvOneFilePerKindAndRefusesNonEmptyDirectory) {
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(3));
  fs::path out = temp("csv");
  fs::remove_all(out);
  export_csv(ranks, out);
  std::string kernels = slurp(out / "kernels.csv");
  EXPECT_EQ(kernels.substr(0, kernels.find('\n')),
            "process,rank,start_ns,end_ns,device,stream,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,"
            "registers_per_thread,shared_memory_bytes,correlation");
  EXPECT_NE(kernels.find("0,3,2000,3001,0,7,\"gemm<\"\"quoted\"\", \\slash>\n"), std::string::npos) << kernels;
  for (const char* f : {"memcpy.csv", "memset.csv", "api.csv", "sync.csv", "nvtx.csv", "nccl.csv", "counters.csv",
                        "devices.csv", "processes.csv", "problems.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_NE(slurp(out / "memcpy.csv").find("HtoD,pinned,device"), std::string::npos);
  EXPECT_THROW(export_csv(ranks, out), Error);  // not empty: never overwritten
  EXPECT_TRUE(fs::exists(out / "kernels.csv"));
  fs::remove_all(out);
}

// The host sampler's tables (1.2) and native stacks (1.3) reach CSV and
// SQLite with their names and states as text.
Trace with_host_rows() {
  Trace t = small_trace(1);
  t.host_threads.push({500, 900, 77, 78, 1, t.strings.intern("pt_main, \"thread\""), 0, ProcessRole::kTraced});
  t.host_threads.push({600, 900, 88, 88, 77, t.strings.intern("pt_data_worker"), 1, ProcessRole::kDescendant});
  t.host_samples.push({500, 77, 78, ThreadState::kRunning, 3, 9000000, 120, 2, 1});
  t.host_samples.push({600, 88, 88, ThreadState::kDiskWait, 5, 10, 0, 0, 0});
  t.host_samples.push({700, 88, 88, ThreadState::kSleeping, -1, 0, 0, 4, 0});
  t.host_callsites.push(
      {1, 0, t.strings.intern("main"), t.strings.intern("/usr/bin/python3"), 0x1040, FrameStatus::kNamed});
  t.host_callsites.push(
      {2, 1, t.strings.intern("PyEval_EvalCode"), t.strings.intern("/usr/bin/python3"), 0x2230, FrameStatus::kNamed});
  // Format 1.4: a frame offline naming could not name, and the modules.
  t.host_callsites.push({3, 2, kNoString, t.strings.intern("/opt/libgone.so"), 0x30, FrameStatus::kModuleMissing});
  t.host_modules.push({77, t.strings.intern("/usr/bin/python3"), t.strings.intern("ab01"), 0x5000, 0x9000, 0x1000});
  t.host_modules.push({77, t.strings.intern("/opt/libgone.so"), kNoString, 0x7000, 0x8000, 0});
  t.host_stack_samples.push({510, 77, 78, 2});
  t.host_stack_samples.push({520, 77, 78, 2});
  t.host_stack_samples.push({530, 88, 88, 1});
  return t;
}

TEST(Exporters, CsvAndSqliteCarryTheHostTables) {
  std::vector<Trace> ranks;
  ranks.push_back(with_host_rows());
  fs::path dir = temp("csv-host");
  fs::remove_all(dir);
  export_csv(ranks, dir);
  const std::string threads = slurp(dir / "host_threads.csv");
  EXPECT_EQ(threads,
            "process,rank,start_ns,end_ns,pid,tid,parent_pid,name,is_main,role\n"
            "0,1,500,900,77,78,1,\"pt_main, \"\"thread\"\"\",0,traced\n"
            "0,1,600,900,88,88,77,pt_data_worker,1,descendant\n");
  const std::string samples = slurp(dir / "host_samples.csv");
  EXPECT_EQ(samples.substr(0, samples.find('\n')),
            "process,rank,time_ns,pid,tid,state,cpu,cpu_ns,run_wait_ns,voluntary_switches,involuntary_switches");
  EXPECT_NE(samples.find("\n0,1,500,77,78,running,3,9000000,120,2,1\n"), std::string::npos) << samples;
  EXPECT_NE(samples.find("\n0,1,700,88,88,sleeping,-1,0,0,4,0\n"), std::string::npos) << samples;
  EXPECT_EQ(slurp(dir / "host_callsites.csv"),
            "process,rank,id,parent,function,module,address,name_status\n"
            "0,1,1,0,main,/usr/bin/python3,0x1040,named\n"
            "0,1,2,1,PyEval_EvalCode,/usr/bin/python3,0x2230,named\n"
            "0,1,3,2,,/opt/libgone.so,0x30,module missing\n");
  EXPECT_EQ(slurp(dir / "host_modules.csv"),
            "process,rank,pid,path,build_id,map_start,map_end,map_offset\n"
            "0,1,77,/usr/bin/python3,ab01,0x5000,0x9000,0x1000\n"
            "0,1,77,/opt/libgone.so,,0x7000,0x8000,0x0\n");
  EXPECT_EQ(slurp(dir / "host_stack_samples.csv"),
            "process,rank,time_ns,pid,tid,callsite\n"
            "0,1,510,77,78,2\n0,1,520,77,78,2\n0,1,530,88,88,1\n");
  fs::remove_all(dir);

  fs::path db_path = temp("host.sqlite");
  fs::remove(db_path);
  export_sqlite(ranks, db_path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM host_threads"), 2);
  EXPECT_EQ(query(db,
                  "SELECT COUNT(*) FROM host_threads h JOIN strings s ON s.id = h.name_id "
                  "WHERE s.value = 'pt_data_worker' AND h.role = 'descendant' AND h.parent_pid = 77"),
            1);
  EXPECT_EQ(query(db, "SELECT SUM(cpu_ns) FROM host_samples"), 9000010);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM host_samples WHERE state = 'disk_wait' AND cpu = 5"), 1);
  // The leaf function of each stack sample, through the callsite tree's ids.
  EXPECT_EQ(query(db,
                  "SELECT COUNT(*) FROM host_stack_samples x JOIN host_callsites c ON c.id = x.callsite "
                  "AND c.process_id = x.process_id JOIN strings s ON s.id = c.function_id "
                  "WHERE s.value = 'PyEval_EvalCode' AND c.parent = 1 AND c.address = 8752"),
            2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM host_callsites WHERE name_status = 'module missing' AND id = 3"), 1);
  EXPECT_EQ(query(db,
                  "SELECT COUNT(*) FROM host_modules m JOIN strings s ON s.id = m.path_id "
                  "WHERE s.value = '/usr/bin/python3' AND m.build_id = 'ab01' AND m.map_offset = 4096"),
            1);
  sqlite3_close(db);
  fs::remove(db_path);
}

TEST(Exporters, FailedExportKeepsOldOutput) {
  fs::path dir = temp("nodir") / "missing" / "x.json";
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(0));
  EXPECT_THROW(export_chrome(ranks, dir), Error);
  EXPECT_THROW(export_sqlite(ranks, dir), Error);
}

TEST(ExportUtil, JsonEscapingKeepsValidUtf8) {
  std::string out;
  detail::append_json_escaped(out, "a\"b\\c\x01\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc0\xaf\xed\xa0\x80");
  EXPECT_EQ(
      out,
      "a\\\"b\\\\c\\u0001\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace scalescope::trace
