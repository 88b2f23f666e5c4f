#include "trace/import/nsys_importer.hpp"

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "base/tests/sanitizer.hpp"

#include "base/error.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/nsys";
const fs::path kSaxpy = fs::path(SCALESCOPE_SHARED_DIR) / "data/nsys/saxpy-mpi-cuda-a100.sqlite";

class NsysImporter : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nsys_importer_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Builds `<name>.sqlite` (or `as`) from the checked-in fixture trace/testdata/nsys/<name>.sql.
  fs::path fixture(const std::string& name, const std::string& as = "") {
    std::ifstream in(kFixtures / (name + ".sql"));
    EXPECT_TRUE(in) << name;
    const std::string sql((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return build(as.empty() ? name + ".sqlite" : as, sql);
  }
  fs::path build(const std::string& file, const std::string& sql) {
    const fs::path out = dir_ / file;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const std::string all = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;" + sql + ";COMMIT;";
    EXPECT_EQ(sqlite3_exec(db, all.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return out;
  }
  static std::string bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static std::string error_of(const fs::path& p) {
    try {
      import_nsys_file(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

// Events of one table as SQLite counts them, independent of the importer.
uint64_t sql_count(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  uint64_t n = sqlite3_step(st) == SQLITE_ROW ? static_cast<uint64_t>(sqlite3_column_int64(st, 0)) : ~uint64_t{0};
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

size_t count_name(const Trace& t, const ApiTable& a, std::string_view name) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += t.strings.view(a.name[i]) == name;
  return n;
}

// ---- the real export -------------------------------------------------------

TEST_F(NsysImporter, RealSaxpyExportComesThroughExactly) {
  ASSERT_TRUE(fs::exists(kSaxpy)) << kSaxpy;
  // Import a copy so that the test can see every file the import leaves beside it.
  const fs::path copy = dir_ / "saxpy.sqlite";
  fs::copy_file(kSaxpy, copy);
  const std::string before = bytes_of(copy);
  NsysImportReport rep;
  std::vector<Trace> traces = import_nsys_file(copy, &rep);
  // The input is untouched, and no journal, -wal or -shm file appeared beside it.
  EXPECT_EQ(bytes_of(copy), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);

  EXPECT_EQ(rep.product_version, "2022.2.1.31");
  EXPECT_EQ(rep.schema_version, "2.9.1");
  EXPECT_EQ(rep.rows("CUPTI_ACTIVITY_KIND_KERNEL"), 5u);
  EXPECT_EQ(rep.rows("CUPTI_ACTIVITY_KIND_MEMCPY"), 15u);
  EXPECT_EQ(rep.rows("CUPTI_ACTIVITY_KIND_RUNTIME"), 95u);
  EXPECT_EQ(rep.rows("NVTX_EVENTS"), 24u);
  EXPECT_FALSE(rep.table("CUPTI_ACTIVITY_KIND_DRIVER")->present);
  // The 95 RUNTIME rows: 56 runtime calls, 1 driver call, 38 backtrace rows
  // that repeat calls (eventClass 67; an independent count below).
  EXPECT_EQ(rep.runtime_calls, 56u);
  EXPECT_EQ(rep.driver_calls, 1u);
  EXPECT_EQ(rep.backtrace_rows, 38u);
  EXPECT_EQ(rep.backtrace_rows,
            sql_count(kSaxpy, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 67"));
  EXPECT_EQ(rep.runtime_calls + rep.driver_calls + rep.backtrace_rows + rep.other_class_rows, 95u);
  // The 24 NVTX rows: 22 ranges, the MPI domain's creation, one thread name.
  EXPECT_EQ(rep.nvtx_ranges, 22u);
  EXPECT_EQ(rep.nvtx_domain_rows, 1u);
  EXPECT_EQ(rep.nvtx_thread_names, 1u);
  EXPECT_EQ(rep.nvtx_ranges + rep.nvtx_marks + rep.nvtx_domain_rows + rep.nvtx_thread_names + rep.nvtx_other +
                rep.unclosed_ranges,
            24u);
  EXPECT_EQ(rep.cpu_samples, 5451u);
  EXPECT_EQ(rep.sched_events, 3238u);
  EXPECT_EQ(rep.malformed, 0u);
  EXPECT_EQ(rep.invalid_utf8, 0u);

  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  ASSERT_EQ(rep.processes.size(), 1u);
  EXPECT_EQ(rep.processes[0].pid, 1230493u);
  EXPECT_EQ(rep.processes[0].rank_source, "NVTX thread name \"MPI Rank 0\"");
  EXPECT_EQ(t.meta.source, "nsys");
  EXPECT_EQ(t.meta.pid, 1230493u);
  EXPECT_EQ(t.meta.rank, 0);
  EXPECT_EQ(t.meta.command_line, "./saxpy-mpi-cuda");
  EXPECT_EQ(t.meta.hostname, "nid001608");
  ASSERT_EQ(t.meta.clock.size(), 1u);
  EXPECT_EQ(t.meta.clock[0].trace_ns, 0);
  EXPECT_EQ(t.meta.clock[0].unix_ns, 1687813257637297504);
  ASSERT_EQ(t.meta.devices.size(), 1u);
  EXPECT_EQ(t.meta.devices[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(t.meta.devices[0].pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(t.meta.devices[0].uuid, "GPU-74e128b2-90b6-b409-07c8-33bee5ff6f88");
  EXPECT_EQ(t.meta.devices[0].sm_count, 108u);
  EXPECT_EQ(t.meta.devices[0].compute_major, 8);
  EXPECT_EQ(t.meta.extra.at("nsys.thread.1230493"), "MPI Rank 0");

  ASSERT_EQ(t.kernels.size(), 5u);
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    EXPECT_EQ(t.strings.view(t.kernels.name[i]), "saxpy(double *, double *, double *, double, int)");
    EXPECT_EQ(t.kernels.grid_x[i], 2u);
    EXPECT_EQ(t.kernels.block_x[i], 512u);
    EXPECT_EQ(t.kernels.registers_per_thread[i], 26u);
    EXPECT_EQ(t.kernels.stream[i], 7u);
  }
  EXPECT_EQ(t.kernels.start[0], 924922186);
  EXPECT_EQ(t.kernels.end[0], 942626994);
  EXPECT_EQ(t.kernels.correlation[0], 140u);
  ASSERT_EQ(t.memcpys.size(), 15u);
  size_t htod = 0, dtoh = 0;
  for (size_t i = 0; i < t.memcpys.size(); ++i) {
    EXPECT_EQ(t.memcpys.bytes[i], 262144000u);
    EXPECT_FALSE(t.memcpys.is_async[i]) << "cudaMemcpy is synchronous";
    if (t.memcpys.kind[i] == MemcpyKind::kHtoD) {
      ++htod;
      EXPECT_EQ(t.memcpys.src_kind[i], MemoryKind::kPageable);
      EXPECT_EQ(t.memcpys.dst_kind[i], MemoryKind::kDevice);
    } else if (t.memcpys.kind[i] == MemcpyKind::kDtoH) {
      ++dtoh;
      EXPECT_EQ(t.memcpys.src_kind[i], MemoryKind::kDevice);
      EXPECT_EQ(t.memcpys.dst_kind[i], MemoryKind::kPageable);
    }
  }
  EXPECT_EQ(htod, 10u);
  EXPECT_EQ(dtoh, 5u);
  EXPECT_EQ(t.memsets.size(), 0u);
  EXPECT_EQ(t.syncs.size(), 0u);  // the table is empty: analyses fall back to the API calls
  ASSERT_EQ(t.api.size(), 57u);
  EXPECT_EQ(count_name(t, t.api, "cudaMemcpy"), 15u);  // "_v3020" stripped
  EXPECT_EQ(count_name(t, t.api, "cudaMalloc"), 15u);
  EXPECT_EQ(count_name(t, t.api, "cudaLaunchKernel"), 5u);
  EXPECT_EQ(count_name(t, t.api, "cudaMemcpy_v3020"), 0u);
  size_t driver = 0;
  for (size_t i = 0; i < t.api.size(); ++i) {
    driver += t.api.domain[i] == ApiDomain::kDriver;
    EXPECT_EQ(t.api.thread[i], 1230493u);
    if (i) {
      EXPECT_LE(t.api.start[i - 1], t.api.start[i]);
    }
  }
  EXPECT_EQ(driver, 1u);
  EXPECT_EQ(t.problems.get(Problem::kUnmatchedCorrelation), 0u);
  ASSERT_EQ(t.nvtx.size(), 22u);
  size_t mpi = 0, saxpy = 0;
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    const std::string_view text = t.strings.view(t.nvtx.text[i]);
    if (t.strings.view(t.nvtx.domain[i]) == "MPI") {
      ++mpi;
      EXPECT_EQ(text.substr(0, 4), "MPI_");  // registered strings through textId
    }
    if (text == "saxpy") {
      ++saxpy;
      EXPECT_EQ(t.nvtx.domain[i], kNoString);
    }
  }
  EXPECT_EQ(mpi, 17u);
  EXPECT_EQ(saxpy, 5u);
}

TEST_F(NsysImporter, BytesAndFileImportsAgree) {
  const std::string bytes = bytes_of(kSaxpy);
  NsysImportReport a, b;
  auto from_file = import_nsys_file(kSaxpy, &a);
  auto from_bytes = import_nsys_bytes(bytes, "saxpy-mpi-cuda-a100.sqlite", &b);
  ASSERT_EQ(from_file.size(), 1u);
  ASSERT_EQ(from_bytes.size(), 1u);
  EXPECT_EQ(from_file[0].event_count(), from_bytes[0].event_count());
  EXPECT_EQ(from_file[0].kernels.start, from_bytes[0].kernels.start);
  EXPECT_EQ(a.runtime_calls, b.runtime_calls);
}

// ---- fixtures: one per schema variant ---------------------------------------

TEST_F(NsysImporter, Schema2022NamesAsIdsDocumentedCodes) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("v2022_ids"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  EXPECT_EQ(rep.schema_version, "2.9.1");
  EXPECT_EQ(t.meta.pid, 4242u);
  EXPECT_EQ(t.meta.rank, 2);  // "MPI Rank 2"
  EXPECT_EQ(t.meta.hostname, "gpu-node-07");
  EXPECT_EQ(t.meta.command_line, "python3");
  ASSERT_EQ(t.meta.devices.size(), 2u);
  EXPECT_EQ(t.meta.devices[1].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(t.meta.devices[1].memory_bytes, 85520809984u);
  EXPECT_EQ(t.meta.clock[0].unix_ns, 1700000000000000000);

  // Kernels sorted by start; the one with end < start is clamped and counted.
  ASSERT_EQ(t.kernels.size(), 4u);
  EXPECT_EQ(t.kernels.start[0], 1000);
  EXPECT_EQ(t.strings.view(t.kernels.name[0]), "void gemm_kernel<float>(float*, int)");
  EXPECT_EQ(t.kernels.shared_memory_bytes[0], 3072u);
  EXPECT_EQ(t.kernels.grid_y[0], 2u);
  EXPECT_EQ(t.kernels.end[3], t.kernels.start[3]);
  EXPECT_EQ(t.problems.get(Problem::kNegativeDuration), 1u);
  // The device-1 kernel's correlation id 99 has no API call.
  EXPECT_EQ(t.problems.get(Problem::kUnmatchedCorrelation), 1u);
  ASSERT_EQ(t.nccl.size(), 1u);
  EXPECT_EQ(t.nccl.op[0], NcclOp::kAllReduce);
  EXPECT_EQ(t.strings.view(t.nccl.algorithm[0]), "RING");
  EXPECT_EQ(t.strings.view(t.nccl.protocol[0]), "LL");
  EXPECT_EQ(t.strings.view(t.nccl.datatype[0]), "f32");
  EXPECT_EQ(t.nccl.stream[0], 13u);

  ASSERT_EQ(t.memcpys.size(), 2u);
  EXPECT_EQ(t.memcpys.kind[0], MemcpyKind::kHtoD);
  EXPECT_EQ(t.memcpys.src_kind[0], MemoryKind::kPinned);
  EXPECT_EQ(t.memcpys.dst_kind[0], MemoryKind::kDevice);
  EXPECT_TRUE(t.memcpys.is_async[0]);  // cudaMemcpyAsync
  EXPECT_EQ(t.memcpys.kind[1], MemcpyKind::kPtoP);
  EXPECT_EQ(t.memcpys.peer_device[1], 1u);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.dst_kind[0], MemoryKind::kDevice);
  EXPECT_FALSE(t.memsets.is_async[0]);  // cudaMemset
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs.kind[0], SyncKind::kStreamSynchronize);
  EXPECT_EQ(t.syncs.stream[0], 7u);
  EXPECT_EQ(t.syncs.thread[0], 4242u);  // its API call's thread

  // 9 RUNTIME rows: 7 runtime, 1 driver, 1 backtrace, 1 cuDNN (other class).
  EXPECT_EQ(rep.runtime_calls, 6u);
  EXPECT_EQ(rep.driver_calls, 1u);
  EXPECT_EQ(rep.backtrace_rows, 1u);
  EXPECT_EQ(rep.other_class_rows, 1u);
  ASSERT_EQ(t.api.size(), 7u);
  EXPECT_EQ(count_name(t, t.api, "cudaStreamSynchronize"), 1u);
  EXPECT_EQ(count_name(t, t.api, "cuLaunchKernel"), 1u);
  EXPECT_EQ(count_name(t, t.api, "cudaMemcpyPeerAsync"), 1u);

  // NVTX: the NCCL domain by name, marks with end == start, the unclosed range left out.
  EXPECT_EQ(rep.unclosed_ranges, 1u);
  EXPECT_EQ(rep.nvtx_marks, 1u);
  ASSERT_EQ(t.nvtx.size(), 4u);
  size_t nccl_domain = 0, marks = 0;
  for (size_t i = 0; i < t.nvtx.size(); ++i) {
    if (t.strings.view(t.nvtx.domain[i]) == "NCCL") {
      ++nccl_domain;
      EXPECT_EQ(t.strings.view(t.nvtx.text[i]), "ncclAllReduce");
    }
    if (t.nvtx.kind[i] == NvtxKind::kMark) {
      ++marks;
      EXPECT_EQ(t.nvtx.start[i], t.nvtx.end[i]);
      EXPECT_EQ(t.nvtx.thread[i], 4250u);
    }
  }
  EXPECT_EQ(nccl_domain, 1u);
  EXPECT_EQ(marks, 1u);
  EXPECT_EQ(rep.cpu_samples, 2u);
  EXPECT_EQ(t.meta.extra.at("nsys.thread.4242"), "MPI Rank 2");  // NVTX's name wins over ThreadNames'
}

TEST_F(NsysImporter, Schema2024EnumTablesGreenContextsTextIds) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("v2024_enums"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  EXPECT_EQ(rep.product_version, "2024.6.2.225");
  EXPECT_EQ(rep.schema_version, "3.16.1");
  EXPECT_TRUE(rep.table("ENUM_CUDA_MEM_KIND")->present);
  EXPECT_EQ(rep.gpu_metric_samples, 3u);
  EXPECT_EQ(t.meta.devices[0].uuid, "GPU-9b2c0f3e-1111-2222-3333-444455556666");  // already prefixed
  EXPECT_EQ(t.meta.rank, -1);
  EXPECT_EQ(t.meta.extra.at("nsys.rank_source"), "unknown");
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.strings.view(t.kernels.name[0]),
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float*)");
  // Kernel 3 names string 777, which StringIds lacks: the next name column (shortName) is used, and it is counted.
  EXPECT_EQ(t.strings.view(t.kernels.name[2]), "vectorized_elementwise_kernel");
  EXPECT_EQ(rep.malformed, 1u);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys.kind[0], MemcpyKind::kDtoH);
  EXPECT_EQ(t.memcpys.dst_kind[0], MemoryKind::kPinned);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.dst_kind[0], MemoryKind::kManaged);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs.kind[0], SyncKind::kEventSynchronize);
  EXPECT_EQ(t.syncs.event[0], 17u);
  EXPECT_EQ(rep.backtrace_rows, 1u);
  EXPECT_EQ(t.api.size(), 6u);
  // NVTX text through textId, inline, a start/end range and a registered-string mark.
  ASSERT_EQ(t.nvtx.size(), 4u);
  EXPECT_EQ(t.strings.view(t.nvtx.text[0]), "data loading");
  EXPECT_EQ(t.strings.view(t.nvtx.text[1]), "forward");
  EXPECT_EQ(t.strings.view(t.nvtx.text[2]), "data loading");
  EXPECT_EQ(t.nvtx.kind[2], NvtxKind::kMark);
  EXPECT_EQ(t.strings.view(t.nvtx.text[3]), "optimizer");
  EXPECT_EQ(rep.nvtx_ranges, 3u);
}

TEST_F(NsysImporter, EnumTableIdsWinOverDocumentedCodes) {
  // An export whose enum table gives code 42 to peer-to-peer copies and 9 to pinned memory.
  const std::string sql = R"SQL(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
    CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
    INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (42, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');
    INSERT INTO ENUM_CUDA_MEM_KIND VALUES (9, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned');
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
      correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER, demangledName INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2, 0, 7, 0, 281546145660928, 8, 42, 9, 1);)SQL";
  auto traces = import_nsys_file(build("enum.sqlite", sql));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].memcpys.kind[0], MemcpyKind::kPtoP);
  EXPECT_EQ(traces[0].memcpys.src_kind[0], MemoryKind::kPinned);
  EXPECT_EQ(traces[0].memcpys.dst_kind[0], MemoryKind::kUnknown);  // 1 is not in this export's table
}

TEST_F(NsysImporter, NcclPayloadMessageSizesReachTheirKernels) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("nccl_payload"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  ASSERT_EQ(t.nccl.size(), 4u);
  std::map<uint32_t, uint64_t> bytes_by_corr;
  for (size_t i = 0; i < t.nccl.size(); ++i) bytes_by_corr[t.nccl.correlation[i]] = t.nccl.bytes[i];
  EXPECT_EQ(bytes_by_corr.at(11), 1048576u);  // decoded, launch inside its range
  EXPECT_EQ(bytes_by_corr.at(12), 4096u);
  EXPECT_EQ(bytes_by_corr.at(13), 0u);  // header disagrees with the blob: not decoded
  EXPECT_EQ(bytes_by_corr.at(14), 0u);  // launched at ncclGroupEnd: no payload
  EXPECT_EQ(t.nccl.op[0], NcclOp::kAllReduce);
  EXPECT_EQ(rep.nvtx_payloads, 4u);  // ranges with binaryData
  EXPECT_EQ(rep.nccl_payloads, 2u);  // read as NCCL message sizes (domain "other" left out)
  EXPECT_EQ(rep.nccl_bytes_joined, 2u);
  EXPECT_TRUE(rep.table("NVTX_PAYLOAD_SCHEMA_ENTRIES")->present);
  EXPECT_EQ(rep.table("NVTX_PAYLOAD_SCHEMA_ENTRIES")->rows, 5u);
  // The ranges themselves stay NVTX ranges of domain NCCL.
  size_t ranges = 0;
  for (size_t i = 0; i < t.nvtx.size(); ++i) ranges += t.strings.view(t.nvtx.text[i]) == "ncclAllReduce";
  EXPECT_EQ(ranges, 4u);
}

TEST_F(NsysImporter, NcclPayloadWithoutSchemaTablesIsNotDecoded) {
  // The same blobs, but the export lacks the schema tables: no layout, no bytes.
  std::ifstream in(kFixtures / "nccl_payload.sql");
  std::string sql((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sql += ";DROP TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES;";
  NsysImportReport rep;
  auto traces = import_nsys_file(build("no_schema.sqlite", sql), &rep);
  ASSERT_EQ(traces.size(), 1u);
  for (uint64_t b : traces[0].nccl.bytes) EXPECT_EQ(b, 0u);
  EXPECT_EQ(rep.nvtx_payloads, 4u);
  EXPECT_EQ(rep.nccl_payloads, 0u);
}

TEST_F(NsysImporter, RowsOutOfStartOrderAreSortedWithTheirColumns) {
  const std::string sql = R"SQL(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'late'), (2, 'early'), (3, 'middle');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER, deviceId INTEGER,
      streamId INTEGER, demangledName INTEGER, gridX INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (300, 310, 281546145660928, 0, 7, 1, 3),
      (100, 110, 281546145660928, 0, 8, 2, 1), (200, 210, 281546145660928, 0, 9, 3, 2);)SQL";
  auto traces = import_nsys_file(build("unsorted.sqlite", sql));
  ASSERT_EQ(traces.size(), 1u);
  const KernelTable& k = traces[0].kernels;
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k.start, (std::vector<Timestamp>{100, 200, 300}));
  EXPECT_EQ(k.stream, (std::vector<uint32_t>{8, 9, 7}));
  EXPECT_EQ(k.grid_x, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(traces[0].strings.view(k.name[0]), "early");
  EXPECT_EQ(traces[0].strings.view(k.name[2]), "late");
}

TEST_F(NsysImporter, NamesAsText) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("names_text"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.strings.view(t.kernels.name[0]), "void relu_kernel<__half>(__half*)");
  EXPECT_EQ(t.strings.view(t.kernels.name[1]), "only_short_name");
  ASSERT_EQ(t.api.size(), 3u);
  EXPECT_EQ(count_name(t, t.api, "cudaLaunchKernel"), 2u);
  EXPECT_EQ(count_name(t, t.api, "cudaMemcpy"), 1u);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_FALSE(t.memcpys.is_async[0]);
  EXPECT_FALSE(rep.table("NVTX_EVENTS")->present);
  EXPECT_EQ(rep.table("NVTX_EVENTS")->mapped_to, "absent: the capture has no NVTX events");
  EXPECT_EQ(t.problems.get(Problem::kClockAnchorMissing), 1u);
}

TEST_F(NsysImporter, MissingKernelTableLeavesKernelsEmpty) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("no_kernels"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].kernels.size(), 0u);
  EXPECT_EQ(traces[0].api.size(), 3u);
  EXPECT_EQ(traces[0].nvtx.size(), 1u);
  const auto* k = rep.table("CUPTI_ACTIVITY_KIND_KERNEL");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->present);
  EXPECT_EQ(k->mapped_to, "absent: the capture has no CUDA kernels");
}

