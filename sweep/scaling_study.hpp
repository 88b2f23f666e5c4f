#pragma once
// The scaling analysis of a stored sweep as one typed result: runs per
// configuration and GPU count, the scaling table of each configuration
// (medians with CIs, speedup, E', GPU-hours, energy, break-even by both
// rules), predictions beyond the measured counts, and comparisons between
// configurations. `scalescope scaling` prints it through
// report/scaling_tables.hpp and the HTML report draws it: both from this
// object, so they cannot disagree.
//
//   sweep::ScalingStudyOptions o;
//   o.predict = {16};
//   const sweep::ScalingStudy s = sweep::study_scaling(sweep::read_sweep("results.sqlite"), o);
//   // s.configs[0].table->rows[1].efficiency, s.comparisons[0].result.ratio

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scaling/scaling.hpp"
#include "sweep/sweep.hpp"

namespace scalescope::sweep {

struct ScalingStudyOptions {
  std::string metric;                    // "" = the sweep's metric
  std::optional<bool> higher_is_better;  // default: the sweep's setting for its metric, else lower
  std::optional<int> ref_gpus;
  double threshold = 0.8;
  std::optional<double> price_per_gpu_hour;
  std::vector<int> predict;         // GPU counts to predict
  std::optional<Variable> compare;  // KEY=A,B; default: each varied key, first value vs the others
  double alpha = 0.05;
  // Work per step (docs/scaling.md, "Strong and weak scaling"): nullopt =
  // unknown (a warning when the metric is the trace's per-step time), false =
  // strong scaling (same global work per step at every N), true = weak scaling
  // (fixed per-GPU work per step): time metrics become time per unit of work,
  // step time / N, or per sample with samples_per_gpu_step.
  std::optional<bool> weak;
  std::optional<double> samples_per_gpu_step;  // images or tokens per GPU per step (implies weak)
  // Predictions: the global batch grows in proportion to N (a fixed per-GPU
  // batch) and each run's metric is the time of a step or of a fixed number of
  // steps. Adds the step x converge model (scaling::fit_curve with
  // batch_grows), fitted on the metric as measured, also under --weak.
  bool global_batch_grows = false;
  // With global_batch_grows: the global batch planned at predicted sizes, in
  // samples with samples_per_gpu_step (the measured sizes' batch is N x that),
  // else in per-GPU batches (the measured sizes' batch is N).
  std::map<int, double> planned_batch;
};

// Runs of one configuration at one GPU count, by status.
struct RunGroup {
  std::string config;  // "pin=1 amp=bf16", "(default)"
  int gpus = 0;
  std::map<std::string, int> statuses;  // "ok", "failed", "timeout", "crashed", "error", "running"
  size_t with_metric = 0;               // ok runs that have the metric
};

// One model fitted to one configuration's medians.
struct ModelPrediction {
  scaling::ModelKind kind = scaling::ModelKind::kAmdahl;
  scaling::CurveFit fit;
  // E' of each of fit.predictions: GPU-hours against the reference, or under
  // a growing batch (a step does N/N_ref times the work) T_ref / T.
  std::vector<double> efficiency;
};

struct ConfigScaling {
  std::string label;
  // nullopt: left out of the analysis, `left_out` says why.
  std::optional<scaling::ScalingTable> table;
  std::string left_out;
  // Predictions (only when options.predict is not empty), in model order; a
  // model that gives bounds only ends the list (bounds are the same for all).
  std::vector<ModelPrediction> predictions;
  std::string not_predicted;  // set when the models do not apply (weak scaling without a growing batch)
};

// Configuration b against a (the value of one varied key changed, the others
// kept), at one GPU count.
struct ConfigComparison {
  std::string key, a, b;
  std::string others;  // the other keys' values, "" when none
  int gpus = 0;
  scaling::Comparison result;
};

struct ScalingStudy {
  int64_t sweep_id = 0;
  int planned_runs = 0;
  size_t recorded_runs = 0;
  std::string metric;
  bool higher_is_better = false;
  bool weak = false;        // time metrics were turned into time per unit of work
  bool weak_asked = false;  // --weak or --samples-per-gpu-step was given
  std::optional<double> samples_per_gpu_step;
  bool seconds = false;  // the metric is a time in seconds (GPU-hours and cost make sense)
  double threshold = 0.8, alpha = 0.05;
  bool predicted = false;  // options.predict was not empty
  bool global_batch_grows = false;
  std::vector<RunGroup> runs;  // by configuration (--vary order), then GPU count
  std::vector<ConfigScaling> configs;
  // Strong or weak scaling as the traces show it, one sentence each (with a
  // WARNING prefix where the statistics would be misread).
  std::vector<std::string> work_notes;
  std::vector<ConfigComparison> comparisons;
  std::string ci_method, knee_method;
  std::vector<std::string> assumptions;  // of the prediction models, each once
};

// Throws Error when the sweep has no recorded run, when no run has the metric
// (the message gives the run statuses and where the first failed run's log
// is), and on contradictory options.
ScalingStudy study_scaling(const StoredSweep& sweep, const ScalingStudyOptions& options);

// The study as JSON (`scalescope scaling --format json`, the C library, Python):
// the numbers of its tables, typed. Times are in the metric's unit per unit of
// work ("metric_in_seconds" says whether that is seconds); GPU-hours and cost
// are null when it is not. Numbers that cannot be computed are null.
void to_json(nlohmann::json& j, const RunGroup& g);
void to_json(nlohmann::json& j, const ConfigScaling& c);
void to_json(nlohmann::json& j, const ConfigComparison& c);
void to_json(nlohmann::json& j, const ScalingStudy& s);

}  // namespace scalescope::sweep
