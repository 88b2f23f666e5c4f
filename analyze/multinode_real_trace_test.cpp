// Clock alignment on real traces with known offsets: the study's 2-rank H200
// runs (examples/h200/*/traces/*-g2-*.ssrun, both ranks on one host, so the
// true offset between them is 0). Rank 1 is given another host name and its
// clock is shifted by 1 us, 100 us, 5 ms, 50 ms, -50 ms and 5 ms plus a 30 ppm
// drift; alignment must recover each within 5 us at every collective, and the
// straggler analysis must then give the answer of the unshifted run.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/tests/sanitizer.hpp"
#include "analyze/analyze.hpp"
#include "trace/import/clock_alignment.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;

constexpr double kToleranceNs = 5'000;

struct Shift {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t at_unix_ns = 0;  // where the drift term is 0
  int64_t operator()(int64_t unix_ns) const {
    return offset_ns + std::llround(drift_ppm * 1e-6 * static_cast<double>(unix_ns - at_unix_ns));
  }
};

std::vector<fs::path> two_rank_runs() {
  std::vector<fs::path> runs;
  std::error_code ec;
  const fs::path root = fs::path(SCALESCOPE_SOURCE_DIR) / "examples/h200";
  for (const auto& study : fs::directory_iterator(root, ec)) {
    const fs::path traces = study.path() / "traces";
    if (!fs::is_directory(traces, ec)) continue;
    for (const auto& run : fs::directory_iterator(traces, ec))
      if (run.path().filename().string().find("-g2-") != std::string::npos) runs.push_back(run.path());
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::vector<trace::Trace> load_unaligned(const fs::path& run) {
  trace::LoadOptions o;
  o.align_clocks = false;
  return trace::load_run(run, o);
}

size_t index_of_rank(const std::vector<trace::Trace>& traces, int32_t rank) {
  for (size_t i = 0; i < traces.size(); ++i)
    if (traces[i].meta.rank == rank) return i;
  ADD_FAILURE() << "no rank " << rank;
  return 0;
}

// Another host whose clock reads shift(t) ahead: its anchors map to shifted Unix times.
void move_to_other_host(trace::Trace& t, const Shift& shift) {
  t.meta.hostname = "node1";
  for (trace::ClockAnchor& a : t.meta.clock) a.unix_ns += shift(a.unix_ns);
}

std::vector<Shift> shifts(int64_t run_start) {
  return {{1'000, 0, run_start},      {100'000, 0, run_start},     {5'000'000, 0, run_start},
          {50'000'000, 0, run_start}, {-50'000'000, 0, run_start}, {5'000'000, 30, run_start}};
}

class MultinodeRealTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    runs_ = two_rank_runs();
    if (runs_.empty()) GTEST_SKIP() << "no 2-rank runs under examples/h200/*/traces";
  }
  std::vector<fs::path> runs_;
};

TEST_F(MultinodeRealTrace, RecoversKnownOffsetsWithin5us) {
  for (const fs::path& run : runs_) {
    const std::vector<trace::Trace> base = load_unaligned(run);
    const size_t r1 = index_of_rank(base, 1);
    const trace::RankCollectives ends = trace::collectives_of(base[r1]);
    ASSERT_GT(ends.ends.size(), 20u) << run;
    for (const Shift& s : shifts(ends.ends.front().end_unix_ns)) {
      std::vector<trace::Trace> traces = base;
      move_to_other_host(traces[r1], s);
      const trace::ClockAlignment a = trace::align_clocks(traces);
      const trace::HostClock* h = a.find("node1");
      ASSERT_NE(h, nullptr) << run;
      EXPECT_EQ(a.hosts.front().hostname, "vm") << "rank 0's host is the reference";
      ASSERT_GT(h->matched, 20) << run;
      const bool small = std::abs(s.offset_ns) <= 2'000 && s.drift_ppm == 0;
      EXPECT_EQ(h->status, small ? trace::HostClockStatus::kAgrees : trace::HostClockStatus::kAligned)
          << run << " offset " << s.offset_ns;
      // The estimate, at every collective of the run.
      double worst = 0;
      for (const trace::CollectiveEnd& e : ends.ends) {
        const int64_t shifted = e.end_unix_ns + s(e.end_unix_ns);
        worst = std::max(worst, std::abs(static_cast<double>(h->correction_at(shifted) - s(e.end_unix_ns))));
      }
      EXPECT_LE(worst, kToleranceNs) << run << " offset " << s.offset_ns << " drift " << s.drift_ppm
                                     << " ppm: estimate " << h->offset_ns << " ns, " << h->drift_ppm << " ppm";
      EXPECT_LE(h->uncertainty_ns, kToleranceNs) << run;
      if (s.drift_ppm != 0) {
        // Found as a drift (what matters, the error at every collective, is checked above).
        EXPECT_NEAR(h->drift_ppm, s.drift_ppm, 0.1 * s.drift_ppm) << run;
      }
      // What was applied: rank 1's times read the reference clock again.
      if (h->applied()) {
        const trace::RankCollectives back = trace::collectives_of(traces[r1]);
        ASSERT_EQ(back.ends.size(), ends.ends.size());
        for (size_t i = 0; i < ends.ends.size(); i += 7)
          EXPECT_NEAR(static_cast<double>(back.ends[i].end_unix_ns), static_cast<double>(ends.ends[i].end_unix_ns),
                      kToleranceNs)
              << run << " collective " << i;
      }
    }
  }
}