TEST_F(NsysImporter, SeveralProcessesBecomeOneTracePerRank) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("multi_process"), &rep);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].meta.rank, 0);
  EXPECT_EQ(traces[0].meta.pid, 5151u);
  EXPECT_EQ(traces[0].kernels.size(), 2u);
  EXPECT_EQ(traces[1].meta.rank, 1);
  EXPECT_EQ(traces[1].meta.pid, 4242u);
  EXPECT_EQ(traces[1].kernels.size(), 1u);
  // The host's environment names one rank; with two processes it is not used.
  EXPECT_EQ(traces[0].meta.extra.at("nsys.rank_source"), "NVTX thread name \"MPI Rank 0\"");
  EXPECT_EQ(rep.other_processes, 1u);  // the NVTX-only process
  ASSERT_EQ(rep.processes.size(), 2u);
  EXPECT_EQ(rep.processes[0].kernels, 2u);
}

TEST_F(NsysImporter, RankFromLauncherEnvironmentFirst) {
  auto traces = import_nsys_file(fixture("env_rank", "job_rank7.sqlite"));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].meta.rank, 3);
  EXPECT_EQ(traces[0].meta.local_rank, 1);
  EXPECT_EQ(traces[0].meta.world_size, 8);
  EXPECT_EQ(traces[0].meta.launcher, "mpi");
  EXPECT_EQ(traces[0].meta.extra.at("nsys.rank_source"), "launcher environment (OMPI_COMM_WORLD_RANK)");
}

