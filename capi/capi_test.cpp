// The C ABI against the libraries it wraps: the same traces, the same
// analysis JSON as `scalescope analyze --json` builds, and errors as messages
// instead of exceptions.
#include "capi/scalescope.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "report/import_tables.hpp"
#include "report/json_envelope.hpp"
#include "report/run_tables.hpp"
#include "report/stats_tables.hpp"
#include "report/table.hpp"
#include "trace/model/kernel_short_name.hpp"
#include "trace/model/launcher.hpp"
#include "trace/model/table_columns.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/import/trace_source.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSample = std::string(SCALESCOPE_SOURCE_DIR) + "/examples/sample/kineto-sample.json.gz";
const std::string kStudyRun =
    std::string(SCALESCOPE_SOURCE_DIR) + "/examples/h200/image-base/traces/0010-g2-arm_base-variant_ref-r0.ssrun";

std::string take(char* text) {
  EXPECT_NE(text, nullptr) << ss_last_error();
  std::string s = text ? text : "";
  ss_free(text);
  return s;
}

// What cli/analyze_command.cpp prints for --json, built from the same parts.
std::string cli_analysis(const std::string& path, const scalescope::analyze::Options& options = {}) {
  const auto run = scalescope::analyze::analyze_path(path, options);
  return scalescope::report::json_text(scalescope::report::json_envelope(
      "analyze", {{"input", path}, {"analysis", run}, {"findings", scalescope::advise::advise(run)}}));
}

