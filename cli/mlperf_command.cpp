// scalescope mlperf: ingest MLPerf Training results trees, score them, and
// analyze scaling across the published systems. A thin layer over mlperf/.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <memory>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "mlperf/mlperf.hpp"
#include "report/json_envelope.hpp"
#include "report/mlperf_tables.hpp"
#include "report/progress.hpp"
#include "report/table.hpp"
#include "scaling/scaling.hpp"
#include "sweep/sweep.hpp"
#include "cli/output_format_option.hpp"
#include "base/error.hpp"
#include "base/safe_output.hpp"

namespace scalescope::cli {

namespace {

struct IngestArgs {
  std::vector<std::string> dirs;
  std::string output;
  report::OutputFormat format = report::OutputFormat::kTable;
  bool runs = false;
  bool quiet = false;
  unsigned threads = 0;
};

struct AnalyzeArgs {
  std::string input;
  report::OutputFormat format = report::OutputFormat::kTable;
  mlperf::AnalyzeOptions options;
  std::string predict;        // accelerator counts, "512,1024"
  int fit_up_to = 0;          // 0: every measured size
  std::string planned_batch;  // "512:2048,1024:4096"
  double level = 0.8;
  bool cases = false;  // validate: every case too
  std::string calibration;  // a calibration JSON instead of the embedded one
  // validate: several rounds' tables and a split between them
  std::vector<std::string> tables;  // "v5.0=runs50.csv", "v4.1=embedded"
  std::string fit, test;            // "v4.1", "v4.1,v5.0"
  std::string distance = "doublings";
  bool pooled = false;
  std::string batch_rule;         // validate: fixed instead of chosen; "" chosen (with --fit)
  std::string write_calibration;  // output JSON
  std::string command_line;       // recorded in a calibration written
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::optional<scaling::SpreadCalibration> load_calibration(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the calibration", path);
  std::stringstream text;
  text << in.rdbuf();
  return scaling::read_spread_calibration(text.str(), path);
}

std::vector<mlperf::Run> load_runs(const std::string& input) {
  if (input.empty() || input == "embedded")
    return mlperf::read_runs_csv(mlperf::default_runs_csv(), "the embedded MLPerf v4.1 table");
  return mlperf::read_runs_csv(std::filesystem::path(input));
}

void run_ingest(const IngestArgs& a) {
  const auto format = a.format;
  std::vector<std::filesystem::path> dirs(a.dirs.begin(), a.dirs.end());
  // The runs CSV is replaced when it exists (documented); never a file of the input trees.
  if (!a.output.empty()) trace::check_output(a.output, dirs, true);
  report::Progress::Options po;
  if (a.quiet) po.mode = report::Progress::Mode::kQuiet;
  // Made on the first log read, so a bad directory gives its error alone.
  std::unique_ptr<report::Progress> progress;
  std::once_flag made;
  mlperf::IngestOptions options;
  options.threads = a.threads;
  options.progress = [&](uint64_t done, uint64_t total) {
    std::call_once(made, [&] { progress = std::make_unique<report::Progress>("mlperf ingest", total, po); });
    progress->set(done);
  };
  const mlperf::IngestResult result = mlperf::ingest_results(dirs, options);
  if (progress) progress->finish();
  if (!a.output.empty()) mlperf::write_runs_csv(result.runs, std::filesystem::path(a.output));
  // JSON: the typed result (mlperf::to_json), as the C library and Python give it.
  if (format == report::OutputFormat::kJson) {
    std::cout << report::json_text(report::json_envelope("mlperf ingest", nlohmann::json(result)), 2) << "\n";
    return;
  }
  report::Table table = report::mlperf_ingest_table(result, a.runs);
  if (!a.output.empty()) table.add_note(fmt::format("wrote {} runs to {}", result.runs.size(), a.output));
  table.print(std::cout, format);  // one table: no CSV block header
}

void run_scores(const AnalyzeArgs& a) {
  const auto format = a.format;
  const std::vector<mlperf::Score> scores = mlperf::score_folders(load_runs(a.input));
  // JSON: the typed scores, as the C library and Python give them.
  if (format == report::OutputFormat::kJson)
    std::cout << report::json_text(report::json_envelope("mlperf scores", {{"scores", scores}}), 2) << "\n";
  else report::mlperf_scores_table(scores).print(std::cout, format);
}

void run_analyze(const AnalyzeArgs& a) {
  const auto format = a.format;
  if (a.fit_up_to != 0 && a.predict.empty()) fail("--fit-up-to needs --predict");
  if (!a.planned_batch.empty() && a.predict.empty()) fail("--planned-batch needs --predict");
  const auto runs = load_runs(a.input);
  if (a.predict.empty()) {
    const mlperf::MlperfScaling scaling = mlperf::analyze(runs, a.options);
    // JSON: the typed result (mlperf::to_json), as the C library and Python give it.
    if (format == report::OutputFormat::kJson)
      std::cout << report::json_text(report::json_envelope("mlperf analyze", {{"scaling", scaling}}), 2) << "\n";
    else report::print_tables(std::cout, "mlperf analyze", report::mlperf_scaling_tables(scaling), format);
    return;
  }
  mlperf::PredictOptions p;
  p.predict = sweep::parse_gpu_list(a.predict);
  if (a.fit_up_to != 0) p.fit_up_to = a.fit_up_to;
  p.planned_batch = mlperf::parse_planned_batch(a.planned_batch);
  p.level = a.level;
  const auto calibration = load_calibration(a.calibration);
  if (calibration) p.calibration = &*calibration;
  const std::vector<mlperf::CurveForecast> forecasts = mlperf::predict(runs, a.options, p);
  // JSON: the typed forecasts (mlperf::to_json), as the C library and Python give them.
  if (format == report::OutputFormat::kJson)
    std::cout << report::json_text(report::json_envelope("mlperf analyze", {{"predictions", forecasts}}), 2) << "\n";
  else report::mlperf_predictions_table(forecasts).print(std::cout, format);
}

void run_validate(const AnalyzeArgs& a) {
  const auto format = a.format;
  if (!a.tables.empty() && !a.input.empty())
    fail("give the runs table as --table ROUND=PATH or as the argument, not both");
  if (a.tables.empty() && (!a.fit.empty() || !a.test.empty()))
    fail("--fit and --test name rounds of --table ROUND=PATH");
  if (!a.fit.empty() && !a.calibration.empty()) fail("--fit fits a calibration; --calibration gives one: not both");
  if (!a.write_calibration.empty() && a.fit.empty()) fail("--write-calibration needs --fit");
  std::vector<mlperf::RoundRuns> rounds;
  std::vector<std::filesystem::path> inputs;
  if (a.tables.empty()) rounds.push_back({"", load_runs(a.input)});
  for (const auto& t : a.tables) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size())
      fail("--table '{}' is not ROUND=PATH (PATH 'embedded': the embedded v4.1 table)", t);
    const std::string path = t.substr(eq + 1);
    rounds.push_back({t.substr(0, eq), load_runs(path)});
    if (path != "embedded") inputs.emplace_back(path);
  }
  mlperf::ValidateOptions o;
  o.level = a.level;
  o.fit_rounds = split_list(a.fit);
  o.test_rounds = split_list(a.test);
  if (a.distance == "leverage") o.distance = scaling::SpreadDistance::kLeverage;
  else if (a.distance != "doublings") fail("--distance '{}' is not doublings or leverage", a.distance);
  o.source = a.command_line;
  o.pooled = a.pooled;
  if (a.batch_rule == "chosen") {
    if (a.fit.empty()) fail("--batch-rule chosen needs --fit (the rounds whose backtests choose it)");
    o.choose_batch_rule = true;
  } else if (!a.batch_rule.empty()) {
    for (scaling::BatchRule r : scaling::kBatchRules)
      if (a.batch_rule == scaling::batch_rule_name(r)) o.batch_rule = r;
    if (!o.batch_rule)
      fail("--batch-rule '{}' is not per-accelerator, 'geometric middle', kept, 'fitted law' or chosen",
           a.batch_rule);
  }
  const auto calibration = load_calibration(a.calibration);
  if (calibration) o.calibration = &*calibration;
  if (!a.write_calibration.empty()) {
    if (!a.calibration.empty()) inputs.emplace_back(a.calibration);
    trace::check_output(a.write_calibration, inputs, true);
  }
  const mlperf::RoundValidation v = mlperf::validate(rounds, a.options, o);
  if (!a.write_calibration.empty()) {
    trace::TempPath tmp(trace::temp_path_for(a.write_calibration));
    {
      std::ofstream out(tmp.path(), std::ios::binary);
      out << scaling::write_spread_calibration(v.calibration);
      if (!out.flush()) fail("{}: cannot write", a.write_calibration);
    }
    tmp.commit_to(a.write_calibration);
  }
  // JSON: the typed validation with every case (mlperf::to_json), as the C library and Python give it.
  if (format == report::OutputFormat::kJson)
    std::cout << report::json_text(report::json_envelope("mlperf validate", nlohmann::json(v)), 2) << "\n";
  else report::print_tables(std::cout, "mlperf validate", report::round_validation_tables(v, a.cases), format);
}

}  // namespace