TEST_F(NsysImporter, RankFromFileNameLast) {
  auto traces = import_nsys_file(fixture("names_text", "train_rank5.sqlite"));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].meta.rank, 5);
  EXPECT_EQ(traces[0].meta.extra.at("nsys.rank_source"), "file name");
}

TEST(NsysRankFromFileName, Forms) {
  EXPECT_EQ(rank_from_file_name("rank3.sqlite"), 3);
  EXPECT_EQ(rank_from_file_name("job_rank_12.sqlite"), 12);
  EXPECT_EQ(rank_from_file_name("Rank-4.nsys-rep.sqlite"), 4);
  EXPECT_EQ(rank_from_file_name("profile.7.sqlite"), 7);
  EXPECT_EQ(rank_from_file_name("profile_0.sqlite"), 0);
  EXPECT_EQ(rank_from_file_name("profile-15.sqlite"), 15);
  EXPECT_EQ(rank_from_file_name("report1.sqlite"), -1);
  EXPECT_EQ(rank_from_file_name("saxpy-mpi-cuda-a100.sqlite"), -1);
  EXPECT_EQ(rank_from_file_name("frank7.sqlite"), -1);
  EXPECT_EQ(rank_from_file_name("rankings.sqlite"), -1);
  EXPECT_EQ(rank_from_file_name("5.sqlite"), -1);
}