TEST(Capi, MissingInputIsAMessageNotAnException) {
  EXPECT_EQ(ss_open("/no/such/trace.sstrace"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("/no/such/trace.sstrace: no such file"), std::string::npos)
      << ss_last_error();
  EXPECT_EQ(ss_open(nullptr), nullptr);
  EXPECT_STRNE(ss_last_error(), "");
}

TEST(Capi, GarbageTraceIsAMessage) {
  const fs::path bad = fs::temp_directory_path() / "capi_test_garbage.sstrace";
  std::ofstream(bad) << "this is not a scalescope trace file, just text\n";
  EXPECT_EQ(ss_open(bad.c_str()), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("capi_test_garbage.sstrace"), std::string::npos) << ss_last_error();
  EXPECT_EQ(std::string(ss_last_error()).find('\n'), std::string::npos);
  fs::remove(bad);
}

TEST(Capi, ColumnsAreTheTracesOwnValuesWithoutCopies) {
  ss_run* run = ss_open(kSample.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  ASSERT_EQ(ss_rank_count(run), 1);
  const auto traces = scalescope::trace::load_traces(kSample);
  const auto& k = traces.at(0).kernels;
  ss_column cols[32];
  const int n = ss_rank_table(run, 0, "kernels", cols, 32);
  ASSERT_EQ(n, 15);
  EXPECT_STREQ(cols[0].name, "start");
  EXPECT_EQ(cols[0].dtype, SS_I64);
  ASSERT_EQ(cols[0].length, static_cast<int64_t>(k.size()));
  ASSERT_GT(k.size(), 0u);
  EXPECT_EQ(std::memcmp(cols[0].data, k.start.data(), k.size() * sizeof(int64_t)), 0);
  // Asking again hands out the same memory: the columns are the run's, not copies.
  ss_column again[32];
  ASSERT_EQ(ss_rank_table(run, 0, "kernels", again, 32), 15);
  EXPECT_EQ(again[0].data, cols[0].data);
  EXPECT_EQ(cols[4].kind, SS_STRING);
  // Kernel names through the string table.
  const char* blob = nullptr;
  const int64_t* offsets = nullptr;
  int64_t count = 0;
  ASSERT_EQ(ss_rank_strings(run, 0, &blob, &offsets, &count), 0);
  // The trace's strings, then the kernels' short names that were not among them.
  EXPECT_GE(count, static_cast<int64_t>(traces[0].strings.size()));
  const uint32_t id = static_cast<const uint32_t*>(cols[4].data)[0];
  EXPECT_EQ(std::string(blob + offsets[id], blob + offsets[id + 1]), traces[0].strings.view(k.name[0]));
  // The short name beside it: the one shortening, distinct per full name.
  EXPECT_STREQ(cols[5].name, "short_name");
  EXPECT_EQ(cols[5].kind, SS_STRING);
  ASSERT_EQ(cols[5].length, static_cast<int64_t>(k.size()));
  const auto* short_ids = static_cast<const uint32_t*>(cols[5].data);
  for (size_t i = 0; i < k.size(); ++i) ASSERT_LT(short_ids[i], count);  // every id names a string
  std::map<uint32_t, uint32_t> short_of_name, name_of_short;
  for (size_t i = 0; i < k.size(); ++i) {
    EXPECT_EQ(short_of_name.emplace(k.name[i], short_ids[i]).first->second, short_ids[i]);
    EXPECT_EQ(name_of_short.emplace(short_ids[i], k.name[i]).first->second, k.name[i]);  // no two names alike
  }
  const std::string full(traces[0].strings.view(k.name[0]));
  const std::string short_name(blob + offsets[short_ids[0]], blob + offsets[short_ids[0] + 1]);
  EXPECT_EQ(short_name.substr(0, scalescope::trace::short_kernel_name(full).size()),
            scalescope::trace::short_kernel_name(full));
  // Enum columns name their values.
  ASSERT_EQ(ss_rank_table(run, 0, "memcpy", cols, 32), 11);
  EXPECT_EQ(cols[6].kind, SS_ENUM);
  EXPECT_STREQ(cols[6].categories, "unknown\nHtoD\nDtoH\nDtoD\nPtoP\nHtoH");
  // Bad requests.
  EXPECT_EQ(ss_rank_table(run, 0, "no_such_table", cols, 32), -1);
  EXPECT_NE(std::string(ss_last_error()).find("no table 'no_such_table'"), std::string::npos);
  EXPECT_EQ(ss_rank_table(run, 5, "kernels", cols, 32), -1);
  EXPECT_NE(std::string(ss_last_error()).find("rank index 5 out of range"), std::string::npos);
  ss_close(run);
}

// Every trace table is served, the host sampler's included; each table's
// columns are its column list's (trace/model/table_columns.hpp), in order, with
// their kinds; kernels add short_name after name. A column or table added to
// the lists shows up here without more edits.
TEST(Capi, TableColumnsAreTheColumnLists) {
  namespace trace = scalescope::trace;
  ss_run* run = ss_open(kSample.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  std::string served = ss_table_names();
  size_t tables = 0;
  trace::for_each_table_type([&](auto table) {
    using Table = typename decltype(table)::type;
    const std::string name(trace::TableColumns<Table>::name);
    ++tables;
    EXPECT_NE(("\n" + served + "\n").find("\n" + name + "\n"), std::string::npos) << name;
    std::vector<std::pair<std::string, int32_t>> expected;
    trace::for_each_column_of<Table>([&](const auto& c) {
      if (c.file_only) return;
      const int32_t kind = c.kind == trace::ColumnKind::kString ? SS_STRING
                           : c.kind == trace::ColumnKind::kEnum ? SS_ENUM
                           : c.kind == trace::ColumnKind::kBool ? SS_BOOL
                                                                : SS_PLAIN;
      expected.emplace_back(std::string(c.name), kind);
      if (name == "kernels" && c.name == "name") expected.emplace_back("short_name", SS_STRING);
    });
    ss_column cols[64];
    const int n = ss_rank_table(run, 0, name.c_str(), cols, 64);
    ASSERT_GT(n, 0) << name << ": " << ss_last_error();
    std::vector<std::pair<std::string, int32_t>> got;
    for (int i = 0; i < n; ++i) {
      got.emplace_back(cols[i].name, cols[i].kind);
      EXPECT_EQ(cols[i].categories != nullptr, cols[i].kind == SS_ENUM) << name << "." << cols[i].name;
    }
    EXPECT_EQ(got, expected) << name;
  });
  EXPECT_EQ(std::count(served.begin(), served.end(), '\n') + 1, static_cast<std::ptrdiff_t>(tables));
  ss_close(run);
}

TEST(Capi, AnalysisIsWhatAnalyzeJsonPrints) {
  for (const std::string& path : {kSample, kStudyRun}) {
    ss_run* run = ss_open(path.c_str());
    ASSERT_NE(run, nullptr) << ss_last_error();
    EXPECT_EQ(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr)), cli_analysis(path)) << path;
    scalescope::analyze::Options windowed;
    windowed.window = scalescope::analyze::WindowSpec::parse("10%:90%");
    EXPECT_EQ(take(ss_analyze_json(run, "10%:90%", nullptr, nullptr, nullptr)), cli_analysis(path, windowed)) << path;
    ss_close(run);
  }
}

// Every table `scalescope analyze --format json` prints, from the same parts.
TEST(Capi, AnalysisTablesAreWhatAnalyzeFormatJsonPrints) {
  ss_run* run = ss_open(kStudyRun.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  const json served = json::parse(take(ss_analyze_tables_json(run, R"({"top": 20})")));
  const auto analysis = scalescope::analyze::analyze_path(kStudyRun, {});
  EXPECT_EQ(served, scalescope::report::tables_json(
                        "analyze", scalescope::report::run_tables(analysis, scalescope::advise::advise(analysis), 20, true)));
  EXPECT_EQ(served["schema_version"], scalescope::report::kJsonSchemaVersion);
  bool all_ranks_kernels = false;
  for (const auto& t : served["tables"]) all_ranks_kernels = all_ranks_kernels || t["id"] == "top_kernels_all_ranks";
  EXPECT_TRUE(all_ranks_kernels);
  EXPECT_EQ(ss_analyze_tables_json(run, R"({"top": 0})"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("top 0 is not in 1..1000"), std::string::npos) << ss_last_error();
  ss_close(run);
}

// The typed summaries of `scalescope stats --format json`, launchers left out
// as the CLI leaves them out, in the one envelope.
TEST(Capi, StatsAreWhatStatsJsonPrints) {
  ss_run* run = ss_open(kStudyRun.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  const json all = json::parse(take(ss_stats_json(run, nullptr)));
  EXPECT_EQ(all["schema_version"], scalescope::report::kJsonSchemaVersion);
  EXPECT_EQ(all["command"], "stats");
  auto traces = scalescope::trace::load_traces(kStudyRun);
  const std::vector<std::string> left_out = scalescope::trace::drop_launchers(traces);
  std::vector<const scalescope::trace::Trace*> ranks;
  for (const auto& t : traces) ranks.push_back(&t);
  // The CLI reads a run directory's own problems (no manifest) beside its
  // files'; ss_open reads the files: all but the problems agree.
  auto without_problems = [](json j) {
    for (auto& scope : j["scopes"]) scope["stats"].erase("problems");
    return j;
  };
  EXPECT_EQ(without_problems(all),
            without_problems(scalescope::report::json_envelope(
                "stats", scalescope::report::stats_json(kStudyRun, ranks, std::nullopt, {}, left_out))));
  ASSERT_EQ(all["scopes"].size(), ranks.size() + 1);
  EXPECT_EQ(all["scopes"].back()["label"], "all ranks");
  int64_t per_rank = 0, combined = 0;
  for (size_t i = 0; i + 1 < all["scopes"].size(); ++i)
    for (const auto& k : all["scopes"][i]["stats"]["kernels"]) per_rank += k["total_ns"].get<int64_t>();
  for (const auto& k : all["scopes"].back()["stats"]["kernels"]) combined += k["total_ns"].get<int64_t>();
  EXPECT_GT(per_rank, 0);
  EXPECT_EQ(per_rank, combined);
  const json one = json::parse(take(ss_stats_json(run, R"({"rank": 1, "reports": ["nccl"]})")));
  ASSERT_EQ(one["scopes"].size(), 1u);
  EXPECT_EQ(one["scopes"][0]["rank"], 1);
  EXPECT_FALSE(one["scopes"][0]["stats"].contains("kernels"));
  EXPECT_EQ(ss_stats_json(run, R"({"rank": 99})"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("no trace of rank 99"), std::string::npos) << ss_last_error();
  ss_close(run);
}

TEST(Capi, BadAnalysisArgumentsAreMessages) {
  ss_run* run = ss_open(kSample.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  EXPECT_EQ(ss_analyze_json(run, "5:3", nullptr, nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("the end must be after the start"), std::string::npos) << ss_last_error();
  EXPECT_EQ(ss_analyze_json(run, nullptr, nullptr, nullptr, "gpu nccl_kernel\n"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("unknown kernel class 'gpu'"), std::string::npos) << ss_last_error();
  EXPECT_EQ(ss_diff_json(run, run, "{not json"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("bad JSON argument"), std::string::npos) << ss_last_error();
  EXPECT_EQ(ss_mlperf_json("nonsense", nullptr), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("no command 'nonsense'"), std::string::npos) << ss_last_error();
  EXPECT_EQ(ss_sweep_json("/no/such.db", nullptr), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("/no/such.db"), std::string::npos) << ss_last_error();
  ss_close(run);
}

TEST(Capi, MlperfPredictAndValidateAreTyped) {
  const json predicted = json::parse(take(ss_mlperf_json(
      "predict", R"({"benchmark": "bert", "accelerator": "H100-SXM5", "predict": [64, 8192], "fit_up_to": 16,
                    "planned_batch": "64:2048"})")));
  EXPECT_EQ(predicted["schema_version"], scalescope::report::kJsonSchemaVersion);
  EXPECT_EQ(predicted["command"], "mlperf analyze");
  ASSERT_EQ(predicted["predictions"].size(), 1u);
  const json& f = predicted["predictions"][0];
  EXPECT_EQ(f["curve"]["name"], "bert on H100-SXM5-80GB");
  ASSERT_EQ(f["fit"]["predictions"].size(), 2u);
  EXPECT_EQ(f["fit"]["predictions"][0]["batch_basis"], "planned");
  EXPECT_EQ(f["fit"]["predictions"][0]["global_batch"], 2048.0);
  EXPECT_TRUE(f["measured"][1].is_null());

  const json validated = json::parse(take(ss_mlperf_json("validate", R"({"benchmark": "bert", "level": 0.9})")));
  EXPECT_EQ(validated["command"], "mlperf validate");
  EXPECT_EQ(validated["validation"]["level"], 0.9);
  EXPECT_FALSE(validated["validation"]["cases"].empty());
  EXPECT_EQ(validated["validation"]["per_group"][0]["group"], "bert");

  EXPECT_EQ(ss_mlperf_json("predict", R"({"benchmark": "bert"})"), nullptr);  // no sizes to predict
  EXPECT_EQ(ss_mlperf_json("validate", R"({"level": 1.5})"), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("is not between 0 and 1"), std::string::npos) << ss_last_error();
}

// A run keeps its last analysis: the analysis, its tables and a diff asked for
// the same request share it, and a different window or edited rules make a
// new one (each answer equal to the CLI's for its own request).
TEST(Capi, AnalysisKeptIsTheOneOfTheRequest) {
  ss_run* run = ss_open(kStudyRun.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  scalescope::analyze::Options windowed;
  windowed.window = scalescope::analyze::WindowSpec::parse("it2:it6");
  const auto tables_of = [](const scalescope::analyze::RunAnalysis& a) {
    return scalescope::report::tables_json("analyze",
                                           scalescope::report::run_tables(a, scalescope::advise::advise(a), 10, true));
  };
  const auto whole = scalescope::analyze::analyze_path(kStudyRun, {});
  const auto part = scalescope::analyze::analyze_path(kStudyRun, windowed);
  EXPECT_EQ(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr)), cli_analysis(kStudyRun));
  EXPECT_EQ(json::parse(take(ss_analyze_tables_json(run, nullptr))), tables_of(whole));
  EXPECT_EQ(json::parse(take(ss_analyze_tables_json(run, R"({"window": "it2:it6"})"))), tables_of(part));
  EXPECT_NE(tables_of(whole), tables_of(part));
  EXPECT_EQ(take(ss_analyze_json(run, "it2:it6", nullptr, nullptr, nullptr)), cli_analysis(kStudyRun, windowed));
  EXPECT_EQ(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr)), cli_analysis(kStudyRun));

  // The rules file is read at each call: the same path with other rules is another request.
  const fs::path rules = fs::temp_directory_path() / ("capi_test_rules_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(rules) << "compute no_kernel_is_named_this\n";
  scalescope::analyze::Options ruled;
  ruled.classifier = scalescope::analyze::KernelClassifier::from_file(rules.string());
  const std::string first = take(ss_analyze_json(run, nullptr, nullptr, rules.c_str(), nullptr));
  EXPECT_EQ(first, cli_analysis(kStudyRun, ruled));
  std::ofstream(rules) << "synchronization kernel\n";
  ruled.classifier = scalescope::analyze::KernelClassifier::from_file(rules.string());
  const std::string second = take(ss_analyze_json(run, nullptr, nullptr, rules.c_str(), nullptr));
  EXPECT_EQ(second, cli_analysis(kStudyRun, ruled));
  EXPECT_NE(first, second);
  fs::remove(rules);

  const json d = json::parse(take(ss_diff_json(run, run, R"({"window": "it2:it6"})")));
  EXPECT_EQ(d["diff"], json(scalescope::analyze::diff(part, part, 15)));
  ss_close(run);
}

// A dump written into the run directory after an analysis (trigger --dump,
// PyTorch's flight recorder) is in the next one: the kept analysis is not reused.
TEST(Capi, AnalysisKeptIsNotReusedOnceTheRunDirectoryChanged) {
  const fs::path copy = fs::temp_directory_path() / ("capi_test_run_" + std::to_string(::getpid()) + ".ssrun");
  fs::remove_all(copy);
  fs::copy(kStudyRun, copy, fs::copy_options::recursive);
  ss_run* run = ss_open(copy.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  const json before = json::parse(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr)));
  EXPECT_FALSE(before["analysis"].contains("hang"));
  EXPECT_EQ(json::parse(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr))), before);
  fs::create_directories(copy / "control" / "flight_recorder");
  fs::copy_file(std::string(SCALESCOPE_SOURCE_DIR) + "/tests/golden/analyze/flight_recorder_pytorch_2_11/rank_0",
                copy / "control" / "flight_recorder" / "rank_0");
  const json after = json::parse(take(ss_analyze_json(run, nullptr, nullptr, nullptr, nullptr)));
  ASSERT_TRUE(after["analysis"].contains("hang"));
  EXPECT_EQ(after["analysis"]["hang"]["flight_recorder"]["collective_seq_id"], 18);
  ss_close(run);
  fs::remove_all(copy);
}

// Run info's import reports are the JSON `import --format json` gives of each Kineto file.
TEST(Capi, ImportReportsAreTheImportCommands) {
  ss_run* run = ss_open(kSample.c_str());
  ASSERT_NE(run, nullptr) << ss_last_error();
  const json info = json::parse(take(ss_run_info_json(run)));
  scalescope::trace::ImportReport rep;
  scalescope::trace::import_kineto_file(kSample, &rep);
  ASSERT_EQ(info["import_reports"].size(), 1u);
  EXPECT_EQ(info["import_reports"][0], scalescope::report::import_report_json(rep));
  EXPECT_GT(info["import_reports"][0]["events"].get<uint64_t>(), 0u);
  EXPECT_FALSE(info["import_reports"][0]["categories"].empty());
  ss_close(run);
}

TEST(Capi, DiffOfARunWithItselfIsZero) {
  ss_run* a = ss_open(kStudyRun.c_str());
  ASSERT_NE(a, nullptr) << ss_last_error();
  const json d = json::parse(take(ss_diff_json(a, a, R"({"top": 5})")));
  ASSERT_FALSE(d["diff"]["breakdown"].empty());
  for (const auto& row : d["diff"]["breakdown"]) EXPECT_EQ(row["delta"].get<double>(), 0) << row.dump();
  ss_close(a);
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A scratch folder of its own per test, removed at the end.
class CapiOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("capi_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CapiOutput, ReportNeverWritesOverAnInput) {
  const fs::path trace = dir_ / "t.json.gz", db = dir_ / "sweep.db", link = dir_ / "link.json.gz";
  fs::copy_file(kSample, trace);
  fs::copy_file(kSample, db);  // any file: the check comes before anything is read
  fs::create_symlink(trace, link);
  const std::string before = read_bytes(trace);
  const json both = {trace.string(), db.string()};
  struct Case {
    std::string inputs;
    fs::path output;
  };
  for (const Case& c : {Case{both.dump(), db}, Case{json{trace.string()}.dump(), trace},
                        Case{json{trace.string()}.dump(), link}, Case{json{link.string()}.dump(), trace}}) {
    EXPECT_EQ(ss_report(c.inputs.c_str(), c.output.c_str(), nullptr), nullptr) << c.inputs << " -> " << c.output;
    EXPECT_NE(std::string(ss_last_error()).find("is the input"), std::string::npos) << ss_last_error();
  }
  EXPECT_TRUE(read_bytes(trace) == before) << trace << " was changed";
  EXPECT_TRUE(read_bytes(db) == before) << db << " was changed";
  // A new page beside the inputs is written.
  const fs::path page = dir_ / "page.html";
  take(ss_report(json{trace.string()}.dump().c_str(), page.c_str(), nullptr));
  EXPECT_NE(read_bytes(page).find("<html"), std::string::npos);
}

TEST_F(CapiOutput, MlperfIngestOutputIsNeverAnInput) {
  const fs::path tree = dir_ / "results";
  fs::copy(std::string(SCALESCOPE_SOURCE_DIR) + "/mlperf/testdata", tree, fs::copy_options::recursive);
  const json args = {{"dirs", {tree.string()}}, {"output", tree.string()}};
  EXPECT_EQ(ss_mlperf_json("ingest", args.dump().c_str()), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("is the input"), std::string::npos) << ss_last_error();
  EXPECT_TRUE(fs::is_directory(tree));
}

TEST_F(CapiOutput, PathsWithANulAreRefused) {
  // JSON may carry "\u0000"; the file calls would cut the path there.
  fs::copy_file(kSample, dir_ / "t.json.gz");
  const std::string cut = (dir_ / "t.json.gz").string() + std::string(1, '\0') + "more";
  const fs::path page = dir_ / "page.html";
  EXPECT_EQ(ss_report(json{cut}.dump().c_str(), page.c_str(), nullptr), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("NUL"), std::string::npos) << ss_last_error();
  EXPECT_FALSE(fs::exists(page));
  const json args = {{"dirs", {std::string(SCALESCOPE_SOURCE_DIR) + "/mlperf/testdata"}},
                     {"output", (dir_ / "runs.csv").string() + std::string(1, '\0') + "x"}};
  EXPECT_EQ(ss_mlperf_json("ingest", args.dump().c_str()), nullptr);
  EXPECT_NE(std::string(ss_last_error()).find("NUL"), std::string::npos) << ss_last_error();
  EXPECT_FALSE(fs::exists(dir_ / "runs.csv"));
}

}  // namespace
