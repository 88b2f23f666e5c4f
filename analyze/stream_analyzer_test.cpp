#include "analyze/stream_analyzer.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/tests/sanitizer.hpp"
#include "analyze/detail.hpp"
#include "analyze/tests/golden_inputs.hpp"
#include "analyze/tests/trace_builder.hpp"
#include "trace/model/elf_build_id.hpp"
#include "base/error.hpp"
#include "trace/import/input_detector.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/table_columns.hpp"
#include "trace/model/tests/test_support.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;
using trace::testing::write_in_chunks;

// A temporary folder named for these tests.
struct TempDir : trace::testing::TempDir {
  TempDir() : trace::testing::TempDir("stream-analyzer-test") {}
};

// Two results equal field by field (as JSON: doubles compared exactly), but
// attribution, which the streamed one says it skipped when asked for it
// (`attribution`); then their steady passes.
void expect_same_result(const RankAnalysis& whole, const RankAnalysis& streamed, const std::string& what,
                        bool attribution) {
  const nlohmann::json a = whole, b = streamed;
  for (const char* key :
       {"rank", "label", "source", "hostname", "node_rank", "breakdown", "iterations", "launch", "copies", "sync",
        "precision", "layout", "input", "job", "idle_cover", "idle_breakdown", "numa", "gpu_clocks", "classes",
        "top_kernels", "data_loss"})
    EXPECT_EQ(a.at(key), b.at(key)) << key << " of " << what;
  for (const char* optional : {"profiler_perturbation", "host", "advisor_window"}) {
    EXPECT_EQ(a.contains(optional), b.contains(optional)) << optional << " of " << what;
    if (a.contains(optional) && b.contains(optional)) {
      EXPECT_EQ(a[optional], b[optional]) << optional << " of " << what;
    }
  }
  EXPECT_EQ(nlohmann::json(whole.host), nlohmann::json(streamed.host)) << what;  // also when skipped: the same reason
  EXPECT_EQ(whole.world_size, streamed.world_size);
  EXPECT_EQ(whole.node_count, streamed.node_count);
  EXPECT_EQ(whole.node_list, streamed.node_list);
  EXPECT_EQ(whole.gpu_activity, streamed.gpu_activity);
  ASSERT_EQ(whole.collectives.size(), streamed.collectives.size()) << what;
  for (size_t i = 0; i < whole.collectives.size(); ++i) {
    const CollectiveArrival &x = whole.collectives[i], &y = streamed.collectives[i];
    EXPECT_EQ(x.communicator, y.communicator) << i;
    EXPECT_EQ(x.communicator_name, y.communicator_name) << i;
    EXPECT_EQ(x.op, y.op) << i;
    EXPECT_EQ(x.sequence, y.sequence) << i;
    EXPECT_EQ(x.arrival_unix_ns, y.arrival_unix_ns) << i;
    EXPECT_EQ(x.end_unix_ns, y.end_unix_ns) << i;
    EXPECT_EQ(x.warmup, y.warmup) << i;
  }
  EXPECT_EQ(nlohmann::json(whole.attribution), nlohmann::json(streamed.attribution))
      << what;  // attribution_stream_test
  EXPECT_EQ(whole.steady_first_iteration, streamed.steady_first_iteration) << what;
  EXPECT_EQ(whole.steady_end_iteration, streamed.steady_end_iteration) << what;
  ASSERT_EQ(whole.steady == nullptr, streamed.steady == nullptr) << "steady pass of " << what;
  if (whole.steady) expect_same_result(*whole.steady, *streamed.steady, "the steady pass of " + what, attribution);
}

// The streamed analysis equals the whole-trace one on the same file and
// options, and so does the trace in memory cut into slices of a few rows
// (slices cross every table's chunk and segment boundaries). Returns the
// streamed one.
RankAnalysis expect_same_as_whole(const fs::path& p, const Options& o = {}) {
  const trace::Trace t = trace::read_trace(p);
  const RankAnalysis whole = analyze_rank(t, o);
  RankAnalysis streamed = analyze_rank_streaming(p, o);
  const std::string what = p.string() + (o.window ? " --window " + o.window->to_string() : "");
  expect_same_result(whole, streamed, what, o.attribution);
  for (size_t rows : {size_t{89}, size_t{1000}}) {
    ChunkSource slices(t, rows);
    expect_same_result(whole, analyze_chunks(slices, o), what + " in slices of " + std::to_string(rows) + " rows",
                       o.attribution);
  }
  return streamed;
}