// ---- two connections: the API tables on a second thread ----------------------

// Every field of the report, one line each, for comparing two imports.
std::string report_text(const NsysImportReport& r) {
  std::string out = r.input + "|" + r.product_version + "|" + r.schema_version + "\n";
  for (const auto& t : r.tables)
    out += t.name + " " + std::to_string(t.present) + " " + std::to_string(t.rows) + " " + std::to_string(t.read) +
           " " + std::to_string(t.kept) + " " + std::to_string(t.dropped) + " " + t.mapped_to + "\n";
  for (const auto& p : r.processes)
    out += std::to_string(p.pid) + " " + p.name + " " + std::to_string(p.rank) + " " + p.rank_source + " " +
           std::to_string(p.kernels) + " " + std::to_string(p.memcpys) + " " + std::to_string(p.memsets) + " " +
           std::to_string(p.api) + " " + std::to_string(p.syncs) + " " + std::to_string(p.nvtx) + " " +
           std::to_string(p.nccl) + "\n";
  for (uint64_t v :
       {r.other_processes, r.runtime_calls,      r.driver_calls,      r.backtrace_rows,    r.other_class_rows,
        r.nvtx_ranges,     r.nvtx_marks,         r.nvtx_domain_rows,  r.nvtx_thread_names, r.nvtx_other,
        r.nvtx_payloads,   r.nccl_payloads,      r.nccl_bytes_joined, r.unclosed_ranges,   r.malformed,
        r.invalid_utf8,    r.gpu_metric_samples, r.cpu_samples,       r.sched_events,      r.osrt_calls,
        r.dropped})
    out += std::to_string(v) + " ";
  return out;
}

