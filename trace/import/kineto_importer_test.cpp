#include "trace/import/kineto_importer.hpp"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

// One event of each category Kineto writes, with the args it writes.
constexpr std::string_view kSmall = R"JSON({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
                        "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "nccl_version": "2.28.9"},
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 11, "tid": 12, "ts": 100.001, "dur": 2.5, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 11, "tid": 12, "ts": 100.5, "dur": 1, "args": {"cbid": 211, "correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm\"x\u00e9", "pid": 0, "tid": 7, "ts": 5120481388009.286, "dur": 0.999,
   "args": {"device": 0, "stream": 7, "correlation": 7, "registers per thread": 96, "shared memory": 1024,
            "grid": [3, 2, 1], "block": [128, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 17, "ts": 300, "dur": 10, "args": {"device": 0, "stream": 17, "correlation": 9,
   "Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000, "Group size": 2, "dtype": "Float",
   "Process Group Name": "0"}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Broadcast_TREE_LL128(x)", "pid": 0, "tid": 17, "ts": 200, "dur": 1,
   "args": {"device": 0, "stream": 17, "correlation": 8, "In msg nelems": 10, "dtype": "Half", "Process Group Name": "0"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 11, "tid": 12, "ts": 101, "dur": 1, "args": {"cbid": 41, "correlation": 10}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemset", "pid": 11, "tid": 12, "ts": 102, "dur": 1, "args": {"cbid": 1, "correlation": 11}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 110, "dur": 5,
   "args": {"device": 0, "stream": 7, "correlation": 10, "bytes": 77070336}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 120, "dur": 1,
   "args": {"device": 0, "stream": 7, "correlation": 11, "bytes": 4}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 11, "tid": 12, "ts": 103, "dur": 1, "args": {"cbid": 652, "correlation": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 11, "tid": 12, "ts": 104, "dur": 3, "args": {"cbid": 131, "correlation": 12}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 11, "tid": 12, "ts": 99, "dur": 500},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "DistributedDataParallel.forward", "pid": 0, "tid": 7, "ts": 105, "dur": 50},
  {"ph": "s", "id": 7, "pid": 11, "tid": 12, "ts": 100.5, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 5120481388009.286, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"name": "thread_name", "ph": "M", "ts": 1, "pid": 11, "tid": 12, "args": {"name": "python main"}},
  {"name": "process_sort_index", "ph": "M", "ts": 1, "pid": 11, "tid": 0, "args": {"sort_index": 3}},
  {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0, "ts": 1, "dur": 1},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "x", "ts": 1},
  {"ph": "X", "cat": "mystery", "name": "m", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "tid": 7, "ts": 1, "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "bad_ts", "pid": 0, "tid": 7, "ts": "1", "dur": 1},
  42
  ],
  "traceName": "t"
})JSON";