// The same with each of these windows ("" for none).
void expect_same_in_windows(const fs::path& p, const std::vector<std::string>& windows, Options o = {}) {
  for (const std::string& w : windows) {
    o.window.reset();
    if (!w.empty()) o.window = WindowSpec::parse(w);
    expect_same_as_whole(p, o);
  }
}

// Windows of every kind: percent, ns offsets, iterations, the whole span, one
// past the rank's end (no time), one narrower than a kernel.
const std::vector<std::string> kWindows = {"",          "0%:100%", "10%:90%", "33.3%:33.4%", "2000000:9000000",
                                           "1e17:2e17", "0:1",     "it1:it3", "it0:it2"};

TEST(StreamAnalyzerTest, SyntheticTraceInSmallAndLargeChunks) {
  TempDir dir;
  const trace::Trace t = trace::make_synthetic_trace(60'000, 11);
  // 97 rows per chunk: spans of every stream cross chunk and segment boundaries.
  for (size_t rows : {size_t{97}, size_t{1000}, size_t{1} << 20})
    expect_same_in_windows(write_in_chunks(dir, t, rows), kWindows);
  // The windows are what they say (so that equality above is of windowed figures).
  const fs::path p = write_in_chunks(dir, t, 1000);
  const RankAnalysis all = analyze_rank_streaming(p, Options{});
  Options o;
  o.window = WindowSpec::parse("10%:90%");
  const RankAnalysis mid = analyze_rank_streaming(p, o);
  EXPECT_NEAR(static_cast<double>(mid.breakdown.wall_ns), static_cast<double>(all.breakdown.wall_ns) * 0.8, 2);
  EXPECT_LT(mid.launch.kernel_count, all.launch.kernel_count);
  o.window = WindowSpec::parse("it1:it3");
  const RankAnalysis steps = analyze_rank_streaming(p, o);
  EXPECT_EQ(steps.iterations.count, 2);
  EXPECT_EQ(steps.breakdown.window_start, all.iterations.iterations[1].start);
  EXPECT_EQ(steps.steady, nullptr);  // no steady pass with a window
  o.window = WindowSpec::parse("1e17:2e17");
  EXPECT_FALSE(analyze_rank_streaming(p, o).breakdown.availability.available);
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
  // Windows that cut the long spans and the pageable calls.
  expect_same_in_windows(write_in_chunks(dir, t, 256), kWindows);
}

// A batch holds the rows of the chunk just read and no memory of earlier
// chunks: otherwise each batch and the reader keep the largest chunk of every
// table read so far (a 100 M-event rank's streamed analysis holds three batches).
TEST(StreamAnalyzerTest, BatchHoldsOnlyTheChunkRead) {
  TempDir dir;
  const fs::path p = write_in_chunks(dir, trace::make_synthetic_trace(20'000, 3), 1000);
  trace::ChunkReader reader = trace::ChunkReader::open(p);
  ChunkSource chunks(reader);
  trace::Trace batch;
  size_t empty_tables = 0;
  for (size_t pass = 0; pass < 2; ++pass)
    for (size_t c = 0; c < chunks.count(); ++c) {
      const Chunk rows = chunks.read(c, batch);
      trace::for_each_trace_table(*rows, [&](const auto& table) {
        if (table.size() > 0) return;
        ++empty_tables;
        using Table = std::remove_cvref_t<decltype(table)>;
        trace::for_each_column_of<Table>(
            [&](const auto& column) { EXPECT_EQ((table.*column.values).capacity(), 0u) << "chunk " << c; });
      });
    }
  EXPECT_GT(empty_tables, 0u);
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
      batch.nvtx = t.nvtx;  // the steps, for windows of iterations and the steady pass
    }
    writer.append(batch, t.strings);
  }
  writer.close();
  expect_same_in_windows(p, kWindows);
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
    expect_same_in_windows(write_in_chunks(dir, t, 333), kWindows);
  }
}