class NsysTwoConnections : public NsysImporter {
 protected:
  // Imports `file` with one connection and with the API tables read by a
  // second one; both must give the same report and the same trace files, byte
  // for byte (string ids included). Returns the one-connection report.
  NsysImportReport expect_same_both_ways(const fs::path& file) {
    NsysImportOptions one, two;
    one.parallel_min_api_rows = ~uint64_t{0};
    two.parallel_min_api_rows = 0;
    NsysImportReport a, b;
    const auto ta = import_nsys_file(file, &a, one);
    const auto tb = import_nsys_file(file, &b, two);
    EXPECT_EQ(report_text(a), report_text(b)) << file;
    EXPECT_EQ(a.connections, 1u);
    EXPECT_EQ(b.connections, 2u) << file;
    EXPECT_EQ(ta.size(), tb.size()) << file;
    for (size_t i = 0; i < std::min(ta.size(), tb.size()); ++i) {
      write_trace(dir_ / "one.sstrace", ta[i]);
      write_trace(dir_ / "two.sstrace", tb[i]);
      EXPECT_EQ(bytes_of(dir_ / "one.sstrace"), bytes_of(dir_ / "two.sstrace")) << file << " trace " << i;
      EXPECT_EQ(ta[i].api.size(), tb[i].api.size());
      EXPECT_EQ(ta[i].strings.size(), tb[i].strings.size());
    }
    return a;
  }
};

TEST_F(NsysTwoConnections, EveryFixtureAndTheRealExportImportTheSame) {
  for (const char* name : {"v2022_ids", "v2024_enums", "names_text", "no_kernels", "multi_process", "env_rank",
                           "invalid_utf8", "nccl_payload", "hostile_rows"})
    expect_same_both_ways(fixture(name));
  const NsysImportReport rep = expect_same_both_ways(kSaxpy);
  EXPECT_EQ(rep.rows("CUPTI_ACTIVITY_KIND_RUNTIME"), 95u);
  EXPECT_EQ(rep.runtime_calls, 56u);
}

TEST_F(NsysTwoConnections, SharedStringIdsAreLookedUpAndCountedOnce) {
  // The kernel table and the API tables share StringIds: an invalid UTF-8
  // name (id 1) and a missing id (99) used by both, in one process, must be
  // counted once, as one connection counts them; the API-only process 7 and
  // a driver table with names as text come through the second connection.
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER, correlationId INTEGER,"
      " demangledName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,"
      " correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER,"
      " name TEXT, returnValue INTEGER);"
      "INSERT INTO StringIds VALUES (1, CAST(X'6b65726e656cc3' AS TEXT)), (2, 'cudaLaunchKernel_v7000'),"
      " (3, 'zeta'), (4, 'alpha_v11');"
      // process 5 (pid key 1<<48 | 5<<24): kernels named 3, 1, 99
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 281475060596736, 1, 3), (300, 400, 281475060596736, 2, 1),"
      " (500, 600, 281475060596736, 3, 99);"
      // its calls: 2, then 1 and 99 (again), 4; a backtrace row (class 67); a row without an end
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (90, 95, 0, 281475060596741, 1, 2, 0),"
      " (290, 295, 0, 281475060596741, 2, 1, 0), (290, 295, 67, 281475060596741, 2, 1, 0),"
      " (490, 495, 0, 281475060596741, 3, 99, 0), (700, 710, 0, 281475060596741, 4, 4, 0),"
      " (800, NULL, 0, 281475060596741, 5, 2, 0),"
      // process 7: API calls only
      " (50, 60, 0, 281475094151175, 1, 4, 0), (70, 80, 0, 281475094151175, 2, 99, 0);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (91, 94, 281475060596741, 1, 'cuLaunchKernel', 0),"
      " (92, 93, 281475060596741, 9, CAST(X'63758080' AS TEXT), 1);";
  const NsysImportReport rep = expect_same_both_ways(build("shared_ids.sqlite", sql));
  // Invalid UTF-8: StringIds 1 once, the driver's text name once.
  EXPECT_EQ(rep.invalid_utf8, 2u);
  // Missing id 99: once in process 5 (kernel and call), once in process 7; the call without an end is left out.
  EXPECT_EQ(rep.malformed, 2u);
  EXPECT_EQ(rep.dropped, 1u);
  EXPECT_EQ(rep.runtime_calls, 6u);
  EXPECT_EQ(rep.driver_calls, 2u);
  EXPECT_EQ(rep.backtrace_rows, 1u);
  ASSERT_EQ(rep.processes.size(), 2u);
  EXPECT_EQ(rep.processes[0].api + rep.processes[1].api, 8u);
}

// ---- bad input: one-line errors or counted problems, never a crash ---------------

