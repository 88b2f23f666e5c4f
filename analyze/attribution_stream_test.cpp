#include "analyze/attribution_stream.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/tests/sanitizer.hpp"
#include "analyze/attribution_detail.hpp"
#include "analyze/tests/golden_inputs.hpp"
#include "analyze/stream_analyzer.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/tests/test_support.hpp"
#include "trace/model/trace_file.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;
using trace::Timestamp;
using trace::testing::write_in_chunks;

// A temporary folder named for these tests.
struct TempDir : trace::testing::TempDir {
  TempDir() : trace::testing::TempDir("attribution-stream-test") {}
};

struct Case {
  Timestamp start, end;
  bool whole_trace;
  std::vector<Iteration> iterations;
};

// Iterations cut from [lo, hi): `n` equal steps.
std::vector<Iteration> steps(Timestamp lo, Timestamp hi, int n) {
  std::vector<Iteration> out;
  for (int i = 0; i < n; ++i) out.push_back({lo + (hi - lo) * i / n, lo + (hi - lo) * (i + 1) / n, i == 0});
  return out;
}

// The attribution of `p` read chunk by chunk equals that of the trace read
// whole (in memory, one slice per table), for every case, field by field (as JSON:
// doubles exactly).
AttributionStreamStats expect_same(const fs::path& p, const std::vector<Case>& cases) {
  const trace::Trace t = trace::read_trace(p);
  const std::vector<KernelInfo> info = classify_names(t, KernelClassifier{});
  std::vector<AttributionWindow> windows;
  if (std::getenv("ATTRIBUTION_STREAM_STATS")) std::fprintf(stderr, "%s\n", p.c_str());
  for (const Case& c : cases) windows.push_back({c.start, c.end, c.whole_trace, &c.iterations});
  trace::ChunkReader reader = trace::ChunkReader::open(p);
  ChunkSource file(reader), memory(t);
  AttributionStreamStats stats;
  const std::vector<Attribution> streamed = stream_attribution(file, windows, info, &stats);
  if (std::getenv("ATTRIBUTION_STREAM_STATS"))
    std::fprintf(stderr, "correlations %zu (span %zu) host %zu gpu %zu links %zu open %zu; api %zu nvtx %zu\n",
                 stats.correlations, stats.correlation_span, stats.host_rows, stats.gpu_rows, stats.link_contexts,
                 stats.open_ranges, t.api.size(), t.nvtx.size());
  const std::vector<Attribution> whole = stream_attribution(memory, windows, info);
  ChunkSource slices(t, 89);  // slices of the trace in memory cross the file's chunk boundaries
  const std::vector<Attribution> sliced = stream_attribution(slices, windows, info);
  EXPECT_EQ(streamed.size(), cases.size());
  EXPECT_EQ(whole.size(), cases.size());
  EXPECT_EQ(sliced.size(), cases.size());
  for (size_t i = 0; i < cases.size() && i < streamed.size() && i < whole.size(); ++i)
    EXPECT_EQ(nlohmann::json(whole[i]), nlohmann::json(streamed[i])) << p << " window " << i;
  for (size_t i = 0; i < cases.size() && i < sliced.size() && i < whole.size(); ++i)
    EXPECT_EQ(nlohmann::json(whole[i]), nlohmann::json(sliced[i])) << p << " window " << i << " in slices";
  return stats;
}

// The whole trace (with its iterations when given) and a window inside it.
std::vector<Case> whole_and_window(const trace::Trace& t, int iterations = 6) {
  const auto [lo, hi] = t.time_span();
  const std::vector<Iteration> its = iterations > 0 ? steps(lo, hi, iterations) : std::vector<Iteration>{};
  std::vector<Iteration> later(its.begin() + (its.empty() ? 0 : 1), its.end());
  const Timestamp ws = later.empty() ? lo + (hi - lo) / 3 : later.front().start;
  return {{lo, hi, true, its}, {ws, hi, false, later}, {lo + (hi - lo) / 5, lo + (hi - lo) / 2, false, {}}};
}