TEST(StreamAnalyzerTest, ManyRowsStartingTogether) {
  // More rows than the sweep's piece (StreamSweep::kPieceRows, 16 Ki) with
  // one start, then rows of a few starts each: pieces cut after a run of
  // equal starts, and inside runs of equal starts.
  TempDir dir;
  testing::TraceBuilder b;
  const int64_t us = 1000;
  for (int i = 0; i < 20'000; ++i) b.kernel("sgemm_kernel", 1000 * us, 1000 * us + (i % 977) * us, 7 + i % 3);
  for (int i = 0; i < 40'000; ++i)
    b.kernel(i % 5 ? "sgemm_kernel" : "ncclAllReduce_kernel", 2000 * us + (i / 7) * us, 2000 * us + (i / 7 + 3) * us,
             7 + i % 4);
  b.copy(trace::MemcpyKind::kHtoD, trace::MemoryKind::kPinned, trace::MemoryKind::kDevice, 900 * us, 1500 * us, 64);
  expect_same_in_windows(write_in_chunks(dir, b.t, size_t{1} << 20), {"", "10%:60%", "1000000:1000001"});
}

TEST(StreamAnalyzerTest, TablesLeftEmpty) {
  TempDir dir;
  trace::Trace t = trace::make_synthetic_trace(5'000, 2);
  trace::Trace only_api;
  only_api.meta = t.meta;
  only_api.strings = t.strings;
  only_api.api = t.api;
  // A window of iterations over a trace without GPU rows keeps its whole span.
  expect_same_in_windows(write_in_chunks(dir, only_api, 100, "api.sstrace"), {"", "10%:20%", "it0:it3"});
  trace::Trace empty;
  empty.meta = t.meta;
  expect_same_in_windows(write_in_chunks(dir, empty, 100, "empty.sstrace"), {"", "10%:20%", "it0:it3"});
}

// A trace's NVTX table without the rows whose text `drop` accepts.
trace::Trace without_ranges(trace::Trace t, const std::function<bool(std::string_view)>& drop) {
  trace::NvtxTable kept;
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (!drop(t.strings.view(t.nvtx.text[i]))) kept.push(t.nvtx.row(i));
  t.nvtx = std::move(kept);
  return t;
}

// Every source iteration detection has: ProfilerStep ranges, a named range,
// repeating annotations, collectives and kernels. Each source is checked to be
// the one used, so that a test cannot pass on another source's answer.
TEST(StreamAnalyzerTest, IterationsFromEverySource) {
  TempDir dir;
  const trace::Trace base = trace::make_synthetic_trace(30'000, 13);
  auto source_of = [&](const fs::path& p, const Options& o = {}) {
    const RankAnalysis r = analyze_rank_streaming(p, o);
    EXPECT_TRUE(r.iterations.availability.available) << r.iterations.availability.reason;
    EXPECT_GT(r.iterations.count, 2);
    return r.iterations.source;
  };
  const fs::path steps = write_in_chunks(dir, base, 211, "steps.sstrace");
  expect_same_in_windows(steps, {"", "it2:it5", "40%:60%"});
  EXPECT_EQ(source_of(steps), "nvtx:ProfilerStep#");
  Options named;
  named.iteration_range = "DistributedDataParallel.forward";
  expect_same_as_whole(steps, named);
  EXPECT_EQ(source_of(steps, named), "range:DistributedDataParallel.forward");
  Options missing;
  missing.iteration_range = "no such range";
  EXPECT_THROW(analyze_rank_streaming(steps, missing), Error);

  const trace::Trace annotations =
      without_ranges(base, [](std::string_view s) { return s.starts_with("ProfilerStep#"); });
  const fs::path a = write_in_chunks(dir, annotations, 211, "annotations.sstrace");
  expect_same_in_windows(a, {"", "it1:it3"});
  EXPECT_TRUE(source_of(a).starts_with("detected:annotation")) << source_of(a);

  // Regular collectives and kernels (the synthetic trace's jitter makes
  // neither regular): ten steps of an all-reduce and kernels of two names,
  // one of them several times per step, with equal starts across names.
  testing::TraceBuilder b;
  const int64_t ms = 1'000'000;
  for (int i = 0; i < 10; ++i) {
    const int64_t t0 = i * 100 * ms + (i == 0 ? 0 : 150 * ms);  // a slow first step (warm-up)
    b.kernel("step_kernel", t0 + 10 * ms, t0 + 20 * ms);
    for (int j = 0; j < 3; ++j) b.kernel("small_kernel", t0 + (10 + 7 * j) * ms, t0 + (12 + 7 * j) * ms, 9);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 50 * ms, t0 + 60 * ms, 20);
    b.nccl(trace::NcclOp::kAllReduce, t0 + 50 * ms, t0 + 60 * ms, -1, "pg0", 20);
    b.nccl(trace::NcclOp::kBroadcast, t0 + 55 * ms + i * i * ms, t0 + 58 * ms + i * i * ms, -1, "pg1", 21);
  }
  const fs::path c = write_in_chunks(dir, b.t, 3, "collectives.sstrace");
  expect_same_in_windows(c, {"", "it1:it4", "20%:70%"});
  EXPECT_TRUE(source_of(c).starts_with("detected:collective")) << source_of(c);
  EXPECT_EQ(analyze_rank_streaming(c, Options{}).collectives.size(), 20u);

  b.t.nccl = {};
  const fs::path k = write_in_chunks(dir, b.t, 3, "kernels.sstrace");
  expect_same_in_windows(k, {"", "it1:it4", "20%:70%"});
  EXPECT_EQ(source_of(k), "detected:kernel 'step_kernel'");
  // The collective list from communication kernels (no NCCL rows), with warm-up flags.
  const RankAnalysis r = analyze_rank_streaming(k, Options{});
  ASSERT_EQ(r.collectives.size(), 10u);
  EXPECT_EQ(r.iterations.warmup_count, 1);
  // The steady pass starts after the warm-up step and has no collectives.
  ASSERT_NE(r.steady, nullptr);
  EXPECT_EQ(r.steady_first_iteration, 1);
  EXPECT_EQ(r.steady_end_iteration, r.iterations.count);
  EXPECT_EQ(r.steady->breakdown.window_start, r.iterations.iterations[1].start);
  EXPECT_TRUE(r.steady->collectives.empty());
  EXPECT_TRUE(r.collectives.front().warmup);
  EXPECT_FALSE(r.collectives.back().warmup);
}

// Input starvation: copies ending in idle gaps (two in one gap: counted
// once), under running work, after the last kernel, before the first one;
// with iterations and without. Rows one per chunk: spans cross many cuts.
TEST(StreamAnalyzerTest, InputStarvation) {
  TempDir dir;
  for (bool steps : {false, true}) {
    testing::TraceBuilder b;
    using trace::MemcpyKind;
    using trace::MemoryKind;
    const int64_t ms = 1'000'000;
    for (int i = 0; i < 12; ++i) {
      const int64_t t0 = i * 100 * ms;
      if (steps) b.range("ProfilerStep#" + std::to_string(i), t0, t0 + 100 * ms);
      b.kernel("sgemm_kernel", t0 + 30 * ms, t0 + 70 * ms);
      b.kernel("ncclAllReduce_kernel", t0 + 60 * ms, t0 + 80 * ms, 8);
      b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, t0 + 5 * ms, t0 + (i % 3 ? 20 : 65) * ms,
             1 << 20);
      if (i % 4 == 0)
        b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, t0 + 1 * ms, t0 + 25 * ms, 1 << 20);
    }
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 1250 * ms, 1260 * ms,
           1 << 20);  // after the end
    const fs::path p = write_in_chunks(dir, b.t, 1, steps ? "steps.sstrace" : "plain.sstrace");
    // Windows that start and end inside gaps, copies and kernels.
    expect_same_in_windows(p, {"", "it2:it7", "1.7%:52%", "8000000:1100000000", "50%:100%"});
    const RankAnalysis r = analyze_rank_streaming(p, Options{});
    ASSERT_TRUE(r.input.availability.available) << r.input.availability.reason;
    // The gaps before the steps of i % 3 != 0 (i = 4 and 8 have two copies
    // there). Plain, iterations run from kernel to kernel ('sgemm_kernel'):
    // the gap before the first one is outside them, the others count whole
    // (50 ms). With step ranges, step 0 starts before the window (the first
    // event at 1 ms): iterations start at 100 ms, and step 1's gap counts 30 ms.
    EXPECT_EQ(r.input.starved_iterations, 8);
    EXPECT_EQ(r.input.starvation_ns, steps ? 7 * 50 * ms + 30 * ms : 8 * 50 * ms);
    EXPECT_EQ(r.iterations.source, steps ? "nvtx:ProfilerStep#" : "detected:kernel 'sgemm_kernel'");
  }
}

