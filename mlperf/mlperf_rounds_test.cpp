// Leave-one-round-out on real data: the MLPerf Training v5.0 results in
// ../shared (unpacked to a temporary folder) against the embedded v4.1 table.
// The interval's spread is fitted on one round and judged on the other; the
// figures checked are those docs/scaling.md reports, with a small margin, so
// a change that makes predictions or their calibration worse fails here.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mlperf/mlperf.hpp"
#include "scaling/spread_calibration_text.hpp"

namespace scalescope::mlperf {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("scalescope-mlperf-v50-{}", ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const scaling::ValidationBucket* bucket(const scaling::Validation& v, bool planned, const std::string& name) {
  for (const auto& b : v.buckets)
    if (b.kind == scaling::kDefaultCurveModel && b.batch_planned == planned && b.bucket == name) return &b;
  return nullptr;
}

// What docs/scaling.md ("Two rounds") reports, with a margin of about one
// point of error and one case of coverage: the largest median error at 2x
// and 4x, and the band the coverage of every bucket with at least 8 cases
// must stay in (the target is 70-90 %; the buckets that miss it are in the docs).
struct Limits {
  double median_2x, median_4x, coverage_min, coverage_max;
};

void check(const scaling::Validation& v, bool planned, const Limits& limits, const std::string& what) {
  SCOPED_TRACE(what + (planned ? ", batch as planned" : ", batch extrapolated"));
  // The figures, for the log (docs/scaling.md's table).
  std::string line = what + (planned ? ", planned:" : ", extrapolated:");
  for (const auto& b : v.buckets)
    if (b.kind == scaling::kDefaultCurveModel && b.batch_planned == planned)
      line += fmt::format(" {} {:.2f}% / {:.1f}% ({})", b.bucket, b.median_abs_rel_error * 100, b.coverage * 100,
                          b.cases);
  std::cout << line << "\n";
  const auto* b2 = bucket(v, planned, "2x");
  const auto* b4 = bucket(v, planned, "4x");
  const auto* all = bucket(v, planned, "all");
  ASSERT_NE(b2, nullptr);
  ASSERT_NE(b4, nullptr);
  ASSERT_NE(all, nullptr);
  EXPECT_LE(b2->median_abs_rel_error, limits.median_2x);
  EXPECT_LE(b4->median_abs_rel_error, limits.median_4x);
  // Over every case of the direction and setting: inside the target band.
  EXPECT_GE(all->coverage, 0.70);
  EXPECT_LE(all->coverage, 0.90);
  for (const auto& b : v.buckets) {
    if (b.kind != scaling::kDefaultCurveModel || b.batch_planned != planned || b.cases < 8) continue;
    EXPECT_GE(b.coverage, limits.coverage_min) << b.bucket << ", " << b.cases << " cases";
    EXPECT_LE(b.coverage, limits.coverage_max) << b.bucket << ", " << b.cases << " cases";
  }
}

TEST(MlperfRounds, LeaveOneRoundOutBetweenV41AndV50) {
  const fs::path tarball = fs::path(SCALESCOPE_SHARED_DIR) / "data/mlperf/training_results_v5.0.tar.xz";
  if (!fs::exists(tarball)) GTEST_SKIP() << "MLPerf v5.0 results not found (needs ../shared): " << tarball;
  TempDir dir;
  const std::string untar = fmt::format("tar -xJf '{}' -C '{}'", tarball.string(), dir.path().string());
  ASSERT_EQ(std::system(untar.c_str()), 0) << untar;
  const IngestResult v50 = ingest_results({dir.path()}, {});
  ASSERT_GT(v50.logs, 1500u);
  const std::vector<RoundRuns> rounds = {{"v4.1", read_runs_csv(default_runs_csv(), "embedded")},
                                         {"v5.0", v50.runs}};
  const auto& embedded = scaling::default_spread_calibration();
  {
    // The embedded calibration is the fit on both rounds, as its source says.
    ValidateOptions o;
    o.fit_rounds = {"v4.1", "v5.0"};
    o.distance = embedded.distance;
    o.pooled = embedded.pooled;
    o.source = embedded.source;
    const auto both = validate(rounds, {}, o).calibration;
    // Byte for byte what --write-calibration writes (the batch rule included).
    EXPECT_EQ(scaling::write_spread_calibration(both), std::string(scaling::detail::default_spread_calibration_text()));
    ASSERT_EQ(both.rows.size(), embedded.rows.size());
    for (const auto& r : both.rows) {
      const auto* e = embedded.find(r.kind, r.batch_planned, r.bucket == "16x+" ? 16 : std::stod(r.bucket));
      ASSERT_NE(e, nullptr) << r.bucket;
      EXPECT_NEAR(e->tau, r.tau, 1e-4) << scaling::model_name(r.kind) << " " << r.bucket;
      EXPECT_EQ(e->cases, r.cases) << scaling::model_name(r.kind) << " " << r.bucket;
    }
  }
  for (const auto& [fit, test] : {std::pair<std::string, std::string>{"v4.1", "v5.0"}, {"v5.0", "v4.1"}}) {
    ValidateOptions o;
    o.fit_rounds = {fit};
    o.test_rounds = {test};
    o.distance = embedded.distance;
    o.pooled = embedded.pooled;
    const RoundValidation rv = validate(rounds, {}, o);
    const std::string what = "fitted on " + fit + ", tested on " + test;
    // Every case judged belongs to the test round, every spread came from the other.
    for (const auto& c : rv.validation.cases) ASSERT_EQ(c.round, test) << c.curve;
    for (const auto& r : rv.calibration.rows) EXPECT_GT(r.cases, 0u);
    EXPECT_EQ(rv.calibration.batch_rule, embedded.batch_rule);
    EXPECT_TRUE(rv.calibration.batch_rule_backtests.empty());
    {
      // --batch-rule chosen: the best scored by the fitted round's own
      // backtests, and the tested round plays no part: without its table the
      // choice and the scores are the same.
      ValidateOptions choose = o;
      choose.choose_batch_rule = true;
      const RoundValidation chosen_rv = validate(rounds, {}, choose);
      const auto& cal = chosen_rv.calibration;
      ASSERT_EQ(cal.batch_rule_backtests.size(), std::size(scaling::kBatchRules)) << what;
      const auto chosen = std::find_if(cal.batch_rule_backtests.begin(), cal.batch_rule_backtests.end(),
                                       [&](const auto& x) { return x.rule == cal.batch_rule; });
      ASSERT_NE(chosen, cal.batch_rule_backtests.end());
      for (const auto& b : cal.batch_rule_backtests) {
        EXPECT_GT(b.cases, 20u) << scaling::batch_rule_name(b.rule);
        EXPECT_LE(chosen->score, b.score) << scaling::batch_rule_name(b.rule);
      }
      ValidateOptions alone = choose;
      alone.test_rounds.clear();
      const auto fitted_only = validate({fit == "v4.1" ? rounds[0] : rounds[1]}, {}, alone).calibration;
      EXPECT_EQ(fitted_only.batch_rule, cal.batch_rule) << what;
      ASSERT_EQ(fitted_only.batch_rule_backtests.size(), cal.batch_rule_backtests.size());
      for (size_t i = 0; i < cal.batch_rule_backtests.size(); ++i)
        EXPECT_DOUBLE_EQ(fitted_only.batch_rule_backtests[i].score, cal.batch_rule_backtests[i].score) << what;
      std::cout << what << ": batch rule chosen " << scaling::batch_rule_name(cal.batch_rule) << ", scores";
      for (const auto& b : cal.batch_rule_backtests)
        std::cout << fmt::format(" {} {:.2f}% ({})", scaling::batch_rule_name(b.rule), b.score * 100, b.cases);
      std::cout << "\n";
      check(chosen_rv.validation, false, {1, 1, 0, 1}, what + " (batch rule chosen)");
    }
    EXPECT_GE(rv.validation.curves, 5u) << what;
    if (fit == "v4.1") {
      check(rv.validation, false, {0.08, 0.09, 0.80, 0.97}, what);  // 6.7 %, 7.1 %; 86-96 %
      check(rv.validation, true, {0.07, 0.17, 0.70, 0.90}, what);   // 6.1 %, 15.6 %; 73-85 %
    } else {
      check(rv.validation, false, {0.10, 0.27, 0.68, 0.90}, what);  // 8.8 %, 25.0 %; 73-77 %
      check(rv.validation, true, {0.07, 0.11, 0.75, 0.97}, what);   // 5.1 %, 9.5 %; 80-94 %
    }
  }
}

}  // namespace
}  // namespace scalescope::mlperf
