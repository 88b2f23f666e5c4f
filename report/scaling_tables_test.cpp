#include "report/scaling_tables.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sweep/scaling_study.hpp"
#include "base/error.hpp"

namespace scalescope::sweep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The tables of `scalescope scaling`, rendered from the typed study.
std::vector<report::Table> scaling_report(const StoredSweep& sweep, const ScalingStudyOptions& options) {
  return report::scaling_tables(study_scaling(sweep, options));
}

// A stored sweep over pin=0,1 and 1,2,4 GPUs: pin=0 follows T = 100/N + 10,
// pin=1 is 10% faster; three repetitions each with +-1% spread.
StoredSweep make_sweep(bool throughput = false) {
  StoredSweep s;
  s.id = 1;
  s.metric = throughput ? "regex" : "wall_s";
  s.higher_is_better = throughput;
  s.spec_json = R"({"vary":[{"key":"pin","values":["0","1"]}]})";
  int index = 0;
  for (int rep = 0; rep < 3; ++rep)
    for (const char* pin : {"1", "0"})
      for (int n : {4, 1, 2}) {
        StoredRun r;
        r.plan_index = index++;
        r.config = {{"pin", pin}};
        r.gpus = n;
        r.rep = rep;
        r.status = RunStatus::kOk;
        const double t = (100.0 / n + 10) * (pin[0] == '1' ? 0.9 : 1.0) * (1 + 0.01 * (rep - 1));
        r.metrics[s.metric] = throughput ? 1000.0 / t : t;
        r.run_dir = "/tmp/x.db.runs/" + std::to_string(r.plan_index);
        s.runs.push_back(r);
      }
  s.planned_runs = index;
  return s;
}

const report::Table& find(const std::vector<report::Table>& tables, const std::string& prefix) {
  for (const auto& t : tables)
    if (t.title().rfind(prefix, 0) == 0) return t;
  throw std::runtime_error("no table " + prefix);
}

double d(const report::Cell& c) { return std::holds_alternative<double>(c) ? std::get<double>(c) : NAN; }
int64_t i(const report::Cell& c) { return std::holds_alternative<int64_t>(c) ? std::get<int64_t>(c) : -1; }
std::string s(const report::Cell& c) { return std::holds_alternative<std::string>(c) ? std::get<std::string>(c) : ""; }

TEST(ScalingReport, TablesFromAStoredSweep) {
  const auto tables = scaling_report(make_sweep(), {});
  const auto& main = find(tables, "Scaling of wall_s");
  ASSERT_EQ(main.rows().size(), 6u);
  // Configurations in --vary order (pin=0 first), GPU counts ascending.
  EXPECT_EQ(s(main.rows()[0][0]), "pin=0");
  EXPECT_EQ(i(main.rows()[0][1]), 1);
  EXPECT_EQ(i(main.rows()[0][2]), 3);
  EXPECT_NEAR(d(main.rows()[0][3]), 110, 1e-9);
  EXPECT_NEAR(d(main.rows()[2][6]), 110.0 / 35, 1e-9);        // speedup at 4 GPUs
  EXPECT_NEAR(d(main.rows()[2][9]), 110.0 / (4 * 35), 1e-9);  // E' at 4 GPUs = 0.786
  EXPECT_NEAR(d(main.rows()[2][12]), 4 * 35.0 / 3600, 1e-12);
  const auto& be = find(tables, "Break-even");
  // E'(2) = 110/120 = 0.917, E'(4) = 0.786: rule (a) gives 2.
  EXPECT_EQ(i(be.rows()[0][2]), 2);
  const auto& runs = find(tables, "Runs");
  EXPECT_EQ(runs.rows().size(), 6u);
  const auto& cmp = find(tables, "Configurations compared");
  ASSERT_EQ(cmp.rows().size(), 3u);
  for (const auto& row : cmp.rows()) {
    EXPECT_NEAR(d(row[9]), 0.9, 1e-9);
    ASSERT_TRUE(std::holds_alternative<bool>(row[14]));  // a boolean, true in JSON, yes on the terminal
    EXPECT_TRUE(std::get<bool>(row[14]));
  }
}