TEST(KinetoImporter, MapsEveryCategory) {
  ImportReport rep;
  Trace t = import_kineto_json(kSmall, "small.json", &rep);
  EXPECT_EQ(rep.events, 23u);
  EXPECT_EQ(rep.count("kernel", "X"), 5u);
  EXPECT_EQ(rep.count("cuda_runtime", "X"), 4u);
  EXPECT_EQ(rep.count("ac2g", "s"), 1u);
  EXPECT_EQ(rep.count("", "M"), 2u);
  EXPECT_EQ(rep.flows, 2u);
  EXPECT_EQ(rep.metadata_kept, 1u);
  EXPECT_EQ(rep.metadata_dropped, 1u);
  EXPECT_EQ(rep.ignored, 2u);
  EXPECT_EQ(rep.unknown, 1u);
  EXPECT_EQ(rep.malformed, 3u);  // no dur, string ts, a bare number
  EXPECT_EQ(t.problems.get(Problem::kMalformedEvent), 3u);
  EXPECT_EQ(t.problems.get(Problem::kUnknownEvent), 1u);

  ASSERT_EQ(t.kernels.size(), 3u);
  // Sorted by start: the gemm (huge ts) is last.
  KernelRecord k = t.kernels.row(2);
  EXPECT_EQ(t.strings.view(k.name), "gemm\"x\xc3\xa9");
  EXPECT_EQ(k.start, 5120481388009286);  // exact ns, no double rounding
  EXPECT_EQ(k.end - k.start, 999);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.grid_x, 3u);
  EXPECT_EQ(k.grid_y, 2u);
  EXPECT_EQ(k.block_x, 128u);
  EXPECT_EQ(k.registers_per_thread, 96u);
  EXPECT_EQ(k.shared_memory_bytes, 1024u);
  EXPECT_EQ(k.correlation, 7u);

  ASSERT_EQ(t.nccl.size(), 2u);
  NcclRecord b = t.nccl.row(0), a = t.nccl.row(1);
  EXPECT_EQ(b.op, NcclOp::kBroadcast);
  EXPECT_EQ(t.strings.view(b.algorithm), "TREE");
  EXPECT_EQ(t.strings.view(b.protocol), "LL128");
  EXPECT_EQ(b.bytes, 20u);
  EXPECT_EQ(b.sequence, 0);
  EXPECT_EQ(a.op, NcclOp::kAllReduce);
  EXPECT_EQ(a.bytes, 4000u);
  EXPECT_EQ(a.count, 1000u);
  EXPECT_EQ(t.strings.view(a.algorithm), "RING");
  EXPECT_EQ(t.strings.view(a.protocol), "LL");
  EXPECT_EQ(t.strings.view(a.datatype), "Float");
  EXPECT_EQ(t.strings.view(a.communicator), "0");
  EXPECT_EQ(a.sequence, 1);
  EXPECT_EQ(a.group_size, 2);

  ASSERT_EQ(t.memcpys.size(), 1u);
  MemcpyRecord m = t.memcpys.row(0);
  EXPECT_EQ(m.kind, MemcpyKind::kHtoD);
  EXPECT_EQ(m.src_kind, MemoryKind::kPinned);
  EXPECT_EQ(m.dst_kind, MemoryKind::kDevice);
  EXPECT_EQ(m.bytes, 77070336u);
  EXPECT_TRUE(m.is_async);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.row(0).dst_kind, MemoryKind::kDevice);
  EXPECT_FALSE(t.memsets.row(0).is_async);  // launched by cudaMemset

  ASSERT_EQ(t.api.size(), 5u);
  EXPECT_EQ(t.api.row(0).start, 100500);
  EXPECT_EQ(t.api.row(0).callback_id, 211u);
  EXPECT_EQ(t.api.row(0).thread, 12u);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs.row(0).kind, SyncKind::kStreamSynchronize);

  ASSERT_EQ(t.nvtx.size(), 3u);
  NvtxRecord step = t.nvtx.row(0);
  EXPECT_EQ(t.strings.view(step.text), "ProfilerStep#3");
  EXPECT_EQ(t.strings.view(step.domain), "user_annotation");
  EXPECT_EQ(t.strings.view(t.nvtx.row(1).domain), "cpu_op");
  EXPECT_EQ(t.nvtx.row(1).start, 100001);
  EXPECT_EQ(t.nvtx.row(1).end, 102501);
  EXPECT_EQ(t.nvtx.row(2).device, 0);
  EXPECT_EQ(t.strings.view(t.nvtx.row(2).domain), "gpu_user_annotation");

  EXPECT_EQ(t.meta.rank, 1);
  EXPECT_EQ(t.meta.world_size, 2);
  EXPECT_EQ(t.meta.source, "kineto");
  EXPECT_EQ(t.meta.pid, 11u);
  ASSERT_EQ(t.meta.devices.size(), 1u);
  EXPECT_EQ(t.meta.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.meta.devices[0].sm_count, 132u);
  EXPECT_EQ(t.meta.devices[0].memory_bytes, 150109880320u);
  EXPECT_EQ(t.meta.devices[0].compute_major, 9);
  ASSERT_EQ(t.meta.clock.size(), 1u);
  EXPECT_EQ(t.meta.to_unix_ns(1000), 1790857026000001000);
  EXPECT_EQ(t.meta.extra.at("kineto.thread_name.11.12"), "python main");
  EXPECT_EQ(t.meta.extra.at("kineto.nccl_version"), "2.28.9");
}

