#include "trace/model/chunk_reader.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <random>

#include <gtest/gtest.h>

#include "base/tests/sanitizer.hpp"
#include "base/error.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/tests/test_support.hpp"
#include "trace/model/trace_format.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

// A temporary folder named for these tests.
struct TempDir : trace::testing::TempDir {
  TempDir() : trace::testing::TempDir("chunk-reader-test") {}
};

// Every row of every chunk, appended in chunk order.
Trace read_by_chunks(const fs::path& path, ProblemCounts* problems = nullptr) {
  ChunkReader r = ChunkReader::open(path);
  Trace all, batch;
  uint64_t rows = 0;
  for (size_t i = 0; i < r.chunk_count(); ++i) {
    r.read(i, batch);
    format::for_each_table(batch, [&](format::ChunkType type, auto& table) {
      format::for_each_table(all, [&](format::ChunkType t2, auto& into) {
        if constexpr (std::is_same_v<decltype(&table), decltype(&into)>)
          if (type == t2)
            for (size_t k = 0; k < table.size(); ++k) into.push(table.row(k));
      });
      rows += table.size();
    });
  }
  all.meta = r.head().meta;
  all.strings = r.head().strings;
  all.problems = r.head().problems;
  if (problems) *problems = r.head().problems;
  return all;
}

// Same rows (every column's bits), strings, metadata and problems.
void expect_same(const Trace& a, const Trace& b) {
  EXPECT_EQ(format::metadata_to_json(a.meta), format::metadata_to_json(b.meta));
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (StringId i = 0; i < a.strings.size(); ++i) ASSERT_EQ(a.strings.view(i), b.strings.view(i));
  for (int p = 0; p < kProblemCount; ++p)
    EXPECT_EQ(a.problems.counts[p], b.problems.counts[p]) << to_string(static_cast<Problem>(p));
  format::for_each_table(a, [&](format::ChunkType type, const auto& ta) {
    format::for_each_table(b, [&](format::ChunkType tb_type, const auto& tb) {
      if constexpr (std::is_same_v<decltype(&ta), decltype(&tb)>) {
        if (type != tb_type) return;
        ASSERT_EQ(ta.size(), tb.size()) << "table " << static_cast<int>(type);
        format::for_each_column(ta, [&](int id, const auto& ca, format::Transform, const auto*) {
          format::for_each_column(tb, [&](int idb, const auto& cb, format::Transform, const auto*) {
            if constexpr (std::is_same_v<decltype(&ca), decltype(&cb)>) {
              if (id != idb) return;
              for (size_t i = 0; i < ca.size(); ++i)
                ASSERT_EQ(format::to_bits(ca[i]), format::to_bits(cb[i]))
                    << "table " << static_cast<int>(type) << " column " << id << " row " << i;
            }
          });
        });
      }
    });
  });
}

fs::path write_small_chunks(const TempDir& dir, const Trace& t, size_t rows_per_chunk) {
  const fs::path p = dir / "t.sstrace";
  WriterOptions o;
  o.max_rows_per_chunk = rows_per_chunk;
  write_trace(p, t, o);
  return p;
}