TEST_F(NsysImporter, SqliteButNotNsysIsAnError) {
  const std::string msg = error_of(fixture("not_nsys"));
  EXPECT_NE(msg.find("not_nsys.sqlite: an SQLite database but not an Nsight Systems export"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST_F(NsysImporter, NotSqliteIsAnError) {
  const fs::path p = dir_ / "x.sqlite";
  std::ofstream(p) << "{\"traceEvents\": []}";
  EXPECT_NE(error_of(p).find("x.sqlite: not an SQLite database"), std::string::npos) << error_of(p);
  const fs::path empty = dir_ / "empty.sqlite";
  std::ofstream(empty).flush();
  EXPECT_NE(error_of(empty).find("not an SQLite database"), std::string::npos);
  EXPECT_NE(error_of(dir_ / "missing.sqlite").find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(dir_).find("is a directory"), std::string::npos);
}

TEST_F(NsysImporter, TruncatedExportIsAnError) {
  const std::string bytes = bytes_of(kSaxpy);
  for (size_t keep : {size_t{100}, size_t{4096}, bytes.size() / 2, bytes.size() * 9 / 10}) {
    const fs::path p = dir_ / "cut.sqlite";
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(keep));
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("cut.sqlite: "), std::string::npos) << keep << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // The same through memory.
    EXPECT_THROW(import_nsys_bytes(std::string_view(bytes).substr(0, keep), "cut.sqlite"), Error) << keep;
  }
  // A cut inside the free pages at the end loses no row: it imports, and every row is there.
  NsysImportReport rep;
  auto traces = import_nsys_bytes(std::string_view(bytes).substr(0, bytes.size() - 1024), "cut.sqlite", &rep);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].kernels.size(), 5u);
  EXPECT_EQ(rep.rows("CUPTI_ACTIVITY_KIND_RUNTIME"), 95u);
  EXPECT_EQ(rep.cpu_samples, 5451u);
}

TEST_F(NsysImporter, CorruptPagesAreAnErrorOrCounted) {
  std::string bytes = bytes_of(kSaxpy);
  // Overwrite every 7th page (4 KiB) after the first with garbage.
  int errors = 0, imports = 0;
  for (size_t seed = 1; seed <= 4; ++seed) {
    std::string bad = bytes;
    for (size_t off = 4096 * seed; off + 4096 <= bad.size(); off += 4096 * 7)
      for (size_t i = 0; i < 4096; ++i) bad[off + i] = static_cast<char>((i * 131 + seed * 17) & 0xFF);
    try {
      auto t = import_nsys_bytes(bad, "corrupt.sqlite");
      ++imports;
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("corrupt.sqlite: "), std::string::npos) << e.what();
    }
    // The same file through one connection and through two (the API tables
    // on a second thread): the same one-line error, or the same import.
    const fs::path file = dir_ / "corrupt.sqlite";
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bad.data(), static_cast<std::streamsize>(bad.size()));
    std::string outcome[2];
    for (int two = 0; two < 2; ++two) {
      NsysImportOptions options;
      options.parallel_min_api_rows = two ? 0 : ~uint64_t{0};
      NsysImportReport rep;
      try {
        auto t = import_nsys_file(file, &rep, options);
        outcome[two] = "imported " + std::to_string(rep.runtime_calls) + " " + std::to_string(rep.malformed);
      } catch (const Error& e) {
        outcome[two] = e.what();
        EXPECT_NE(outcome[two].find(file.string() + ": "), std::string::npos) << outcome[two];
        EXPECT_EQ(outcome[two].find('\n'), std::string::npos) << outcome[two];
      }
    }
    EXPECT_EQ(outcome[0], outcome[1]) << seed;
  }
  EXPECT_EQ(errors + imports, 4);
  EXPECT_GT(errors, 0);
}

TEST_F(NsysImporter, InvalidUtf8IsRepairedAndCounted) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("invalid_utf8"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  EXPECT_EQ(rep.invalid_utf8, 3u);  // kernel\xC3, \x80abc, step\xC0\xAF; caf\xC3\xA9 is valid
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.strings.view(t.kernels.name[0]), "kernel\xEF\xBF\xBD");
  EXPECT_EQ(t.strings.view(t.kernels.name[1]), "caf\xC3\xA9");
  EXPECT_EQ(t.strings.view(t.kernels.name[2]),
            "\xEF\xBF\xBD"
            "abc");
  ASSERT_EQ(t.nvtx.size(), 1u);
  EXPECT_EQ(t.strings.view(t.nvtx.text[0]), "step\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(NsysImporter, OverlongStringsAreCutAndCounted) {
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER,"
      " demangledName INTEGER);"
      "INSERT INTO StringIds VALUES (1, 'k' || replace(hex(zeroblob(3000)), '0', 'x'));"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 281546145660928, 1);";
  NsysImportOptions options;
  options.max_string_bytes = 100;
  NsysImportReport rep;
  auto traces = import_nsys_file(build("long.sqlite", sql), &rep, options);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].strings.view(traces[0].kernels.name[0]).size(), 100u);
  EXPECT_EQ(rep.malformed, 1u);
}

TEST_F(NsysImporter, NoEventsIsAnError) {
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER);";
  const std::string msg = error_of(build("empty_capture.sqlite", sql));
  EXPECT_NE(msg.find("empty_capture.sqlite: the nsys export holds no CUDA or NVTX events"), std::string::npos) << msg;
}

// ---- rows the importer cannot read: counted, never dropped or misread silently ----