// The host sampler's tables (formats 1.2-1.4): threads, samples, call stacks.
TEST(StreamAnalyzerTest, HostThreadsAndStacks) {
  using namespace testing::host_case;
  TempDir dir;
  testing::TraceBuilder b = steps();
  b.t.meta.extra["host_stack_sampling"] = "perf_event_open task-clock, frame-pointer callchains";
  b.host_thread(100, 101, "pt_main_loader");
  auto& cs = b.t.host_callsites;
  const auto exe = b.t.strings.intern("/usr/bin/python3.12");
  cs.push({1, 0, b.t.strings.intern("main"), exe, 0x10});
  cs.push({2, 1, b.t.strings.intern("cudaLaunchKernel"), exe, 0x20});
  cs.push({3, 1, trace::kNoString, exe, 0x40});
  int n = 0;
  each_sample([&](int64_t t) {
    b.host_sample(t, 100, 100, trace::ThreadState::kRunning, 0, 10 * kMs);
    b.host_sample(t, 100, 101, n % 3 ? trace::ThreadState::kRunning : trace::ThreadState::kSleeping, 1, 4 * kMs);
    b.t.host_stack_samples.push({t - kMs, 100, 100, n % 5 < 3 ? 2u : 3u});
    ++n;
  });
  const fs::path p = write_in_chunks(dir, b.t, 7);  // host rows over many chunks
  expect_same_in_windows(p, {"", "it1:it3", "25%:75%"});
  const RankAnalysis r = analyze_rank_streaming(p, Options{});
  ASSERT_TRUE(r.host.availability.available) << r.host.availability.reason;
  EXPECT_EQ(r.host.threads.size(), 2u);
  EXPECT_GT(r.host.stack_samples, 0);
}