TEST(KinetoImporter, TimestampsRoundToNearestNs) {
  Trace t = import_kineto_json(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":-1.5,"dur":0.0006},
                         {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":2e3,"dur":7}]})",
      "t.json");
  ASSERT_EQ(t.nvtx.size(), 2u);
  EXPECT_EQ(t.nvtx.row(0).start, -1500);
  EXPECT_EQ(t.nvtx.row(0).end, -1499);
  EXPECT_EQ(t.nvtx.row(1).start, 2000000);
  EXPECT_EQ(t.nvtx.row(1).end, 2007000);
}

TEST(KinetoImporter, NegativeDurationIsClampedAndCounted) {
  Trace t = import_kineto_json(R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","ts":5,"dur":-1}]})", "n.json");
  ASSERT_EQ(t.nvtx.size(), 1u);
  EXPECT_EQ(t.nvtx.row(0).end, t.nvtx.row(0).start);
  EXPECT_EQ(t.problems.get(Problem::kNegativeDuration), 1u);
}

// Integers that do not fit the trace's columns are counted and not used:
// without the check, rank 4294967297 became rank 1, world size 4294967298
// became 2, and device -3 became device 4294967293.
TEST(KinetoImporter, OutOfRangeIntegersAreCountedNotWrapped) {
  ImportReport rep;
  Trace t = import_kineto_json(
      R"({"distributedInfo": {"rank": 4294967297, "world_size": 4294967298},
          "traceEvents":[
            {"ph":"X","cat":"kernel","name":"neg_device","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":-3,"stream":7}},
            {"ph":"X","cat":"kernel","name":"big_stream","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":0,"stream":4294967303}},
            {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":4294967296,"tid":7,"ts":1,"dur":1,"args":{"bytes":4}},
            {"ph":"X","cat":"gpu_memset","name":"Memset","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":-1,"bytes":4}},
            {"ph":"X","cat":"gpu_user_annotation","name":"a","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":4294967295}},
            {"ph":"X","cat":"kernel","name":"fine","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":1,"stream":7}}]})",
      "wrap.json", &rep);
  EXPECT_EQ(t.meta.rank, -1);
  EXPECT_EQ(t.meta.world_size, -1);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels.row(0).device, 1u);
  EXPECT_EQ(t.memcpys.size(), 0u);
  EXPECT_EQ(t.memsets.size(), 0u);
  EXPECT_EQ(t.nvtx.size(), 0u);
  EXPECT_EQ(rep.malformed, 7u);
  EXPECT_EQ(t.problems.get(Problem::kMalformedEvent), 7u);
  // In range: used; -1 means "not recorded" and is not a problem.
  Trace ok = import_kineto_json(R"({"distributedInfo": {"rank": 2147483647, "world_size": -1}, "traceEvents":[]})",
                                "ok.json");
  EXPECT_EQ(ok.meta.rank, 2147483647);
  EXPECT_EQ(ok.meta.world_size, -1);
  EXPECT_EQ(ok.problems.get(Problem::kMalformedEvent), 0u);
}

// distributedInfo.pg_config names torch's process groups; a group without a
// name or with a rank out of range is counted, not kept.
TEST(KinetoImporter, ProcessGroupsFromDistributedInfo) {
  ImportReport rep;
  Trace t = import_kineto_json(
      R"({"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 4, "pg_count": 2, "pg_config": [
            {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 4, "ranks": [3, 1, 0, 2]},
            {"pg_name": "5", "pg_desc": "dp_replicas", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [1, 3]},
            {"pg_desc": "no name", "ranks": [0]},
            {"pg_name": "6", "ranks": [0, 4294967297]},
            "not an object"]},
          "traceEvents":[]})",
      "pg.json", &rep);
  ASSERT_EQ(t.meta.process_groups.size(), 2u);
  EXPECT_EQ(t.meta.process_groups[0], (ProcessGroup{"0", "default_pg", "cuda:nccl", {0, 1, 2, 3}}));
  EXPECT_EQ(t.meta.process_groups[1], (ProcessGroup{"5", "dp_replicas", "cuda:nccl", {1, 3}}));
  EXPECT_EQ(rep.malformed, 3u);
}

