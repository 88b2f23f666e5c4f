// nsys import throughput on a synthetic export: kernel rows per second, for
// the whole import (open, schema, every table, sort, build). The
// target: a 2 M-kernel export at >= 1 M kernel rows/s (wall time) on this machine.
//
// The export is generated once with SQLite in the schema of the real 2022.2
// export (../shared/data/nsys): N kernels with 200 distinct names, each with
// its cudaLaunchKernel call in CUPTI_ACTIVITY_KIND_RUNTIME (so the import
// reads 2 N activity rows), plus a memcpy and an NVTX range per 100 kernels.
//   nsys_importer_bench --benchmark_filter=2M/             (as import_nsys_file reads it)
//   nsys_importer_bench --benchmark_filter=2M_one_connection (one connection, for comparison)
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "trace/import/nsys_importer.hpp"

namespace {

namespace fs = std::filesystem;

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(msg);
  }
}

// Writes a synthetic export with `kernels` kernel rows (cached by size in the temp dir).
fs::path synthetic_export(int64_t kernels) {
  const fs::path path =
      fs::temp_directory_path() / fmt::format("scalescope_nsys_bench_{}_{}.sqlite", kernels, ::getuid());
  if (fs::exists(path)) return path;
  const fs::path tmp = path.string() + ".tmp";
  fs::remove(tmp);
  sqlite3* db = nullptr;
  sqlite3_open(tmp.c_str(), &db);
  exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;");
  exec(db, R"SQL(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
      demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
      cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
      gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
      staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
      localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
      sharedMemoryLimitConfig INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
      globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
      copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
      srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,
      virtualAddress INTEGER);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
      category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
    INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, NULL, NULL);
    INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020');)SQL");
  for (int i = 0; i < 200; ++i)
    exec(db, fmt::format("INSERT INTO StringIds VALUES ({}, 'void kernel_{}<float, 128>(float const*, float*, int)')",
                         100 + i, i));
  const int64_t pid = (int64_t{1} << 48) | (int64_t{4242} << 24), tid = pid | 4242;
  sqlite3_stmt *k = nullptr, *r = nullptr, *m = nullptr, *n = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 1, 7, ?3, ?4, ?5, ?5, NULL, 1, 0, 64, "
                     "128, 1, 1, 256, 1, 1, 0, 4096, 0, 0, ?3, 16384, NULL, 0)",
                     -1, &k, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, 1, 0, NULL)", -1, &r,
                     nullptr);
  sqlite3_prepare_v2(db,
                     "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, 0, 1, 7, ?3, ?4, 1048576, 1, NULL, 1, 2, "
                     "NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
                     -1, &m, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, NULL, NULL, NULL, 'step', ?3, NULL, NULL, 0)", -1,
                     &n, nullptr);
  auto run = [](sqlite3_stmt* s) {
    sqlite3_step(s);
    sqlite3_reset(s);
  };
  int64_t t = 1'000'000;
  for (int64_t i = 0; i < kernels; ++i) {
    const int64_t corr = 2 * i + 1;
    sqlite3_bind_int64(r, 1, t);
    sqlite3_bind_int64(r, 2, t + 3'000);
    sqlite3_bind_int64(r, 3, tid);
    sqlite3_bind_int64(r, 4, corr);
    run(r);
    sqlite3_bind_int64(k, 1, t + 5'000);
    sqlite3_bind_int64(k, 2, t + 5'000 + 20'000 + (i % 7) * 1'000);
    sqlite3_bind_int64(k, 3, corr);
    sqlite3_bind_int64(k, 4, pid);
    sqlite3_bind_int64(k, 5, 100 + (i * 7919) % 200);
    run(k);
    if (i % 100 == 0) {
      sqlite3_bind_int64(m, 1, t + 1'000);
      sqlite3_bind_int64(m, 2, t + 4'000);
      sqlite3_bind_int64(m, 3, corr + 1);
      sqlite3_bind_int64(m, 4, pid);
      run(m);
      sqlite3_bind_int64(n, 1, t);
      sqlite3_bind_int64(n, 2, t + 100 * 30'000);
      sqlite3_bind_int64(n, 3, tid);
      run(n);
    }
    t += 30'000;
  }
  sqlite3_finalize(k);
  sqlite3_finalize(r);
  sqlite3_finalize(m);
  sqlite3_finalize(n);
  exec(db, "COMMIT;");
  sqlite3_close(db);
  fs::rename(tmp, path);
  return path;
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_NsysImport(benchmark::State& state) {
  const fs::path path = synthetic_export(state.range(0));
  int64_t rows = 0;
  for (auto _ : state) {
    scalescope::trace::NsysImportReport rep;
    scalescope::trace::NsysImportOptions options;
    if (state.range(1) == 1) options.parallel_min_api_rows = ~uint64_t{0};
    auto traces = scalescope::trace::import_nsys_file(path, &rep, options);
    rows += static_cast<int64_t>(traces.at(0).kernels.size());
    benchmark::DoNotOptimize(traces);
  }
  state.counters["kernel_rows_per_s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(fs::file_size(path)) / 1e6;
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
// Second argument: connections (2: the API tables on a second thread, as
// import_nsys_file does for large files; 1: one connection reads all).
// Wall time is the issue's figure; CPU time is the process's (both threads).
BENCHMARK(BM_NsysImport)
    ->Args({200'000, 2})
    ->Name("BM_NsysImport/200k")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();
BENCHMARK(BM_NsysImport)
    ->Args({2'000'000, 2})
    ->Name("BM_NsysImport/2M")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Iterations(3);
BENCHMARK(BM_NsysImport)
    ->Args({2'000'000, 1})
    ->Name("BM_NsysImport/2M_one_connection")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