// `scaling --format json` is the typed study: every number of the tables,
// under its own key, none found by a title.
TEST(ScalingReport, TypedJsonCarriesTheNumbersOfTheTables) {
  for (const bool throughput : {false, true}) {
    ScalingStudyOptions o;
    o.predict = {8};
    const ScalingStudy study = study_scaling(make_sweep(throughput), o);
    const auto tables = report::scaling_tables(study);
    const nlohmann::json j = study;
    EXPECT_EQ(j["metric"], throughput ? "regex" : "wall_s");
    EXPECT_EQ(j["metric_in_seconds"], !throughput);
    const auto& main = find(tables, "Scaling of");
    size_t row = 0;
    for (const auto& c : j["configs"])
      for (const auto& r : c["scaling"]["rows"]) {
        const auto& cells = main.rows().at(row++);
        EXPECT_EQ(c["label"], s(cells[0]));
        EXPECT_EQ(r["gpus"], i(cells[1]));
        EXPECT_EQ(r["time"]["n"], i(cells[2]));
        EXPECT_DOUBLE_EQ(r["time"]["median"].get<double>(), d(cells[3]));
        EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), d(cells[6]));
        EXPECT_DOUBLE_EQ(r["efficiency"].get<double>(), d(cells[9]));
        // No GPU-hours for a non-time metric, as the table.
        EXPECT_EQ(r["gpu_hours"].is_null(), throughput);
        if (!throughput) {
          EXPECT_DOUBLE_EQ(r["gpu_hours"].get<double>(), d(cells[12]));
        }
      }
    EXPECT_EQ(row, main.rows().size());
    const auto& be = find(tables, "Break-even");
    EXPECT_EQ(j["configs"][0]["scaling"]["break_even"]["by_threshold"], i(be.rows()[0][2]));
    const auto& cmp = find(tables, "Configurations compared");
    ASSERT_EQ(j["comparisons"].size(), cmp.rows().size());
    EXPECT_DOUBLE_EQ(j["comparisons"][0]["result"]["ratio"].get<double>(), d(cmp.rows()[0][9]));
    EXPECT_EQ(j["comparisons"][0]["result"]["differs"], std::get<bool>(cmp.rows()[0][14]));
    const auto& pred = find(tables, "Prediction");
    const auto& p0 = j["configs"][0]["predictions"][0]["predictions"][0];
    EXPECT_EQ(p0["gpus"], 8);
    EXPECT_DOUBLE_EQ(p0["time"].get<double>(), d(pred.rows()[0][3]));
    EXPECT_DOUBLE_EQ(p0["efficiency"].get<double>(), d(pred.rows()[0][6]));
  }
}

TEST(ScalingReport, ConfigurationTableHoldsTheMainTablesNumbers) {
  for (const bool throughput : {false, true}) {
    const ScalingStudy study = study_scaling(make_sweep(throughput), {});
    const auto tables = report::scaling_tables(study);
    const auto& main = find(tables, "Scaling of");
    size_t row = 0;
    for (const auto& c : study.configs) {
      const report::Table t = report::scaling_config_table(c, study);
      EXPECT_EQ(t.title(), "Scaling: " + c.label);
      ASSERT_EQ(t.rows().size(), c.table->rows.size());
      for (const auto& cells : t.rows()) {
        const auto& m = main.rows().at(row++);
        EXPECT_EQ(i(cells[0]), i(m[1]));                 // GPUs
        EXPECT_EQ(i(cells[1]), i(m[2]));                 // runs
        EXPECT_DOUBLE_EQ(d(cells[2]), d(m[3]));          // median
        EXPECT_DOUBLE_EQ(d(cells[5]), d(m[6]));          // speedup
        EXPECT_DOUBLE_EQ(d(cells[6]), d(m[9]));          // E'
        EXPECT_EQ(std::isnan(d(cells[9])), throughput);  // GPU-hours only for a time
        EXPECT_EQ(s(cells[10]) == "yes", std::get<bool>(m[15]));
      }
    }
    EXPECT_EQ(row, main.rows().size());
  }
}

TEST(ScalingReport, ThroughputIsConvertedToTime) {
  const auto tables = scaling_report(make_sweep(true), {});
  const auto& main = find(tables, "Scaling of regex");
  EXPECT_NEAR(d(main.rows()[0][3]), 0.110, 1e-9);  // 1 / (1000/110)
  EXPECT_NEAR(d(main.rows()[1][6]), 110.0 / 60, 1e-9);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(main.rows()[0][12])) << "no GPU-hours for a non-time metric";
}