void expect_error(std::string_view json, std::string_view fragment) {
  try {
    import_kineto_json(json, "bad.json");
    FAIL() << "no error for " << json.substr(0, 80);
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(KinetoImporter, BadInputIsOneLineError) {
  expect_error("", "invalid JSON");
  expect_error("hello", "");
  expect_error("[1,2,3]", "not a Kineto trace");
  expect_error(R"({"a": 1})", "no traceEvents");
  expect_error(R"({"traceEvents": 3})", "not an array");
  expect_error(R"({"traceEvents": [{"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1}, {"ph": )", "invalid JSON");
  expect_error(R"({"traceEvents": []} xx)", "invalid JSON");
  std::string huge =
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":")" + std::string(100 << 20, 'a') + R"(","ts":1,"dur":1}]})";
  expect_error(huge, "longer than");
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("scalescope_kineto_test_" + std::to_string(::getpid()) + "_" + name);
}

void write_gzip(const fs::path& p, std::string_view data) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  gzclose(f);
}

TEST(KinetoImporter, ReadsGzipAndRejectsTruncatedGzip) {
  fs::path gz = temp_path("small.json.gz");
  write_gzip(gz, kSmall);
  ImportReport rep;
  Trace t = import_kineto_file(gz, &rep);
  EXPECT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(rep.json_bytes, kSmall.size());

  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::path cut = temp_path("cut.json.gz");
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  try {
    import_kineto_file(cut);
    FAIL() << "truncated gzip accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated gzip"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(cut.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_kineto_file(temp_path("missing.json")), Error);
  fs::remove(gz);
  fs::remove(cut);
}

// gzip allows several members back to back (`cat a.gz b.gz`), with zero
// padding after them; the importer inflates them all, whatever ISIZE says.
TEST(KinetoImporter, ReadsMultiMemberGzipWithPadding) {
  const size_t half = kSmall.size() / 2;
  fs::path a = temp_path("a.gz"), b = temp_path("b.gz");
  write_gzip(a, kSmall.substr(0, half));
  write_gzip(b, kSmall.substr(half));
  std::string joined;
  for (const auto& p : {a, b}) {
    std::ifstream in(p, std::ios::binary);
    joined.append(std::istreambuf_iterator<char>(in), {});
  }
  joined.append(16, '\0');
  fs::path gz = temp_path("two.json.gz");
  {
    std::ofstream out(gz, std::ios::binary);
    out.write(joined.data(), static_cast<std::streamsize>(joined.size()));
  }
  ImportReport rep;
  Trace t = import_kineto_file(gz, &rep);
  EXPECT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(rep.json_bytes, kSmall.size());
  for (const auto& p : {a, b, gz}) fs::remove(p);
}

// The memory bound of a parallel folder import: JSON size (a .json.gz's from
// its trailer) times memory_per_json_byte, the largest file's.
// A scratch reused from file to file (one per worker of a folder import) holds
// the last file's bytes, JSON and parser index: each import must read only
// its own file, whatever came before it, and a failed import must leave the
// scratch usable. Compared with imports that share nothing, as written files.
TEST(KinetoImporter, ScratchReusedAcrossFilesGivesTheSameTraces) {
  std::string big(kSmall.substr(0, kSmall.find("  42\n")));
  for (int i = 0; i < 20000; ++i)
    big += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}.5, "dur": 2, )"
                       R"("args": {{"device": 0, "stream": 7, "correlation": {}}}}},)"
                       "\n",
                       i % 97, 1000 + 3 * i, 100000 + i);
  big += "  42\n  ],\n  \"traceName\": \"big\"\n}";
  const fs::path big_gz = temp_path("scratch-big.json.gz"), small_json = temp_path("scratch-small.json"),
                 small_gz = temp_path("scratch-small.json.gz"), cut_json = temp_path("scratch-cut.json");
  write_gzip(big_gz, big);
  write_gzip(small_gz, kSmall);
  {
    std::ofstream(small_json, std::ios::binary) << kSmall;
    // A prefix of the small file: the rest of a longer file's bytes must not complete it.
    std::ofstream(cut_json, std::ios::binary) << kSmall.substr(0, kSmall.size() / 2);
  }
  auto written = [](const Trace& t) {
    const fs::path out = temp_path("scratch-out.sstrace");
    write_trace(out, t);
    std::ifstream in(out, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    fs::remove(out);
    return bytes;
  };
  auto fresh = [&](const fs::path& p, ImportReport& rep) { return written(import_kineto_file(p, &rep)); };
  std::string fresh_error;
  try {
    import_kineto_file(cut_json);
  } catch (const Error& e) {
    fresh_error = e.what();
  }
  ASSERT_FALSE(fresh_error.empty());

  KinetoImportScratch scratch;
  for (const fs::path& p : {big_gz, small_json, cut_json, small_gz, big_gz, cut_json, small_json}) {
    SCOPED_TRACE(p.string());
    if (p == cut_json) {
      try {
        import_kineto_file(p, nullptr, {}, &scratch);
        FAIL() << "a cut JSON file was accepted after a longer one";
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), fresh_error);
      }
      continue;
    }
    ImportReport with, without;
    const Trace t = import_kineto_file(p, &with, {}, &scratch);
    EXPECT_EQ(written(t), fresh(p, without));
    EXPECT_EQ(with.json_bytes, without.json_bytes);
    EXPECT_EQ(with.events, without.events);
    EXPECT_EQ(t.kernels.size(), p == big_gz ? 20003u : 3u);
  }
  for (const auto& p : {big_gz, small_json, small_gz, cut_json}) fs::remove(p);
}

