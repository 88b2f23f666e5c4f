// The study sections of the demo on a fake study folder in the shape of
// examples/h200: sweeps run here with shell jobs of known times (variables
// arm, variant, method; GPU counts 1 and 2; 3 repetitions) and a synthetic
// 2-rank run directory under traces/ (and a 1-rank one under image-base/traces/,
// where the study puts them).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cmath>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/embedded_assets.hpp"
#include "report/html_report.hpp"
#include "report/scaling_tables.hpp"
#include "report/table.hpp"
#include "sweep/scaling_study.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"
#include <fmt/format.h>

namespace scalescope::report {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// A sweep whose job prints "epoch_time_s=T" with T = base[value] / gpus^0.9 * (1 + 0.01 rep).
void fake_sweep(const fs::path& db, const std::vector<sweep::Variable>& vary, const std::string& key,
                const std::string& awk_times, std::vector<int> gpus = {1, 2}) {
  sweep::SweepSpec spec;
  spec.gpus = std::move(gpus);
  spec.repeat = 3;
  spec.vary = vary;
  spec.metric = sweep::MetricSpec::parse("regex:epoch_time_s=([0-9.eE+-]+)");
  spec.command = {
      "awk",
      "-v",
      "v={" + key + "}",
      "-v",
      "g={gpus}",
      "-v",
      "r={rep}",
      "BEGIN {{ " + awk_times + " printf \"scalescope_result epoch_time_s=%.5f\\n\", t[v] / g^0.9 * (1 + 0.01 * r) }}"};
  // Every varied key must appear in the template (the sweep checks it).
  for (const auto& v : vary) spec.command.insert(spec.command.begin() + 1, {"-v", "_" + v.key + "={" + v.key + "}"});
  sweep::run_sweep(spec, db, {});
}

class StudySectionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("scalescope-study-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_ / "traces" / "0003-g2-arm_base-variant_ref-r0.ssrun");
    fs::create_directories(*dir_ / "image-base" / "traces" / "0001-g1-arm_base-variant_ref-r0.ssrun");
    const std::string image_times =
        "t[\"ref\"]=10; t[\"fp64\"]=25; t[\"precision\"]=5; t[\"pin\"]=8.5; t[\"layout\"]=10; t[\"loader\"]=7;";
    fake_sweep(
        *dir_ / "image-base.db",
        {sweep::Variable::parse("arm=base"), sweep::Variable::parse("variant=ref,fp64,precision,pin,layout,loader")},
        "variant", image_times);
    fake_sweep(*dir_ / "llm.db", {sweep::Variable::parse("method=lora,dpo,qlora,qat")}, "method",
               "t[\"lora\"]=3; t[\"dpo\"]=4.5; t[\"qlora\"]=5; t[\"qat\"]=6;");
    for (int r = 0; r < 2; ++r) {
      trace::SyntheticOptions o;
      o.events = 20'000;
      o.seed = 5 + static_cast<uint64_t>(r);
      o.rank = r;
      o.world_size = 2;
      o.device = static_cast<uint32_t>(r);
      trace::write_trace(*dir_ / "traces" / "0003-g2-arm_base-variant_ref-r0.ssrun" / fmt::format("h-{}.sstrace", r),
                         trace::make_synthetic_trace(o));
    }
    trace::write_trace(*dir_ / "image-base" / "traces" / "0001-g1-arm_base-variant_ref-r0.ssrun" / "h-1.sstrace",
                       trace::make_synthetic_trace(5'000, 3));
    std::ofstream(*dir_ / "env.txt") << "fake environment <script>alert(1)</script>\n"
                                        "\x1b[0;32mdriver\x1b[0m 550.54\x1b]0;title\x07\n";
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static fs::path* dir_;
};
fs::path* StudySectionsTest::dir_ = nullptr;

const Json* find_section(const Json& doc, const std::string& title) {
  for (const auto& s : doc["sections"])
    if (s["title"] == title) return &s;
  return nullptr;
}

TEST_F(StudySectionsTest, SweepsTheirEffectsAndOneTrace) {
  HtmlReport r({.title = "t", .quiet = true});
  const auto used = r.add_study_folder(*dir_, "Fake study");
  ASSERT_EQ(used.size(), 3u);
  EXPECT_EQ(used[0].filename(), "image-base.db");  // the study's order, not the alphabet's
  EXPECT_EQ(used[1].filename(), "llm.db");
  EXPECT_EQ(used[2].filename(), "0003-g2-arm_base-variant_ref-r0.ssrun");  // most GPUs
  const Json doc = Json::parse(r.document_json());
  ASSERT_NE(find_section(doc, "Fake study"), nullptr);
  EXPECT_THAT(find_section(doc, "Fake study")->dump(), HasSubstr("(of 2 run directories in the folder)"));
  const Json* image = find_section(doc, "Sweep: image-base.db");
  ASSERT_NE(image, nullptr);
  // The forest plot of effects: variant ref against each of the 5 others at 1 and 2 GPUs.
  const Json* forest = nullptr;
  const Json* compared = nullptr;
  for (const auto& b : (*image)["blocks"]) {
    if (b["type"] == "chart" && b["kind"] == "forest") forest = &b;
    if (b["type"] == "table" && b["title"] == "Configurations compared") compared = &b;
  }
  ASSERT_NE(forest, nullptr);
  ASSERT_NE(compared, nullptr);
  ASSERT_EQ((*forest)["points"].size(), 10u);
  ASSERT_EQ((*forest)["categories"].size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    const std::string cat = (*forest)["categories"][i];
    const auto& p = (*forest)["points"][i];
    const double ratio = p["value"];
    if (cat.starts_with("variant=fp64 vs ref")) {
      EXPECT_NEAR(ratio, 2.5, 1e-3) << cat;
      EXPECT_EQ(p["state"], "slower") << cat;
      EXPECT_LT(p["low"].get<double>(), 2.5);
      EXPECT_GT(p["high"].get<double>(), 2.5);
    }
    if (cat.starts_with("variant=precision vs ref")) {
      EXPECT_NEAR(ratio, 0.5, 1e-3) << cat;
      EXPECT_EQ(p["state"], "faster") << cat;
    }
    if (cat.starts_with("variant=layout vs ref")) {
      EXPECT_NEAR(ratio, 1.0, 1e-9) << cat;
      EXPECT_EQ(p["state"], "same") << cat;
    }
  }
  EXPECT_THAT((*forest)["categories"][0].get<std::string>(), HasSubstr("arm=base"));
  // The biggest effects are named for the terminal.
  std::string highlights;
  for (const auto& h : r.highlights()) highlights += h + "\n";
  EXPECT_THAT(highlights, HasSubstr("image-base.db: variant=fp64 vs ref, arm=base, 1 GPU: time x2.50"));
  // LLM: lora against the three others at both counts.
  const Json* llm = find_section(doc, "Sweep: llm.db");
  ASSERT_NE(llm, nullptr);
  size_t llm_points = 0;
  for (const auto& b : (*llm)["blocks"])
    if (b["type"] == "chart" && b["kind"] == "forest") llm_points = b["points"].size();
  EXPECT_EQ(llm_points, 6u);
  // The trace's run sections are there, and findings come first.
  bool run_section = false;
  for (const auto& s : doc["sections"])
    run_section |= s["title"].get<std::string>().find("0003-g2-arm_base-variant_ref-r0.ssrun") != std::string::npos;
  EXPECT_TRUE(run_section);
  EXPECT_EQ(doc["sections"][0]["title"], "Advisor findings");
  // env.txt is data, never markup.
  EXPECT_EQ(r.html().find("<script>alert(1)"), std::string::npos);
  // Shown as preformatted text, its lines kept and terminal colour codes taken out.
  const Json* env = nullptr;
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == "pre") env = &b;
  ASSERT_NE(env, nullptr);
  EXPECT_EQ((*env)["text"], "fake environment <script>alert(1)</script>\ndriver 550.54\n");
}

// Predictions are drawn only where they may be trusted: one doubling past
// the largest measured count, and only when leave-one-out can check the fit.
TEST(SweepSections, PredictionsOnlyOverTheirTrustedRange) {
  const fs::path dir = fs::temp_directory_path() / ("scalescope-predict-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fake_sweep(dir / "three.db", {sweep::Variable::parse("variant=ref")}, "variant", "t[\"ref\"]=10;", {1, 2, 4});
  fake_sweep(dir / "two.db", {sweep::Variable::parse("variant=ref")}, "variant", "t[\"ref\"]=10;", {1, 2});
  auto predicted_gpus = [](const Json& doc) {
    std::vector<int> gpus;
    for (const auto& s : doc["sections"])
      for (const auto& b : s["blocks"])
        if (b["type"] == "chart")
          for (const auto& series : b.value("series", Json::array()))
            if (series.value("name", "").find("predicted") != std::string::npos)
              for (const auto& p : series["points"]) gpus.push_back(p[0].get<int>());
    return gpus;
  };
  {
    HtmlReport r({.title = "t", .quiet = true});
    r.add_sweep_database(dir / "three.db");
    const Json doc = Json::parse(r.document_json());
    const auto gpus = predicted_gpus(doc);
    ASSERT_FALSE(gpus.empty());
    EXPECT_EQ(*std::max_element(gpus.begin(), gpus.end()), 8);  // 4 measured: drawn to 8, not 32
    EXPECT_THAT(doc.dump(), HasSubstr("drawn up to 8 GPUs"));
    EXPECT_THAT(doc.dump(), ::testing::Not(HasSubstr("nan%")));
  }
  {
    HtmlReport r({.title = "t", .quiet = true});
    r.add_sweep_database(dir / "two.db");
    const Json doc = Json::parse(r.document_json());
    EXPECT_TRUE(predicted_gpus(doc).empty());
    EXPECT_THAT(doc.dump(), HasSubstr("Prediction not drawn: 2 measured GPU count(s) are too few"));
    EXPECT_THAT(doc.dump(), ::testing::Not(HasSubstr("nan%")));
  }
  fs::remove_all(dir);
}

// A sweep at one GPU count (the study's accuracy and control parts) is its
// own reference: no break-even is claimed for it, on the terminal or the page.
TEST(SweepSections, OneGpuCountClaimsNoBreakEven) {
  const fs::path dir = fs::temp_directory_path() / ("scalescope-one-count-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fake_sweep(dir / "accuracy.db", {sweep::Variable::parse("variant=ref,fp64")}, "variant",
             "t[\"ref\"]=10; t[\"fp64\"]=25;", {2});
  HtmlReport r({.title = "t", .quiet = true});
  r.add_sweep_database(dir / "accuracy.db");
  std::string highlights;
  for (const auto& h : r.highlights()) highlights += h + "\n";
  EXPECT_THAT(highlights, ::testing::Not(HasSubstr("break-even")));
  EXPECT_THAT(highlights, ::testing::Not(HasSubstr("Pareto knee")));
  EXPECT_THAT(highlights, HasSubstr("variant=fp64 vs ref, 2 GPUs: time x2.50"));  // effects still compared
  EXPECT_THAT(r.document_json(), HasSubstr("only N=2 measured: no speedup, efficiency or break-even to report"));
  fs::remove_all(dir);
}

// `scalescope scaling`'s tables and the page come from one typed study:
// every configuration's medians, CIs, speedup and E', and every comparison,
// are the same numbers in both (the page used to recompute them).
Json scaling_json(const fs::path& db, const sweep::ScalingStudyOptions& options) {
  std::ostringstream out;
  print_tables(out, "scaling", scaling_tables(sweep::study_scaling(sweep::read_sweep(db), options)),
               OutputFormat::kJson);
  return Json::parse(out.str());
}
const Json& table_of(const Json& doc, const std::string& id) {
  for (const auto& t : doc["tables"])
    if (t["id"] == id) return t;
  throw std::runtime_error("no table " + id);
}
std::vector<Json> page_tables(const Json& doc, const std::string& prefix) {
  std::vector<Json> out;
  for (const auto& s : doc["sections"])
    for (const auto& b : s["blocks"])
      if (b["type"] == "table" && b["title"].get<std::string>().starts_with(prefix)) out.push_back(b);
  return out;
}
double number(const Json& v) { return v.is_number() ? v.get<double>() : NAN; }
void expect_same(double page, double cli, const std::string& what) {
  if (std::isnan(cli)) {
    EXPECT_TRUE(std::isnan(page)) << what;
  } else {
    EXPECT_DOUBLE_EQ(page, cli) << what;
  }
}

void expect_page_equals_scaling(const fs::path& db, const ReportOptions& report_options,
                                const sweep::ScalingStudyOptions& scaling_options) {
  const Json cli = scaling_json(db, scaling_options);
  HtmlReport r(report_options);
  r.add_sweep_database(db);
  const Json doc = Json::parse(r.document_json());
  const Json& main = table_of(cli, "scaling_of_" + sweep::read_sweep(db).metric);
  size_t compared = 0;
  for (const Json& page : page_tables(doc, "Scaling: ")) {
    const std::string label = page["title"].get<std::string>().substr(std::string("Scaling: ").size());
    std::vector<Json> cli_rows;
    for (const auto& row : main["rows"])
      if (row["config"] == label) cli_rows.push_back(row);
    ASSERT_EQ(cli_rows.size(), page["rows"].size()) << label;
    for (size_t i = 0; i < cli_rows.size(); ++i) {
      const Json& p =
          page["rows"][i];  // GPUs, runs, median s, CI low, CI high, speedup, E', E' low, E' high, GPU-hours
      const Json& c = cli_rows[i];
      const std::string what = label + " row " + std::to_string(i);
      EXPECT_EQ(p[0].get<int>(), c["gpus"].get<int>()) << what;
      EXPECT_EQ(p[1].get<int>(), c["n"].get<int>()) << what;
      expect_same(number(p[2]), number(c["median"]), what + " median");
      expect_same(number(p[3]), number(c["ci_low"]), what + " ci_low");
      expect_same(number(p[4]), number(c["ci_high"]), what + " ci_high");
      expect_same(number(p[5]), number(c["speedup"]), what + " speedup");
      expect_same(number(p[6]), number(c["efficiency"]), what + " E'");
      expect_same(number(p[7]), number(c["efficiency_low"]), what + " E' low");
      expect_same(number(p[8]), number(c["efficiency_high"]), what + " E' high");
      ++compared;
    }
  }
  EXPECT_EQ(compared, main["rows"].size()) << "every row of `scaling` is on the page";
  const auto page_cmp = page_tables(doc, "Configurations compared");
  ASSERT_EQ(page_cmp.size(), 1u);
  const Json& cli_cmp = table_of(cli, "configurations_compared");
  ASSERT_EQ(page_cmp[0]["rows"].size(), cli_cmp["rows"].size());
  for (size_t i = 0; i < cli_cmp["rows"].size(); ++i)
    for (size_t k = 0; k < cli_cmp["columns"].size(); ++k) {
      const Json& p = page_cmp[0]["rows"][i][k];
      const Json& c = cli_cmp["rows"][i][cli_cmp["columns"][k].get<std::string>()];
      if (c.is_number()) expect_same(number(p), number(c), "comparison " + std::to_string(i));
      else if (c.is_boolean()) EXPECT_EQ(p, c.get<bool>() ? "yes" : "no");
      else EXPECT_EQ(p, c) << "comparison " << i << " column " << k;
    }
}

TEST(SweepSections, PageAndScalingCommandShowTheSameStudy) {
  const fs::path dir = fs::temp_directory_path() / ("scalescope-same-study-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fake_sweep(dir / "s.db", {sweep::Variable::parse("variant=ref,pin")}, "variant", "t[\"ref\"]=10; t[\"pin\"]=8;",
             {1, 2, 4});
  sweep::ScalingStudyOptions o;
  expect_page_equals_scaling(dir / "s.db", {.title = "t", .quiet = true}, o);
  fs::remove_all(dir);
}

// The page honours weak scaling as `scalescope scaling --weak` and
// `--samples-per-gpu-step` do (it used to ignore both).
TEST(SweepSections, WeakScalingOnThePageAsInTheScalingCommand) {
  const fs::path dir = fs::temp_directory_path() / ("scalescope-weak-page-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fake_sweep(dir / "w.db", {sweep::Variable::parse("variant=ref,pin")}, "variant", "t[\"ref\"]=10; t[\"pin\"]=8;",
             {1, 2, 4});
  sweep::ScalingStudyOptions o;
  o.weak = true;
  expect_page_equals_scaling(dir / "w.db", {.title = "t", .weak = true, .quiet = true}, o);
  o.weak.reset();
  o.samples_per_gpu_step = 128;
  expect_page_equals_scaling(dir / "w.db", {.title = "t", .samples_per_gpu_step = 128.0, .quiet = true}, o);
  // And weak differs from strong: at 4 GPUs the time per unit of work is a quarter of the step time.
  HtmlReport strong({.title = "t", .quiet = true}), weak({.title = "t", .weak = true, .quiet = true});
  strong.add_sweep_database(dir / "w.db");
  weak.add_sweep_database(dir / "w.db");
  const auto s = page_tables(Json::parse(strong.document_json()), "Scaling: ");
  const auto w = page_tables(Json::parse(weak.document_json()), "Scaling: ");
  ASSERT_FALSE(s.empty());
  ASSERT_EQ(s.size(), w.size());
  ASSERT_EQ(s[0]["rows"].back()[0].get<int>(), 4);
  EXPECT_NEAR(number(w[0]["rows"].back()[2]), number(s[0]["rows"].back()[2]) / 4, 1e-12);
  EXPECT_THAT(weak.document_json(), HasSubstr("weak scaling: times are per unit of work"));
  fs::remove_all(dir);
}

TEST_F(StudySectionsTest, PicksTheTraceWithMostGpusThenBaselineReference) {
  EXPECT_EQ(pick_study_trace({}), fs::path());
  EXPECT_EQ(pick_study_trace({"a/0001-g1-arm_base-variant_ref-r0.ssrun", "a/0007-g2-arm_tuned-variant_ref-r0.ssrun",
                              "a/0003-g2-arm_base-variant_ref-r0.ssrun", "a/0004-g2-arm_base-variant_pin-r0.ssrun"}),
            fs::path("a/0003-g2-arm_base-variant_ref-r0.ssrun"));
  EXPECT_EQ(pick_study_trace({"b.ssrun", "a.ssrun"}), fs::path("a.ssrun"));
}

TEST_F(StudySectionsTest, RefusesAFolderWithoutResults) {
  const fs::path empty = *dir_ / "empty";
  fs::create_directories(empty);
  HtmlReport r;
  EXPECT_THAT([&] { r.add_study_folder(empty, "x"); }, ::testing::ThrowsMessage<Error>(HasSubstr("no sweep database")));
  EXPECT_THAT([&] { r.add_study_folder(*dir_ / "missing", "x"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not a folder of study results")));
}

}  // namespace
}  // namespace scalescope::report