TEST(ScalingReport, PredictionAndCompareOptions) {
  ScalingStudyOptions o;
  o.predict = {8, 16};
  o.compare = Variable::parse("pin=1,0");
  const auto tables = scaling_report(make_sweep(), o);
  const auto& pred = find(tables, "Prediction");
  // Two configurations x three models (Amdahl, compute+comm+fixed, power law) x two GPU counts.
  ASSERT_EQ(pred.rows().size(), 12u);
  // pin=0, Amdahl: T(8) = 100/8 + 10 exactly (the data follow Amdahl's law).
  EXPECT_EQ(s(pred.rows()[0][1]), "amdahl");
  EXPECT_NEAR(d(pred.rows()[0][3]), 22.5, 0.2);
  // The 80% interval around it: 8 is 2x the largest count (4), so d = 2.
  EXPECT_LT(d(pred.rows()[0][4]), 22.5);
  EXPECT_GT(d(pred.rows()[0][5]), 22.5);
  EXPECT_EQ(s(pred.rows()[4][1]), "power law");
  // --global-batch-grows puts the step x converge model first.
  ScalingStudyOptions g;
  g.predict = {8};
  g.global_batch_grows = true;
  const auto grown = scaling_report(make_sweep(), g);
  EXPECT_EQ(s(find(grown, "Prediction").rows()[0][1]), "step x converge");
  EXPECT_EQ(find(grown, "Prediction").rows().size(), 8u);
  // The batch assumed and where it came from: N per-GPU batches, extrapolated;
  // a planned one replaces it and moves the step time (each run a fixed number of steps).
  const auto& grown_row = find(grown, "Prediction").rows()[0];
  EXPECT_EQ(s(grown_row[8]), "extrapolated");
  EXPECT_NEAR(d(grown_row[7]), 8, 1e-9);
  // 2x is backtested; 1024x is beyond any backtest, and the row says so, interval and batch still given.
  EXPECT_EQ(s(grown_row[11]), "yes");
  g.predict = {4096};
  const auto far = find(scaling_report(make_sweep(), g), "Prediction").rows()[0];
  EXPECT_EQ(s(far[11]).rfind("outside the validated range: ", 0), 0u) << s(far[11]);
  EXPECT_LT(d(far[4]), d(far[3]));
  EXPECT_GT(d(far[5]), d(far[3]));
  EXPECT_NEAR(d(far[7]), 4096, 1e-9);
  g.predict = {8};
  g.planned_batch = {{8, 4}};
  const auto planned = scaling_report(make_sweep(), g);
  const auto& planned_row = find(planned, "Prediction").rows()[0];
  EXPECT_EQ(s(planned_row[8]), "planned");
  EXPECT_NEAR(d(planned_row[7]), 4, 1e-9);
  EXPECT_NE(d(planned_row[10]), d(grown_row[10]));
  const auto& cmp = find(tables, "Configurations compared");
  EXPECT_EQ(s(cmp.rows()[0][1]), "1");
  EXPECT_NEAR(d(cmp.rows()[0][9]), 1 / 0.9, 1e-9);
  o.compare = Variable::parse("color=red,blue");
  EXPECT_THROW(scaling_report(make_sweep(), o), Error);
}

