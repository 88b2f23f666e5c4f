#include "trace/model/trace_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/tests/test_support.hpp"
#include "trace/model/trace_format.hpp"
#include "trace/import/run_loader.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

// A temporary folder named for these tests.
struct TempDir : trace::testing::TempDir {
  TempDir() : trace::testing::TempDir("sstrace-test") {}
};

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Trace read_bytes_as_trace(const std::vector<uint8_t>& bytes, const ReadOptions& options = {}) {
  return read_trace_from_memory(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), "mem",
                                options);
}

// Expects equal tables, comparing string columns by text.
template <typename Table>
void expect_same_table(const Table& a, const StringTable& sa, const Table& b, const StringTable& sb) {
  ASSERT_EQ(a.size(), b.size());
  std::vector<const void*> string_columns_a;
  format::for_each_string_column(a, [&](const std::vector<StringId>& c) { string_columns_a.push_back(&c); });
  format::for_each_column(a, [&](int id, const auto& col_a, format::Transform, const auto*) {
    format::for_each_column(b, [&](int idb, const auto& col_b, format::Transform, const auto*) {
      if constexpr (std::is_same_v<decltype(&col_a), decltype(&col_b)>) {
        if (id != idb) return;
        const bool is_string = std::find(string_columns_a.begin(), string_columns_a.end(),
                                         static_cast<const void*>(&col_a)) != string_columns_a.end();
        for (size_t i = 0; i < col_a.size(); ++i) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(col_a[0])>, StringId>) {
            if (is_string) {
              ASSERT_EQ(sa.view(col_a[i]), sb.view(col_b[i])) << "column " << id << " row " << i;
              continue;
            }
          }
          ASSERT_EQ(format::to_bits(col_a[i]), format::to_bits(col_b[i])) << "column " << id << " row " << i;
        }
      }
    });
  });
}

void expect_same_trace(const Trace& a, const Trace& b) {
  EXPECT_EQ(format::metadata_to_json(a.meta), format::metadata_to_json(b.meta));
  expect_same_table(a.kernels, a.strings, b.kernels, b.strings);
  expect_same_table(a.memcpys, a.strings, b.memcpys, b.strings);
  expect_same_table(a.memsets, a.strings, b.memsets, b.strings);
  expect_same_table(a.api, a.strings, b.api, b.strings);
  expect_same_table(a.syncs, a.strings, b.syncs, b.strings);
  expect_same_table(a.nvtx, a.strings, b.nvtx, b.strings);
  expect_same_table(a.nccl, a.strings, b.nccl, b.strings);
  expect_same_table(a.counters, a.strings, b.counters, b.strings);
}

