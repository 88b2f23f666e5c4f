#include "analyze/stream_analyzer.hpp"

#include <unistd.h>

#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "trace/error.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/synthetic_trace.hpp"
#include "trace/trace_file.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "stream-analyzer-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// The streamed analyses equal the whole-trace ones on the same file, field
// by field (as JSON: doubles compared exactly); the rest says it was skipped.
void expect_same_as_whole(const fs::path& p, const Options& o = {}) {
  const RankAnalysis whole = analyze_rank(trace::read_trace(p), o);
  const RankAnalysis streamed = analyze_rank_streaming(p, o);
  const nlohmann::json a = whole, b = streamed;
  for (const char* key : {"rank", "label", "source", "hostname", "node_rank", "breakdown", "launch", "copies", "sync",
                          "precision", "layout", "numa", "classes", "top_kernels", "data_loss"})
    EXPECT_EQ(a.at(key), b.at(key)) << key << " of " << p;
  EXPECT_EQ(a.contains("profiler_perturbation"), b.contains("profiler_perturbation"));
  if (a.contains("profiler_perturbation")) {
    EXPECT_EQ(a["profiler_perturbation"], b["profiler_perturbation"]);
  }
  EXPECT_EQ(whole.world_size, streamed.world_size);
  EXPECT_EQ(whole.node_count, streamed.node_count);
  EXPECT_EQ(whole.node_list, streamed.node_list);
  EXPECT_EQ(whole.gpu_activity, streamed.gpu_activity);
  for (const Availability* skipped :
       {&streamed.iterations.availability, &streamed.input.availability, &streamed.host.availability}) {
    EXPECT_FALSE(skipped->available);
    EXPECT_EQ(skipped->reason, "skipped: not computed by the streaming analysis");
  }
  EXPECT_FALSE(streamed.attribution.available);
  EXPECT_TRUE(streamed.collectives.empty());
  EXPECT_EQ(streamed.steady, nullptr);
}

fs::path write(const TempDir& dir, const trace::Trace& t, size_t rows_per_chunk,
               const std::string& name = "t.sstrace") {
  const fs::path p = dir / name;
  trace::WriterOptions w;
  w.max_rows_per_chunk = rows_per_chunk;
  trace::write_trace(p, t, w);
  return p;
}