TEST(ScalingReport, AllFailedIsAClearError) {
  auto sweep = make_sweep();
  for (auto& r : sweep.runs) {
    r.status = RunStatus::kFailed;
    r.metrics.clear();
  }
  sweep.runs[0].status = RunStatus::kTimeout;
  try {
    scaling_report(sweep, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no run of the sweep has the metric 'wall_s'"));
    EXPECT_THAT(e.what(), HasSubstr("17 failed, 1 timeout"));
    EXPECT_THAT(e.what(), HasSubstr("first: run 0 (gpus=4 pin=1) timeout"));
  }
  // Only one configuration failing: the other is reported, the failure noted.
  sweep = make_sweep();
  for (auto& r : sweep.runs)
    if (r.config[0].second == "1") r.status = RunStatus::kCrashed;
  const auto tables = scaling_report(sweep, {});
  const auto& main = find(tables, "Scaling of wall_s");
  EXPECT_EQ(main.rows().size(), 3u);
}

// A profiled sweep of a DDP job with a fixed per-GPU batch (weak scaling), as
// the study measured it on H200: iteration time 73 ms at 1 GPU, 85 ms at 2.
// compute_per_iter: one GPU's compute per iteration at 1 and 2 GPUs.
StoredSweep iteration_sweep(std::optional<std::pair<double, double>> compute_per_iter) {
  StoredSweep s;
  s.id = 2;
  s.metric = "iteration_s";
  s.spec_json = "{}";
  int index = 0;
  for (int rep = 0; rep < 3; ++rep)
    for (int n : {1, 2}) {
      StoredRun r;
      r.plan_index = index++;
      r.gpus = n;
      r.rep = rep;
      r.status = RunStatus::kOk;
      r.metrics["iteration_s"] = (n == 1 ? 0.073 : 0.085) * (1 + 0.01 * (rep - 1));
      if (compute_per_iter)
        r.metrics["compute_s_per_iter"] = n == 1 ? compute_per_iter->first : compute_per_iter->second;
      s.runs.push_back(r);
    }
  s.planned_runs = index;
  return s;
}

std::string notes_of(const report::Table& t) {
  return nlohmann::json::parse(t.to_json()).value("notes", nlohmann::json::array()).dump();
}

TEST(ScalingReportWeak, IterationTimeOfWeakScalingIsFlaggedFromTheTraces) {
  const auto tables = scaling_report(iteration_sweep(std::make_pair(0.050, 0.051)), {});
  const auto& main = find(tables, "Scaling of iteration_s (time;");
  ASSERT_EQ(main.rows().size(), 2u);
  EXPECT_NEAR(d(main.rows()[1][9]), 0.073 / (2 * 0.085), 1e-9);  // E' on step time, as asked
  EXPECT_THAT(notes_of(main),
              HasSubstr("WARNING: weak scaling (one GPU's compute per iteration in the traces: 1.02x at N=2"));
  EXPECT_THAT(notes_of(main), HasSubstr("understate scaling by N/N_ref"));
}

TEST(ScalingReportWeak, WeakTurnsStepTimesIntoTimePerUnitOfWork) {
  ScalingStudyOptions o;
  o.weak = true;
  o.predict = {4};
  auto tables = scaling_report(iteration_sweep(std::make_pair(0.050, 0.051)), o);
  const auto& main = find(tables, "Scaling of iteration_s (weak scaling: time per unit of work");
  EXPECT_NEAR(d(main.rows()[1][3]), 0.085 / 2, 1e-12);         // median: step time / N
  EXPECT_NEAR(d(main.rows()[1][9]), 0.073 / 0.085, 1e-9);      // E' = T_step(1) / T_step(2) = 0.86
  EXPECT_NEAR(d(main.rows()[1][6]), 2 * 0.073 / 0.085, 1e-9);  // S
  EXPECT_THAT(notes_of(main), Not(HasSubstr("WARNING")));
  EXPECT_THAT(s(find(tables, "Prediction").rows()[0][14]), HasSubstr("not fitted: the models assume strong scaling"));
  // A growing global batch is fitted under --weak too, on the step times as measured.
  o.global_batch_grows = true;
  const auto grown = scaling_report(iteration_sweep(std::make_pair(0.050, 0.051)), o);
  EXPECT_EQ(s(find(grown, "Prediction").rows()[0][1]), "step x converge");
  o.global_batch_grows = false;
  // Per sample with the per-GPU batch: seconds per image, the same E'.
  o.samples_per_gpu_step = 128;
  tables = scaling_report(iteration_sweep(std::nullopt), o);
  const auto& per_image = find(tables, "Scaling of iteration_s (weak scaling: time per sample = value / (N x 128)");
  EXPECT_NEAR(d(per_image.rows()[1][3]), 0.085 / 256, 1e-12);
  EXPECT_NEAR(d(per_image.rows()[1][9]), 0.073 / 0.085, 1e-9);
  o.samples_per_gpu_step = -1;
  EXPECT_THROW(scaling_report(iteration_sweep(std::nullopt), o), Error);
  o.samples_per_gpu_step = 128;
  o.weak = false;
  EXPECT_THROW(scaling_report(iteration_sweep(std::nullopt), o), Error);
}

TEST(ScalingReportWeak, StrongScalingInTheTracesOrUnknown) {
  // Compute per iteration halves at 2 GPUs: strong scaling, no warning.
  auto main = find(scaling_report(iteration_sweep(std::make_pair(0.050, 0.026)), {}), "Scaling of iteration_s");
  EXPECT_THAT(notes_of(main), HasSubstr("strong scaling (one GPU's compute per iteration"));
  EXPECT_THAT(notes_of(main), Not(HasSubstr("WARNING")));
  // No trace evidence: the general warning.
  main = find(scaling_report(iteration_sweep(std::nullopt), {}), "Scaling of iteration_s");
  EXPECT_THAT(notes_of(main), HasSubstr("WARNING: 'iteration_s' is a time per step"));
  // --strong silences it, but not against the traces' evidence.
  ScalingStudyOptions o;
  o.weak = false;
  main = find(scaling_report(iteration_sweep(std::nullopt), o), "Scaling of iteration_s");
  EXPECT_THAT(notes_of(main), Not(HasSubstr("WARNING")));
  main = find(scaling_report(iteration_sweep(std::make_pair(0.050, 0.050)), o), "Scaling of iteration_s");
  EXPECT_THAT(notes_of(main), HasSubstr("WARNING: --strong was given, but"));
  // A throughput already counts work: --weak leaves it alone.
  o.weak = true;
  const auto tables = scaling_report(make_sweep(true), o);
  const auto& tp = find(tables, "Scaling of regex (higher is better");
  EXPECT_THAT(notes_of(tp), HasSubstr("is a throughput, which already counts work"));
  EXPECT_NEAR(d(tp.rows()[1][9]), d(find(scaling_report(make_sweep(true), {}), "Scaling of regex").rows()[1][9]),
              1e-12);
}

TEST(ScalingReportWeak, TerminalKeepsFourSignificantFiguresForFastMetrics) {
  StoredSweep fast = iteration_sweep(std::nullopt);
  for (auto& r : fast.runs) r.metrics["iteration_s"] *= 0.01;  // 0.73 ms and 0.85 ms steps
  std::ostringstream term, csv;
  const auto tables = scaling_report(fast, {});
  report::print_tables(term, "scaling", tables, report::OutputFormat::kTable);
  report::print_tables(csv, "scaling", tables, report::OutputFormat::kCsv);
  EXPECT_THAT(term.str(), HasSubstr("0.0007300"));  // not 0.0007
  EXPECT_THAT(term.str(), HasSubstr("0.0008500"));
  EXPECT_THAT(csv.str(), HasSubstr("0.00073,"));  // CSV keeps the value as it is
}

// Golden CSV of the whole report (all tables) for a fixed stored sweep:
// tests/golden/sweep/scaling_report.csv. SCALESCOPE_UPDATE_GOLDEN=1 rewrites it.
TEST(ScalingReport, GoldenCsv) {
  ScalingStudyOptions o;
  o.predict = {8};
  o.price_per_gpu_hour = 2.5;
  std::ostringstream out;
  report::print_tables(out, "scaling", scaling_report(make_sweep(), o), report::OutputFormat::kCsv);
  const std::string path = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/golden/sweep/scaling_report.csv";
  if (std::getenv("SCALESCOPE_UPDATE_GOLDEN")) std::ofstream(path) << out.str();
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream expected;
  expected << in.rdbuf();
  // Numbers are compared to 1e-9 relative (the last printed digit may differ
  // between optimization levels); everything else exactly.
  auto fields = [](const std::string& text) {
    std::vector<std::string> f;
    std::string cur;
    for (char c : text) {
      if (c == ',' || c == '\n') {
        f.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    f.push_back(cur);
    return f;
  };
  const auto got = fields(out.str()), want = fields(expected.str());
  ASSERT_EQ(got.size(), want.size()) << out.str();
  for (size_t k = 0; k < got.size(); ++k) {
    char* e1 = nullptr;
    char* e2 = nullptr;
    const double a = std::strtod(got[k].c_str(), &e1), b = std::strtod(want[k].c_str(), &e2);
    if (!got[k].empty() && *e1 == '\0' && !want[k].empty() && *e2 == '\0')
      EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << "field " << k;
    else EXPECT_EQ(got[k], want[k]) << "field " << k;
  }
}

}  // namespace
}  // namespace scalescope::sweep