// A trace that sets every field of every table, extremes included.
Trace make_full_trace() {
  Trace t = make_synthetic_trace(3000, 7);
  t.meta.extra["key"] = "value";
  t.meta.process_groups = {{"0", "default_pg", "cuda:nccl", {0, 1, 2, 3}}, {"1", "", "", {2, 3}}};
  t.meta.pages_at_end.push_back({3, 12345});
  t.meta.clock.push_back({t.meta.clock.front().trace_ns + 1'000'000'000, t.meta.clock.front().unix_ns + 999'999'000});
  constexpr auto kMax64 = std::numeric_limits<int64_t>::max();
  constexpr auto kMin64 = std::numeric_limits<int64_t>::min();
  KernelRecord k;
  k.start = kMin64;
  k.end = kMax64;
  k.device = 0xFFFFFFFF;
  k.stream = 3;
  k.name = t.strings.intern("edge kernel");
  k.grid_x = 1u << 31;
  k.grid_z = 9;
  k.block_y = 4;
  k.block_z = 2;
  k.shared_memory_bytes = 228 * 1024;
  k.correlation = 0xFFFFFFFF;
  t.kernels.push(k);
  MemcpyRecord c;
  c.start = -5;
  c.end = -1;
  c.kind = MemcpyKind::kPtoP;
  c.src_kind = MemoryKind::kDevice;
  c.dst_kind = MemoryKind::kManaged;
  c.is_async = false;
  c.peer_device = 7;
  c.bytes = std::numeric_limits<uint64_t>::max();
  t.memcpys.push(c);
  ApiRecord a;
  a.domain = ApiDomain::kDriver;
  a.callback_id = 999;
  a.return_code = -700;
  a.name = t.strings.intern("cuLaunchKernelEx");
  t.api.push(a);
  SyncRecord y;
  y.kind = SyncKind::kStreamWaitEvent;
  y.event = 0xDEADBEEFCAFEull;
  t.syncs.push(y);
  NvtxRecord n;
  n.kind = NvtxKind::kMark;
  n.device = 3;
  n.text = t.strings.intern("a mark \xF0\x9F\x9A\x80 with UTF-8 and \n newline");
  t.nvtx.push(n);
  NcclRecord r;
  r.op = NcclOp::kReduceScatter;
  r.sequence = -1;
  r.group_size = -1;
  r.datatype = t.strings.intern("BFloat16");
  t.nccl.push(r);
  for (int m = 0; m < kCounterMetricCount; ++m)
    t.counters.push({123 + m, 1, static_cast<CounterMetric>(m), m == 0 ? -0.0 : 1.0 / (m + 1)});
  t.counters.push({1, 1, CounterMetric::kPowerWatts, std::numeric_limits<double>::quiet_NaN()});
  t.problems.add(Problem::kDroppedRecords, 17);
  t.problems.add(Problem::kUnmatchedCorrelation, 3);
  return t;
}

TEST(TraceFile, RoundTripsEveryTableMetadataAndProblems) {
  TempDir dir;
  const Trace original = make_full_trace();
  ASSERT_GT(original.kernels.size(), 100u);
  ASSERT_GT(original.nccl.size(), 1u);
  write_trace(dir / "t.sstrace", original);
  const Trace back = read_trace(dir / "t.sstrace");
  expect_same_trace(original, back);
  EXPECT_EQ(back.problems.get(Problem::kDroppedRecords), 17u);
  EXPECT_EQ(back.problems.get(Problem::kUnmatchedCorrelation), 3u);
  EXPECT_EQ(back.problems.get(Problem::kTornTail), 0u);
  EXPECT_EQ(back.meta.extra.at("key"), "value");
  EXPECT_EQ(back.meta.process_groups, original.meta.process_groups);
}

// The column ids and transforms of every table as docs/trace-format.md gives
// them: the column lists may grow (new ids) but never renumber or re-encode.
TEST(TraceFile, ColumnIdsAndTransformsAreTheFormats) {
  std::map<format::ChunkType, std::string> schema;
  const Trace t;
  format::for_each_table(t, [&](format::ChunkType type, const auto& table) {
    std::string& s = schema[type];
    format::for_each_column(table, [&](int id, const auto&, format::Transform transform, const auto* start) {
      s += (s.empty() ? "" : " ") + std::to_string(id);
      if (transform == format::Transform::kDelta) s += "d";
      if (transform == format::Transform::kMinusStart) {
        bool of_start = false;
        if constexpr (requires { table.start; }) of_start = start == &table.start;
        s += of_start ? "s" : "?";
      }
    });
    std::string strings;
    format::for_each_string_column(table, [&](const std::vector<StringId>& c) {
      format::for_each_column(table, [&](int id, const auto& col, format::Transform, const auto*) {
        if (static_cast<const void*>(&col) == static_cast<const void*>(&c)) strings += " $" + std::to_string(id);
      });
    });
    s += strings;
  });
  using C = format::ChunkType;
  EXPECT_EQ(schema[C::kKernels], "1d 2s 3 4 5 6 7 8 9 10 11 12 13 14d $5");
  EXPECT_EQ(schema[C::kMemcpys], "1d 2s 3 4 5d 6 7 8 9 10 11");
  EXPECT_EQ(schema[C::kMemsets], "1d 2s 3 4 5d 6 7 8");
  EXPECT_EQ(schema[C::kApi], "1d 2s 3 4 5 6 7d 8 $6");
  EXPECT_EQ(schema[C::kSyncs], "1d 2s 3 4 5 6 7 8d");
  EXPECT_EQ(schema[C::kNvtx], "1d 2s 3 4 5 6 7 8 9 $4 $5");
  EXPECT_EQ(schema[C::kNccl], "1d 2s 3 4 5 6 7 8 9 10 11 12d 13 14d $8 $9 $10 $11");
  EXPECT_EQ(schema[C::kCounters], "1d 3 4 5");
  EXPECT_EQ(schema[C::kHostThreads], "1d 2s 3 4 5 6 7 8 $6");
  EXPECT_EQ(schema[C::kHostSamples], "1d 3 4 5 6 7 8 9 10");
  EXPECT_EQ(schema[C::kHostCallsites], "1d 3 4 5 6 7 $4 $5");
  EXPECT_EQ(schema[C::kHostStackSamples], "1d 3 4 5");
  EXPECT_EQ(schema[C::kHostModules], "1 3 4 5 6 7 $3 $4");
  EXPECT_EQ(schema.size(), 13u);
}

// Collector traces from before the decoder left them out can hold GPU rows
// that CUPTI handed over unfinished (timestamp 0). The reader drops and
// counts them in collector traces only; other producers' rows stay as written.
TEST(TraceFile, UnfinishedCollectorRowsAreDroppedAndCounted) {
  TempDir dir;
  Trace t;
  t.meta.source = "collector";
  auto kernel = [&](Timestamp start, Timestamp end) {
    KernelRecord k;
    k.start = start;
    k.end = end;
    k.correlation = static_cast<uint32_t>(t.kernels.size());
    t.kernels.push(k);
  };
  kernel(1'796'035'639'000'000'000, 1'796'035'639'000'001'000);
  kernel(0, 0);
  kernel(1'796'035'639'000'002'000, 0);
  kernel(1'796'035'639'000'003'000, 1'796'035'639'000'004'000);
  MemcpyRecord m;
  m.bytes = 64;
  t.memcpys.push(m);  // 0, 0
  NcclRecord n;
  n.start = 1'796'035'639'000'005'000;
  n.end = 1'796'035'639'000'004'000;  // ends before it starts
  t.nccl.push(n);
  write_trace(dir / "c.sstrace", t);
  const Trace back = read_trace(dir / "c.sstrace");
  ASSERT_EQ(back.kernels.size(), 2u);
  EXPECT_EQ(back.kernels.correlation[0], 0u);
  EXPECT_EQ(back.kernels.correlation[1], 3u);  // every column moved with its row
  EXPECT_EQ(back.kernels.end[1], 1'796'035'639'000'004'000);
  EXPECT_EQ(back.memcpys.size(), 0u);
  EXPECT_EQ(back.nccl.size(), 0u);
  EXPECT_EQ(back.problems.get(Problem::kIncompleteRecord), 4u);
  EXPECT_TRUE(back.problems.any_data_loss());
  const auto span = back.time_span();
  EXPECT_EQ(span.second - span.first, 4'000);  // not 1.8e18 ns

  t.meta.source = "kineto";
  write_trace(dir / "k.sstrace", t);
  const Trace other = read_trace(dir / "k.sstrace");
  EXPECT_EQ(other.kernels.size(), 4u);
  EXPECT_EQ(other.problems.get(Problem::kIncompleteRecord), 0u);
}

TEST(TraceFile, RoundTripsAcrossManySmallChunks) {
  TempDir dir;
  const Trace original = make_full_trace();
  WriterOptions options;
  options.max_rows_per_chunk = 97;  // chunk boundaries everywhere: deltas restart per chunk
  write_trace(dir / "t.sstrace", original, options);
  expect_same_trace(original, read_trace(dir / "t.sstrace"));
}

TEST(TraceFile, EmptyTraceRoundTrips) {
  TempDir dir;
  Trace empty;
  write_trace(dir / "e.sstrace", empty);
  const Trace back = read_trace(dir / "e.sstrace");
  EXPECT_EQ(back.event_count(), 0u);
  EXPECT_EQ(back.strings.size(), 1u);
}

TEST(TraceFile, IncrementalAppendsWithStringsAddedBetweenChunks) {
  TempDir dir;
  StringTable strings;  // the collector's: grows for the whole run
  Metadata meta;
  meta.hostname = "node-a";
  TraceWriter w = TraceWriter::open(dir / "inc.sstrace", meta);
  for (int batch = 0; batch < 5; ++batch) {
    Trace b;
    for (int i = 0; i < 10; ++i) {
      KernelRecord k;
      k.start = batch * 1000 + i * 10;
      k.end = k.start + 5;
      k.name = strings.intern("kernel_" + std::to_string(batch) + "_" + std::to_string(i % 3));
      k.correlation = static_cast<uint32_t>(batch * 10 + i);
      b.kernels.push(k);
    }
    ApiRecord a;
    a.name = strings.intern("api_" + std::to_string(batch));
    b.api.push(a);
    w.append(b, strings);
    EXPECT_EQ(w.strings_written(), strings.size());
    ProblemCounts p;
    p.add(Problem::kDroppedRecords, static_cast<uint64_t>(batch));
    w.write_problems(p);
  }
  meta.pages_at_end.push_back({0, 42});
  w.write_metadata(meta);
  w.close();

  const Trace t = read_trace(dir / "inc.sstrace");
  ASSERT_EQ(t.kernels.size(), 50u);
  ASSERT_EQ(t.api.size(), 5u);
  for (size_t i = 0; i < 50; ++i) {
    const int batch = static_cast<int>(i / 10), k = static_cast<int>(i % 10);
    EXPECT_EQ(t.strings.view(t.kernels.name[i]), "kernel_" + std::to_string(batch) + "_" + std::to_string(k % 3));
    EXPECT_EQ(t.kernels.start[i], batch * 1000 + k * 10);
    EXPECT_EQ(t.kernels.correlation[i], static_cast<uint32_t>(i));
  }
  EXPECT_EQ(t.strings.view(t.api.name[4]), "api_4");
  EXPECT_EQ(t.problems.get(Problem::kDroppedRecords), 4u);  // the last problems chunk wins
  ASSERT_EQ(t.meta.pages_at_end.size(), 1u);                // the last metadata chunk wins
  EXPECT_EQ(t.meta.pages_at_end[0].bytes, 42u);
  EXPECT_EQ(t.meta.hostname, "node-a");
}

// Writes a small file and returns the end offset of each chunk.
std::vector<uint64_t> write_small_file(const fs::path& path, Trace& reference) {
  std::vector<uint64_t> ends;
  StringTable strings;
  TraceWriter w = TraceWriter::open(path, Metadata{});
  ends.push_back(w.bytes_written());  // header + metadata
  for (int batch = 0; batch < 3; ++batch) {
    Trace b;
    for (int i = 0; i < 4; ++i) {
      KernelRecord k;
      k.start = batch * 100 + i;
      k.end = k.start + 3;
      k.name = strings.intern("k" + std::to_string(batch));
      b.kernels.push(k);
      reference.kernels.push(k);
    }
    w.append(b, strings);  // a string chunk, then a kernel chunk
    ends.push_back(w.bytes_written());
  }
  w.close();
  return ends;
}

TEST(TraceFile, TornTailAtEveryByteOffsetKeepsEveryCompleteChunk) {
  TempDir dir;
  Trace reference;
  const std::vector<uint64_t> batch_ends = write_small_file(dir / "small.sstrace", reference);
  const std::vector<uint8_t> full = read_bytes(dir / "small.sstrace");
  ASSERT_GT(full.size(), batch_ends.back());  // close() added the end record
  // Chunk boundaries: walk the chunk headers.
  std::vector<uint64_t> boundaries = {format::kFileHeaderSize};
  for (uint64_t pos = format::kFileHeaderSize; pos < full.size();) {
    pos += format::kChunkHeaderSize + format::get_u64(full.data() + pos + 8);
    boundaries.push_back(pos);
  }
  ASSERT_EQ(boundaries.back(), full.size());
  for (size_t len = 0; len <= full.size(); ++len) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    if (len < format::kFileHeaderSize) {
      EXPECT_THROW(read_bytes_as_trace(cut), Error) << len;
      continue;
    }
    const Trace t = read_bytes_as_trace(cut);
    const bool at_boundary = std::find(boundaries.begin(), boundaries.end(), len) != boundaries.end();
    EXPECT_EQ(t.problems.get(Problem::kTornTail), at_boundary ? 0u : 1u) << len;
    // Cut exactly at a chunk boundary: only the missing end record tells.
    EXPECT_EQ(t.problems.get(Problem::kEndMissing), at_boundary && len < full.size() ? 1u : 0u) << len;
    EXPECT_EQ(t.problems.any_data_loss(), len < full.size()) << len;
    size_t complete_batches = 0;
    for (size_t b = 1; b < batch_ends.size(); ++b) complete_batches += batch_ends[b] <= len;
    // A kernel chunk is the last of its batch, so kernels = 4 per complete batch.
    EXPECT_EQ(t.kernels.size(), 4 * complete_batches) << len;
    for (size_t i = 0; i < t.kernels.size(); ++i) {
      EXPECT_EQ(t.kernels.start[i], reference.kernels.start[i]);
      EXPECT_EQ(t.strings.view(t.kernels.name[i]), "k" + std::to_string(i / 4));
    }
  }
}

TEST(TraceFile, WriterKilledWithSigkillLeavesCompleteChunksReadable) {
  TempDir dir;
  const fs::path path = dir / "killed.sstrace";
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipefd[0]);
    StringTable strings;
    TraceWriter w = TraceWriter::open(path, Metadata{});
    for (uint32_t batch = 0;; ++batch) {
      Trace b;
      for (uint32_t i = 0; i < 1000; ++i) {
        KernelRecord k;
        k.start = batch * 100000 + i * 50;
        k.end = k.start + 20;
        k.correlation = batch * 1000 + i;
        k.name = strings.intern("kernel_" + std::to_string(i % 17));
        b.kernels.push(k);
      }
      w.append(b, strings);
      if (batch == 20) {
        const char c = 'x';
        if (::write(pipefd[1], &c, 1) != 1) ::_exit(2);
      }
    }
  }
  ::close(pipefd[1]);
  char c;
  ASSERT_EQ(::read(pipefd[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(pipefd[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  const Trace t = read_trace(path);
  ASSERT_GE(t.kernels.size(), 21000u);
  EXPECT_EQ(t.kernels.size() % 1000, 0u);  // whole batches only: one chunk each
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    ASSERT_EQ(t.kernels.correlation[i], i);
    ASSERT_EQ(t.strings.view(t.kernels.name[i]), "kernel_" + std::to_string(i % 1000 % 17));
  }
}

TEST(TraceFile, CorruptPayloadIsSkippedAndCounted) {
  TempDir dir;
  Trace reference;
  const auto ends = write_small_file(dir / "s.sstrace", reference);
  std::vector<uint8_t> bytes = read_bytes(dir / "s.sstrace");
  // The last byte of batch 1 belongs to its kernel chunk's payload.
  bytes[ends[2] - 1] ^= 0x40;
  const Trace t = read_bytes_as_trace(bytes);
  EXPECT_EQ(t.problems.get(Problem::kChecksumMismatch), 1u);
  EXPECT_EQ(t.kernels.size(), 8u);
  EXPECT_EQ(t.kernels.start[4], 200);  // batch 2 follows batch 0
  EXPECT_EQ(t.strings.view(t.kernels.name[4]), "k2");
}

TEST(TraceFile, CorruptChunkHeaderResynchronizesAtTheNextChunk) {
  TempDir dir;
  Trace reference;
  const auto ends = write_small_file(dir / "s.sstrace", reference);
  std::vector<uint8_t> bytes = read_bytes(dir / "s.sstrace");
  // Corrupt the stored_size of batch 1's string chunk (the first chunk after ends[1]).
  bytes[ends[1] + 8 + 3] = 0x7F;
  const Trace t = read_bytes_as_trace(bytes);
  EXPECT_EQ(t.problems.get(Problem::kChecksumMismatch), 1u);
  EXPECT_EQ(t.problems.get(Problem::kTornTail), 0u);
  // Batch 1's kernels survive but its string "k1" is lost: their names are empty.
  ASSERT_EQ(t.kernels.size(), 12u);
  EXPECT_EQ(t.strings.view(t.kernels.name[4]), "");
  EXPECT_EQ(t.strings.view(t.kernels.name[8]), "k2");
}

std::vector<uint8_t> file_header(uint16_t major, uint16_t minor) {
  std::vector<uint8_t> h(format::kFileHeaderSize);
  std::memcpy(h.data(), format::kMagic, 8);
  format::put_u16(h.data() + 8, major);
  format::put_u16(h.data() + 10, minor);
  return h;
}

// Appends a chunk with a valid header checksum; sizes may lie.
void append_chunk(std::vector<uint8_t>& out, uint16_t type, uint16_t codec, uint32_t records,
                  const std::vector<uint8_t>& payload, uint64_t stored_size, uint64_t raw_size) {
  uint8_t h[format::kChunkHeaderSize];
  format::put_u16(h, type);
  format::put_u16(h + 2, codec);
  format::put_u32(h + 4, records);
  format::put_u64(h + 8, stored_size);
  format::put_u64(h + 16, raw_size);
  format::put_u64(h + 24, XXH64(payload.data(), payload.size(), 0));
  format::put_u64(h + 32, XXH64(h, 32, 0));
  out.insert(out.end(), h, h + sizeof h);
  out.insert(out.end(), payload.begin(), payload.end());
}
void append_chunk(std::vector<uint8_t>& out, uint16_t type, uint32_t records, const std::vector<uint8_t>& payload) {
  append_chunk(out, type, 0, records, payload, payload.size(), payload.size());
}

std::string error_of(const std::vector<uint8_t>& bytes, const ReadOptions& options = {}) {
  try {
    read_bytes_as_trace(bytes, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TraceFile, ForeignAndWrongVersionFilesGiveDistinctErrors) {
  EXPECT_EQ(error_of({'{', '"', 'a', '"', ':', '1', '}', '\n', 0, 0, 0, 0, 0, 0, 0, 0, 0}),
            "mem: not a scalescope trace (bad magic)");
  EXPECT_EQ(error_of(file_header(2, 3)),
            "mem: format 2.3 is newer than this scalescope reads (1.x); upgrade scalescope");
  EXPECT_EQ(error_of(file_header(0, 9)),
            "mem: format 0.9 is older than this scalescope reads (1.x); re-create the trace");
  EXPECT_EQ(error_of({'S', 'S', 'T', 'R'}), "mem: truncated scalescope trace (4 bytes; the file header alone is 16)");
  EXPECT_EQ(error_of({}), "mem: empty file, not a scalescope trace");
  // A newer minor version is read.
  EXPECT_EQ(read_bytes_as_trace(file_header(1, 7)).event_count(), 0u);
  TempDir dir;
  EXPECT_THROW(read_trace(dir / "missing.sstrace"), Error);
  EXPECT_THROW(read_trace(dir.path()), Error);
  EXPECT_FALSE(is_trace_file(dir / "missing.sstrace"));
}

TEST(TraceFile, HostileSizesAreRefusedWithoutAllocating) {
  {  // A chunk claiming 1 TB.
    auto bytes = file_header(1, 0);
    append_chunk(bytes, 16, 0, 10, {}, uint64_t{1} << 40, uint64_t{1} << 40);
    const std::string e = error_of(bytes);
    EXPECT_NE(e.find("mem: chunk at offset 16 claims 1099511627776 bytes"), std::string::npos) << e;
  }
  {  // A string of 100 MB (a length that exceeds the cap and the data).
    auto bytes = file_header(1, 0);
    std::vector<uint8_t> p;
    format::put_varint(p, 1);
    format::put_varint(p, 1);
    format::put_varint(p, uint64_t{100} << 20);
    p.resize(p.size() + 1000, 'x');
    append_chunk(bytes, 1, 1, p);
    const Trace t = read_bytes_as_trace(bytes);
    EXPECT_EQ(t.problems.get(Problem::kCorruptChunk), 1u);
    EXPECT_EQ(t.strings.size(), 1u);
  }
  {  // A decompression bomb: 64 MiB of zeros in a frame that says so, header promises 100 bytes.
    std::vector<uint8_t> zeros(size_t{64} << 20, 0);
    std::vector<uint8_t> bomb(ZSTD_compressBound(zeros.size()));
    bomb.resize(ZSTD_compress(bomb.data(), bomb.size(), zeros.data(), zeros.size(), 3));
    auto bytes = file_header(1, 0);
    append_chunk(bytes, 16, 1, 1, bomb, bomb.size(), 100);
    EXPECT_EQ(read_bytes_as_trace(bytes).problems.get(Problem::kCorruptChunk), 1u);
    // Claiming the true size is refused too: 64 MiB is far more than one row needs.
    auto honest = file_header(1, 0);
    append_chunk(honest, 16, 1, 1, bomb, bomb.size(), zeros.size());
    EXPECT_EQ(read_bytes_as_trace(honest).problems.get(Problem::kCorruptChunk), 1u);
  }
  {  // Absurd record counts: more than a chunk may hold, and more memory than allowed.
    auto bytes = file_header(1, 0);
    append_chunk(bytes, 16, 0xFFFFFFFF, {0});
    EXPECT_EQ(read_bytes_as_trace(bytes).problems.get(Problem::kCorruptChunk), 1u);
    auto big = file_header(1, 0);
    std::vector<uint8_t> p;
    format::put_varint(p, 0);  // no columns: every column takes its default
    append_chunk(big, 16, format::kMaxRowsPerChunk, p);
    ReadOptions small;
    small.max_memory_bytes = uint64_t{64} << 20;
    const std::string e = error_of(big, small);
    EXPECT_NE(e.find("would take the trace past 64 MiB of memory"), std::string::npos) << e;
  }
  {  // A strings chunk whose first id would leave a gap of 4 billion ids.
    auto bytes = file_header(1, 0);
    std::vector<uint8_t> p;
    format::put_varint(p, (uint64_t{1} << 32) - 2);
    format::put_varint(p, 1);
    format::put_varint(p, 1);
    p.push_back('x');
    append_chunk(bytes, 1, 1, p);
    const Trace t = read_bytes_as_trace(bytes);
    EXPECT_EQ(t.problems.get(Problem::kCorruptChunk), 1u);
  }
  {  // A string-table chunk claiming 4 billion strings in 10 bytes.
    auto bytes = file_header(1, 0);
    std::vector<uint8_t> p(10, 0);
    append_chunk(bytes, 1, 0xFFFFFFFF, p);
    EXPECT_EQ(read_bytes_as_trace(bytes).problems.get(Problem::kCorruptChunk), 1u);
  }
}

TEST(TraceFile, UnknownChunksAndColumnsAreSkippedMissingColumnsDefault) {
  auto bytes = file_header(1, 4);
  append_chunk(bytes, 999, 3, {1, 2, 3});  // a chunk type from a newer minor version
  std::vector<uint8_t> p;
  format::put_varint(p, 2);
  format::put_varint(p, 1);  // start: constant 500
  std::vector<uint8_t> col = {static_cast<uint8_t>(format::Encoding::kConstant)};
  format::put_varint(col, 500);
  format::put_varint(p, col.size());
  p.insert(p.end(), col.begin(), col.end());
  format::put_varint(p, 40);  // a column id from the future, with an encoding we do not know
  format::put_varint(p, 3);
  p.insert(p.end(), {0xEE, 0xEE, 0xEE});
  append_chunk(bytes, static_cast<uint16_t>(format::ChunkType::kNvtx), 2, p);
  const Trace t = read_bytes_as_trace(bytes);
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 1u);
  ASSERT_EQ(t.nvtx.size(), 2u);
  EXPECT_EQ(t.nvtx.start[1], 1000);  // delta-coded: 500, 500+500
  EXPECT_EQ(t.nvtx.end[1], 0);       // end column absent: NvtxRecord's default
  EXPECT_EQ(t.nvtx.device[0], -1);   // NvtxRecord's default
  EXPECT_EQ(t.nvtx.text[0], kNoString);
}

TEST(TraceFile, NewCodecsAndEncodingsSkipTheChunkBadColumnsDropIt) {
  auto bytes = file_header(1, 2);
  auto column = [](std::vector<uint8_t>& p, uint64_t id, std::vector<uint8_t> col) {
    format::put_varint(p, id);
    format::put_varint(p, col.size());
    p.insert(p.end(), col.begin(), col.end());
  };
  const uint16_t kernels = static_cast<uint16_t>(format::ChunkType::kKernels);
  std::vector<uint8_t> good;
  format::put_varint(good, 1);
  column(good, 1, {0, 7});  // start: constant 7 (delta: 7, 14)
  append_chunk(bytes, kernels, 2, good);
  append_chunk(bytes, kernels, 9, 2, good, good.size(), good.size());  // codec 9: unknown
  std::vector<uint8_t> new_encoding;
  format::put_varint(new_encoding, 2);
  column(new_encoding, 1, {0, 7});
  column(new_encoding, 3, {5, 1, 2});  // device: encoding 5 does not exist in 1.0
  append_chunk(bytes, kernels, 2, new_encoding);
  std::vector<uint8_t> bad_width;  // start decodes, then stream's width 3 is invalid
  format::put_varint(bad_width, 2);
  column(bad_width, 1, {0, 7});
  column(bad_width, 4, {1, 3, 0, 1, 2, 3, 4, 5, 6});
  append_chunk(bytes, kernels, 2, bad_width);
  std::vector<uint8_t> short_column;  // packed width 2 but 3 bytes for 2 rows
  format::put_varint(short_column, 1);
  column(short_column, 1, {1, 2, 0, 1, 2, 3});
  append_chunk(bytes, kernels, 2, short_column);
  append_chunk(bytes, kernels, 2, good);
  const Trace t = read_bytes_as_trace(bytes);
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 2u);
  EXPECT_EQ(t.problems.get(Problem::kCorruptChunk), 2u);
  ASSERT_EQ(t.kernels.size(), 4u);  // the two good chunks; no rows left over from the bad ones
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t.kernels.start[i], i % 2 ? 14 : 7);
  EXPECT_EQ(t.kernels.stream.size(), 4u);
  EXPECT_EQ(t.kernels.device.size(), 4u);
}

TEST(TraceFile, StringIdsOutsideTheTableBecomeEmpty) {
  auto bytes = file_header(1, 0);
  std::vector<uint8_t> p;
  format::put_varint(p, 1);
  format::put_varint(p, 5);  // name column (kernels)
  std::vector<uint8_t> col = {static_cast<uint8_t>(format::Encoding::kConstant)};
  format::put_varint(col, 123456);
  format::put_varint(p, col.size());
  p.insert(p.end(), col.begin(), col.end());
  append_chunk(bytes, static_cast<uint16_t>(format::ChunkType::kKernels), 3, p);
  const Trace t = read_bytes_as_trace(bytes);
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.kernels.name[2], kNoString);
}

TEST(TraceFile, FullDiskIsAClearErrorNotACrash) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  try {
    TraceWriter::open("/dev/full", Metadata{});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: cannot write trace chunk: No space left on device");
  }
  std::string error;
  EXPECT_EQ(TraceWriter::try_open("/dev/full", Metadata{}, {}, &error), nullptr);
  EXPECT_NE(error.find("No space left on device"), std::string::npos);
  EXPECT_EQ(TraceWriter::try_open("/nonexistent-dir/x.sstrace", Metadata{}, {}, &error), nullptr);
  EXPECT_EQ(error, "/nonexistent-dir/x.sstrace: cannot create trace file: No such file or directory");
}

TEST(TraceFile, FailedWriteMidChunkIsRolledBackAndWriterGoesOn) {
  TempDir dir;
  StringTable strings;
  TraceWriter w = TraceWriter::open(dir / "f.sstrace", Metadata{});
  auto batch = [&](int n) {
    Trace b;
    for (int i = 0; i < 100; ++i) {
      KernelRecord k;
      k.start = n * 1000 + i;
      k.name = strings.intern("k" + std::to_string(n));
      b.kernels.push(k);
    }
    return b;
  };
  ASSERT_TRUE(w.try_append(batch(0), strings));
  const uint64_t good = w.bytes_written();
  w.inject_write_failure(1, ENOSPC);  // batch 1: the string chunk is written, its kernel chunk fails halfway
  EXPECT_FALSE(w.try_append(batch(1), strings));
  EXPECT_NE(w.last_error().find("No space left on device"), std::string::npos) << w.last_error();
  EXPECT_GT(w.bytes_written(), good);                              // the string chunk stayed
  EXPECT_EQ(fs::file_size(dir / "f.sstrace"), w.bytes_written());  // the half chunk did not
  ASSERT_TRUE(w.try_append(batch(2), strings)) << w.last_error();
  ASSERT_TRUE(w.try_close());
  const Trace t = read_trace(dir / "f.sstrace");
  EXPECT_EQ(t.problems.get(Problem::kTornTail), 0u);
  ASSERT_EQ(t.kernels.size(), 200u);
  EXPECT_EQ(t.strings.view(t.kernels.name[150]), "k2");
}

// The golden file of format 1.0: make_synthetic_trace(2000, 42) with one
// dropped-records problem, written by the first 1.0 writer. Every later
// version must read it exactly. Regenerate only for a new format version
// (SCALESCOPE_WRITE_GOLDEN=1), never to make this test pass.
TEST(TraceFile, ReadsGoldenVersion1_0File) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.0.sstrace";
  if (std::getenv("SCALESCOPE_WRITE_GOLDEN")) {
    Trace t = make_synthetic_trace(2000, 42);
    t.problems.add(Problem::kDroppedRecords, 5);
    WriterOptions o;
    o.max_rows_per_chunk = 500;  // several chunks per table
    write_trace(golden, t, o);
  }
  const Trace t = read_trace(golden);
  EXPECT_EQ(t.kernels.size(), 1440u);
  EXPECT_EQ(t.api.size(), 1449u);
  EXPECT_EQ(t.memcpys.size(), 3u);
  EXPECT_EQ(t.memsets.size(), 3u);
  EXPECT_EQ(t.syncs.size(), 3u);
  EXPECT_EQ(t.nvtx.size(), 12u);
  EXPECT_EQ(t.nccl.size(), 12u);
  EXPECT_EQ(t.counters.size(), 18u);
  EXPECT_EQ(t.problems.get(Problem::kDroppedRecords), 5u);
  EXPECT_EQ(t.meta.hostname, "synthetic-node-0");
  EXPECT_EQ(t.meta.devices.at(0).name, "NVIDIA H200");
  EXPECT_EQ(t.strings.view(t.nvtx.text.back()), "ProfilerStep#2");
  EXPECT_EQ(t.strings.view(t.nccl.algorithm[0]), "RING");
  EXPECT_EQ(t.strings.size(), 33u);
  EXPECT_EQ(t.kernels.start[0], 1700000000001520150);
  EXPECT_EQ(t.kernels.end[0], 1700000000001540484);
  int64_t duration = 0;
  uint64_t grid = 0;
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    duration += t.kernels.end[i] - t.kernels.start[i];
    grid += t.kernels.grid_x[i];
  }
  EXPECT_EQ(duration, 107616853);
  EXPECT_EQ(grid, 785520u);
  EXPECT_EQ(t.kernels.correlation.back(), 1448u);
  EXPECT_EQ(t.api.correlation.back(), 1449u);
  EXPECT_EQ(t.nccl.bytes[0], 26214400u);
  EXPECT_EQ(t.nccl.sequence.back(), 11);
  EXPECT_EQ(t.counters.value[2], 677.48402800488327);
  EXPECT_EQ(t.memcpys.bytes[0], 77070336u);
  EXPECT_EQ(t.strings.view(t.kernels.name[5]).substr(0, 44), "void at::native::vectorized_elementwise_kern");
  for (uint32_t link : t.nvtx.link) EXPECT_EQ(link, 0u);  // a 1.0 file has no link column: the default
}

