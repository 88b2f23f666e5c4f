#include "trace/export/exporters.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/text_output.hpp"
#include "trace/model/table_columns.hpp"
#include "trace/import/trace_source.hpp"

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

// Every column of every table's column list reaches CSV and SQLite, under
// its exported name (times in _ns; SQLite's string ids in _id), in list
// order: a column added to the list shows up in both without more edits.
TEST(Exporters, CsvAndSqliteColumnsAreTheColumnLists) {
  std::vector<Trace> ranks;
  ranks.push_back(small_trace(0));
  const fs::path dir = temp("csv-columns");
  const fs::path db_path = temp("columns.sqlite");
  fs::remove_all(dir);
  fs::remove(db_path);
  export_csv(ranks, dir);
  export_sqlite(ranks, db_path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  size_t tables = 0;
  for_each_table_type([&](auto table) {
    using Table = typename decltype(table)::type;
    ++tables;
    const std::string name(TableColumns<Table>::name);
    std::string csv = "process,rank";
    std::vector<std::string> sqlite{"process_id"};
    for_each_column_of<Table>([&](const auto& c) {
      if (c.file_only) return;
      csv += "," + exported_name(c.name, c.kind);
      const bool string_id = c.kind == ColumnKind::kString && !c.sqlite_text;
      sqlite.push_back(exported_name(c.name, c.kind) + (string_id ? "_id" : ""));
    });
    const std::string file = slurp(dir / (name + ".csv"));
    EXPECT_EQ(file.substr(0, file.find('\n')), csv) << name;
    std::vector<std::string> columns;
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, ("PRAGMA table_info(" + name + ")").c_str(), -1, &s, nullptr), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)));
    sqlite3_finalize(s);
    EXPECT_EQ(columns, sqlite) << name;
  });
  EXPECT_EQ(tables, std::tuple_size_v<decltype(kTraceTables)>);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"),
            static_cast<int64_t>(tables) + 4);  // and processes, devices, strings, problems
  sqlite3_close(db);
  fs::remove_all(dir);
  fs::remove(db_path);
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

// A reader of the protobuf wire format, written apart from the exporter's
// writer, and a decoder of the few Perfetto messages the export holds (field
// numbers from Perfetto's protos/perfetto/trace/).
struct ProtoField {
  uint32_t number = 0, wire = 0;
  uint64_t value = 0;     // varint and fixed64
  std::string_view data;  // length-delimited
};

class ProtoReader {
 public:
  explicit ProtoReader(std::string_view s) : s_(s) {}
  bool next(ProtoField& f) {
    if (pos_ >= s_.size()) return false;
    const uint64_t key = varint();
    f.number = static_cast<uint32_t>(key >> 3), f.wire = static_cast<uint32_t>(key & 7);
    if (f.wire == 0) {
      f.value = varint();
    } else if (f.wire == 1) {
      if (pos_ + 8 > s_.size()) throw std::runtime_error("truncated fixed64");
      f.value = 0;
      for (int i = 0; i < 8; ++i) f.value |= uint64_t{static_cast<unsigned char>(s_[pos_ + i])} << (8 * i);
      pos_ += 8;
    } else if (f.wire == 2) {
      const uint64_t n = varint();
      if (n > s_.size() - pos_) throw std::runtime_error("truncated bytes");
      f.data = s_.substr(pos_, n);
      pos_ += n;
    } else {
      throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    }
    return true;
  }

 private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= s_.size()) throw std::runtime_error("truncated varint");
      const auto b = static_cast<unsigned char>(s_[pos_++]);
      v |= uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("varint too long");
  }
  std::string_view s_;
  size_t pos_ = 0;
};

// One event as both exports can say it: (pid, track, category, name, ts ns, dur ns).
using ExportedEvent = std::tuple<int64_t, std::string, std::string, std::string, int64_t, int64_t>;

struct DecodedPerfetto {
  std::vector<ExportedEvent> slices, instants;
  std::vector<std::tuple<int64_t, std::string, double>> counters;  // (pid, track, value)
  std::map<std::string, std::map<std::string, std::string>> kernel_args;  // kernel name -> annotation -> value
  std::multiset<uint64_t> flows_out, flows_in;
  std::set<uint64_t> correlations;
  size_t packets = 0;
  bool cleared_first = false;
};

