// Leave-one-round-out on real data: the MLPerf Training v5.0 results in
// ../shared (unpacked to a temporary folder) against the embedded v4.1 table.
// The interval's spread is fitted on one round and judged on the other; the
// figures checked are those docs/scaling.md reports, with a small margin, so
// a change that makes predictions or their calibration worse fails here.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mlperf/mlperf.hpp"

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

struct Limits {
  double median_2x, median_4x;  // the largest median error allowed
};

// Coverage of the 80 % intervals in every bucket with at least 8 cases, and
// the point error at 2x and 4x.
void check(const scaling::Validation& v, bool planned, const Limits& limits, const std::string& what) {
  SCOPED_TRACE(what + (planned ? ", batch as planned" : ", batch extrapolated"));
  const auto* b2 = bucket(v, planned, "2x");
  const auto* b4 = bucket(v, planned, "4x");
  ASSERT_NE(b2, nullptr);
  ASSERT_NE(b4, nullptr);
  EXPECT_LE(b2->median_abs_rel_error, limits.median_2x);
  EXPECT_LE(b4->median_abs_rel_error, limits.median_4x);
  for (const auto& b : v.buckets) {
    if (b.kind != scaling::kDefaultCurveModel || b.batch_planned != planned || b.cases < 8) continue;
    EXPECT_GE(b.coverage, 0.70) << b.bucket << ", " << b.cases << " cases";
    EXPECT_LE(b.coverage, 0.90 + 1e-9) << b.bucket << ", " << b.cases << " cases";
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
  for (const auto& [fit, test] : {std::pair<std::string, std::string>{"v4.1", "v5.0"}, {"v5.0", "v4.1"}}) {
    ValidateOptions o;
    o.fit_rounds = {fit};
    o.test_rounds = {test};
    o.distance = scaling::default_spread_calibration().distance;
    const RoundValidation rv = validate(rounds, {}, o);
    const std::string what = "fitted on " + fit + ", tested on " + test;
    // Every case judged belongs to the test round, every spread came from the other.
    for (const auto& c : rv.validation.cases) ASSERT_EQ(c.round, test) << c.curve;
    for (const auto& r : rv.calibration.rows) EXPECT_GT(r.cases, 0u);
    EXPECT_GE(rv.validation.curves, 5u) << what;
    check(rv.validation, true, fit == "v4.1" ? Limits{0.10, 0.15} : Limits{0.10, 0.15}, what);
    check(rv.validation, false, fit == "v4.1" ? Limits{0.10, 0.15} : Limits{0.10, 0.30}, what);
  }
}

}  // namespace
}  // namespace scalescope::mlperf