TEST_F(NsysImporter, HostileRowsAreLeftOutOrReadAsUnknownAndCounted) {
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("hostile_rows"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  // Kernels: a text start, an end with a fraction and a row of NULLs are left
  // out; the row with a text device and a 2^40 grid is kept with both unknown
  // (0); the one naming a string StringIds lacks is kept unnamed.
  const NsysImportReport::Table* kernels = rep.table("CUPTI_ACTIVITY_KIND_KERNEL");
  EXPECT_TRUE(kernels->read);
  EXPECT_EQ(kernels->rows, 6u);
  EXPECT_EQ(kernels->kept, 3u);
  EXPECT_EQ(kernels->dropped, 3u);
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.kernels.start[0], 1000);
  EXPECT_EQ(t.kernels.start[1], 4000);
  EXPECT_EQ(t.kernels.device[1], 0u);
  EXPECT_EQ(t.kernels.grid_x[1], 0u);
  EXPECT_EQ(t.kernels.start[2], 5000);
  EXPECT_EQ(t.kernels.name[2], kNoString);
  // The memset table has no `start` column: both rows are left out, and the
  // report says so instead of "memsets".
  const NsysImportReport::Table* memsets = rep.table("CUPTI_ACTIVITY_KIND_MEMSET");
  EXPECT_EQ(memsets->rows, 2u);
  EXPECT_EQ(memsets->kept, 0u);
  EXPECT_EQ(memsets->dropped, 2u);
  EXPECT_EQ(memsets->mapped_to, "not read: no `start` column (every row left out)");
  EXPECT_EQ(t.memsets.size(), 0u);
  // NVTX: a row without an event type and a mark with a text start are left out.
  EXPECT_EQ(rep.table("NVTX_EVENTS")->kept, 1u);
  EXPECT_EQ(rep.table("NVTX_EVENTS")->dropped, 2u);
  ASSERT_EQ(t.nvtx.size(), 1u);
  // The API call with a text return value is kept, its return value unknown.
  ASSERT_EQ(t.api.size(), 3u);
  EXPECT_EQ(t.api.return_code[1], 0);
  // 7 rows left out: data loss, in the trace (the NULL row's process is
  // unknown: it counts in every trace of the export).
  EXPECT_EQ(rep.dropped, 7u);
  EXPECT_EQ(t.problems.get(Problem::kIncompleteRecord), 7u);
  EXPECT_EQ(severity_of(Problem::kIncompleteRecord), Severity::kDataLoss);
  EXPECT_TRUE(t.problems.any_data_loss());
  // 3 values read as unknown: the kernel row with the text device and the
  // huge grid (one per row), the missing string id, the text return value.
  EXPECT_EQ(rep.malformed, 3u);
  EXPECT_EQ(t.problems.get(Problem::kMalformedEvent), 3u);
}

TEST_F(NsysImporter, TableWithoutStartColumnLosesItsRowsAsCountedDataLoss) {
  // Five kernels whose table has no `start` column: none is kept, the report
  // says 0 kept and 5 dropped, and the trace (from the API calls) carries the loss.
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INTEGER, end INTEGER, globalPid INTEGER, demangledName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,"
      " correlationId INTEGER, nameId INTEGER);"
      "INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel');"
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5)"
      " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 100 * i, 100 * i + 50, 281546145660928, 1 FROM n;"
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5)"
      " INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 100 * i - 10, 100 * i - 5, 0, 281546145665170, i, 2 FROM n;";
  NsysImportReport rep;
  auto traces = import_nsys_file(build("no_start.sqlite", sql), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const NsysImportReport::Table* kernels = rep.table("CUPTI_ACTIVITY_KIND_KERNEL");
  EXPECT_EQ(kernels->rows, 5u);
  EXPECT_EQ(kernels->kept, 0u);
  EXPECT_EQ(kernels->dropped, 5u);
  EXPECT_EQ(kernels->mapped_to, "not read: no `start` column (every row left out)");
  EXPECT_EQ(traces[0].kernels.size(), 0u);
  EXPECT_EQ(traces[0].api.size(), 5u);
  EXPECT_EQ(traces[0].problems.get(Problem::kIncompleteRecord), 5u);
  // Without the API calls the process still becomes a trace: its kernels were
  // CUDA activity, lost, and it says so.
  NsysImportReport alone;
  auto only_kernels = import_nsys_file(
      build("no_start_kernels_only.sqlite",
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INTEGER, end INTEGER, globalPid INTEGER);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 281546145660928), (3, 4, 281546145660928);"),
      &alone);
  ASSERT_EQ(only_kernels.size(), 1u);
  EXPECT_EQ(only_kernels[0].meta.pid, 4242u);
  EXPECT_EQ(only_kernels[0].problems.get(Problem::kIncompleteRecord), 2u);
}

TEST_F(NsysImporter, TextTimestampsAreLeftOutNotReadAsZero) {
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, globalPid INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 281546145660928), ('0x10', 300, 281546145660928),"
      " (400, 'later', 281546145660928), (500.0, 600, 281546145660928);";
  NsysImportReport rep;
  auto traces = import_nsys_file(build("text_times.sqlite", sql), &rep);
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = traces[0];
  ASSERT_EQ(t.kernels.size(), 2u);  // 100-200, and 500.0 (an integer stored as a real) - 600
  EXPECT_EQ(t.kernels.start[0], 100);
  EXPECT_EQ(t.kernels.start[1], 500);
  EXPECT_EQ(t.problems.get(Problem::kIncompleteRecord), 2u);
  EXPECT_EQ(rep.dropped, 2u);
}

TEST_F(NsysImporter, AllNullRowsAreCountedInEveryTrace) {
  // Rows of NULLs in the kernel and API tables: their process is unknown, so
  // each of the two traces counts the loss.
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, globalPid INTEGER, demangledName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,"
      " correlationId INTEGER, nameId INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 281546145660928, NULL), (NULL, NULL, NULL, NULL),"
      " (3, 4, 281546162438144, NULL);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (NULL, NULL, NULL, NULL, NULL, NULL);";
  NsysImportReport rep;
  auto traces = import_nsys_file(build("null_rows.sqlite", sql), &rep);
  ASSERT_EQ(traces.size(), 2u);
  for (const Trace& t : traces) {
    EXPECT_EQ(t.kernels.size(), 1u);
    EXPECT_EQ(t.problems.get(Problem::kIncompleteRecord), 2u) << t.meta.pid;
  }
  EXPECT_EQ(rep.dropped, 2u);
  EXPECT_EQ(rep.table("CUPTI_ACTIVITY_KIND_KERNEL")->dropped, 1u);
  EXPECT_EQ(rep.table("CUPTI_ACTIVITY_KIND_RUNTIME")->dropped, 1u);
}

TEST_F(NsysImporter, DanglingStringIdsAreCountedProblems) {
  // v2024_enums: kernel 3 names string 777, which StringIds lacks.
  NsysImportReport rep;
  auto traces = import_nsys_file(fixture("v2024_enums"), &rep);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(rep.malformed, 1u);
  EXPECT_EQ(traces[0].problems.get(Problem::kMalformedEvent), 1u);
  EXPECT_EQ(severity_of(Problem::kMalformedEvent), Severity::kError);
}