// The golden file of format 1.1 (the nvtx link column and the end record):
// the 1.0 content plus links on two pairs of NVTX rows. Regenerate only for a new format version
// (SCALESCOPE_WRITE_GOLDEN=1), never to make this test pass.
TEST(TraceFile, ReadsGoldenVersion1_1File) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.1.sstrace";
  if (std::getenv("SCALESCOPE_WRITE_GOLDEN")) {
    Trace t = make_synthetic_trace(2000, 42);
    t.problems.add(Problem::kDroppedRecords, 5);
    t.nvtx.link[1] = 1;
    t.nvtx.link[5] = 1;
    t.nvtx.link[6] = 70000;
    t.nvtx.link[9] = 70000;
    WriterOptions o;
    o.max_rows_per_chunk = 500;
    write_trace(golden, t, o);
  }
  std::ifstream in(golden, std::ios::binary);
  char header[12] = {};
  in.read(header, sizeof header);
  EXPECT_EQ(header[8], 1);   // major
  EXPECT_EQ(header[10], 1);  // minor
  const Trace t = read_trace(golden);
  EXPECT_EQ(t.kernels.size(), 1440u);
  EXPECT_EQ(t.api.size(), 1449u);
  ASSERT_EQ(t.nvtx.size(), 12u);
  EXPECT_EQ(t.problems.get(Problem::kDroppedRecords), 5u);
  EXPECT_EQ(t.strings.view(t.nvtx.text.back()), "ProfilerStep#2");
  const std::vector<uint32_t> want = {0, 1, 0, 0, 0, 1, 70000, 0, 0, 70000, 0, 0};
  EXPECT_EQ(t.nvtx.link, want);
}