// The inputs of the golden CLI tests (analyze/tests/golden_inputs.hpp): two DDP
// runs of two ranks and two hosts of two ranks.
TEST(StreamAnalyzerTest, GoldenInputs) {
  TempDir dir;
  for (auto [seed, pageable] : {std::pair<uint64_t, bool>{11, false}, {21, true}})
    for (int rank = 0; rank < 2; ++rank)
      expect_same_in_windows(
          write_in_chunks(dir, golden::ddp_rank(seed, rank, pageable), size_t{1} << 20, "golden.sstrace"),
          {"", "it1:it3", "it1:it4", "10%:90%"});  // the windows of the golden tests and one more
  Options off;
  off.attribution = false;  // as --no-attribution: the results say so alike
  expect_same_in_windows(write_in_chunks(dir, golden::ddp_rank(11, 0, false), size_t{1} << 20, "golden.sstrace"),
                         {"", "it1:it3", "1e17:2e17"}, off);
  for (const trace::Trace& t : golden::two_host_ranks())
    expect_same_in_windows(write_in_chunks(dir, t, size_t{1} << 20, "node.sstrace"), {"", "it1:it3", "10%:90%"});
}

// The error analyze_rank gives, "" for none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StreamAnalyzerTest, WindowErrorsAndBadInput) {
  TempDir dir;
  const fs::path p = write_in_chunks(dir, trace::make_synthetic_trace(2'000, 1), 1000);
  // Iterations the trace does not have: the same error as the whole-trace analysis.
  for (const char* w : {"it0:it999", "it5:it6"}) {
    Options o;
    o.iteration_range = w[3] == '5' ? "no such range" : "";
    o.window = WindowSpec::parse(w);
    const std::string whole = error_of([&] { analyze_rank(trace::read_trace(p), o); });
    EXPECT_NE(whole, "") << w;
    EXPECT_EQ(error_of([&] { analyze_rank_streaming(p, o); }), whole) << w;
  }
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
  // 170 MB of JSON: seconds in the release build, minutes under the sanitizers,
  // whose run of this code is the synthetic traces' tests.
  if (kSanitized) GTEST_SKIP() << "the shared real trace is read in the release build's run";
  const fs::path kineto = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(kineto)) GTEST_SKIP() << "real trace not found: " << kineto;
  TempDir dir;
  const trace::Trace t = trace::import_kineto_file(kineto);
  const RankAnalysis r = expect_same_as_whole(write_in_chunks(dir, t, 4096));
  ASSERT_NE(r.steady, nullptr);  // the steady pass is compared too
  expect_same_in_windows(write_in_chunks(dir, t, size_t{1} << 20, "whole.sstrace"),
                         {"", "it1:it4", "10%:90%", "2000000:9000000"});
}