DecodedPerfetto decode_perfetto(const std::string& file) {
  DecodedPerfetto out;
  struct TrackInfo {
    int64_t pid = 0;
    uint64_t parent = 0;
    std::string key;
    bool is_process = false;
  };
  std::map<uint64_t, TrackInfo> tracks;
  std::map<uint64_t, std::string> names, categories, annotation_names, annotation_strings;
  struct Open {
    std::string cat, name;
    int64_t ts;
  };
  std::map<uint64_t, std::vector<Open>> open;  // per track, its open slices
  auto pid_of = [&](uint64_t uuid) {
    const TrackInfo& t = tracks.at(uuid);
    return t.parent ? tracks.at(t.parent).pid : t.pid;
  };
  auto interned = [](std::string_view data, std::map<uint64_t, std::string>& into) {
    ProtoReader r(data);
    ProtoField f;
    uint64_t iid = 0;
    std::string text;
    while (r.next(f)) {
      if (f.number == 1) iid = f.value;
      if (f.number == 2) text = std::string(f.data);
    }
    EXPECT_FALSE(into.count(iid)) << "iid " << iid << " interned twice";
    into[iid] = text;
  };
  ProtoReader trace(file);
  ProtoField pf;
  while (trace.next(pf)) {
    EXPECT_EQ(pf.number, 1u);  // Trace.packet
    ++out.packets;
    ProtoReader packet(pf.data);
    ProtoField f;
    int64_t ts = -1;
    std::string_view event, descriptor;
    while (packet.next(f)) {
      if (f.number == 8) ts = static_cast<int64_t>(f.value);
      if (f.number == 10) {
        EXPECT_EQ(f.value, 1u);  // one sequence
      }
      if (f.number == 13 && out.packets == 1) out.cleared_first = f.value == 1;
      if (f.number == 11) event = f.data;
      if (f.number == 60) descriptor = f.data;
      if (f.number == 12) {  // InternedData, before the event that uses it
        ProtoReader r(f.data);
        ProtoField g;
        while (r.next(g)) {
          if (g.number == 1) interned(g.data, categories);
          if (g.number == 2) interned(g.data, names);
          if (g.number == 3) interned(g.data, annotation_names);
          if (g.number == 29) interned(g.data, annotation_strings);
        }
      }
    }
    if (!descriptor.empty()) {
      ProtoReader r(descriptor);
      ProtoField g;
      uint64_t uuid = 0;
      TrackInfo info;
      while (r.next(g)) {
        if (g.number == 1) uuid = g.value;
        if (g.number == 2) info.key = std::string(g.data);
        if (g.number == 5) info.parent = g.value;
        if (g.number == 3 || g.number == 4) {  // ProcessDescriptor, ThreadDescriptor
          info.is_process = g.number == 3;
          ProtoReader d(g.data);
          ProtoField h;
          std::string tid, name;
          while (d.next(h)) {
            if (h.number == 1) info.pid = static_cast<int64_t>(h.value);
            if (h.number == 2) tid = std::to_string(h.value);
            if (h.number == 5 || h.number == 6) name = std::string(h.data);
          }
          info.key = name.empty() ? "tid " + tid : name;
        }
      }
      EXPECT_FALSE(tracks.count(uuid)) << "track uuid " << uuid << " described twice";
      tracks[uuid] = info;
    }
    if (event.empty()) continue;
    ProtoReader r(event);
    ProtoField g;
    uint64_t type = 0, track = 0;
    std::string name, cat;
    double counter = 0;
    std::map<std::string, std::string> args;
    while (r.next(g)) {
      if (g.number == 9) type = g.value;
      if (g.number == 11) track = g.value;
      if (g.number == 10) name = names.at(g.value);
      if (g.number == 3) cat = categories.at(g.value);
      if (g.number == 44) std::memcpy(&counter, &g.value, sizeof counter);
      if (g.number == 47) out.flows_out.insert(g.value);
      if (g.number == 48) out.flows_in.insert(g.value);
      if (g.number == 52) out.correlations.insert(g.value);
      if (g.number == 4) {
        ProtoReader a(g.data);
        ProtoField h;
        std::string key, value;
        while (a.next(h)) {
          if (h.number == 1) key = annotation_names.at(h.value);
          if (h.number == 2 || h.number == 3 || h.number == 4) value = std::to_string(h.value);
          if (h.number == 17) value = annotation_strings.at(h.value);
        }
        args[key] = value;
      }
    }
    EXPECT_GE(ts, 0);
    EXPECT_TRUE(tracks.count(track)) << "an event before its track's descriptor";
    const int64_t pid = pid_of(track);
    const std::string& key = tracks.at(track).key;
    if (type == 1) {
      open[track].push_back({cat, name, ts});
      if (cat == "kernel") out.kernel_args[name] = args;
    } else if (type == 2) {
      EXPECT_FALSE(open[track].empty()) << "slice end without a begin on " << key;
      if (open[track].empty()) continue;
      const Open o = open[track].back();
      open[track].pop_back();
      out.slices.emplace_back(pid, key, o.cat, o.name, o.ts, ts - o.ts);
    } else if (type == 3) {
      out.instants.emplace_back(pid, key, cat, name, ts, 0);
    } else if (type == 4) {
      out.counters.emplace_back(pid, key, counter);
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "unclosed slices on " << tracks[track].key;
  return out;
}

struct DecodedChrome {
  std::vector<ExportedEvent> slices, instants;
  std::vector<std::tuple<int64_t, std::string, double>> counters;
  size_t flows = 0;
};

// The same from the Chrome export, ts shifted to the Perfetto export's origin.
DecodedChrome decode_chrome(const nlohmann::json& j, int64_t shift_ns) {
  DecodedChrome out;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}] = e["args"]["name"];
  auto ns = [&](const nlohmann::json& v) { return std::llround(v.get<double>() * 1000) + shift_ns; };
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    const int64_t pid = e["pid"].get<int64_t>(), tid = e["tid"].get<int64_t>();
    auto name = thread_names.find({pid, tid});
    const std::string key = name != thread_names.end() ? name->second : "tid " + std::to_string(tid);
    if (ph == "X") out.slices.emplace_back(pid, key, e["cat"], e["name"], ns(e["ts"]), std::llround(e["dur"].get<double>() * 1000));
    if (ph == "i") out.instants.emplace_back(pid, key, e["cat"], e["name"], ns(e["ts"]), 0);
    if (ph == "C") out.counters.emplace_back(pid, e["name"], e["args"]["value"].get<double>());
    if (ph == "s") ++out.flows;
  }
  return out;
}