// A file cut exactly where a chunk ends reads as torn, never as complete; a
// writer destroyed without close() (an exception, a kill) vouches for nothing.
TEST(TraceFile, CutAtAChunkBoundaryIsTornNotComplete) {
  TempDir dir;
  Trace t = make_synthetic_trace(3000, 7);
  WriterOptions o;
  o.max_rows_per_chunk = 400;
  write_trace(dir / "full.sstrace", t, o);
  const std::vector<uint8_t> full = read_bytes(dir / "full.sstrace");
  const Trace whole = read_bytes_as_trace(full);
  EXPECT_FALSE(whole.problems.any_data_loss());
  EXPECT_EQ(whole.problems.get(Problem::kEndMissing), 0u);
  EXPECT_EQ(whole.problems.get(Problem::kEndNotRecorded), 0u);
  // Drop the end record and the last chunks: every complete chunk left is read,
  // and the loss is reported.
  std::vector<uint64_t> starts;
  for (uint64_t pos = format::kFileHeaderSize; pos < full.size();) {
    starts.push_back(pos);
    pos += format::kChunkHeaderSize + format::get_u64(full.data() + pos + 8);
  }
  ASSERT_GT(starts.size(), 6u);
  for (size_t drop = 1; drop <= 4; ++drop) {
    const uint64_t len = starts[starts.size() - drop];
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    const Trace c = read_bytes_as_trace(cut);
    EXPECT_EQ(c.problems.get(Problem::kTornTail), 0u) << drop;
    EXPECT_EQ(c.problems.get(Problem::kEndMissing), 1u) << drop;
    EXPECT_TRUE(c.problems.any_data_loss()) << drop;
  }
  EXPECT_NE(describe(Problem::kEndMissing).find("torn"), std::string_view::npos);
  {
    TraceWriter w = TraceWriter::open(dir / "unclosed.sstrace", t.meta);
    w.append(t);
  }  // destroyed without close()
  const Trace u = read_trace(dir / "unclosed.sstrace");
  EXPECT_EQ(u.kernels.size(), t.kernels.size());
  EXPECT_EQ(u.problems.get(Problem::kEndMissing), 1u);
  // The collector's non-throwing close writes the end record too.
  {
    std::string err;
    auto w = TraceWriter::try_open(dir / "collector.sstrace", t.meta, {}, &err);
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->try_append(t, t.strings));
    ASSERT_TRUE(w->try_close());
  }
  EXPECT_EQ(read_trace(dir / "collector.sstrace").problems.get(Problem::kEndMissing), 0u);
}

