#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mlperf/mlperf.hpp"
#include "mlperf/run_fields.hpp"
#include "base/error.hpp"

namespace fs = std::filesystem;
using namespace scalescope;
using namespace scalescope::mlperf;

namespace {

const fs::path kTestData = fs::path(SCALESCOPE_SOURCE_DIR) / "mlperf" / "testdata";

std::string event(std::string_view key, int64_t time_ms, std::string_view value = "null",
                  std::string_view metadata = "{}") {
  return fmt::format(R"(:::MLLOG {{"namespace": "", "time_ms": {}, "event_type": "POINT_IN_TIME", "key": "{}", )"
                     R"("value": {}, "metadata": {}}})",
                     time_ms, key, value, metadata);
}

// A log of one run: run_start at 0, run_stop after `minutes` with `status`.
std::string run_log(double minutes, std::string_view status = "success", bool with_stop = true) {
  std::string s = event("submission_benchmark", 1, R"("bert")") + "\n" + event("global_batch_size", 2, "768") + "\n" +
                  event("run_start", 1000) + "\n";
  if (with_stop)
    s += event("run_stop", 1000 + static_cast<int64_t>(std::llround(minutes * 60000)), "null",
               fmt::format(R"({{"status": "{}"}})", status)) +
         "\n";
  return s;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / fmt::format("mlperf_test_{}_{}", ::getpid(), counter_++);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_file(const fs::path& p, std::string_view text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

Run make_run(std::string system, std::string bench, int accelerators, std::optional<double> minutes,
             bool converged = true) {
  Run r;
  r.submitter = "S";
  r.system = std::move(system);
  r.benchmark_folder = bench;
  r.benchmark = canonical_benchmark(bench);
  r.accelerator = "NVIDIA H100-SXM5-80GB";
  r.nodes = accelerators / 8 > 0 ? accelerators / 8 : 1;
  r.accelerators_per_node = accelerators / r.nodes;
  r.accelerators = accelerators;
  r.minutes = minutes;
  r.converged = converged;
  r.status = converged ? "success" : "aborted";
  return r;
}

std::vector<Run> folder_runs(const std::string& system, const std::string& bench, int accelerators,
                             const std::vector<double>& minutes, int non_converged = 0) {
  std::vector<Run> out;
  for (double m : minutes) out.push_back(make_run(system, bench, accelerators, m));
  for (int i = 0; i < non_converged; ++i) out.push_back(make_run(system, bench, accelerators, 99.0, false));
  return out;
}

Score score_of(const std::vector<Run>& runs) {
  std::vector<const Run*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  return score_runs(ptrs, runs.front().benchmark_folder);
}

const Score& find_score(const std::vector<Score>& scores, std::string_view system, std::string_view folder) {
  for (const auto& s : scores)
    if (s.system == system && s.benchmark_folder == folder) return s;
  throw std::runtime_error(fmt::format("no score for {}/{}", system, folder));
}

}  // namespace

// ---------------------------------------------------------------------------
// MLLOG parser.

TEST(MllogParser, ReadsEventsBehindLauncherPrefixesAndOtherOutput) {
  const std::string log = "0: " + event("submission_benchmark", 1, R"("ssd")") + "\n" +
                          "  15: " + event("run_start", 1000) + " trailing output {not json\n" + "noise 42%|###| " +
                          event("run_stop", 61000, "null", R"({"status": "success"})") + "\n";
  const LogSummary s = parse_mllog(log);
  EXPECT_EQ(s.mllog_lines, 3u);
  EXPECT_EQ(s.malformed_lines, 0u);
  EXPECT_EQ(s.benchmark, "ssd");
  EXPECT_EQ(s.run_start_ms, 1000);
  EXPECT_EQ(s.run_stop_ms, 61000);
  EXPECT_EQ(s.stop_status, "success");
}

TEST(MllogParser, CarriageReturnsAndSeveralEventsOnOneLine) {
  const std::string log = " 12%|##  |\r 50%|####|\r" + event("run_start", 5) + event("eval_accuracy", 6, "0.71") +
                          "\r" + event("eval_accuracy", 7, "0.72") + "\n";
  const LogSummary s = parse_mllog(log);
  EXPECT_EQ(s.mllog_lines, 3u);
  EXPECT_EQ(s.run_start_ms, 5);
  ASSERT_TRUE(s.last_eval_accuracy);
  EXPECT_DOUBLE_EQ(*s.last_eval_accuracy, 0.72);
}

TEST(MllogParser, Latin1BytesInsideAnEventAreRead) {
  const std::string log = event("run_start", 10, "null", "{\"file\": \"caf\xe9.py\"}") + "\n\xff\xfe binary junk\n";
  const LogSummary s = parse_mllog(log);
  EXPECT_EQ(s.mllog_lines, 1u);
  EXPECT_EQ(s.malformed_lines, 0u);
  EXPECT_EQ(s.run_start_ms, 10);
}

TEST(MllogParser, MalformedLinesAreCountedNotFatal) {
  const std::string log =
      ":::MLLOG {\"key\": \"run_start\", \"time_ms\": \n"              // unterminated object
      ":::MLLOG not json at all\n"                                     // no object
      ":::MLLOG {\"key\": \"run_start\"}\n"                            // no time_ms
      ":::MLLOG {\"time_ms\": 5}\n"                                    // no key
      ":::MLLOG {\"key\": 5, \"time_ms\": 5}\n"                        // key not a string
      ":::MLLOG {\"key\": \"x\", \"time_ms\": 1, \"value\": nul}\n" +  // bad literal
      event("run_start", 77) +
      "\n";
  const LogSummary s = parse_mllog(log);
  EXPECT_EQ(s.malformed_lines, 6u);
  EXPECT_EQ(s.mllog_lines, 1u);
  EXPECT_EQ(s.run_start_ms, 77);
}

TEST(MllogParser, MissingRunStopAndAbortedStatus) {
  LogSummary s = parse_mllog(run_log(3.0, "success", false));
  EXPECT_TRUE(s.run_start_ms);
  EXPECT_FALSE(s.run_stop_ms);
  s = parse_mllog(run_log(3.0, "aborted"));
  EXPECT_EQ(s.stop_status, "aborted");
  EXPECT_EQ(*s.run_stop_ms - *s.run_start_ms, 180000);
  EXPECT_EQ(s.global_batch_size, 768);
}

TEST(MllogParser, FirstRunStartAndStopWin) {
  const std::string log = event("run_start", 100) + "\n" + event("run_start", 200) + "\n" +
                          event("run_stop", 300, "null", R"({"status": "aborted"})") + "\n" +
                          event("run_stop", 400, "null", R"({"status": "success"})") + "\n";
  const LogSummary s = parse_mllog(log);
  EXPECT_EQ(s.run_start_ms, 100);
  EXPECT_EQ(s.run_stop_ms, 300);
  EXPECT_EQ(s.stop_status, "aborted");
}

TEST(MllogParser, ChunkedFeedingGivesTheSameSummary) {
  const std::string log = "0: " + run_log(12.5) + "x" + event("eval_accuracy", 9, "0.5");  // no final newline
  const LogSummary whole = parse_mllog(log);
  for (size_t step : {1u, 2u, 7u, 64u}) {
    MllogParser p;
    for (size_t at = 0; at < log.size(); at += step) p.feed(std::string_view(log).substr(at, step));
    const LogSummary s = p.finish();
    EXPECT_EQ(s.mllog_lines, whole.mllog_lines) << step;
    EXPECT_EQ(s.run_stop_ms, whole.run_stop_ms) << step;
    EXPECT_EQ(s.last_eval_accuracy, whole.last_eval_accuracy) << step;
  }
  EXPECT_EQ(whole.mllog_lines, 5u);
}

TEST(MllogParser, OverlongLinesAreBoundedAndCounted) {
  std::string log = event("run_start", 1) + std::string(kMaxLineBytes + 10, 'x') + "\n" + event("run_stop", 2) + "\n";
  MllogParser p;
  for (size_t at = 0; at < log.size(); at += 4096) p.feed(std::string_view(log).substr(at, 4096));
  const LogSummary s = p.finish();
  EXPECT_EQ(s.overlong_lines, 1u);
  EXPECT_EQ(s.run_start_ms, 1);  // the event at the start of the long line is still read
  EXPECT_EQ(s.run_stop_ms, 2);
}

// ---------------------------------------------------------------------------
// Names.

TEST(MlperfNames, BenchmarkFolderNamesOfSeveralRounds) {
  EXPECT_EQ(canonical_benchmark("ssd"), "retinanet");
  EXPECT_EQ(canonical_benchmark("retinanet"), "retinanet");
  EXPECT_EQ(canonical_benchmark("gnn"), "rgat");
  EXPECT_EQ(canonical_benchmark("RGAT"), "rgat");
  EXPECT_EQ(canonical_benchmark("something_new"), "something_new");
  ASSERT_NE(find_benchmark_rule("ssd"), nullptr);
  EXPECT_EQ(find_benchmark_rule("ssd")->required_runs, 5);
  EXPECT_EQ(find_benchmark_rule("gpt3")->required_runs, 3);
  EXPECT_EQ(find_benchmark_rule("bert")->required_runs, 10);
  EXPECT_EQ(find_benchmark_rule("unet3d")->max_non_converged, 4);
  EXPECT_EQ(find_benchmark_rule("nope"), nullptr);
}

TEST(MlperfNames, AcceleratorNamesGroupTogether) {
  EXPECT_EQ(accelerator_key("NVIDIA H100-SXM5-80GB"), accelerator_key("H100-SXM5-80GB"));
  EXPECT_EQ(accelerator_key("nvidia h100 sxm5 80gb"), accelerator_key("H100-SXM5-80GB"));
  EXPECT_NE(accelerator_key("NVIDIA H200-SXM5-141GB"), accelerator_key("H100-SXM5-80GB"));
  EXPECT_EQ(accelerator_display("NVIDIA H100-SXM5-80GB"), "H100-SXM5-80GB");
  EXPECT_EQ(accelerator_display("TPU-v5p"), "TPU-v5p");
}

// ---------------------------------------------------------------------------
// Scoring.

TEST(MlperfScore, OlympicMeanDropsFastestAndSlowest) {
  const auto runs = folder_runs("A", "bert", 8, {10, 1, 2, 3, 4, 5, 6, 7, 8, 100});
  const Score s = score_of(runs);
  ASSERT_TRUE(s.minutes) << s.reason;
  EXPECT_DOUBLE_EQ(*s.minutes, (2 + 3 + 4 + 5 + 6 + 7 + 8 + 10) / 8.0);
  EXPECT_EQ(s.runs, 10);
  EXPECT_EQ(s.required, 10);
}

TEST(MlperfScore, OneNonConvergedRunCountsAsTheSlowest) {
  const auto runs = folder_runs("A", "bert", 8, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 1);
  const Score s = score_of(runs);
  ASSERT_TRUE(s.minutes) << s.reason;
  EXPECT_DOUBLE_EQ(*s.minutes, (2 + 3 + 4 + 5 + 6 + 7 + 8 + 9) / 8.0);  // 9 kept: the failed run is dropped instead
  EXPECT_EQ(s.converged, 9);
}

TEST(MlperfScore, TwoNonConvergedRunsInvalidate) {
  const auto runs = folder_runs("A", "bert", 8, {1, 2, 3, 4, 5, 6, 7, 8}, 2);
  const Score s = score_of(runs);
  EXPECT_FALSE(s.minutes);
  EXPECT_NE(s.reason.find("2 of 10 runs did not converge"), std::string::npos) << s.reason;
}

TEST(MlperfScore, TooFewRunsAreNotScored) {
  const Score s = score_of(folder_runs("A", "ssd", 8, {1, 2, 3, 4}));
  EXPECT_FALSE(s.minutes);
  EXPECT_EQ(s.required, 5);
  EXPECT_NE(s.reason.find("4 runs, fewer than the 5 required"), std::string::npos) << s.reason;
}

TEST(MlperfScore, UnknownBenchmarkIsNotScored) {
  const Score s = score_of(folder_runs("A", "mystery", 8, {1, 2, 3}));
  EXPECT_FALSE(s.minutes);
  EXPECT_NE(s.reason.find("unknown benchmark 'mystery'"), std::string::npos);
}

TEST(MlperfScore, Gpt3NeedsThreeRunsAndScalingFactorApplies) {
  auto runs = folder_runs("A", "gpt3", 512, {30, 10, 20});
  for (auto& r : runs) r.scaling_factor = 1.5;
  const Score s = score_of(runs);
  ASSERT_TRUE(s.minutes) << s.reason;
  EXPECT_DOUBLE_EQ(*s.unscaled_minutes, 20.0);
  EXPECT_DOUBLE_EQ(*s.minutes, 30.0);
}

TEST(MlperfScore, Unet3dDropsFourAtEachEnd) {
  std::vector<double> m;
  for (int i = 1; i <= 38; ++i) m.push_back(i);
  const Score s = score_of(folder_runs("A", "unet3d", 8, m, 2));  // 40 runs, 2 failed: drop 4 fast, 2 slow
  ASSERT_TRUE(s.minutes) << s.reason;
  double sum = 0;
  for (int i = 5; i <= 36; ++i) sum += i;
  EXPECT_DOUBLE_EQ(*s.minutes, sum / 32.0);
}

TEST(MlperfScore, FoldersWithoutLogsGetAReason) {
  ResultFolder f;
  f.submitter = "Clemson";
  f.system = "X";
  f.benchmark_folder = "llama2_70b_lora";
  f.scaling_factor = 1.1;
  const auto scores = score_folders({}, {f});
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_FALSE(scores[0].minutes);
  EXPECT_EQ(scores[0].reason, "no run logs in the folder");
}

// The typed JSON of `mlperf scores` and `mlperf ingest`: a score with its
// figures (null where not scored), a run keyed by the runs CSV's columns.
TEST(MlperfJson, ScoresAndRunsAreTyped) {
  auto runs = folder_runs("A", "gpt3", 512, {30, 10, 20});
  for (auto& r : runs) r.scaling_factor = 1.5;
  const nlohmann::json scored = score_of(runs);
  EXPECT_EQ(scored["folder"], "gpt3");
  EXPECT_EQ(scored["runs"], 3);
  EXPECT_DOUBLE_EQ(scored["minutes"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(scored["unscaled_minutes"].get<double>(), 20.0);
  EXPECT_EQ(scored["reason"], "");
  const nlohmann::json unscored = score_of(folder_runs("A", "bert", 8, {1.0}));
  EXPECT_TRUE(unscored["minutes"].is_null());
  EXPECT_NE(unscored["reason"], "");

  const nlohmann::json run = runs[0];
  std::vector<std::string> keys;
  for (const auto& [k, v] : run.items()) keys.push_back(k);
  std::vector<std::string> columns = runs_csv_columns();
  std::sort(columns.begin(), columns.end());  // nlohmann keeps keys sorted
  EXPECT_EQ(keys, columns);
  EXPECT_EQ(run["converged"], true);
  EXPECT_TRUE(run["global_batch_size"].is_null());
  EXPECT_EQ(run["accelerators"], 512);

  IngestResult ingest;
  ingest.runs = runs;
  ingest.logs = 3;
  const nlohmann::json j = ingest;
  EXPECT_EQ(j["runs"].size(), 3u);
  ASSERT_EQ(j["scores"].size(), 1u);
  EXPECT_EQ(j["scores"][0], scored);
  EXPECT_EQ(j["logs"], 3);
}

// ---------------------------------------------------------------------------
// The runs table.

TEST(MlperfRunFields, CsvAndJsonAreWrittenFromTheOneList) {
  auto runs = folder_runs("Sys, \"quoted\"", "ssd", 16, {1.25});
  mlperf::Run& r = runs[0];
  r.global_batch_size = 2048;
  r.progress_at_stop = 0.5;
  r.malformed_lines = 7;
  std::ostringstream csv;
  write_runs_csv(runs, csv);
  const std::vector<mlperf::Run> back = read_runs_csv(csv.str(), "test");
  ASSERT_EQ(back.size(), 1u);
  // The header is the list's names in order; each field reads back as the JSON has it.
  std::string header;
  for (const RunField& f : run_fields()) header += (header.empty() ? "" : ",") + std::string(f.name);
  EXPECT_EQ(csv.str().substr(0, csv.str().find('\n')), header);
  const nlohmann::json written = r, read = back[0];
  ASSERT_EQ(written.size(), run_fields().size());
  for (const RunField& f : run_fields()) EXPECT_EQ(read[f.name], written[f.name]) << f.name;
  EXPECT_EQ(written["malformed_lines"], 7);
  EXPECT_EQ(written["global_batch_size"], 2048);
  EXPECT_EQ(written["system"], "Sys, \"quoted\"");
  EXPECT_EQ(std::get<bool>(run_fields()[16].value(r)), r.converged);
  EXPECT_EQ(run_fields()[16].name, "converged");
}

TEST(MlperfRunsCsv, RoundTrips) {
  auto runs = folder_runs("Sys, \"quoted\"", "ssd", 16, {1.25, 2.5});
  runs[0].global_batch_size = 2048;
  runs[0].run_start_ms = 1728509225422;
  runs[0].scaling_factor = 1.0188034188034187;
  runs[1].framework = "line1\nline2";
  std::ostringstream out;
  write_runs_csv(runs, out);
  const auto back = read_runs_csv(out.str(), "test");
  ASSERT_EQ(back.size(), runs.size());
  EXPECT_EQ(back[0].system, runs[0].system);
  EXPECT_EQ(back[0].benchmark, "retinanet");
  EXPECT_EQ(back[0].benchmark_folder, "ssd");
  EXPECT_EQ(back[0].global_batch_size, 2048);
  EXPECT_EQ(back[0].run_start_ms, 1728509225422);
  EXPECT_EQ(back[0].scaling_factor, runs[0].scaling_factor);
  EXPECT_EQ(back[0].minutes, 1.25);
  EXPECT_EQ(back[1].framework, "line1\nline2");
  EXPECT_EQ(back[1].accelerators, 16);
  EXPECT_TRUE(back[1].converged);
}

TEST(MlperfRunsCsv, BadInputNamesLineAndColumn) {
  std::ostringstream out;
  write_runs_csv(folder_runs("A", "bert", 8, {1.0}), out);
  const std::string good = out.str();
  const std::string header = good.substr(0, good.find('\n') + 1);
  auto message = [](const std::string& text) {
    try {
      read_runs_csv(text, "runs.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("a,b\n1,2\n").find("the header has no column"), std::string::npos);
  EXPECT_NE(message("").find("is empty"), std::string::npos);
  EXPECT_NE(message(header + "x,y\n").find("line 2: 2 fields"), std::string::npos);
  std::string bad_number = good;
  bad_number.replace(bad_number.find(",1,8,8,"), 7, ",1,8,eight,");
  EXPECT_NE(message(bad_number).find("line 2: column accelerators: 'eight' is not a number"), std::string::npos)
      << message(bad_number);
  EXPECT_NE(message(header + "\"unterminated").find("not closed"), std::string::npos);
}

TEST(MlperfRunsCsv, WritesAtomically) {
  TempDir dir;
  const fs::path p = dir.path() / "runs.csv";
  write_runs_csv(folder_runs("A", "bert", 8, {1.0, 2.0}), p);
  EXPECT_EQ(read_runs_csv(p).size(), 2u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // no temporary left
  EXPECT_THROW(write_runs_csv({}, dir.path() / "missing" / "runs.csv"), Error);
  EXPECT_EQ(read_runs_csv(p).size(), 2u);
}

// ---------------------------------------------------------------------------
// Ingest of real result files (mlperf/testdata: copies from MLPerf Training v4.1).

TEST(MlperfIngest, RealFixtures) {
  const IngestResult r = ingest_results({kTestData}, {});
  EXPECT_EQ(r.logs, 16u);
  EXPECT_EQ(r.folders.size(), 5u);
  EXPECT_EQ(r.malformed_lines, 1u);  // the Lambda log: two ranks' output interleaved inside one event
  const auto scores = score_folders(r.runs, r.folders);
  ASSERT_EQ(scores.size(), 5u);

  // Prefixed lines ("0: :::MLLOG"), 10 runs: 24.194392 min by hand (python over the logs).
  const Score& giga = find_score(scores, "G593-ZD1_pytorch", "llama2_70b_lora");
  ASSERT_TRUE(giga.minutes) << giga.reason;
  EXPECT_NEAR(*giga.minutes, 24.194392, 0.001);
  EXPECT_EQ(giga.accelerators, 8);

  // scaling.json: mean of the middle of three runs, 49.76266667 min, times 1.0173992673992674.
  const Score& tpu = find_score(scores, "cloud-tpu-trillium-1024-maxtext", "gpt3");
  ASSERT_TRUE(tpu.minutes) << tpu.reason;
  ASSERT_TRUE(tpu.scaling_factor);
  EXPECT_NEAR(*tpu.unscaled_minutes, 49.762667, 0.001);
  EXPECT_NEAR(*tpu.minutes, 50.628104, 0.001);
  EXPECT_EQ(tpu.accelerators, 1024);

  // One aborted run alone: not converged, and too few runs.
  const Score& eos = find_score(scores, "eos_n8_ngc23.04_pytorch", "bert");
  EXPECT_FALSE(eos.minutes);
  EXPECT_EQ(eos.converged, 0);
  EXPECT_NE(eos.reason.find("1 runs, fewer than the 10 required"), std::string::npos) << eos.reason;

  std::map<std::string, const mlperf::Run*> by_path;
  for (const auto& run : r.runs) by_path[run.log_path] = &run;
  const mlperf::Run* aborted = by_path.at("NVIDIA/results/eos_n8_ngc23.04_pytorch/bert/result_4.txt");
  EXPECT_EQ(aborted->status, "aborted");
  EXPECT_FALSE(aborted->converged);
  EXPECT_NEAR(*aborted->minutes, 1.003533, 1e-5);
  EXPECT_EQ(aborted->accelerators, 64);

  // An odd file name, with a malformed line.
  const mlperf::Run* odd = by_path.at(
      "Lambda/results/lambda_1cc_n4_H100-SXM-80GB_ngc24.04_nemo/llama2_70b_lora/result_240928173116824495865_1.txt");
  EXPECT_TRUE(odd->converged);
  EXPECT_NEAR(*odd->minutes, 8.56215, 1e-5);
  EXPECT_EQ(odd->malformed_lines, 1u);

  // Progress bars with cut UTF-8 on the same line as events.
  const mlperf::Run* bars = by_path.at("Cisco/results/C885a-8xH100-SXM-80G/ssd/result_3.txt");
  EXPECT_TRUE(bars->converged);
  EXPECT_NEAR(*bars->minutes, 36.281033, 1e-5);
  EXPECT_EQ(bars->benchmark, "retinanet");
  EXPECT_EQ(bars->benchmark_folder, "ssd");
  EXPECT_EQ(bars->global_batch_size, 256);
}

TEST(MlperfIngest, OneSubmitterOrOneBenchmarkFolder) {
  const IngestResult sub = ingest_results({kTestData / "GigaComputing"}, {.threads = 1, .progress = {}});
  EXPECT_EQ(sub.logs, 10u);
  const IngestResult one =
      ingest_results({kTestData / "Google" / "results" / "cloud-tpu-trillium-1024-maxtext" / "gpt3"}, {});
  ASSERT_EQ(one.runs.size(), 3u);
  EXPECT_EQ(one.runs[0].log_path, "Google/results/cloud-tpu-trillium-1024-maxtext/gpt3/result_0.txt");
  EXPECT_EQ(one.runs[0].submitter, "Google");
  // The same tree twice is read once.
  EXPECT_EQ(ingest_results({kTestData, kTestData}, {}).logs, 16u);
}

TEST(MlperfIngest, SyntheticTreeEdgeCases) {
  TempDir dir;
  const fs::path bench = dir.path() / "Org" / "results" / "sys" / "bert";
  for (int i = 0; i < 9; ++i) write_file(bench / fmt::format("result_{}.txt", i), run_log(10 + i));
  write_file(bench / "odd-name.log", "0: " + run_log(50, "success", false));  // missing run_stop
  write_file(bench / "notes.txt", "no events here\n");
  write_file(bench / "package_checker_params", "--rcp-bypass\n");
  const fs::path bad = dir.path() / "Org" / "results" / "sys" / "ssd";
  for (int i = 0; i < 5; ++i) write_file(bad / fmt::format("result_{}.txt", i), run_log(1 + i));  // logs say bert
  write_file(bad / "scaling.json", "{\"scaling_factor\": \"big\"}");
  const IngestResult r =
      ingest_results({dir.path()}, {.threads = 2, .progress = [&](uint64_t d, uint64_t t) { EXPECT_LE(d, t); }});
  EXPECT_EQ(r.logs, 15u);
  EXPECT_EQ(r.ignored_files, 1u);
  bool missing_desc = false;
  for (const auto& n : r.notes) missing_desc |= n.find("no system description") != std::string::npos;
  EXPECT_TRUE(missing_desc);
  size_t mismatched = 0;
  for (const auto& n : r.notes)
    mismatched += n.find("says submission_benchmark 'bert' but lies in folder 'ssd'") != std::string::npos;
  EXPECT_EQ(mismatched, 5u);
  const auto scores = score_folders(r.runs, r.folders);
  const Score& b = find_score(scores, "sys", "bert");
  ASSERT_TRUE(b.minutes) << b.reason;
  EXPECT_NEAR(*b.minutes, (11 + 12 + 13 + 14 + 15 + 16 + 17 + 18) / 8.0, 1e-9);  // the missing stop is the slowest
  EXPECT_EQ(b.accelerators, 0);
  EXPECT_TRUE(b.accelerator.empty());
  const Score& s = find_score(scores, "sys", "ssd");
  EXPECT_FALSE(s.minutes);
  EXPECT_NE(s.reason.find("no numeric scaling_factor"), std::string::npos) << s.reason;
}

// What ingest refuses, the runs CSV carries, so `scores` on the CSV
// refuses it too; node counts never wrap (4294967297 is not 1, -2 is not -2 x 8).
TEST(MlperfIngest, RefusalsTravelThroughTheRunsCsvAndCountsNeverWrap) {
  TempDir dir;
  auto tree = [&](const std::string& system, const std::string& desc, const std::string& scaling) {
    const fs::path bench = dir.path() / "Org" / "results" / system / "bert";
    for (int i = 0; i < 10; ++i) write_file(bench / fmt::format("result_{}.txt", i), run_log(10 + i));
    if (!scaling.empty()) write_file(bench / "scaling.json", scaling);
    write_file(dir.path() / "Org" / "systems" / (system + ".json"), desc);
  };
  tree("good", R"({"number_of_nodes": 2, "accelerators_per_node": 8})", "");
  tree("wrap", R"({"number_of_nodes": 4294967297, "accelerators_per_node": 8})", "");
  tree("negative", R"({"number_of_nodes": -2, "accelerators_per_node": 8})", "");
  tree("scaling", R"({"number_of_nodes": 1, "accelerators_per_node": 8})", R"({"scaling_factor": -1})");
  // A subnormal factor would scale every time to about 0 minutes.
  tree("tiny", R"({"number_of_nodes": 1, "accelerators_per_node": 8})", R"({"scaling_factor": 1e-320})");
  const IngestResult r = ingest_results({dir.path()}, {.threads = 1, .progress = {}});
  ASSERT_EQ(r.runs.size(), 50u);
  for (const auto& run : r.runs) {
    if (run.system == "good") {
      EXPECT_EQ(run.accelerators, 16);
      EXPECT_TRUE(run.problem.empty()) << run.problem;
    } else {
      // Node counts out of range give no accelerators, never 8 (wrapped) or -16;
      // a bad scaling.json leaves a valid system description alone.
      EXPECT_EQ(run.accelerators, run.system == "scaling" || run.system == "tiny" ? 8 : 0) << run.system;
      EXPECT_FALSE(run.problem.empty()) << run.system;
    }
  }
  const auto from_ingest = score_folders(r.runs, r.folders);
  // The same runs through the CSV, without the folders: the same verdicts.
  const fs::path csv = dir.path() / "runs.csv";
  write_runs_csv(r.runs, csv);
  const auto back = read_runs_csv(csv);
  const auto from_csv = score_folders(back, {});
  for (const char* system : {"good", "wrap", "negative", "scaling", "tiny"}) {
    const Score& a = find_score(from_ingest, system, "bert");
    const Score& b = find_score(from_csv, system, "bert");
    EXPECT_EQ(a.minutes.has_value(), b.minutes.has_value()) << system << ": " << a.reason << " / " << b.reason;
    EXPECT_EQ(std::string(system) == "good", b.minutes.has_value()) << system << ": " << b.reason;
  }
  EXPECT_NE(find_score(from_csv, "wrap", "bert").reason.find("4294967297"), std::string::npos);
  EXPECT_NE(find_score(from_csv, "negative", "bert").reason.find("-2"), std::string::npos);
  EXPECT_NE(find_score(from_csv, "scaling", "bert").reason.find("scaling_factor"), std::string::npos);
  EXPECT_NE(find_score(from_csv, "tiny", "bert").reason.find("scaling_factor 1e-320 is not a finite number in"),
            std::string::npos)
      << find_score(from_csv, "tiny", "bert").reason;
}

TEST(MlperfIngest, BadDirectoriesAreOneLineErrors) {
  EXPECT_THROW(ingest_results({"/nonexistent/mlperf"}, {}), Error);
  {
    TempDir a, b;  // two rounds with the same submitter/system/benchmark cannot be told apart
    write_file(a.path() / "Org" / "results" / "sys" / "bert" / "result_0.txt", run_log(1));
    write_file(b.path() / "Org" / "results" / "sys" / "bert" / "result_0.txt", run_log(2));
    EXPECT_THROW(ingest_results({a.path(), b.path()}, {}), Error);
  }
  TempDir dir;
  try {
    ingest_results({dir.path()}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no MLPerf result folder"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------
// Scaling across systems.

TEST(MlperfAnalyze, SpeedupEfficiencyAndBreakEvenThroughTheScalingLibrary) {
  std::vector<mlperf::Run> runs;
  auto add = [&](const std::string& sys, int n, double minutes) {
    for (auto& r : folder_runs(sys, "gpt3", n, {minutes, minutes, minutes})) runs.push_back(r);
  };
  add("n8", 8, 100);                           // reference
  add("n8b", 8, 125);                          // same count, slower
  add("n16", 16, 52);                          // E' 0.96
  add("n32", 32, 28);                          // E' 0.89
  add("n64", 64, 18);                          // E' 0.69
  runs.back().accelerator = "H100-SXM5-80GB";  // another spelling: same group
  const auto scaling = analyze(runs, {});
  ASSERT_EQ(scaling.groups.size(), 1u);
  const auto& g = scaling.groups[0];
  EXPECT_EQ(g.title, "gpt3");
  EXPECT_EQ(g.accelerator, "H100-SXM5-80GB");
  ASSERT_EQ(g.systems.size(), 5u);
  const auto& s = g.systems;
  EXPECT_EQ(s[0].system, "n8");
  EXPECT_EQ(g.reference, 0u);
  EXPECT_FALSE(g.ref_chosen);
  EXPECT_EQ(s[0].role, SystemScaling::Role::kReference);
  EXPECT_EQ(s[1].system, "n8b");
  EXPECT_EQ(s[1].role, SystemScaling::Role::kOther);  // slower at the reference's count: off the curve
  EXPECT_EQ(s[2].role, SystemScaling::Role::kFastestAtN);
  EXPECT_NEAR(s[1].efficiency, 0.8, 1e-12);
  EXPECT_NEAR(s[2].speedup, 100.0 / 52, 1e-12);
  EXPECT_NEAR(s[3].efficiency, 8.0 * 100 / (32 * 28), 1e-12);
  EXPECT_NEAR(s[4].gpu_hours, 64 * 18 / 60.0, 1e-12);  // GPU-hours
  EXPECT_NEAR(s[4].minutes(), 18, 1e-12);
  EXPECT_EQ(s[4].nodes, 8);
  EXPECT_FALSE(s[1].pareto);  // n8b is dominated by n8
  EXPECT_TRUE(s[0].pareto);
  // The curve of the fastest system at each N, with the break-even by rule (a).
  ASSERT_EQ(g.curve.rows.size(), 4u);
  EXPECT_EQ(g.curve.ref_gpus, 8);
  EXPECT_NEAR(g.curve.rows[2].efficiency, 8.0 * 100 / (32 * 28), 1e-12);
  EXPECT_DOUBLE_EQ(g.curve.break_even.threshold, 0.8);
  ASSERT_TRUE(g.curve.break_even.by_threshold);
  EXPECT_EQ(*g.curve.break_even.by_threshold, 32);
  EXPECT_EQ(g.curve_system(32).system, "n32");
  EXPECT_EQ(g.curve_system(8).system, "n8");
  EXPECT_THROW(g.curve_system(12), std::out_of_range);
  EXPECT_TRUE(scaling.left_out.empty());
}

TEST(MlperfAnalyze, FiltersReferenceAndErrors) {
  std::vector<mlperf::Run> runs;
  for (auto& r : folder_runs("a", "ssd", 8, {10, 10, 10, 10, 10})) runs.push_back(r);
  for (auto& r : folder_runs("b", "retinanet", 16, {6, 6, 6, 6, 6})) runs.push_back(r);
  for (auto& r : folder_runs("c", "bert", 8, {5, 5, 5, 5, 5, 5, 5, 5, 5, 5})) runs.push_back(r);
  auto scaling = analyze(runs, {.benchmark = "ssd"});
  ASSERT_EQ(scaling.groups.size(), 1u);
  EXPECT_EQ(scaling.groups[0].systems.size(), 2u);  // ssd and retinanet folders are one benchmark
  scaling = analyze(runs, {.benchmark = "retinanet", .ref_system = "b"});
  ASSERT_EQ(scaling.groups.size(), 1u);
  ASSERT_EQ(scaling.groups[0].systems.size(), 2u);
  EXPECT_EQ(scaling.groups[0].reference, 1u);
  EXPECT_TRUE(scaling.groups[0].ref_chosen);
  EXPECT_EQ(scaling.groups[0].systems[1].role, SystemScaling::Role::kReference);
  EXPECT_EQ(scaling.groups[0].systems[1].system, "b");
  EXPECT_NEAR(scaling.groups[0].systems[0].speedup, 0.6, 1e-12);
  for (auto& r : folder_runs("d", "ssd", 32, {2, 2, 2, 2, 2})) {
    r.division = "open";
    runs.push_back(r);
  }
  scaling = analyze(runs, {.benchmark = "ssd"});
  ASSERT_EQ(scaling.groups.size(), 2u);  // open division results are kept apart
  EXPECT_EQ(scaling.groups[1].division, "open");
  EXPECT_EQ(scaling.groups[1].title, "retinanet (open division)");
  EXPECT_EQ(scaling.groups[0].title, "retinanet");
  EXPECT_EQ(scaling.groups[1].systems.size(), 1u);
  // A scored system without an accelerator count is left out and named.
  for (auto& r : folder_runs("e", "ssd", 8, {3, 3, 3, 3, 3})) {
    r.accelerators = 0;
    runs.push_back(r);
  }
  scaling = analyze(runs, {.benchmark = "ssd"});
  EXPECT_EQ(scaling.left_out, std::vector<std::string>{"S/e/ssd"});
  EXPECT_THROW(analyze(runs, {.benchmark = "gpt3"}), Error);
  EXPECT_THROW(analyze(runs, {.ref_system = "zzz"}), Error);
  EXPECT_THROW(analyze(runs, {.accelerator = "TPU"}), Error);
  EXPECT_THROW(analyze(runs, {.threshold = 1.5}), Error);
}

TEST(MlperfAnalyze, EmbeddedDefaultTable) {
  const auto runs = read_runs_csv(default_runs_csv(), "embedded");
  EXPECT_EQ(runs.size(), 1309u);
  const auto scores = score_folders(runs);
  EXPECT_EQ(scores.size(), 153u);  // the Clemson folder without logs has no run rows
  for (const auto& s : scores) EXPECT_TRUE(s.minutes) << s.system << "/" << s.benchmark_folder << ": " << s.reason;
  const auto scaling = analyze(runs, {.benchmark = "gpt3", .accelerator = "H100-SXM5"});
  ASSERT_EQ(scaling.groups.size(), 1u);
  EXPECT_EQ(scaling.groups[0].systems.size(), 5u);
}

// ---------------------------------------------------------------------------
// All of MLPerf Training v4.1 (../shared): invariants and hand-computed scores.

TEST(MlperfShared, AllOfV41) {
  const fs::path tarball = fs::path(SCALESCOPE_SHARED_DIR) / "data" / "mlperf" / "training_results_v4.1.tar.xz";
  if (!fs::exists(tarball)) GTEST_SKIP() << "no " << tarball << " (the shared data folder is absent)";
  TempDir dir;
  const std::string cmd = fmt::format("tar -xJf '{}' -C '{}'", tarball.string(), dir.path().string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const IngestResult r = ingest_results({dir.path()}, {});
  EXPECT_EQ(r.logs, 1309u);
  EXPECT_EQ(r.folders.size(), 154u);
  EXPECT_EQ(r.ignored_files, 0u);
  const auto scores = score_folders(r.runs, r.folders);
  ASSERT_EQ(scores.size(), 154u);
  size_t scored = 0;
  for (const auto& s : scores) {
    EXPECT_TRUE(s.minutes.has_value() != !s.reason.empty()) << s.system << "/" << s.benchmark_folder;
    if (s.minutes) ++scored;
  }
  EXPECT_EQ(scored, 153u);
  const Score& clemson = find_score(scores, "7x8xH100-SXM5-80GB", "llama2_70b_lora");
  EXPECT_EQ(clemson.reason, "no run logs in the folder");

  // Worked out by hand from the logs (python: first run_start/run_stop per log,
  // status success, sort, drop ends, mean, times scaling.json).
  const std::vector<std::tuple<std::string, std::string, double>> expected = {
      {"eos_n8_ngc23.04_pytorch", "bert", 0.898131},            // one aborted run
      {"tinybox_green", "bert", 360.516498},                    // one log without run_stop
      {"eos_n64_ngc24.09_nemo", "stable_diffusion", 1.705703},  // aborted run and scaling.json
      {"3072xBM.GPU.H100.8", "gpt3", 12.092400},
      {"lambda_1cc_n4_H100-SXM-80GB_ngc24.04_nemo", "llama2_70b_lora", 8.217113},  // odd names
      {"C885a-8xH100-SXM-80G", "ssd", 36.271450},                                  // progress bars
      {"XE9680x8H100-SXM-80GB", "bert", 5.508800},
  };
  for (const auto& [system, folder, minutes] : expected) {
    const Score& s = find_score(scores, system, folder);
    ASSERT_TRUE(s.minutes) << system << ": " << s.reason;
    EXPECT_NEAR(*s.minutes, minutes, 0.001) << system << "/" << folder;
  }

  // The embedded default table is exactly what this ingest produces.
  std::ostringstream out;
  write_runs_csv(r.runs, out);
  EXPECT_TRUE(out.str() == default_runs_csv())
      << "examples/mlperf/v4.1-runs.csv is stale: regenerate it (docs/mlperf.md)";
}

// ---------------------------------------------------------------------------
// Progress at convergence and predictions along the curves.

TEST(MllogParser, ProgressAtStopIsTheLastEvaluationBeforeRunStop) {
  const std::string log = event("run_start", 1000) + "\n" +
                          event("eval_accuracy", 2000, "0.5", R"({"epoch_num": 1.5})") + "\n" +
                          event("eval_accuracy", 3000, "0.7", R"({"epoch_num": 2.5})") + "\n" +
                          event("run_stop", 4000, "null", R"({"status": "success"})") + "\n" +
                          event("eval_accuracy", 5000, "0.8", R"({"epoch_num": 9})") + "\n";
  const auto s = parse_mllog(log);
  ASSERT_TRUE(s.progress_at_stop);
  EXPECT_DOUBLE_EQ(*s.progress_at_stop, 2.5);
  // samples_count (llama2_70b_lora, stable_diffusion) counts too.
  const auto samples = parse_mllog(event("eval_accuracy", 2000, "0.9", R"({"samples_count": 3072})") + "\n");
  EXPECT_EQ(samples.progress_at_stop, 3072.0);
  EXPECT_FALSE(parse_mllog(event("eval_accuracy", 2000, "0.9") + "\n").progress_at_stop);
}

TEST(MlperfRunsCsv, ProgressRoundTripsAndOldTablesStillRead) {
  auto runs = folder_runs("S", "bert", 8, {1.0, 2.0});
  runs[0].progress_at_stop = 2548054;
  std::ostringstream out;
  write_runs_csv(runs, out);
  const auto back = read_runs_csv(out.str(), "test");
  EXPECT_EQ(back[0].progress_at_stop, 2548054.0);
  EXPECT_FALSE(back[1].progress_at_stop);
  // A table written before the column existed: cut the last column off every line.
  std::istringstream in(out.str());
  std::string line, old;
  while (std::getline(in, line)) old += line.substr(0, line.rfind(',')) + "\n";
  ASSERT_EQ(old.find("progress_at_stop"), std::string::npos);
  const auto old_runs = read_runs_csv(old, "old");
  ASSERT_EQ(old_runs.size(), 2u);
  EXPECT_FALSE(old_runs[0].progress_at_stop);
  std::string negative = out.str();
  negative.replace(negative.find(",2548054"), 8, ",-5");
  EXPECT_THROW(read_runs_csv(negative, "neg"), Error);
}

TEST(MlperfPredict, CurvesCarryBatchAndProgressFromTheEmbeddedTable) {
  const auto runs = read_runs_csv(default_runs_csv(), "embedded");
  const auto curves = scaling_curves(runs, {.benchmark = "bert", .accelerator = "H100-SXM5"});
  ASSERT_EQ(curves.size(), 1u);
  const auto& c = curves[0];
  EXPECT_EQ(c.name(), "bert on H100-SXM5-80GB");
  ASSERT_EQ(c.sizes.size(), 6u);
  EXPECT_EQ(c.sizes.front().accelerators, 4);
  EXPECT_EQ(c.sizes.back().accelerators, 3472);
  EXPECT_NEAR(c.sizes[4].minutes, 0.898131, 1e-5);  // eos_n8_ngc23.04_pytorch, as scored
  for (const auto& s : c.sizes) {
    EXPECT_TRUE(s.global_batch_size) << s.system;
    EXPECT_TRUE(s.progress) << s.system;
  }
  EXPECT_EQ(c.sizes.back().global_batch_size, 13888.0);

  PredictOptions p;
  p.predict = {64, 3472, 100000};
  p.fit_up_to = 16;
  const auto f = predict(runs, {.benchmark = "bert", .accelerator = "H100-SXM5"}, p);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fitted, (std::vector<int>{4, 8, 16}));
  ASSERT_EQ(f[0].fit.predictions.size(), 3u);
  ASSERT_TRUE(f[0].measured[1]);
  EXPECT_EQ(f[0].measured[1]->system, "eos_n434_ngc23.09_pytorch");
  EXPECT_FALSE(f[0].measured[2]);
  for (const auto& pr : f[0].fit.predictions) EXPECT_LT(pr.low, pr.high);
  // 4x from 16 is backtested; 6250x is not, and says so. The batch is extrapolated
  // (not planned) and the time splits into steps to converge x time per step.
  EXPECT_EQ(f[0].fit.predictions[0].outside_validated, "");
  EXPECT_EQ(f[0].fit.predictions[2].outside_validated.rfind("outside the validated range", 0), 0u);
  for (const auto& pr : f[0].fit.predictions) {
    EXPECT_EQ(pr.batch_basis, scaling::CurvePrediction::BatchBasis::kExtrapolated);
    EXPECT_LE(pr.batch_low, pr.global_batch);
    EXPECT_NEAR(pr.steps * pr.step_time, pr.time, 1e-9 * pr.time);
  }
  // A benchmark no backtest saw is outside the validated range at any distance.
  auto unseen = runs;
  for (auto& r : unseen)
    if (r.benchmark == "bert") r.benchmark = r.benchmark_folder = "flux1";
  p.predict = {32};
  const auto flux = predict(unseen, {.benchmark = "flux1", .accelerator = "H100-SXM5"}, p);
  ASSERT_EQ(flux.size(), 1u);
  EXPECT_NE(flux[0].fit.predictions[0].outside_validated.find("flux1 was never backtested"), std::string::npos);
  EXPECT_THROW(predict(runs, {}, PredictOptions{}), Error);
  p.fit_up_to = 1;
  EXPECT_THROW(predict(runs, {.benchmark = "bert"}, p), Error);  // no curve has a size <= 1
}

TEST(MlperfJson, PredictionsAndValidationAreTyped) {
  const auto runs = read_runs_csv(default_runs_csv(), "embedded");
  PredictOptions p;
  p.predict = {64, 3472, 100000};
  p.fit_up_to = 16;
  const auto forecasts = predict(runs, {.benchmark = "bert", .accelerator = "H100-SXM5"}, p);
  const nlohmann::json j = forecasts;
  ASSERT_EQ(j.size(), 1u);
  const auto& f = j[0];
  EXPECT_EQ(f["curve"]["name"], "bert on H100-SXM5-80GB");
  EXPECT_EQ(f["curve"]["benchmark"], "bert");
  EXPECT_EQ(f["curve"]["sizes"].size(), 6u);
  EXPECT_EQ(f["curve"]["sizes"][5]["accelerators"], 3472);
  EXPECT_EQ(f["curve"]["sizes"][5]["global_batch_size"], 13888.0);
  EXPECT_EQ(f["fitted"], nlohmann::json({4, 8, 16}));
  ASSERT_EQ(f["fit"]["predictions"].size(), 3u);
  EXPECT_EQ(f["fit"]["predictions"][1]["gpus"], 3472);
  EXPECT_DOUBLE_EQ(f["fit"]["predictions"][1]["time"].get<double>(), forecasts[0].fit.predictions[1].time);
  // One measured size per prediction, null where no system of that size was submitted.
  ASSERT_EQ(f["measured"].size(), 3u);
  EXPECT_EQ(f["measured"][1]["system"], "eos_n434_ngc23.09_pytorch");
  EXPECT_DOUBLE_EQ(f["measured"][1]["minutes"].get<double>(), forecasts[0].measured[1]->minutes);
  EXPECT_TRUE(f["measured"][2].is_null());

  RoundValidation rv;
  rv.validation = validate(runs, {.benchmark = "bert"});
  rv.test_rounds = {"v4.1"};
  const nlohmann::json v = rv;
  EXPECT_EQ(v["validation"]["curves"], rv.validation.curves);
  ASSERT_EQ(v["validation"]["cases"].size(), rv.validation.cases.size());
  ASSERT_FALSE(rv.validation.cases.empty());
  EXPECT_EQ(v["validation"]["cases"][0]["gpus"], rv.validation.cases[0].gpus);
  EXPECT_EQ(v["validation"]["per_group"][0]["group"], "bert");
  EXPECT_EQ(v["test_rounds"], nlohmann::json({"v4.1"}));
  EXPECT_TRUE(v["fit_rounds"].empty());
  EXPECT_TRUE(v["calibration"].contains("batch_rule"));
}

TEST(MlperfPredict, ValidationCoversEveryCurveWithFourSizes) {
  const auto runs = read_runs_csv(default_runs_csv(), "embedded");
  size_t eligible = 0;
  for (const auto& c : scaling_curves(runs, {})) eligible += c.sizes.size() >= 4;
  const auto v = validate(runs, {});
  EXPECT_EQ(v.curves, eligible);
  EXPECT_GE(eligible, 9u);
  size_t default_curves = 0, planned_curves = 0;
  for (const auto& c : v.per_curve) {
    if (c.kind != scaling::kDefaultCurveModel) continue;
    ++(c.batch_planned ? planned_curves : default_curves);
  }
  EXPECT_EQ(default_curves, eligible);
  EXPECT_EQ(planned_curves, eligible);  // each v4.1 curve logs its batch at every size
  // The issue's calibration target, held out (tau without the case's
  // benchmark): the default model's 80 % intervals hold at least 80 % of the cases.
  for (const auto& b : v.buckets)
    if (b.kind == scaling::kDefaultCurveModel && b.bucket == "all") {
      EXPECT_GE(b.coverage_held_out, 0.8) << (b.batch_planned ? "planned" : "extrapolated");
      EXPECT_EQ(b.cases, 70u);
    }
  for (const char* bucket : {"2x", "4x", "8x", "16x+"}) {
    bool found = false;
    for (const auto& b : v.buckets) found |= b.kind == scaling::kDefaultCurveModel && b.bucket == bucket;
    EXPECT_TRUE(found) << bucket;
  }
  // Per bucket too: the default model's intervals, batch extrapolated or
  // planned, held out, hold at least 80 % of each bucket's cases.
  for (const auto& b : v.buckets) {
    if (b.kind == scaling::kDefaultCurveModel) {
      EXPECT_GE(b.coverage_held_out, 0.8) << b.bucket << (b.batch_planned ? " planned" : " extrapolated");
    }
  }
  // The embedded spread (fitted on v4.1 and v5.0 together, one tau over the
  // buckets; MlperfRounds checks it is that fit) on v4.1's cases of the
  // default model: 77 % and 86 % of all (extrapolated, planned), 75 % at
  // least in a bucket (4x extrapolated, 12 cases; docs/scaling.md).
  EXPECT_EQ(v.tau_estimates.size(), 20u);  // 5 model settings x 4 buckets
  for (const auto& b : v.buckets) {
    if (b.kind != scaling::kDefaultCurveModel) continue;
    EXPECT_GE(b.coverage, b.bucket == "all" ? 0.75 : 0.7) << b.bucket << (b.batch_planned ? " planned" : " extrapolated");
    EXPECT_LE(b.coverage, 0.95) << b.bucket << (b.batch_planned ? " planned" : " extrapolated");
  }
}

TEST(MlperfPredict, ReferenceConvergencePointsOfV41) {
  // The RCP olympic means agree with what the submissions' logs show: rgat at
  // batch 262,144 converged in 2.465 epochs on 512 H100 (eos_n64).
  const auto rgat = reference_convergence("rgat");
  ASSERT_EQ(rgat.size(), 5u);
  EXPECT_DOUBLE_EQ(rgat.back().global_batch, 262144);
  EXPECT_NEAR(rgat.back().progress, 2.465, 0.01);
  for (const char* b : {"bert", "dlrm_dcnv2", "gpt3", "llama2_70b_lora", "retinanet", "stable_diffusion"})
    EXPECT_GE(reference_convergence(b).size(), 4u) << b;
  EXPECT_TRUE(reference_convergence("llama31_8b").empty());  // not in v4.1
  // bert is in samples, as its progress_at_stop: about 2.4 million at batch 768.
  const auto bert = reference_convergence("bert");
  EXPECT_GT(bert[1].progress, 2.3e6);
  EXPECT_LT(bert[1].progress, 2.6e6);
}

TEST(MlperfPredict, PlannedBatchReplacesTheExtrapolatedOne) {
  const auto runs = read_runs_csv(default_runs_csv(), "embedded");
  PredictOptions p;
  p.predict = {3472};
  p.fit_up_to = 16;
  const AnalyzeOptions bert{.benchmark = "bert", .accelerator = "H100-SXM5"};
  const auto extrapolated = predict(runs, bert, p);
  // 768 at 16 accelerators, 48 per accelerator, capped at the largest bert RCP batch.
  EXPECT_DOUBLE_EQ(extrapolated[0].fit.predictions[0].global_batch, 16384);
  p.planned_batch = parse_planned_batch("3472:13888");
  const auto planned = predict(runs, bert, p);
  EXPECT_DOUBLE_EQ(planned[0].fit.predictions[0].global_batch, 13888);
  EXPECT_EQ(parse_planned_batch("8:256, 16:512").size(), 2u);
  EXPECT_TRUE(parse_planned_batch("").empty());
  for (const char* bad : {"512", "512:", ":2048", "0:2048", "512:-1", "512:2048,512:4096", "512:2048x", "a:b"})
    EXPECT_THROW(parse_planned_batch(bad), Error) << bad;
}