void expect_same_stragglers(const StragglerStats& want, const StragglerStats& got, const std::string& what) {
  ASSERT_EQ(want.availability.available, got.availability.available) << what << ": " << got.availability.reason;
  EXPECT_EQ(want.matched_collectives, got.matched_collectives) << what;
  EXPECT_EQ(want.unmatched_collectives, got.unmatched_collectives) << what;
  ASSERT_EQ(want.ranks.size(), got.ranks.size()) << what;
  // A residual error e moves each lateness by at most e.
  const double slack = kToleranceNs * static_cast<double>(std::max<int64_t>(1, want.matched_collectives));
  for (size_t i = 0; i < want.ranks.size(); ++i) {
    EXPECT_EQ(want.ranks[i].rank, got.ranks[i].rank) << what << ": the order of lateness";
    EXPECT_NEAR(static_cast<double>(want.ranks[i].total_late_ns), static_cast<double>(got.ranks[i].total_late_ns),
                slack)
        << what << " rank " << want.ranks[i].rank;
  }
  EXPECT_NEAR(static_cast<double>(want.total_wait_ns), static_cast<double>(got.total_wait_ns), slack) << what;
}

TEST_F(MultinodeRealTrace, StragglersGiveTheUnshiftedAnswer) {
  // Every two-rank example run, shifted and aligned again: seconds in the release
  // build, about a minute under the sanitizers, which run the offsets test above.
  if (kSanitized) GTEST_SKIP() << "the example runs are analysed in the release build's run";
  for (const fs::path& run : runs_) {
    const std::vector<trace::Trace> base = load_unaligned(run);
    const size_t r1 = index_of_rank(base, 1);
    std::vector<RankAnalysis> analysed;
    for (const trace::Trace& t : base) analysed.push_back(analyze_rank(t, Options{}));
    const RunAnalysis want = combine(analysed);
    const int64_t start = trace::collectives_of(base[r1]).ends.front().end_unix_ns;
    for (const Shift& s : shifts(start)) {
      // The whole path once (trace -> analysis), the collectives alone for the rest.
      std::vector<RankAnalysis> ranks = analysed;
      if (s.offset_ns == 5'000'000 && s.drift_ppm == 0) {
        trace::Trace moved = base[r1];
        move_to_other_host(moved, s);
        ranks[r1] = analyze_rank(moved, Options{});
      } else {
        ranks[r1].hostname = "node1";
        for (CollectiveArrival& c : ranks[r1].collectives) {
          c.arrival_unix_ns += s(c.arrival_unix_ns);
          c.end_unix_ns += s(c.end_unix_ns);
        }
      }
      const std::string what = run.filename().string() + " shifted by " + std::to_string(s.offset_ns) + " ns, " +
                               std::to_string(s.drift_ppm) + " ppm";
      const RunAnalysis got = combine(ranks);
      expect_same_stragglers(want.stragglers, got.stragglers, what);
      ASSERT_TRUE(got.nodes.availability.available) << what;
      EXPECT_EQ(got.nodes.nodes.size(), 2u) << what;
      if (std::abs(s.offset_ns) >= 100'000) {
        // Without alignment the same shift breaks the analysis (or moves it):
        // the test would catch alignment doing nothing.
        const RunAnalysis off = combine(ranks, false);
        EXPECT_TRUE(!off.stragglers.availability.available ||
                    std::abs(off.stragglers.total_wait_ns - want.stragglers.total_wait_ns) >
                        static_cast<int64_t>(kToleranceNs) * want.stragglers.matched_collectives)
            << what;
        EXPECT_EQ(off.clocks.find("node1")->status, trace::HostClockStatus::kDisabled) << what;
      }
    }
  }
}

}  // namespace
}  // namespace scalescope::analyze