// The traceEvents array of a large text is parsed in pieces: the same trace
// and report as one pass, and the same error for text that one pass refuses,
// including what only a cut could hide (a comma before the closing bracket),
// a "traceEvents" inside a string ahead of the real key, and a ']' after it.
TEST(KinetoImporter, PiecesGiveWhatOnePassGives) {
  auto events = [](int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
      out += fmt::format(
          "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"pid\": 0, \"tid\": 7, \"ts\": {}.5, "
          "\"dur\": 2,\n    \"args\": {{\n      \"device\": 0, \"stream\": 7, \"correlation\": {}\n    }}\n  }},\n",
          i % 97, 1000 + 3 * i, i + 1);
    return out;
  };
  const std::string body = events(3000);
  const std::string last =
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}\n";
  const std::vector<std::string> texts = {
      // As Kineto writes it.
      "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n" + body + last + "  ],\n  \"traceName\": \"t\"\n}",
      // Keys on both sides of the array, one holding a ']' and a "traceEvents" in a string.
      "{\n  \"trace_id\": \"x \\\"traceEvents\\\": [ y\",\n  \"traceEvents\": [\n" + body + last +
          "  ],\n  \"traceName\": \"a]b\"\n}",
      // A comma before the closing bracket: invalid JSON, refused by both.
      "{\n  \"traceEvents\": [\n" + body + "  ]\n}",
      // A broken event near the end.
      "{\n  \"traceEvents\": [\n" + body + "  {\"ph\": \"X\", \"ts\": }\n  ]\n}",
      // The array is not the root's traceEvents.
      "{\n  \"x\": {\"traceEvents\": [\n" + body + last + "  ]},\n  \"traceEvents\": []\n}",
      // Content after the root.
      "{\n  \"traceEvents\": [\n" + body + last + "  ]\n} 7",
  };
  for (size_t k = 0; k < texts.size(); ++k) {
    SCOPED_TRACE(k);
    KinetoImportOptions whole, pieces;
    whole.piece_bytes = 0;
    pieces.piece_bytes = 16 << 10;  // the texts are ~500 KB: about 30 pieces
    ASSERT_GT(texts[k].size(), 20 * pieces.piece_bytes);
    auto import = [&](const KinetoImportOptions& o, ImportReport& rep, std::string& error) {
      try {
        return import_kineto_json(texts[k], "t.json", &rep, o);
      } catch (const Error& e) {
        error = e.what();
        return Trace{};
      }
    };
    ImportReport rw, rp;
    std::string ew, ep;
    const Trace tw = import(whole, rw, ew), tp = import(pieces, rp, ep);
    EXPECT_EQ(ew, ep);
    EXPECT_EQ(ew.empty(), k < 2 || k == 4) << ew;  // 4: the root's traceEvents is empty
    EXPECT_EQ(tw.kernels.start, tp.kernels.start);
    EXPECT_EQ(tw.kernels.name, tp.kernels.name);
    EXPECT_EQ(tw.kernels.correlation, tp.kernels.correlation);
    EXPECT_EQ(tw.nvtx.start, tp.nvtx.start);
    EXPECT_EQ(tw.meta.extra, tp.meta.extra);
    EXPECT_EQ(rw.events, rp.events);
    EXPECT_EQ(rw.json_bytes, rp.json_bytes);
    EXPECT_EQ(rw.pieces, 0u);
    if (k < 2) {
      EXPECT_EQ(tp.kernels.size(), 3000u);
      EXPECT_GT(rp.pieces, 20u);  // read in pieces indeed
    } else {
      EXPECT_EQ(rp.pieces, 0u);  // read again in one pass
    }
  }
}