// A native frame for offline naming: this function of the test binary.
extern "C" __attribute__((noinline, used)) int stream_analyzer_test_frame(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

// analyze_path streams .sstrace ranks of more than Options::stream_above_rows
// rows when nothing needs their whole Trace (no visitor), and gives what the
// whole path gives, every table: the run's JSON compared with the same run
// read whole (a visitor, or the threshold, forces it), with native frames
// named offline in both.
TEST(StreamAnalyzerTest, AnalyzePathStreamsTraceFiles) {
  Options on;  // every rank streamed, attribution on
  on.stream_above_rows = 0;
  const uint64_t large = Options{}.stream_above_rows + 1;
  EXPECT_TRUE(detail::analyze_streaming(trace::InputKind::kTraceFile, large, Options{}, false));
  EXPECT_FALSE(detail::analyze_streaming(trace::InputKind::kTraceFile, large - 1, Options{}, false));  // small: whole
  EXPECT_TRUE(detail::analyze_streaming(trace::InputKind::kTraceFile, 1, on, false));
  EXPECT_FALSE(detail::analyze_streaming(trace::InputKind::kTraceFile, large, on, true));  // a visitor: read whole
  EXPECT_FALSE(detail::analyze_streaming(trace::InputKind::kKinetoJson, large, on, false));
  EXPECT_FALSE(detail::analyze_streaming(trace::InputKind::kNsysSqlite, large, on, false));

  using namespace testing::host_case;
  std::string exe;
  uint64_t offset = 0;
  ASSERT_TRUE(
      trace::testing::locate_in_maps(reinterpret_cast<uintptr_t>(&stream_analyzer_test_frame) + 4, &exe, &offset));
  std::string error;
  const std::string build_id = trace::elf_build_id_of_file(exe.c_str(), &error).value_or("");
  ASSERT_FALSE(build_id.empty()) << error;
  TempDir dir;
  const fs::path run = dir / "job.ssrun";
  fs::create_directories(run);
  for (int rank = 0; rank < 2; ++rank) {
    testing::TraceBuilder b = steps(30 + 10 * rank);
    b.t.meta.rank = rank;
    b.t.meta.world_size = 2;
    b.t.meta.extra["host_stack_sampling"] = "perf_event_open task-clock, frame-pointer callchains";
    const auto module = b.t.strings.intern(exe);
    b.t.host_modules.push({100, module, b.t.strings.intern(build_id), 0, 0, 0});
    b.t.host_callsites.push({1, 0, trace::kNoString, module, offset});
    b.t.host_callsites.push({2, 1, trace::kNoString, module, 0x7fffffffffff});  // past every segment
    each_sample([&](int64_t t) {
      b.host_sample(t, 100, 100, trace::ThreadState::kRunning, 0, 10 * kMs);
      b.t.host_stack_samples.push({t - kMs, 100, 100, t % 3 ? 1u : 2u});
    });
    b.nccl(trace::NcclOp::kAllReduce, 50 * kMs, 60 * kMs, -1, "pg0", 20);
    write_in_chunks(dir, b.t, 5, "job.ssrun/rank" + std::to_string(rank) + ".sstrace");
  }
  nlohmann::json streamed = analyze_path(run, on);
  size_t visited = 0;
  nlohmann::json whole =
      analyze_path(run, on, 0, {}, [&](size_t, const trace::Trace&, const RankAnalysis&) { ++visited; });
  EXPECT_EQ(visited, 2u);
  // Everything is the same: both splits of idle time by cause, and the NCCL
  // collectives by operation and size, included.
  for (auto* j : {&streamed, &whole}) {
    for (auto& r : (*j)["ranks"]) {
      EXPECT_TRUE(r["idle_cover"]["availability"]["available"].get<bool>()) << r["label"];
      EXPECT_TRUE(r["idle_breakdown"]["availability"]["available"].get<bool>()) << r["label"];
      EXPECT_TRUE(r["nccl_ops"]["availability"]["available"].get<bool>()) << r["label"];
      EXPECT_FALSE(r["nccl_ops"]["groups"].empty()) << r["label"];
    }
  }
  EXPECT_FALSE(whole["ranks"].empty());
  EXPECT_EQ(streamed, whole);
  // The same read whole by the threshold alone (no visitor).
  Options never = on;
  never.stream_above_rows = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(nlohmann::json(analyze_path(run, never)), whole);
  // The frame was named in the streamed analysis too.
  const std::string text = streamed.dump();
  EXPECT_NE(text.find("stream_analyzer_test_frame"), std::string::npos) << text.substr(0, 2000);
}

// The split of idle time by cause, chunk by chunk: launch gaps, host waits
// (synchronization rows, or the API calls when there are none), input gaps
// and MPI calls overlapping in every way, in chunks of a few rows: the same
// split as the whole-trace analysis, set by set, in every window.
TEST(StreamAnalyzerTest, IdleCoverSplitByCause) {
  TempDir dir;
  for (const bool sync_rows : {true, false}) {
    testing::TraceBuilder b;
    for (int i = 0; i < 12; ++i) {
      const int64_t t = 100000 * i;
      b.range("ProfilerStep#" + std::to_string(i), t, t + 100000);
      b.api("cudaLaunchKernel", t, t + 2000);
      b.kernel("gemm_kernel", t, t + 20000);
      if (sync_rows) b.sync(trace::SyncKind::kStreamSynchronize, t + 20000, t + 45000 + 1000 * i);
      else b.api("cudaStreamSynchronize", t + 20000, t + 45000 + 1000 * i);
      if (sync_rows) b.sync(trace::SyncKind::kStreamWaitEvent, t + 21000, t + 90000);  // no host wait
      b.copy(trace::MemcpyKind::kHtoD, trace::MemoryKind::kPinned, trace::MemoryKind::kDevice, t + 55000, t + 58000,
             1 << 20);
      b.kernel("gemm_kernel", t + 58500, t + 59000);  // a launch gap of 500 ns before it
      if (i % 3 == 0) b.api("MPI_Recv", t + 40000, t + 70000);
      b.memset(t + 75000, t + 76000);  // idle after it, no input: the copy's gap closed at 58.5 us
      b.kernel("gemm_kernel", t + 80000 + 100 * i, t + 100000);
    }
    const fs::path p = write_in_chunks(dir, b.t, 7, sync_rows ? "rows.sstrace" : "api.sstrace");
    for (const char* w : {"", "it2:it9", "13%:71%"}) {
      Options o;
      if (*w) o.window = WindowSpec::parse(w);
      const RankAnalysis r = expect_same_as_whole(p, o);
      ASSERT_TRUE(r.idle_cover.availability.available) << w;
      for (const unsigned bit : {unsigned{kIdleLaunchGap}, unsigned{kIdleHostSync}, unsigned{kIdleInput}, unsigned{kIdleMpi}})
        EXPECT_GT(r.idle_cover.covered_ns(bit), 0) << w << " cause " << bit;
    }
  }
}

// The split of idle time into host wait, kernel wait and other, chunk by
// chunk: gaps ended by work launched before the gap (kernel wait, or other
// when long), after it (host wait), by a launch call listed after the GPU
// row that it launched (judged once every call has been read), by rows with
// no call or no correlation id (unlaunched), and by several rows starting at
// once; in chunks of a few rows, in every window: the same split as the
// whole-trace analysis.
TEST(StreamAnalyzerTest, IdleBreakdownChunkByChunk) {
  TempDir dir;
  testing::TraceBuilder b;
  uint32_t id = 1;
  for (int i = 0; i < 12; ++i) {
    const int64_t t = 1'000'000 * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 1'000'000);
    b.api("cudaLaunchKernel", t, t + 2000, id);
    b.kernel("gemm_kernel", t + 5000, t + 100'000, 7, 0, id++);
    // Launched while the GPU ran: a short gap is a kernel wait, a long one other.
    b.api("cudaLaunchKernel", t + 50'000, t + 52'000, id);
    b.kernel("gemm_kernel", t + 110'000, t + 200'000, 7, 0, id++);
    b.api("cudaLaunchKernel", t + 150'000, t + 152'000, id);
    b.kernel("gemm_kernel", t + 300'000, t + 400'000, 7, 0, id++);
    // Launched after the GPU went idle: host wait; the call is listed twice,
    // the earlier one counts.
    b.api("cudaLaunchKernel", t + 450'000, t + 452'000, id);
    b.api("cudaLaunchKernel", t + 420'000, t + 421'000, id);
    b.kernel("gemm_kernel", t + 460'000, t + 500'000, 7, 0, id++);
    // A call that starts after the copy it issued (a clock step): judged at the end.
    b.copy(trace::MemcpyKind::kHtoD, trace::MemoryKind::kPinned, trace::MemoryKind::kDevice, t + 520'000,
           t + 530'000, 1 << 20, true, 9, id);
    b.api("cudaMemcpyAsync", t + 900'000, t + 901'000, id++);
    // No call for its id, and no id: unlaunched.
    b.kernel("gemm_kernel", t + 540'000, t + 560'000, 7, 0, 900'000 + static_cast<uint32_t>(i));
    b.memset(t + 580'000, t + 590'000);
    // Two rows starting at once, one launched before the gap and one after.
    b.api("cudaLaunchKernel", t + 570'000, t + 571'000, id);
    b.kernel("gemm_kernel", t + 600'000, t + 650'000, 7, 0, id++);
    b.api("cudaLaunchKernel", t + 595'000, t + 596'000, id);
    b.kernel("nccl_kernel_AllReduce", t + 600'000, t + 620'000, 8, 0, id++);
    // A zero-length row and a row ending before it starts end no gap.
    b.kernel("gemm_kernel", t + 700'000, t + 700'000, 7, 0, 0);
    b.kernel("gemm_kernel", t + 720'000, t + 710'000, 7, 0, 0);
    b.kernel("gemm_kernel", t + 800'000, t + 990'000, 7, 0, 0);
  }
  for (const size_t rows : {size_t{3}, size_t{5}, size_t{1} << 20}) {
    const fs::path p = write_in_chunks(dir, b.t, rows, "idle" + std::to_string(rows) + ".sstrace");
    for (const char* w : {"", "it2:it9", "13%:71%", "0:1"}) {
      Options o;
      if (*w) o.window = WindowSpec::parse(w);
      const RankAnalysis r = expect_same_as_whole(p, o);
      if (std::string(w) == "0:1") continue;
      const IdleBreakdown& i = r.idle_breakdown;
      ASSERT_TRUE(i.availability.available) << w << " " << rows;
      EXPECT_GT(i.host_wait_gaps, 0) << w;
      EXPECT_GT(i.kernel_wait_gaps, 0) << w;
      EXPECT_GT(i.other_gaps, 0) << w;
      EXPECT_GT(i.unlaunched_gaps, 0) << w;
      EXPECT_EQ(i.idle_ns, i.host_wait_ns + i.kernel_wait_ns + i.other_ns) << w;
    }
  }
}

}  // namespace
}  // namespace scalescope::analyze