template <typename T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The Perfetto export decoded field by field holds the Chrome export's
// events: every slice on the same process and track with the same category,
// name, start and duration, the instants, counters and launch flows.
TEST(Exporters, PerfettoHoldsTheChromeEvents) {
  std::vector<Trace> ranks;
  for (int32_t rank : {0, 1}) {
    Trace t = small_trace(rank);
    KernelRecord early;  // overlaps the stream's kernel: an overlap track
    early.start = 2900, early.end = 3200, early.stream = 7, early.block_x = 256;
    early.name = t.strings.intern("splitKreduce_kernel");
    t.kernels.push(early);
    NvtxRecord cross;  // crosses the host range's end: an overlap track of the host thread
    cross.start = 4500, cross.end = 6000, cross.thread = 7;
    cross.domain = t.strings.intern("cpu_op");
    cross.text = t.strings.intern("aten::copy_");
    t.nvtx.push(cross);
    NvtxRecord mark;
    mark.start = mark.end = 1200, mark.thread = 7, mark.kind = NvtxKind::kMark;
    mark.text = t.strings.intern("checkpoint");
    t.nvtx.push(mark);
    t.meta.extra["kineto.thread_name.100.7"] = "python main";
    t.host_threads.push({500, 900, 77, 77, 1, t.strings.intern("python"), 1, ProcessRole::kTraced});
    for (int i = 0; i < 4; ++i)
      t.host_samples.push({1000 + 100 * i, 77, 77, i < 2 ? ThreadState::kRunning : ThreadState::kSleeping, 3, 100, 0, 0, 0});
    t.host_callsites.push({1, 0, t.strings.intern("main"), t.strings.intern("/usr/bin/python3"), 0x10, FrameStatus{}});
    t.host_callsites.push({2, 1, t.strings.intern("step"), t.strings.intern("/usr/bin/python3"), 0x20, FrameStatus{}});
    t.host_stack_samples.push({1150, 77, 77, 2});
    ranks.push_back(std::move(t));
  }
  const fs::path json_path = temp("same.json"), proto_path = temp("same.pftrace");
  export_chrome(ranks, json_path);
  export_perfetto(ranks, proto_path);
  const nlohmann::json j = nlohmann::json::parse(slurp(json_path));
  const DecodedPerfetto p = decode_perfetto(slurp(proto_path));
  fs::remove(json_path);
  fs::remove(proto_path);
  const DecodedChrome c = decode_chrome(j, 0);  // no counter or stack sample before the origin here

  EXPECT_TRUE(p.cleared_first);
  EXPECT_EQ(sorted(p.slices), sorted(c.slices));
  EXPECT_EQ(sorted(p.instants), sorted(c.instants));
  EXPECT_EQ(sorted(p.counters), sorted(c.counters));
  EXPECT_EQ(c.slices.size(), 2u * (1 + 2 + 1 + 1 + 3 + 2));  // per rank: api, kernels, copy, set, NVTX, host states
  EXPECT_EQ(c.instants.size(), 2u * 2);                      // per rank: the mark and the stack sample
  // Each launch a flow from the call to its kernel, unique across ranks.
  EXPECT_EQ(p.flows_out.size(), c.flows);
  EXPECT_EQ(p.flows_out, p.flows_in);
  EXPECT_EQ(std::set<uint64_t>(p.flows_out.begin(), p.flows_out.end()).size(), 2u);
  EXPECT_TRUE(p.correlations.count(42));
  // Arguments: a kernel's launch configuration, the stack of a sample.
  EXPECT_EQ(p.kernel_args.at("splitKreduce_kernel").at("launch"),
            "grid [0,0,0] block [256,0,0] registers per thread 0 shared memory 0");
  // Names are UTF-8: the invalid byte of the kernel name is U+FFFD, as in the JSON.
  EXPECT_TRUE(p.kernel_args.count("gemm<\"quoted\", \\slash>\n\xEF\xBF\xBD"));
}