TEST_F(NsysImporter, WalModeAndHotJournalExportsRead) {
  // An export left in WAL mode (header bytes 18-19 = 2) reads as it is, from a
  // file and from memory, and nothing appears beside it.
  const fs::path wal_dir = dir_ / "wal";
  fs::create_directories(wal_dir);
  const fs::path wal = wal_dir / "wal.sqlite";
  fs::copy_file(fixture("v2022_ids"), wal);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(wal.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string wal_bytes = bytes_of(wal);
  ASSERT_EQ(wal_bytes[18], 2);
  NsysImportReport rep;
  auto traces = import_nsys_file(wal, &rep);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].kernels.size(), 4u);
  EXPECT_EQ(bytes_of(wal), wal_bytes);
  EXPECT_EQ(std::distance(fs::directory_iterator(wal_dir), fs::directory_iterator{}), 1);
  EXPECT_EQ(import_nsys_bytes(wal_bytes, "wal.sqlite").at(0).kernels.size(), 4u);

  EXPECT_EQ(detect_input(wal).kind, InputKind::kNsysSqlite);
  EXPECT_EQ(std::distance(fs::directory_iterator(wal_dir), fs::directory_iterator{}), 1);

  // A hot rollback journal beside the export (file and journal copied while a
  // writer's transaction had spilled pages into the file): read-only, the
  // export reads as its file holds it, and neither file changes.
  const fs::path hot_dir = dir_ / "hot";
  fs::create_directories(hot_dir);
  const fs::path hot = hot_dir / "hot.sqlite", writer = fixture("v2022_ids", "writer.sqlite");
  sqlite3* w = nullptr;
  ASSERT_EQ(sqlite3_open(writer.c_str(), &w), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(w,
                         "PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN;"
                         "CREATE TABLE filler (x);"
                         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)"
                         " INSERT INTO filler SELECT zeroblob(3000) FROM n;"
                         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = deviceId + 1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  fs::copy_file(writer, hot);
  fs::copy_file(writer.string() + "-journal", hot.string() + "-journal");
  sqlite3_exec(w, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(w);
  const std::string hot_bytes = bytes_of(hot), journal_bytes = bytes_of(hot.string() + "-journal");
  ASSERT_NE(journal_bytes[0], 0);  // a hot journal: its header was written
  EXPECT_EQ(detect_input(hot).kind, InputKind::kNsysSqlite);
  auto from_hot = import_nsys_file(hot);
  ASSERT_EQ(from_hot.size(), 1u);
  EXPECT_EQ(from_hot[0].kernels.size(), 4u);
  EXPECT_EQ(bytes_of(hot), hot_bytes);
  EXPECT_EQ(bytes_of(hot.string() + "-journal"), journal_bytes);
  EXPECT_EQ(std::distance(fs::directory_iterator(hot_dir), fs::directory_iterator{}), 2);
}

TEST_F(NsysImporter, WalWithPendingChangesIsRefused) {
  // A WAL-mode export copied with its -wal file while a writer had committed
  // to the log only: the file alone lacks those rows, and a read-only reader
  // cannot apply the log, so the import refuses with one line instead of
  // reading the file without them.
  const fs::path live = fixture("v2022_ids", "live.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(live.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                         "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const fs::path copy = dir_ / "copy" / "export.sqlite";
  fs::create_directories(copy.parent_path());
  fs::copy_file(live, copy);
  fs::copy_file(live.string() + "-wal", copy.string() + "-wal");
  sqlite3_close(db);
  const std::string msg = error_of(copy);
  EXPECT_NE(msg.find(copy.string() + ": its write-ahead log " + copy.string() + "-wal holds"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// ---- memory in proportion to rows ------------------------------------------------


// Bytes of address space this process holds now (/proc/self/statm, pages).
uint64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST_F(NsysImporter, ManyProcessesTakeMemoryInProportionToRows) {
  // 5,000 processes with one kernel and one launch call each, every kernel
  // named by its own string: reserving every table's rows in every process
  // took 5,000 x 5,000 rows (2.6 GB of address space). The import runs in a
  // child under an address-space limit of 512 MiB above what this test holds
  // (RLIMIT_AS counts room reserved, touched or not).
  if (kSanitized) GTEST_SKIP() << "the sanitizers reserve terabytes of address space";
  constexpr int kProcesses = 5000;
  const std::string n =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " + std::to_string(kProcesses) + ") ";
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
      " correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,"
      " correlationId INTEGER, nameId INTEGER, returnValue INTEGER);" +
      n + "INSERT INTO StringIds SELECT i, 'kernel_' || i FROM n;" +
      "INSERT INTO StringIds VALUES (1000000, 'cudaLaunchKernel_v7000');" + n +
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000 * i, 1000 * i + 500, 0, 7, 1, (1 << 48) | (i << 24), i "
      "FROM n;" +
      n +
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 1000 * i - 100, 1000 * i - 50, 0, (1 << 48) | (i << 24) | i, 1,"
      " 1000000, 0 FROM n;";
  const fs::path file = build("many_processes.sqlite", sql);
  const uint64_t limit = address_space_bytes() + (uint64_t{512} << 20);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    int code = 3;
    try {
      NsysImportReport rep;
      const std::vector<Trace> traces = import_nsys_file(file, &rep);
      code = traces.size() == kProcesses && traces.back().kernels.size() == 1 && traces.back().api.size() == 1 ? 0 : 2;
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the import was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: out of memory under the limit; 2: wrong traces";
}

TEST_F(NsysImporter, TheInputDetectorFindsEveryFixture) {
  // Every fixture variant is an nsys export to the one input detector; the rest is not.
  for (const char* name : {"v2022_ids", "v2024_enums", "names_text", "no_kernels", "multi_process", "env_rank",
                           "invalid_utf8", "hostile_rows"})
    EXPECT_EQ(detect_input(fixture(name)).kind, InputKind::kNsysSqlite) << name;
  EXPECT_EQ(detect_input(kSaxpy).kind, InputKind::kNsysSqlite);
  EXPECT_EQ(detect_input(fixture("not_nsys")).kind, InputKind::kSqliteDatabase);
  fs::remove(dir_ / "not_nsys.sqlite");
  const DetectedInput folder = detect_input(dir_);
  EXPECT_EQ(folder.kind, InputKind::kNsysDirectory);
  EXPECT_EQ(folder.files.size(), 8u);
}

}  // namespace
}  // namespace scalescope::trace