// The golden file of format 1.1 also carries the end record (written by the
// generator of ReadsGoldenVersion1_1File above, the first 1.1 writer).
TEST(TraceFile, ReadsGoldenVersion1_1FileAndOldFilesSayEndNotRecorded) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.1.sstrace";
  const std::vector<uint8_t> bytes = read_bytes(golden);
  ASSERT_GT(bytes.size(), 16u);
  EXPECT_EQ(format::get_u16(bytes.data() + 10), 1u);  // minor version 1
  const Trace t = read_trace(golden);
  EXPECT_EQ(t.kernels.size(), 1440u);
  EXPECT_EQ(t.nccl.size(), 12u);
  EXPECT_EQ(t.problems.get(Problem::kDroppedRecords), 5u);
  EXPECT_EQ(t.problems.get(Problem::kEndMissing), 0u);
  EXPECT_EQ(t.problems.get(Problem::kEndNotRecorded), 0u);
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 0u);
  // A 1.0 file cannot say whether it is complete: info, not data loss.
  const Trace old = read_trace(fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.0.sstrace");
  EXPECT_EQ(old.problems.get(Problem::kEndNotRecorded), 1u);
  EXPECT_EQ(old.problems.get(Problem::kEndMissing), 0u);
  EXPECT_EQ(severity_of(Problem::kEndNotRecorded), Severity::kInfo);
}