// A real run: the same events as the Chrome export, in a file at least 5
// times smaller than the JSON.
TEST(Exporters, PerfettoIsAFifthOfTheJsonOnARealRun) {
  const fs::path run = fs::path(SCALESCOPE_SOURCE_DIR) / "examples/h200/image-base";
  fs::path input;
  for (const auto& e : fs::recursive_directory_iterator(run))
    if (e.path().extension() == ".ssrun" && (input.empty() || e.path() < input)) input = e.path();
  ASSERT_FALSE(input.empty()) << "no .ssrun under " << run;
  const std::vector<Trace> ranks = load_traces(input);
  const fs::path json_path = temp("real.json"), proto_path = temp("real.pftrace"), gz_path = temp("real.json.gz");
  export_chrome(ranks, json_path);
  export_perfetto(ranks, proto_path);
  export_chrome(ranks, gz_path);
  const std::string json = slurp(json_path), proto = slurp(proto_path), gz = slurp(gz_path);
  fs::remove(json_path);
  fs::remove(proto_path);
  fs::remove(gz_path);
  const DecodedPerfetto p = decode_perfetto(proto);
  const DecodedChrome c = decode_chrome(nlohmann::json::parse(json), 0);
  ASSERT_GT(c.slices.size(), 10000u) << input;
  // Counters may come before the Chrome origin: compare slices by their
  // shape relative to the first kernel of each export.
  std::map<std::string, size_t> by_cat_p, by_cat_c;
  for (const auto& e : p.slices) ++by_cat_p[std::get<2>(e)];
  for (const auto& e : c.slices) ++by_cat_c[std::get<2>(e)];
  EXPECT_EQ(by_cat_p, by_cat_c);
  EXPECT_EQ(p.instants.size(), c.instants.size());
  EXPECT_EQ(p.counters.size(), c.counters.size());
  EXPECT_EQ(p.flows_out.size(), c.flows);
  EXPECT_GE(json.size(), 5 * proto.size()) << "JSON " << json.size() << " bytes, Perfetto " << proto.size();
  // The .gz export is gzip (magic 1f 8b) and several times smaller.
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_GE(json.size(), 5 * gz.size());
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

TEST(ExportUtil, CodePointsAsUtf8AndBeyondUnicodeAsReplacement) {
  std::string out;
  for (uint32_t c : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0x10FFFFu, 0x110000u}) detail::append_utf8(out, c);
  EXPECT_EQ(out, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xEF\xBF\xBD");
}

}  // namespace
}  // namespace scalescope::trace