TEST(KinetoImporter, ImportMemoryComesFromTheJsonSize) {
  const fs::path plain = temp_path("mem.json"), gz = temp_path("mem.json.gz");
  {
    std::ofstream out(plain, std::ios::binary);
    out << std::string(1000, ' ');
  }
  write_gzip(gz, std::string(1 << 20, ' '));  // compresses to ~1 KB
  KinetoImportOptions o;
  o.memory_per_json_byte = 6;
  o.max_gzip_ratio = 1 << 20;  // spaces compress ~1000x, beyond the default ratio
  EXPECT_EQ(kineto_import_memory_bytes({plain}, o), 6000u);
  EXPECT_EQ(kineto_import_memory_bytes({gz}, o), 6u << 20);
  EXPECT_EQ(kineto_import_memory_bytes({plain, gz, temp_path("absent.json")}, o), 6u << 20);
  // A trailer claiming more than max_gzip_ratio times the file is capped there.
  o.max_gzip_ratio = 10;
  EXPECT_EQ(kineto_import_memory_bytes({gz}, o), 6 * 10 * fs::file_size(gz));
  EXPECT_EQ(kineto_import_memory_bytes({}, o), 0u);
  fs::remove(plain);
  fs::remove(gz);
}

TEST(KinetoImporter, DecompressionBombIsRefused) {
  fs::path gz = temp_path("bomb.json.gz");
  write_gzip(gz, std::string(8 << 20, ' '));
  KinetoImportOptions o;
  o.max_json_bytes = 1 << 20;
  try {
    import_kineto_file(gz, nullptr, o);
    FAIL() << "bomb accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decompression bomb"), std::string::npos) << e.what();
  }
  fs::remove(gz);
}

// PyTorch's fwdbwd flows: "s" at the forward op's start, "f" (binding "e")
// at the backward op's start; both ops get one link id, other ops none.
TEST(KinetoImporter, ForwardBackwardFlowsLinkTheTwoOps) {
  constexpr std::string_view kFlows = R"JSON({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::cross_entropy_loss", "pid": 1, "tid": 10, "ts": 100, "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_log_softmax", "pid": 1, "tid": 10, "ts": 110, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "aten::nll_loss", "pid": 1, "tid": 10, "ts": 120, "dur": 20},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: NllLossBackward0", "pid": 1, "tid": 20, "ts": 300, "dur": 40},
  {"ph": "X", "cat": "cpu_op", "name": "NllLossBackward0", "pid": 1, "tid": 20, "ts": 301, "dur": 38},
  {"ph": "X", "cat": "cpu_op", "name": "LogSoftmaxBackward0", "pid": 1, "tid": 20, "ts": 350, "dur": 10},
  {"ph": "s", "id": 900000000001, "pid": 1, "tid": 10, "ts": 120, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "f", "id": 900000000001, "pid": 1, "tid": 20, "ts": 301, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "s", "id": 2, "pid": 1, "tid": 10, "ts": 110, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "f", "id": 2, "pid": 1, "tid": 20, "ts": 350, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "f", "id": 3, "pid": 1, "tid": 99, "ts": 350, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"}
  ]})JSON";
  ImportReport rep;
  const Trace t = import_kineto_json(kFlows, "flows.json", &rep);
  std::unordered_map<std::string, uint32_t> link;
  for (size_t i = 0; i < t.nvtx.size(); ++i) link[std::string(t.strings.view(t.nvtx.text[i]))] = t.nvtx.link[i];
  EXPECT_EQ(link["aten::cross_entropy_loss"], 0u);
  EXPECT_EQ(link["autograd::engine::evaluate_function: NllLossBackward0"], 0u);
  EXPECT_NE(link["aten::nll_loss"], 0u);
  EXPECT_EQ(link["aten::nll_loss"], link["NllLossBackward0"]);
  EXPECT_NE(link["aten::_log_softmax"], 0u);
  EXPECT_EQ(link["aten::_log_softmax"], link["LogSoftmaxBackward0"]);
  EXPECT_NE(link["aten::_log_softmax"], link["aten::nll_loss"]);
  EXPECT_EQ(rep.flows, 5u);
  EXPECT_EQ(rep.count("fwdbwd", "s"), 2u);
}