// Run directories: complete with a manifest, data loss without a file it lists,
// info without any manifest (older builds), an error for two traces of one rank.
TEST(RunLoader, ManifestTellsCompleteFromIncompleteRunDirectories) {
  TempDir dir;
  const fs::path run = dir / "job.ssrun";
  fs::create_directories(run);
  std::vector<std::string> names;
  for (int rank : {0, 1, 2}) {
    SyntheticOptions o;
    o.events = 500;
    o.rank = rank;
    o.seed = static_cast<uint64_t>(rank + 3);
    names.push_back("rank" + std::to_string(rank) + ".sstrace");
    write_trace(run / names.back(), make_synthetic_trace(o));
  }
  // No manifest: an older build's directory. Counted as info, no warning.
  std::vector<std::string> warnings;
  LoadOptions options;
  options.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  auto traces = load_run(run, options);
  ASSERT_EQ(traces.size(), 3u);
  EXPECT_EQ(traces[0].problems.get(Problem::kRunNoManifest), 1u);
  EXPECT_FALSE(traces[0].problems.any_data_loss());
  EXPECT_TRUE(warnings.empty());

  write_run_manifest(run, names, "node-a");
  ASSERT_TRUE(fs::exists(run / "manifest-node-a.json"));
  traces = load_run(run, options);
  for (const Trace& t : traces) EXPECT_FALSE(t.problems.any_data_loss());
  EXPECT_EQ(traces[0].problems.get(Problem::kRunNoManifest), 0u);
  EXPECT_TRUE(warnings.empty());

  // A rank file cut short (disk full during import): data loss, named.
  const auto full = read_bytes(run / "rank1.sstrace");
  write_bytes(run / "rank1.sstrace",
              std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2)));
  traces = load_run(run, options);
  EXPECT_EQ(traces[0].problems.get(Problem::kRunIncomplete), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rank1.sstrace"), std::string::npos) << warnings[0];
  // A rank file gone: data loss, named.
  fs::remove(run / "rank1.sstrace");
  warnings.clear();
  traces = load_run(run, options);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].problems.get(Problem::kRunIncomplete), 1u);
  EXPECT_TRUE(traces[0].problems.any_data_loss());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("missing (rank1.sstrace)"), std::string::npos) << warnings[0];
  // A file no manifest lists (another writer that did not finish): data loss.
  write_bytes(run / "rank1.sstrace", full);
  SyntheticOptions o;
  o.events = 300;
  o.rank = 3;
  write_trace(run / "rank3.sstrace", make_synthetic_trace(o));
  warnings.clear();
  traces = load_run(run, options);
  EXPECT_EQ(traces[0].problems.get(Problem::kRunIncomplete), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rank3.sstrace"), std::string::npos) << warnings[0];
  // Two traces of one rank: an error naming both files.
  o.rank = 2;
  o.seed = 99;
  Trace dup = make_synthetic_trace(o);
  dup.meta.pid = traces[2].meta.pid + 1;  // another process claiming rank 2
  write_trace(run / "rank3.sstrace", dup);
  try {
    load_run(run, options);
    ADD_FAILURE() << "no error for a duplicate rank";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank2.sstrace"), std::string::npos) << what;
    EXPECT_NE(what.find("rank3.sstrace"), std::string::npos) << what;
    EXPECT_NE(what.find("both hold rank 2"), std::string::npos) << what;
  }
}

