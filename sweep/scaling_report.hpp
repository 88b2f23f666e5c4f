#pragma once
// `scalescope scaling`: the scaling analysis of a stored sweep, as report
// tables (runs and statistics per configuration and GPU count, break-even by
// both rules, comparisons between configurations, predictions).

#include <optional>
#include <string>
#include <vector>

#include "report/table.hpp"
#include "sweep/sweep.hpp"

namespace scalescope::sweep {

struct ScalingReportOptions {
  std::string metric;                        // "" = the sweep's metric
  std::optional<bool> higher_is_better;      // default: the sweep's setting for its metric, else lower
  std::optional<int> ref_gpus;
  double threshold = 0.8;
  std::optional<double> price_per_gpu_hour;
  std::vector<int> predict;                  // GPU counts to predict
  std::optional<Variable> compare;           // KEY=A,B; default: each varied key, first value vs the others
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
};

// Throws Error when no run of the sweep has the metric (after printing nothing):
// the message gives the run statuses and where the logs are.
std::vector<report::Table> scaling_report(const StoredSweep& sweep, const ScalingReportOptions& options);

}  // namespace scalescope::sweep