TEST(ChunkReaderTest, ChunksTogetherAreTheWholeTrace) {
  TempDir dir;
  const fs::path p = write_small_chunks(dir, make_synthetic_trace(40'000, 3), 777);
  ChunkReader r = ChunkReader::open(p);
  EXPECT_GT(r.chunk_count(), 20u);  // the tables really are split
  const Trace whole = read_trace(p);
  uint64_t rows = 0;
  format::for_each_table(whole, [&](format::ChunkType, const auto& t) { rows += t.size(); });
  EXPECT_EQ(r.total_rows(), rows);
  expect_same(read_by_chunks(p), whole);
}

// Format 1.4's module rows (offline frame naming) come out of the chunks as
// read_trace gives them: they once stayed in the reader, out of every batch.
TEST(ChunkReaderTest, HostModuleRowsComeOutOfTheChunks) {
  TempDir dir;
  Trace t = make_synthetic_trace(3'000, 4);
  const StringId exe = t.strings.intern("/usr/bin/python3.12");
  for (uint32_t i = 0; i < 7; ++i)
    t.host_modules.push({700 + i, i % 2 ? exe : t.strings.intern("/opt/lib" + std::to_string(i) + ".so"),
                         i % 3 ? t.strings.intern("3f2a9c0d11e4b5a" + std::to_string(i)) : kNoString,
                         0x555555554000u + i * 0x100000u, 0x555555600000u + i * 0x100000u, uint64_t{i} * 0x1000});
  const fs::path p = write_small_chunks(dir, t, 2);  // modules over four chunks, among the others
  const Trace whole = read_trace(p);
  ASSERT_EQ(whole.host_modules.size(), 7u);
  const Trace chunked = read_by_chunks(p);
  ASSERT_EQ(chunked.host_modules.size(), 7u);
  expect_same(chunked, whole);
  EXPECT_EQ(chunked.strings.view(chunked.host_modules.path[1]), "/usr/bin/python3.12");
  EXPECT_EQ(chunked.strings.view(chunked.host_modules.build_id[2]), "3f2a9c0d11e4b5a2");
  // The golden file of format 1.4 too.
  const fs::path golden = fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/golden-v1.4.sstrace";
  const Trace g = read_trace(golden);
  ASSERT_EQ(g.host_modules.size(), 3u);
  expect_same(read_by_chunks(golden), g);
}

TEST(ChunkReaderTest, BatchHoldsOneChunkOnly) {
  TempDir dir;
  const fs::path p = write_small_chunks(dir, make_synthetic_trace(20'000, 5), 500);
  ChunkReader r = ChunkReader::open(p);
  Trace batch;
  for (size_t i = 0; i < r.chunk_count(); ++i) {
    r.read(i, batch);
    size_t rows = 0;
    format::for_each_table(batch, [&](format::ChunkType, const auto& t) { rows += t.size(); });
    EXPECT_EQ(rows, r.rows(i));
    EXPECT_LE(rows, 500u);
  }
}

TEST(ChunkReaderTest, DamageCountsAsReadTraceCountsIt) {
  TempDir dir;
  const fs::path p = write_small_chunks(dir, make_synthetic_trace(20'000, 9), 1000);
  std::vector<char> bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write = [&](const std::vector<char>& b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  // A flipped payload byte, a flipped header byte (resync) and a torn tail.
  std::vector<char> damaged = bytes;
  damaged[damaged.size() / 3] ^= 0x5a;
  damaged[damaged.size() / 2] ^= 0x11;
  damaged.resize(damaged.size() - 1000);
  write(damaged);
  const Trace whole = read_trace(p);
  EXPECT_GT(whole.problems.get(Problem::kTornTail) + whole.problems.get(Problem::kChecksumMismatch), 0u);
  expect_same(read_by_chunks(p), whole);
}

// Random damage (flipped bytes, cuts, zeroed runs): ChunkReader reads what
// read_trace reads, or both refuse the file.
TEST(ChunkReaderTest, RandomDamageReadsAsReadTraceReadsIt) {
  TempDir dir;
  const fs::path p = write_small_chunks(dir, make_synthetic_trace(3'000, 4), 200);
  std::vector<char> bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::mt19937_64 rng(20);
  int refused = 0;
  for (int round = 0; round < 150; ++round) {
    std::vector<char> d = bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % d.size();
      switch (rng() % 3) {
        case 0: d[at] = static_cast<char>(d[at] ^ static_cast<char>(1 + rng() % 255)); break;
        case 1: d.resize(std::max<size_t>(at, 1)); break;
        default:
          std::fill(d.begin() + static_cast<std::ptrdiff_t>(at),
                    d.begin() + static_cast<std::ptrdiff_t>(std::min(d.size(), at + 64)), 0);
      }
    }
    {
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out.write(d.data(), static_cast<std::streamsize>(d.size()));
    }
    std::optional<Trace> whole;
    std::string whole_error, chunk_error;
    try {
      whole = read_trace(p);
    } catch (const Error& e) {
      whole_error = e.what();
    }
    try {
      const Trace chunks = read_by_chunks(p);
      ASSERT_TRUE(whole) << "round " << round << ": read_trace refused (" << whole_error << "), ChunkReader did not";
      expect_same(chunks, *whole);
    } catch (const Error& e) {
      chunk_error = e.what();
      EXPECT_FALSE(whole) << "round " << round << ": ChunkReader refused: " << chunk_error;
      EXPECT_EQ(chunk_error, whole_error);
      ++refused;
    }
  }
  EXPECT_LT(refused, 150);  // most damaged files are read, with problems counted
}

TEST(ChunkReaderTest, ReadingAChunkAgainCountsNothingTwice) {
  TempDir dir;
  Trace t = make_synthetic_trace(5'000, 2);
  t.meta.source = "collector";
  t.kernels.start[10] = 0;  // unfinished: dropped and counted
  const fs::path p = write_small_chunks(dir, t, 1000);
  ChunkReader r = ChunkReader::open(p);
  Trace batch;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < r.chunk_count(); ++i) r.read(i, batch);
  EXPECT_EQ(r.head().problems.get(Problem::kIncompleteRecord), 1u);
  expect_same(read_by_chunks(p), read_trace(p));
}

TEST(ChunkReaderTest, NotATraceNamesTheFile) {
  TempDir dir;
  const fs::path p = dir / "x.sstrace";
  std::ofstream(p) << "hello, not a trace";
  try {
    ChunkReader::open(p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.sstrace: not a scalescope trace"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChunkReader::open(dir / "missing.sstrace"), Error);
}

TEST(ChunkReaderTest, SharedRealTrace) {
  // 170 MB of JSON: seconds in the release build, minutes under the sanitizers,
  // whose run of this code is the synthetic traces' tests.
  if (kSanitized) GTEST_SKIP() << "the shared real trace is read in the release build's run";
  const fs::path kineto = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(kineto)) GTEST_SKIP() << "real trace not found: " << kineto;
  TempDir dir;
  const fs::path p = write_small_chunks(dir, import_kineto_file(kineto), 4096);
  expect_same(read_by_chunks(p), read_trace(p));
}

}  // namespace
}  // namespace scalescope::trace
