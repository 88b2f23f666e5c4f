// The interval algebra's buffered paths (lists merged run by run,
// spans merged as they are appended, scratch reused across ranks) give the
// very unions the plain sort-and-merge gives.
#include "analyze/intervals.hpp"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "trace/model/synthetic_trace.hpp"

namespace scalescope::analyze {
namespace {

// `runs` sorted runs of random spans (some empty, some touching), concatenated.
Intervals random_runs(std::mt19937_64& rng, int runs, int per_run) {
  Intervals v;
  std::uniform_int_distribution<int64_t> step(0, 30), len(-2, 40);
  for (int r = 0; r < runs; ++r) {
    int64_t t = static_cast<int64_t>(rng() % 50);
    for (int i = 0; i < per_run; ++i) {
      t += step(rng);
      v.push_back({t, t + len(rng)});
    }
  }
  return v;
}

TEST(IntervalsTest, RunMergeGivesTheSortedUnion) {
  std::mt19937_64 rng(5);
  Intervals buffer{{7, 9}};  // stale content must not leak into the result
  for (int runs : {1, 2, 3, 5, 8, 64, 65, 300}) {
    for (int trial = 0; trial < 20; ++trial) {
      Intervals v = random_runs(rng, runs, 1 + static_cast<int>(rng() % 40));
      Intervals expected = v;
      normalize(expected);
      normalize(v, buffer);
      ASSERT_EQ(v, expected) << runs << " runs";
    }
  }
}

TEST(IntervalsTest, AppendMergesIntoTheSameUnion) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const Intervals rows = random_runs(rng, 1 + static_cast<int>(rng() % 4), 50);
    Intervals appended, pushed = rows;
    for (const Interval& iv : rows) append(appended, iv);
    EXPECT_LE(appended.size(), rows.size());
    Intervals buffer;
    normalize(appended, buffer);
    normalize(pushed);
    ASSERT_EQ(appended, pushed);
  }
  Intervals v;
  append(v, {10, 20});
  append(v, {20, 25});  // touching: merged
  append(v, {30, 30});  // empty: dropped
  append(v, {26, 28});  // after a gap: kept apart
  append(v, {5, 12});   // out of order: kept for normalize
  EXPECT_EQ(v, (Intervals{{10, 25}, {26, 28}, {5, 12}}));
}

TEST(IntervalsTest, UniteIntoAReusedList) {
  const Intervals a{{0, 10}, {20, 30}}, b{{5, 22}, {40, 50}};
  Intervals out{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}};
  unite(a, b, out);
  EXPECT_EQ(out, (Intervals{{0, 30}, {40, 50}}));
}

TEST(IntervalsTest, UnionGapsAreThoseOfTheBuiltUnion) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    Intervals a = random_runs(rng, 1, 40), b = random_runs(rng, 1, 40);
    normalize(a);
    normalize(b);
    const Intervals u = unite(a, b);
    for (int64_t limit : {1, 5, 20, 1000}) {
      int64_t count = 0, sum = 0;
      for (size_t i = 1; i < u.size(); ++i) {
        const int64_t gap = u[i].start - u[i - 1].end;
        if (gap > 0 && gap < limit) {
          ++count;
          sum += gap;
        }
      }
      ASSERT_EQ(union_gaps(a, b, limit), std::make_pair(count, sum));
    }
  }
  EXPECT_EQ(union_gaps({{0, 10}, {30, 40}}, {{12, 20}}, 100), std::make_pair(int64_t{2}, int64_t{12}));
}

// One scratch serving several ranks in turn, a large one first, gives each
// rank the analysis a fresh scratch gives (nothing of an earlier rank left).
TEST(WindowScratchTest, ReusedAcrossRanksGivesTheSameAnalysis) {
  trace::SyntheticOptions big, small;
  big.events = 60'000;
  big.seed = 2;
  small.events = 8'000;
  small.seed = 4;
  small.rank = 1;
  small.device = 3;  // other stream keys than the first rank's
  const trace::Trace first = trace::make_synthetic_trace(big), second = trace::make_synthetic_trace(small);
  const Options options;
  detail::WindowScratch shared;
  for (const trace::Trace* t : {&first, &second, &first}) {
    const RankAnalysis reused = detail::analyze_rank(*t, options, shared);
    const RankAnalysis fresh = analyze_rank(*t, options);
    ASSERT_EQ(nlohmann::json(reused).dump(), nlohmann::json(fresh).dump());
    ASSERT_TRUE(reused.steady && fresh.steady);
    ASSERT_EQ(nlohmann::json(*reused.steady).dump(), nlohmann::json(*fresh.steady).dump());
    EXPECT_GT(reused.breakdown.streams.size(), 1u);
    ASSERT_EQ(reused.collectives.size(), fresh.collectives.size());
    EXPECT_FALSE(reused.collectives.empty());
    for (size_t i = 0; i < reused.collectives.size(); ++i)
      EXPECT_EQ(reused.collectives[i].arrival_unix_ns, fresh.collectives[i].arrival_unix_ns);
  }
}

}  // namespace
}  // namespace scalescope::analyze