void add_mlperf_command(CLI::App& app, int& /*exit_code*/) {
  auto* cmd = app.add_subcommand("mlperf", "MLPerf Training results: ingest, official scores, scaling across systems");
  cmd->require_subcommand(1);

  auto ingest = std::make_shared<IngestArgs>();
  auto* in = cmd->add_subcommand("ingest", "Read MLPerf Training results trees: one row per run, a score per folder");
  in->add_option("dirs", ingest->dirs, "results tree, submitter folder, system folder or benchmark folder")->required();
  in->add_option("-o,--output", ingest->output, "write the per-run table as CSV (the input of 'mlperf analyze')");
  add_output_format(in, ingest->format, "how to print the result");
  in->add_flag("--runs", ingest->runs, "print the per-run table instead of the scores");
  in->add_option("--threads", ingest->threads, "reader threads (default: one per core)");
  in->add_flag("-q,--quiet", ingest->quiet, "no progress bar");
  in->callback([ingest] { run_ingest(*ingest); });

  auto scores = std::make_shared<AnalyzeArgs>();
  auto* sc = cmd->add_subcommand("scores", "Official score of every result folder of a runs table");
  sc->add_option("runs_csv", scores->input, "runs table from 'mlperf ingest -o' (default: the embedded v4.1 table)");
  add_output_format(sc, scores->format, "how to print the result");
  sc->callback([scores] { run_scores(*scores); });

  auto analyze = std::make_shared<AnalyzeArgs>();
  auto* an = cmd->add_subcommand("analyze", "Scaling across systems per benchmark and accelerator model");
  an->add_option("runs_csv", analyze->input, "runs table from 'mlperf ingest -o' (default: the embedded v4.1 table)");
  an->add_option("--benchmark", analyze->options.benchmark,
                 "only this benchmark (any round's name: ssd, retinanet, ...)");
  an->add_option("--accelerator", analyze->options.accelerator, "only accelerator models matching this (e.g. H100)");
  an->add_option("--ref", analyze->options.ref_system, "reference system (default: the fewest accelerators)");
  an->add_option("--threshold", analyze->options.threshold, "E' threshold of break-even rule (a)")
      ->capture_default_str()
      ->check(number_in(kEfficiencyRange));
  an->add_option("--predict", analyze->predict,
                 "predict these accelerator counts (e.g. 512,1024) per curve, with an interval; prints the "
                 "predictions instead of the scaling tables");
  an->add_option("--fit-up-to", analyze->fit_up_to, "fit on the sizes up to this many accelerators (default: all)");
  an->add_option("--planned-batch", analyze->planned_batch,
                 "global batch planned at predicted sizes, N:B,... (default: extrapolated from the fitted sizes)");
  an->add_option("--level", analyze->level, "level of the prediction interval")
      ->capture_default_str()
      ->check(number_in(kLevelRange));
  an->add_option("--calibration", analyze->calibration,
                 "the interval's spread from this JSON ('mlperf validate --write-calibration'; default: the embedded "
                 "one)");
  add_output_format(an, analyze->format, "how to print the result");
  an->callback([analyze] { run_analyze(*analyze); });

  auto validate = std::make_shared<AnalyzeArgs>();
  auto* va = cmd->add_subcommand(
      "validate", "How far predictions hold: fit each curve's smallest sizes, predict the larger measured ones");
  va->add_option("runs_csv", validate->input, "runs table from 'mlperf ingest -o' (default: the embedded v4.1 table)");
  va->add_option("--table", validate->tables,
                 "a round's runs table, ROUND=PATH (repeatable; PATH 'embedded': the embedded v4.1 table), e.g. "
                 "--table v4.1=embedded --table v5.0=runs50.csv");
  va->add_option("--fit", validate->fit, "fit the interval's spread on these rounds' cases (e.g. v4.1 or v4.1,v5.0)");
  va->add_option("--test", validate->test, "judge error and coverage on these rounds' cases (default: every round)");
  va->add_option("--distance", validate->distance,
                 "extrapolation distance of a spread fitted with --fit: doublings or leverage")
      ->capture_default_str();
  va->add_flag("--pool-buckets", validate->pooled,
               "with --fit: one spread per model over every extrapolation bucket (default: one per bucket)");
  va->add_option("--calibration", validate->calibration, "judge this calibration JSON instead of the embedded one");
  va->add_option("--batch-rule", validate->batch_rule,
                 "the default model's batch beyond the fitted sizes: per-accelerator, 'geometric middle', kept, "
                 "'fitted law', or chosen (by backtests on the --fit rounds alone; default: the calibration's)");
  va->add_option("--write-calibration", validate->write_calibration,
                 "write the spread fitted with --fit as JSON (replaced when it exists)");
  va->add_option("--benchmark", validate->options.benchmark, "only this benchmark");
  va->add_option("--accelerator", validate->options.accelerator, "only accelerator models matching this");
  va->add_option("--level", validate->level, "level of the prediction intervals")
      ->capture_default_str()
      ->check(number_in(kLevelRange));
  va->add_flag("--cases", validate->cases, "also list every case (fit, predicted size, error, interval)");
  add_output_format(va, validate->format, "how to print the result");
  va->callback([validate] {
    // The calibration records the command that fitted it.
    validate->command_line = "scalescope mlperf validate";
    for (const auto& t : validate->tables) validate->command_line += " --table " + t;
    if (!validate->fit.empty()) validate->command_line += " --fit " + validate->fit;
    validate->command_line += " --distance " + validate->distance;
    if (validate->pooled) validate->command_line += " --pool-buckets";
    if (!validate->batch_rule.empty()) validate->command_line += " --batch-rule '" + validate->batch_rule + "'";
    validate->command_line += fmt::format(" --level {}", validate->level);
    if (!validate->options.benchmark.empty()) validate->command_line += " --benchmark " + validate->options.benchmark;
    if (!validate->options.accelerator.empty())
      validate->command_line += " --accelerator " + validate->options.accelerator;
    run_validate(*validate);
  });
}

}  // namespace scalescope::cli