TEST(StreamAnalyzerTest, SyntheticTraceInSmallAndLargeChunks) {
  TempDir dir;
  const trace::Trace t = trace::make_synthetic_trace(60'000, 11);
  // 97 rows per chunk: spans of every stream cross chunk and segment boundaries.
  for (size_t rows : {size_t{97}, size_t{1000}, size_t{1} << 20}) expect_same_as_whole(write(dir, t, rows));
}

TEST(StreamAnalyzerTest, SpansCrossingManySegments) {
  // Collectives and copies far longer than a chunk's time, and kernels of
  // other streams in the chunks between: the tails carried across cuts.
  TempDir dir;
  trace::Trace t = trace::make_synthetic_trace(30'000, 4);
  const auto [first, last] = t.time_span();
  const int64_t span = last - first;
  for (int i = 0; i < 6; ++i) {
    trace::NcclRecord c;
    c.start = first + span * i / 7;
    c.end = c.start + span / 3;
    c.device = 0;
    c.stream = 77;
    c.op = trace::NcclOp::kAllReduce;
    c.communicator = t.strings.intern("long-comm");
    t.nccl.push(c);
    trace::MemcpyRecord m;
    m.start = first + span * i / 6 + 13;
    m.end = m.start + span / 5;
    m.stream = 78;
    m.kind = trace::MemcpyKind::kHtoD;
    m.src_kind = trace::MemoryKind::kPageable;
    m.dst_kind = trace::MemoryKind::kDevice;
    m.bytes = 1 << 20;
    m.correlation = 900'000 + static_cast<uint32_t>(i);
    t.memcpys.push(m);
    t.api.correlation[static_cast<size_t>(i) * 101] = m.correlation;  // the calls that waited for them
  }
  expect_same_as_whole(write(dir, t, 256));
}

TEST(StreamAnalyzerTest, ChunksOutOfTimeOrder) {
  // A file whose later chunks hold earlier rows (appends in reverse time
  // order): the sweep takes chunks by their first start, not file order.
  TempDir dir;
  const trace::Trace t = trace::make_synthetic_trace(40'000, 8);
  const fs::path p = dir / "reversed.sstrace";
  trace::WriterOptions w;
  w.max_rows_per_chunk = 500;
  trace::TraceWriter writer = trace::TraceWriter::open(p, t.meta, w);
  const size_t parts = 8, n = t.kernels.size();
  for (size_t part = parts; part-- > 0;) {
    trace::Trace batch;
    batch.meta = t.meta;
    for (size_t i = n * part / parts; i < n * (part + 1) / parts; ++i) batch.kernels.push(t.kernels.row(i));
    if (part == 0) {
      batch.nccl = t.nccl;
      batch.memcpys = t.memcpys;
      batch.memsets = t.memsets;
      batch.api = t.api;
      batch.syncs = t.syncs;
    }
    writer.append(batch, t.strings);
  }
  writer.close();
  expect_same_as_whole(p);
}

TEST(StreamAnalyzerTest, EdgeCasesOfRows) {
  // Zero-length and inverted rows, no sync table (API fallback), an even and
  // an odd number of kernels, durations from 0 ns to seconds.
  TempDir dir;
  for (int variant = 0; variant < 2; ++variant) {
    trace::Trace t = trace::make_synthetic_trace(20'000, 21 + variant);
    t.syncs = {};
    std::mt19937_64 rng(5);
    for (size_t i = 0; i < t.kernels.size(); i += 97) t.kernels.end[i] = t.kernels.start[i];
    for (size_t i = 5; i < t.kernels.size(); i += 1013) t.kernels.end[i] = t.kernels.start[i] - 10;
    for (size_t i = 7; i < t.kernels.size(); i += 331)
      t.kernels.end[i] = t.kernels.start[i] + static_cast<int64_t>(rng() % 2'000'000'000);
    if (variant == 1) t.kernels.push(t.kernels.row(3));
    expect_same_as_whole(write(dir, t, 333));
  }
}

TEST(StreamAnalyzerTest, TablesLeftEmpty) {
  TempDir dir;
  trace::Trace t = trace::make_synthetic_trace(5'000, 2);
  trace::Trace only_api;
  only_api.meta = t.meta;
  only_api.strings = t.strings;
  only_api.api = t.api;
  expect_same_as_whole(write(dir, only_api, 100, "api.sstrace"));
  trace::Trace empty;
  empty.meta = t.meta;
  expect_same_as_whole(write(dir, empty, 100, "empty.sstrace"));
}

TEST(StreamAnalyzerTest, RefusesAWindowAndBadInput) {
  TempDir dir;
  const fs::path p = write(dir, trace::make_synthetic_trace(2'000, 1), 1000);
  Options o;
  o.window = WindowSpec::parse("10%:90%");
  EXPECT_THROW(analyze_rank_streaming(p, o), Error);
  const fs::path bad = dir / "bad.sstrace";
  { std::ofstream(bad) << "not a trace"; }
  try {
    analyze_rank_streaming(bad, Options{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.sstrace"), std::string::npos) << e.what();
  }
}

TEST(StreamAnalyzerTest, SharedRealTrace) {
  const fs::path kineto = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(kineto)) GTEST_SKIP() << "real trace not found: " << kineto;
  TempDir dir;
  const trace::Trace t = trace::import_kineto_file(kineto);
  expect_same_as_whole(write(dir, t, 4096));
  expect_same_as_whole(write(dir, t, size_t{1} << 20, "whole.sstrace"));
}

}  // namespace
}  // namespace scalescope::analyze
