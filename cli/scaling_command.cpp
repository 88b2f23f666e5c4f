// scalescope scaling: speedup, efficiency, GPU-hours, break-even, comparisons
// and predictions from a sweep's results file (sweep/scaling_study.hpp, rendered by report/scaling_tables.hpp).
#include <iostream>
#include <map>
#include <set>

#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "cli/usage_error.hpp"
#include "cli/output_format_option.hpp"
#include "mlperf/mlperf.hpp"
#include "report/json_envelope.hpp"
#include "report/scaling_tables.hpp"
#include "report/table.hpp"
#include "sweep/scaling_study.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"

namespace scalescope::cli {

namespace {
struct ScalingArgs {
  std::string db;
  std::string metric;
  std::string metric_better;
  int ref = 0;
  double threshold = 0.8;
  double price = -1;
  std::string predict;
  std::string compare;
  report::OutputFormat format = report::OutputFormat::kTable;
  bool weak = false, strong = false;
  double samples_per_gpu_step = 0;
  bool global_batch_grows = false;
  std::string planned_batch;  // "64:2048,128:4096"
};
// Options that name what the sweep must hold: a wrong one would give empty
// tables or drop a section without a word.
void check_against_sweep(const sweep::StoredSweep& stored, const sweep::ScalingStudyOptions& options,
                         const std::string& db) {
  std::set<int> counts;
  std::map<std::string, std::set<std::string>> values;
  for (const auto& run : stored.runs) {
    counts.insert(run.gpus);
    for (const auto& [key, value] : run.config) values[key].insert(value);
  }
  if (options.ref_gpus && !counts.count(*options.ref_gpus))
    fail_usage("{}: --ref {}: no run of the sweep used {} GPU(s); measured: {}", db, *options.ref_gpus,
               *options.ref_gpus, fmt::join(counts, ","));
  if (options.compare) {
    const auto& c = *options.compare;
    auto key = values.find(c.key);
    if (key == values.end()) {
      std::vector<std::string> varied;
      for (const auto& entry : values) varied.push_back(entry.first);
      fail_usage("{}: --compare {}: the sweep did not vary '{}' (varied: {})", db, c.key, c.key,
                 varied.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(varied, ",")));
    }
    if (c.values.size() != 2) fail_usage("--compare {}: give two values, KEY=A,B", c.key);
    for (const auto& v : c.values)
      if (!key->second.count(v))
        fail_usage("{}: --compare {}: '{}' is not a value of the sweep; values: {}", db, c.key, v,
                   fmt::join(key->second, ","));
  }
}

}  // namespace

void add_scaling_command(CLI::App& app, int& /*exit_code*/) {
  auto args = std::make_shared<ScalingArgs>();
  auto* cmd = app.add_subcommand(
      "scaling", "Speedup, efficiency E', GPU-hours, break-even and predictions from a sweep's results file");
  cmd->footer(
      "Example: scalescope scaling sweep.db --threshold 0.8 --price-per-gpu-hour 2.5 --predict 16,32\n"
      "         scalescope scaling profiled.db --samples-per-gpu-step 128   (iteration time, batch 128 per GPU)");
  cmd->add_option("db", args->db, "Results file written by 'scalescope sweep'")->required();
  cmd->add_option("--metric", args->metric, "Metric to analyse (default: the sweep's; also wall_s, energy_j, ...)");
  cmd->add_option("--metric-better", args->metric_better, "higher | lower (default: as recorded by the sweep)");
  cmd->add_option("--ref", args->ref, "Reference GPU count (default: the smallest measured)");
  cmd->add_option("--threshold", args->threshold, "E' threshold of break-even rule (a)")
      ->capture_default_str()
      ->check(number_in(kEfficiencyRange));
  cmd->add_option("--price-per-gpu-hour", args->price, "Adds cost = GPU-hours x price")
      ->default_str("")  // unset: no cost column
      ->check(number_in({0, 1e6}));
  cmd->add_option("--predict", args->predict, "GPU counts to predict, e.g. 16,32,64");
  cmd->add_option("--compare", args->compare, "KEY=A,B: compare two values of a varied key at each GPU count");
  auto* weak = cmd->add_flag("--weak", args->weak,
                             "Weak scaling: fixed work per GPU per step (e.g. fixed per-GPU batch); a time per step "
                             "becomes time per unit of work = time / N, so E' = T(ref)/T(N)");
  auto* strong =
      cmd->add_flag("--strong", args->strong,
                    "Strong scaling: the same work per step at every N (silences the iteration-time warning)");
  weak->excludes(strong);
  cmd->add_option("--samples-per-gpu-step", args->samples_per_gpu_step,
                  "Weak scaling with B samples (images, tokens) per GPU per step: times become seconds per sample")
      ->default_str("")  // unset: times as measured
      ->check(number_in(kSamplesPerStepRange))
      ->excludes(strong);
  cmd->add_flag("--global-batch-grows", args->global_batch_grows,
                "Predictions: the global batch grows with N (fixed per-GPU batch) and the metric is the time of a "
                "step or of a fixed number of steps; adds the step x converge model");
  cmd->add_option("--planned-batch", args->planned_batch,
                  "With --global-batch-grows: global batch planned at predicted sizes, N:B,... (samples with "
                  "--samples-per-gpu-step, else per-GPU batches; default: N x the per-GPU batch)");
  add_output_format(cmd, args->format, "how to print the study");
  cmd->callback([args] {
    const report::OutputFormat format = args->format;
    sweep::ScalingStudyOptions options;
    options.metric = args->metric;
    if (args->metric_better == "higher") options.higher_is_better = true;
    else if (args->metric_better == "lower") options.higher_is_better = false;
    else if (!args->metric_better.empty())
      fail_usage("--metric-better '{}' is not higher or lower", args->metric_better);
    if (args->ref != 0) options.ref_gpus = args->ref;
    if (args->weak) options.weak = true;
    if (args->strong) options.weak = false;
    if (args->samples_per_gpu_step != 0) options.samples_per_gpu_step = args->samples_per_gpu_step;
    options.threshold = args->threshold;
    if (args->price >= 0) options.price_per_gpu_hour = args->price;
    if (!args->predict.empty()) options.predict = sweep::parse_gpu_list(args->predict);
    if (args->global_batch_grows && args->predict.empty())
      fail("--global-batch-grows describes --predict; give --predict too");
    options.global_batch_grows = args->global_batch_grows;
    options.planned_batch = mlperf::parse_planned_batch(args->planned_batch);
    if (!options.planned_batch.empty() && !args->global_batch_grows)
      fail("--planned-batch describes the step x converge model; give --global-batch-grows too");
    if (!args->compare.empty()) options.compare = sweep::Variable::parse(args->compare);
    const auto stored = sweep::read_sweep(args->db);
    check_against_sweep(stored, options, args->db);
    const sweep::ScalingStudy study = sweep::study_scaling(stored, options);
    if (format == report::OutputFormat::kJson) {  // typed: the study itself, beside the runs it read
      nlohmann::json runs = stored;
      runs["path"] = args->db;
      std::cout << report::json_text(report::json_envelope("scaling", {{"sweep", runs}, {"scaling", study}}), 2)
                << "\n";
      return;
    }
    auto tables = report::scaling_tables(study);
    if (auto jobs = report::slurm_jobs_table(stored); !jobs.rows().empty()) tables.push_back(std::move(jobs));
    report::print_tables(std::cout, "scaling", tables, format);
  });
}

}  // namespace scalescope::cli