TEST(RunLoader, LoadsARunDirectoryInParallelOrderedByRank) {
  TempDir dir;
  const fs::path run = dir / "job.ssrun";
  fs::create_directories(run);
  const int ranks[] = {3, 1, -1, 0, 2};
  for (int rank : ranks) {
    SyntheticOptions o;
    o.events = 2000;
    o.rank = rank;
    o.seed = static_cast<uint64_t>(rank + 10);
    Trace t = make_synthetic_trace(o);
    write_trace(run / ("host-" + std::to_string(1000 - rank) + ".sstrace"), t);
  }
  std::ofstream(run / "run.json") << "{}";
  LoadOptions options;
  options.threads = 3;
  const std::vector<Trace> traces = load_run(run, options);
  ASSERT_EQ(traces.size(), 5u);
  EXPECT_EQ(traces[0].meta.rank, 0);
  EXPECT_EQ(traces[1].meta.rank, 1);
  EXPECT_EQ(traces[2].meta.rank, 2);
  EXPECT_EQ(traces[3].meta.rank, 3);
  EXPECT_EQ(traces[4].meta.rank, -1);  // unknown rank last
  for (const Trace& t : traces) EXPECT_GT(t.kernels.size(), 500u);
  EXPECT_EQ(list_run_files(run).size(), 5u);

  // A single file is a run of one.
  EXPECT_EQ(load_run(run / "host-1000.sstrace").at(0).meta.rank, 0);

  // A damaged file: the error names it.
  write_bytes(run / "host-bad.sstrace", {'n', 'o', 'p', 'e', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  try {
    load_run(run, options);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (run / "host-bad.sstrace").string() + ": not a scalescope trace (bad magic)");
  }
  fs::create_directories(dir / "empty.ssrun");
  EXPECT_THROW(load_run(dir / "empty.ssrun"), Error);
  EXPECT_THROW(load_run(dir / "missing.ssrun"), Error);
}

TEST(SyntheticTrace, IsDeterministicAndRealistic) {
  const Trace a = make_synthetic_trace(50'000, 3);
  const Trace b = make_synthetic_trace(50'000, 3);
  EXPECT_GE(a.event_count(), 50'000u);
  EXPECT_EQ(a.kernels.start, b.kernels.start);
  EXPECT_EQ(a.api.correlation.size(), b.api.correlation.size());
  // Every kernel has an API call of the same correlation id that starts before it.
  std::unordered_map<uint32_t, Timestamp> launches;
  for (size_t i = 0; i < a.api.size(); ++i) launches[a.api.correlation[i]] = a.api.start[i];
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    ASSERT_TRUE(launches.count(a.kernels.correlation[i]));
    ASSERT_LT(launches[a.kernels.correlation[i]], a.kernels.start[i]);
    ASSERT_LT(a.kernels.start[i], a.kernels.end[i]);
  }
  EXPECT_GT(a.nccl.size(), 0u);
  EXPECT_EQ(a.strings.view(a.nvtx.text.back()).substr(0, 12), "ProfilerStep");
}

// Host thread tables (format 1.2): a trace with the host sampler's two
// tables, every thread state and both roles, round-trips exactly.
Trace with_host_tables() {
  Trace t = make_synthetic_trace(2000, 42);
  t.problems.add(Problem::kDroppedRecords, 5);
  const StringId main_name = t.strings.intern("python");
  const StringId worker_name = t.strings.intern("pt_data_worker");
  t.host_threads.push({1000, 9000, 700, 700, 1, main_name, 1, ProcessRole::kTraced});
  t.host_threads.push({2000, 5000, 811, 811, 700, worker_name, 1, ProcessRole::kDescendant});
  for (int i = 0; i < 40; ++i) {
    const auto state = static_cast<ThreadState>(i % kThreadStateCount);
    t.host_samples.push({1000 + 200 * i, 700, 700, state, i % 16, uint64_t(i) * 1000003, uint64_t(i % 3) * 7777,
                         uint32_t(i % 5), uint32_t(i % 2)});
    if (i % 4 == 0) t.host_samples.push({1000 + 200 * i, 811, 811, ThreadState::kSleeping, -1, 0, 0, 1, 0});
  }
  return t;
}

TEST(TraceFile, HostThreadTablesRoundTrip) {
  TempDir dir;
  const Trace t = with_host_tables();
  WriterOptions o;
  o.max_rows_per_chunk = 7;  // several chunks
  write_trace(dir / "h.sstrace", t, o);
  const Trace r = read_trace(dir / "h.sstrace");
  ASSERT_EQ(r.host_threads.size(), 2u);
  ASSERT_EQ(r.host_samples.size(), t.host_samples.size());
  for (size_t i = 0; i < t.host_samples.size(); ++i) {
    const HostSampleRecord a = t.host_samples.row(i), b = r.host_samples.row(i);
    EXPECT_EQ(a.time, b.time);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.tid, b.tid);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.cpu, b.cpu);
    EXPECT_EQ(a.cpu_ns, b.cpu_ns);
    EXPECT_EQ(a.run_wait_ns, b.run_wait_ns);
    EXPECT_EQ(a.voluntary_switches, b.voluntary_switches);
    EXPECT_EQ(a.involuntary_switches, b.involuntary_switches);
  }
  EXPECT_EQ(r.strings.view(r.host_threads.name[1]), "pt_data_worker");
  EXPECT_EQ(r.host_threads.role[1], ProcessRole::kDescendant);
  EXPECT_EQ(r.host_threads.parent_pid[1], 700u);
  EXPECT_EQ(r.host_threads.end[0], 9000);
  EXPECT_EQ(r.problems.get(Problem::kUnknownChunk), 0u);
  EXPECT_EQ(thread_state_from_letter('R'), ThreadState::kRunning);
  EXPECT_EQ(thread_state_from_letter('D'), ThreadState::kDiskWait);
  EXPECT_EQ(thread_state_from_letter('t'), ThreadState::kStopped);
  EXPECT_EQ(thread_state_from_letter('W'), ThreadState::kOther);
}

// The golden file of format 1.2 (host thread tables): the 1.1 content
// without links plus with_host_tables(). Regenerate only for a new format
// version (SCALESCOPE_WRITE_GOLDEN=1), never to make this test pass. Older
// goldens read with empty host tables.
TEST(TraceFile, ReadsGoldenVersion1_2File) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.2.sstrace";
  if (std::getenv("SCALESCOPE_WRITE_GOLDEN")) {
    WriterOptions o;
    o.max_rows_per_chunk = 500;
    write_trace(golden, with_host_tables(), o);
  }
  const std::vector<uint8_t> bytes = read_bytes(golden);
  ASSERT_GT(bytes.size(), 16u);
  EXPECT_EQ(format::get_u16(bytes.data() + 10), 2u);  // minor version 2
  const Trace t = read_trace(golden);
  EXPECT_EQ(t.kernels.size(), 1440u);
  EXPECT_EQ(t.host_threads.size(), 2u);
  EXPECT_EQ(t.host_samples.size(), 50u);
  EXPECT_EQ(t.host_samples.cpu_ns[39 + 10], 39u * 1000003);
  EXPECT_EQ(t.host_samples.state[5], ThreadState::kStopped);
  EXPECT_EQ(t.strings.view(t.host_threads.name[0]), "python");
  EXPECT_EQ(t.problems.get(Problem::kEndMissing), 0u);
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 0u);
  const Trace old = read_trace(fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.1.sstrace");
  EXPECT_EQ(old.host_threads.size(), 0u);
  EXPECT_EQ(old.host_samples.size(), 0u);
}