// A hand-made rank: threads with nested ranges (links from forward to
// backward ranges, or emit_nvtx seq numbers), API calls with their GPU work
// launched later (often in a later chunk), CUDA-graph-like launches (one id,
// several kernels), a repeated API id, work without a call, ties of starts.
trace::Trace nested_ranks(uint64_t seed, bool links, bool shuffle) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  trace::Trace t;
  const trace::StringId cpu_op = t.strings.intern("cpu_op"), annotation = t.strings.intern("user_annotation"),
                        module = t.strings.intern("python_function"), nvtx = t.strings.intern("NVTX");
  const std::vector<std::string> op_names = {"aten::mm", "aten::add", "aten::conv2d", "aten::relu", "aten::copy_"};
  const trace::StringId launch = t.strings.intern("cudaLaunchKernel");
  std::vector<trace::StringId> kernels;
  for (const char* k : {"volta_sgemm_128x64_nn", "elementwise_kernel", "nchwToNhwcKernel", "tiny_kernel"})
    kernels.push_back(t.strings.intern(k));
  uint32_t corr = 100, link = 1;
  int64_t seq = 1;
  std::vector<std::pair<uint32_t, Timestamp>> launches;  // correlation id, launch time
  // Ranges on 3 threads: a module > operator > nested operator, with API calls inside.
  for (uint32_t thread = 1; thread <= 3; ++thread) {
    Timestamp now = 1'000'000 + thread * 7;
    std::vector<uint32_t> forward_links;
    std::vector<int64_t> forward_seqs;
    for (int step = 0; step < 40; ++step) {
      const bool backward = step % 4 == 3;
      const Timestamp m_start = now, m_len = uniform(5'000, 20'000);
      trace::NvtxRecord m;
      m.start = m_start;
      m.end = m_start + m_len;
      m.thread = thread;
      m.domain = links ? (step % 2 ? module : annotation) : nvtx;
      m.text = t.strings.intern(step % 2 ? "nn.Module: Block_" + std::to_string(step % 3)
                                         : "ProfilerStep#" + std::to_string(step));
      t.nvtx.push(m);
      Timestamp cur = m_start;  // an operator may start with its module (a tie)
      for (int op = 0; op < 3 && cur < m.end - 1000; ++op) {
        trace::NvtxRecord o;
        o.start = cur;
        o.end = std::min<Timestamp>(m.end + (op == 2 ? 500 : 0), cur + uniform(500, 4'000));  // may outlive the module
        o.thread = thread;
        const std::string& name = op_names[static_cast<size_t>(uniform(0, 4))];
        if (links) {
          o.domain = cpu_op;
          o.text = t.strings.intern(backward ? name + "Backward0" : name);
          if (!backward) {
            o.link = link;
            forward_links.push_back(link++);
          } else if (!forward_links.empty()) {
            o.link = forward_links[static_cast<size_t>(uniform(0, static_cast<int64_t>(forward_links.size()) - 1))];
          }
        } else {
          o.domain = nvtx;
          if (!backward) {
            o.text = t.strings.intern(name + ", seq = " + std::to_string(seq) + ", sizes = [[2, 3]]");
            forward_seqs.push_back(seq++);
          } else {
            const int64_t s =
                forward_seqs.empty()
                    ? 0
                    : forward_seqs[static_cast<size_t>(uniform(0, static_cast<int64_t>(forward_seqs.size()) - 1))];
            o.text = t.strings.intern("MmBackward0, seq = " + std::to_string(s));
          }
        }
        t.nvtx.push(o);
        // A nested operator and calls inside.
        trace::NvtxRecord inner = o;
        inner.start = o.start + uniform(0, 100);
        inner.end = inner.start + (o.end - o.start) / 2;
        inner.link = 0;
        inner.text = t.strings.intern(links ? "aten::empty" : "aten::empty, seq = " + std::to_string(seq - 1));
        t.nvtx.push(inner);
        for (Timestamp c = o.start + uniform(0, 50); c < o.end; c += uniform(200, 900)) {
          trace::ApiRecord a;
          a.start = c;
          a.end = c + uniform(1, 150);
          a.thread = thread;
          a.name = launch;
          a.correlation = uniform(0, 30) == 0 ? 0 : corr++;
          if (uniform(0, 40) == 0 && a.correlation > 101) a.correlation -= 1;  // a repeated id: the last call wins
          if (uniform(0, 60) == 0) a.correlation = 3'000'000 + corr;           // far from the others
          t.api.push(a);
          launches.push_back({a.correlation, c});
        }
        cur = o.end + uniform(0, 300);
      }
      now = m.end + uniform(0, 2'000);
    }
  }
  // API calls outside every range.
  for (int i = 0; i < 30; ++i) {
    trace::ApiRecord a;
    a.start = 1'000'000 + uniform(0, 2'000'000);
    a.end = a.start + 10;
    a.thread = 9;
    a.name = launch;
    a.correlation = corr++;
    t.api.push(a);
    launches.push_back({a.correlation, a.start});
  }
  // GPU work after its launch (sometimes long after), some without a call.
  for (auto [c, at] : launches) {
    const int copies = c % 7 == 0 ? 3 : 1;  // a graph launch: several kernels of one id
    for (int i = 0; i < copies; ++i) {
      const Timestamp s = at + uniform(0, 30'000) / 10 * 10;  // ties of starts
      const int64_t d = uniform(0, 20) == 0 ? 0 : uniform(1, 40'000);
      const int which = static_cast<int>(uniform(0, 9));
      if (which < 7) {
        trace::KernelRecord k;
        k.start = s;
        k.end = s + d;
        k.stream = static_cast<uint32_t>(uniform(1, 3));
        k.name = kernels[static_cast<size_t>(uniform(0, 3))];
        k.correlation = c;
        t.kernels.push(k);
      } else if (which < 9) {
        trace::MemcpyRecord m;
        m.start = s;
        m.end = s + d;
        m.kind = trace::MemcpyKind::kHtoD;
        m.bytes = 4096;
        m.correlation = c;
        t.memcpys.push(m);
      } else {
        trace::MemsetRecord m;
        m.start = s;
        m.end = s + d;
        m.correlation = c;
        t.memsets.push(m);
      }
    }
  }
  for (int i = 0; i < 40; ++i) {  // no launch call in the trace; one ends before it starts
    trace::KernelRecord k;
    k.start = 1'000'000 + uniform(0, 2'500'000);
    k.end = i == 0 ? k.start - 5 : k.start + uniform(0, 5'000);
    k.name = kernels[0];
    k.correlation = 5'000'000 + static_cast<uint32_t>(i);
    t.kernels.push(k);
  }
  // Tables in time order (as importers write them), or shuffled.
  auto reorder = [&](auto& table) {
    std::vector<size_t> order(table.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (shuffle) std::shuffle(order.begin(), order.end(), rng);
    else
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return table.start[x] < table.start[y]; });
    std::remove_cvref_t<decltype(table)> out;
    for (size_t i : order) out.push(table.row(i));
    table = std::move(out);
  };
  reorder(t.nvtx);
  reorder(t.api);
  reorder(t.kernels);
  reorder(t.memcpys);
  reorder(t.memsets);
  return t;
}

TEST(AttributionStreamTest, NestedRangesOnThreadsWithLinks) {
  TempDir dir;
  const trace::Trace t = nested_ranks(1, true, false);
  for (size_t rows : {size_t{7}, size_t{64}, size_t{1000}, size_t{1} << 20}) {
    const AttributionStreamStats s = expect_same(write_in_chunks(dir, t, rows), whole_and_window(t));
    EXPECT_GT(s.open_ranges, 2u);
  }
  // Backward ranges were placed under their forward modules.
  const fs::path p = write_in_chunks(dir, t, 64);
  trace::ChunkReader reader = trace::ChunkReader::open(p);
  ChunkSource chunks(reader);
  const trace::Trace whole = trace::read_trace(p);
  const auto a = stream_attribution(chunks, {{0, std::numeric_limits<Timestamp>::max(), true, nullptr}},
                                    classify_names(whole, KernelClassifier{}));
  EXPECT_GT(a.at(0).backward_links, 0);
  EXPECT_EQ(a.at(0).link_source, "fwdbwd flows");
  EXPECT_GT(a.at(0).no_launch_ns, 0);
  EXPECT_GT(a.at(0).outside_ranges_ns, 0);
}

TEST(AttributionStreamTest, NestedRangesWithEmitNvtxSeq) {
  TempDir dir;
  const trace::Trace t = nested_ranks(2, false, false);
  for (size_t rows : {size_t{5}, size_t{100}, size_t{1} << 20})
    expect_same(write_in_chunks(dir, t, rows), whole_and_window(t));
  const trace::Trace back = trace::read_trace(write_in_chunks(dir, t, 100));
  ChunkSource chunks(back);
  const auto a = stream_attribution(chunks, {{0, std::numeric_limits<Timestamp>::max(), true, nullptr}},
                                    classify_names(back, KernelClassifier{}));
  EXPECT_EQ(a.at(0).link_source, "emit_nvtx seq");
  EXPECT_GT(a.at(0).backward_links, 0);
}

// Tables out of time order: chunks overlap in time and rows within a chunk are unsorted.
TEST(AttributionStreamTest, RowsOutOfTimeOrder) {
  TempDir dir;
  for (uint64_t seed : {3, 4}) {
    const trace::Trace t = nested_ranks(seed, seed % 2 == 1, true);
    for (size_t rows : {size_t{50}, size_t{1} << 20}) expect_same(write_in_chunks(dir, t, rows), whole_and_window(t));
  }
}

// Ranges that cross chunk boundaries and kernels whose launch lies in an
// earlier chunk: the state kept is the work in flight, not the trace.
TEST(AttributionStreamTest, StateStaysBoundedOverManyChunks) {
  TempDir dir;
  const trace::Trace t = trace::make_synthetic_trace(60'000, 5);
  const fs::path p = write_in_chunks(dir, t, 500);
  const AttributionStreamStats s = expect_same(p, whole_and_window(t, 0));
  EXPECT_GT(t.api.size(), 10'000u);
  EXPECT_LT(s.correlations, t.api.size() / 10) << "correlation ids are dropped once their work was read";
  EXPECT_LT(s.host_rows, 2'000u);
  EXPECT_LT(s.gpu_rows, 3'000u);
  EXPECT_GT(s.correlations, 0u);
}

TEST(AttributionStreamTest, WithoutRangesOrCalls) {
  TempDir dir;
  trace::Trace t = nested_ranks(5, true, false);
  trace::Trace no_ranges = t;
  no_ranges.nvtx = {};
  expect_same(write_in_chunks(dir, no_ranges, 100), whole_and_window(no_ranges));
  trace::Trace no_calls = t;
  no_calls.api = {};
  expect_same(write_in_chunks(dir, no_calls, 100), whole_and_window(no_calls));
  trace::Trace no_gpu = t;
  no_gpu.kernels = {};
  no_gpu.memcpys = {};
  no_gpu.memsets = {};
  expect_same(write_in_chunks(dir, no_gpu, 100), {{0, 10, true, {}}});
}

// The inputs of the golden CLI tests (analyze/tests/golden_inputs.hpp), whole and
// windowed, in one chunk per table and in small chunks.
TEST(AttributionStreamTest, GoldenInputs) {
  TempDir dir;
  std::vector<trace::Trace> traces;
  for (auto [seed, pageable] : {std::pair<uint64_t, bool>{11, false}, {21, true}})
    for (int rank = 0; rank < 2; ++rank) traces.push_back(golden::ddp_rank(seed, rank, pageable));
  for (trace::Trace& t : golden::two_host_ranks()) traces.push_back(std::move(t));
  for (const trace::Trace& t : traces)
    for (size_t rows : {size_t{97}, size_t{1} << 20}) expect_same(write_in_chunks(dir, t, rows), whole_and_window(t));
}

// analyze_rank_streaming's attribution is analyze_rank's.
TEST(AttributionStreamTest, StreamingAnalysisCarriesIt) {
  TempDir dir;
  const fs::path p = write_in_chunks(dir, golden::ddp_rank(11, 0, false), 300);
  const RankAnalysis whole = analyze_rank(trace::read_trace(p), Options{});
  const RankAnalysis streamed = analyze_rank_streaming(p, Options{});
  EXPECT_TRUE(streamed.attribution.available) << streamed.attribution.reason;
  EXPECT_GT(streamed.attribution.attributed_ns, 0);
  EXPECT_EQ(nlohmann::json(whole.attribution), nlohmann::json(streamed.attribution));
  Options off;
  off.attribution = false;
  EXPECT_EQ(nlohmann::json(analyze_rank(trace::read_trace(p), off).attribution),
            nlohmann::json(analyze_rank_streaming(p, off).attribution));
}

TEST(AttributionStreamTest, SharedRealTrace) {
  // 170 MB of JSON: seconds in the release build, minutes under the sanitizers,
  // whose run of this code is the synthetic traces' tests.
  if (kSanitized) GTEST_SKIP() << "the shared real trace is read in the release build's run";
  const fs::path kineto = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
  if (!fs::exists(kineto)) GTEST_SKIP() << "real trace not found: " << kineto;
  TempDir dir;
  const trace::Trace t = trace::import_kineto_file(kineto);
  const fs::path p = write_in_chunks(dir, t, 4096);
  const RankAnalysis r = analyze_rank(trace::read_trace(p), Options{});
  ASSERT_TRUE(r.attribution.available) << r.attribution.reason;
  const auto [lo, hi] = std::pair{r.breakdown.window_start, r.breakdown.window_end};
  std::vector<Case> cases = {{lo, hi, true, r.iterations.iterations}};
  if (r.steady)
    cases.push_back(
        {r.steady->breakdown.window_start, r.steady->breakdown.window_end, false, r.steady->iterations.iterations});
  const AttributionStreamStats s = expect_same(p, cases);
  EXPECT_LT(s.correlations, t.api.size() / 4);  // 4096-row chunks: the work in flight, not the trace
  EXPECT_GT(s.link_contexts, 0u);
  EXPECT_LT(s.link_contexts, t.nvtx.size() / 50);  // forward ops whose backward has not run yet
  EXPECT_EQ(nlohmann::json(r.attribution), nlohmann::json(analyze_rank_streaming(p, Options{}).attribution));
  expect_same(write_in_chunks(dir, t, size_t{1} << 20, "whole.sstrace"), cases);
}

}  // namespace
}  // namespace scalescope::analyze