// A small .json.gz inflating ~1000x is refused by the ratio limit
// after inflating at most 100x its size (1 MiB here), not 8 MiB, whether its
// trailer tells the size or lies (a last member announcing little).
TEST(KinetoImporter, GzipRatioLimitRefusesBombsEarly) {
  std::string body = "{\"traceEvents\":[";
  body.reserve(size_t{8} << 20);
  while (body.size() < (size_t{8} << 20)) body += "1,";
  body += "1]}";
  fs::path gz = temp_path("ratio-bomb.json.gz");
  write_gzip(gz, body);
  ASSERT_LT(fs::file_size(gz), body.size() / 200);
  try {
    import_kineto_file(gz);
    FAIL() << "bomb accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gzip trailer announces 8388611"), std::string::npos) << what;
    EXPECT_NE(what.find("100x its compressed size"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  // A second, tiny member makes the trailer announce 3 bytes: refused while inflating.
  fs::path tail = temp_path("tail.gz");
  write_gzip(tail, "   ");
  {
    std::ifstream in(tail, std::ios::binary);
    std::ofstream out(gz, std::ios::binary | std::ios::app);
    out << in.rdbuf();
  }
  try {
    import_kineto_file(gz);
    FAIL() << "bomb accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decompresses to more than"), std::string::npos) << e.what();
  }
  // With the ratio limit lifted, the same file inflates (and its "1" events are malformed, not fatal).
  KinetoImportOptions loose;
  loose.max_gzip_ratio = 100000;
  ImportReport rep;
  import_kineto_file(gz, &rep, loose);
  EXPECT_GT(rep.malformed + rep.unknown + rep.ignored, 0u);
  for (const auto& p : {gz, tail}) fs::remove(p);
}

// The memory this process may take bounds the JSON it accepts (here: made
// tiny through the cost per byte), with a one-line error.
TEST(KinetoImporter, JsonLargerThanTheMemoryBudgetIsRefused) {
  fs::path json = temp_path("small.json");
  std::ofstream(json) << kSmall;
  KinetoImportOptions o;
  o.memory_per_json_byte = uint64_t{1} << 50;
  try {
    import_kineto_file(json, nullptr, o);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too large to import here"), std::string::npos) << e.what();
  }
  fs::path gz = temp_path("small.json.gz");
  write_gzip(gz, kSmall);
  EXPECT_THROW(import_kineto_file(gz, nullptr, o), Error);
  EXPECT_EQ(import_kineto_file(gz).kernels.size(), 3u);
  for (const auto& p : {json, gz}) fs::remove(p);
}

// One invalid UTF-8 byte no longer makes a whole trace unreadable: it is
// replaced by U+FFFD and counted.
TEST(KinetoImporter, InvalidUtf8IsReplacedAndCounted) {
  std::string text(kSmall);
  const size_t at = text.find("gemm");
  ASSERT_NE(at, std::string::npos);
  text[at + 2] = static_cast<char>(0xFF);  // a kernel named "ge\xFFm..."
  ImportReport rep;
  Trace t = import_kineto_json(text, "bad-utf8.json", &rep);
  EXPECT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.problems.get(Problem::kInvalidUtf8), 1u);
  bool found = false;
  for (size_t i = 0; i < t.kernels.size(); ++i)
    found = found || t.strings.view(t.kernels.name[i]).starts_with("ge\xEF\xBF\xBDm");
  EXPECT_TRUE(found);
  // A valid file counts nothing.
  EXPECT_EQ(import_kineto_json(kSmall, "ok.json").problems.get(Problem::kInvalidUtf8), 0u);
}

}  // namespace
}  // namespace scalescope::trace