// Native call stack tables (format 1.3): a prefix tree of callsites and the
// samples that point at its leaves round-trip exactly, across chunks.
Trace with_stack_tables() {
  Trace t = with_host_tables();
  const StringId main_fn = t.strings.intern("main");
  const StringId step = t.strings.intern("train_step(int)");
  const StringId exe = t.strings.intern("/usr/bin/python3.12");
  const StringId anon = t.strings.intern("[anon]");
  t.host_callsites.push({1, 0, main_fn, exe, 0x1040});
  t.host_callsites.push({2, 1, step, exe, 0x2230});
  t.host_callsites.push({3, 1, kNoString, anon, 0x7f0012345678});
  for (int i = 0; i < 30; ++i)
    t.host_stack_samples.push({5000 + 10000 * i, 700, i % 3 == 0 ? 700u : 701u, uint32_t(1 + i % 3)});
  return t;
}

TEST(TraceFile, HostStackTablesRoundTrip) {
  TempDir dir;
  const Trace t = with_stack_tables();
  WriterOptions o;
  o.max_rows_per_chunk = 4;
  write_trace(dir / "s.sstrace", t, o);
  const Trace r = read_trace(dir / "s.sstrace");
  ASSERT_EQ(r.host_callsites.size(), 3u);
  ASSERT_EQ(r.host_stack_samples.size(), 30u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.host_callsites.id[i], t.host_callsites.id[i]);
    EXPECT_EQ(r.host_callsites.parent[i], t.host_callsites.parent[i]);
    EXPECT_EQ(r.host_callsites.address[i], t.host_callsites.address[i]);
  }
  EXPECT_EQ(r.strings.view(r.host_callsites.function[1]), "train_step(int)");
  EXPECT_EQ(r.strings.view(r.host_callsites.module[2]), "[anon]");
  EXPECT_EQ(r.strings.view(r.host_callsites.function[2]), "");
  for (size_t i = 0; i < 30; ++i) {
    const HostStackSampleRecord a = t.host_stack_samples.row(i), b = r.host_stack_samples.row(i);
    EXPECT_EQ(a.time, b.time);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.tid, b.tid);
    EXPECT_EQ(a.callsite, b.callsite);
  }
  EXPECT_EQ(r.problems.get(Problem::kUnknownChunk), 0u);
}

// The golden file of format 1.3 (call stack tables). Regenerate only for a
// new format version (SCALESCOPE_WRITE_GOLDEN=1). The 1.2 golden reads with
// empty stack tables.
TEST(TraceFile, ReadsGoldenVersion1_3File) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.3.sstrace";
  if (std::getenv("SCALESCOPE_WRITE_GOLDEN")) {
    WriterOptions o;
    o.max_rows_per_chunk = 500;
    write_trace(golden, with_stack_tables(), o);
  }
  const std::vector<uint8_t> bytes = read_bytes(golden);
  ASSERT_GT(bytes.size(), 16u);
  EXPECT_EQ(format::get_u16(bytes.data() + 10), 3u);  // minor version 3
  const Trace t = read_trace(golden);
  EXPECT_EQ(t.host_samples.size(), 50u);
  ASSERT_EQ(t.host_callsites.size(), 3u);
  EXPECT_EQ(t.host_stack_samples.size(), 30u);
  EXPECT_EQ(t.host_stack_samples.callsite[29], 3u);
  EXPECT_EQ(t.strings.view(t.host_callsites.function[0]), "main");
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 0u);
  const Trace old = read_trace(fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.2.sstrace");
  EXPECT_EQ(old.host_callsites.size(), 0u);
  EXPECT_EQ(old.host_stack_samples.size(), 0u);
  EXPECT_EQ(old.host_samples.size(), 50u);
}

// Offline naming (format 1.4): the module table and the callsites' status
// round-trip; a 1.3 file reads with status kUnnamed and no module rows.
Trace with_module_tables() {
  Trace t = with_stack_tables();
  const StringId exe = t.strings.intern("/usr/bin/python3.12");
  t.host_callsites.push({4, 2, kNoString, exe, 0x3330, FrameStatus::kUnnamed});
  t.host_callsites.push({5, 2, kNoString, t.strings.intern("/opt/gone.so"), 0x10, FrameStatus::kModuleMissing});
  t.host_modules.push({700, exe, t.strings.intern("3f2a9c0d11e4b5a6"), 0x555555554000, 0x555555600000, 0x1000});
  t.host_modules.push({701, exe, t.strings.intern("3f2a9c0d11e4b5a6"), 0x555555754000, 0x555555800000, 0x1000});
  t.host_modules.push({700, t.strings.intern("/opt/gone.so"), kNoString, 0x7f0000000000, 0x7f0000200000, 0});
  return t;
}

TEST(TraceFile, HostModuleTableAndFrameStatusRoundTrip) {
  TempDir dir;
  const Trace t = with_module_tables();
  WriterOptions o;
  o.max_rows_per_chunk = 2;
  write_trace(dir / "m.sstrace", t, o);
  const Trace r = read_trace(dir / "m.sstrace");
  ASSERT_EQ(r.host_modules.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const HostModuleRecord a = t.host_modules.row(i), b = r.host_modules.row(i);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(t.strings.view(a.path), r.strings.view(b.path));
    EXPECT_EQ(t.strings.view(a.build_id), r.strings.view(b.build_id));
    EXPECT_EQ(a.map_start, b.map_start);
    EXPECT_EQ(a.map_end, b.map_end);
    EXPECT_EQ(a.map_offset, b.map_offset);
  }
  ASSERT_EQ(r.host_callsites.size(), 5u);
  EXPECT_EQ(r.host_callsites.status[4], FrameStatus::kModuleMissing);
  EXPECT_EQ(r.host_callsites.status[3], FrameStatus::kUnnamed);
  EXPECT_EQ(r.problems.get(Problem::kUnknownChunk), 0u);
}

// The golden file of format 1.4 (module table, callsite status). Regenerate
// only for a new format version (SCALESCOPE_WRITE_GOLDEN=1).
TEST(TraceFile, ReadsGoldenVersion1_4File) {
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.4.sstrace";
  if (std::getenv("SCALESCOPE_WRITE_GOLDEN")) {
    WriterOptions o;
    o.max_rows_per_chunk = 500;
    write_trace(golden, with_module_tables(), o);
  }
  const std::vector<uint8_t> bytes = read_bytes(golden);
  ASSERT_GT(bytes.size(), 16u);
  EXPECT_EQ(format::get_u16(bytes.data() + 10), 4u);  // minor version 4
  const Trace t = read_trace(golden);
  ASSERT_EQ(t.host_modules.size(), 3u);
  EXPECT_EQ(t.strings.view(t.host_modules.build_id[0]), "3f2a9c0d11e4b5a6");
  EXPECT_EQ(t.host_modules.map_offset[1], 0x1000u);
  ASSERT_EQ(t.host_callsites.size(), 5u);
  EXPECT_EQ(t.host_callsites.status[4], FrameStatus::kModuleMissing);
  EXPECT_EQ(t.problems.get(Problem::kUnknownChunk), 0u);
  // The 1.3 golden: no module rows, every callsite kUnnamed (its names kept).
  const Trace old = read_trace(fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.3.sstrace");
  EXPECT_EQ(old.host_modules.size(), 0u);
  ASSERT_EQ(old.host_callsites.size(), 3u);
  for (FrameStatus s : old.host_callsites.status) EXPECT_EQ(s, FrameStatus::kUnnamed);
  EXPECT_EQ(old.strings.view(old.host_callsites.function[0]), "main");
}

}  // namespace
}  // namespace scalescope::trace
