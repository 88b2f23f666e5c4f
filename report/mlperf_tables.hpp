#pragma once
// The tables of `scalescope mlperf` (runs, scores, scaling across systems,
// predictions and their validation), rendered from the typed results of
// mlperf/ and scaling/ (the one place they are formatted; no computation
// here). The HTML report's MLPerf section draws the same mlperf::MlperfScaling.
//
//   report::print_tables(std::cout, "mlperf analyze", report::mlperf_scaling_tables(mlperf::analyze(runs, {})),
//                        OutputFormat::kCsv);  // JSON: the typed mlperf::MlperfScaling itself
//   report::mlperf_predictions_table(mlperf::predict(runs, {}, p)).print(std::cout, OutputFormat::kCsv);

#include <string>
#include <vector>

#include "report/table.hpp"

namespace scalescope::mlperf {
struct Run;
struct Score;
struct IngestResult;
struct MlperfScaling;
struct CurveForecast;
struct RoundValidation;
}  // namespace scalescope::mlperf
namespace scalescope::scaling {
struct Validation;
}

namespace scalescope::report {

// One row per run, the columns of the runs CSV (mlperf::runs_csv_columns).
Table mlperf_runs_table(const std::vector<mlperf::Run>& runs);
// One row per result folder with its official score or why none.
Table mlperf_scores_table(const std::vector<mlperf::Score>& scores);
// What `mlperf ingest` prints: the scores per folder (or with `runs` the runs
// table), the counts read and the ingest's notes under it.
Table mlperf_ingest_table(const mlperf::IngestResult& result, bool runs);
// One table per group ("MLPerf <title> on <accelerator>: scaling across
// systems"): a row per system, the reference, the break-even points and the
// systems left out as notes; then mlperf_break_even_table when a group scales.
std::vector<Table> mlperf_scaling_tables(const mlperf::MlperfScaling& scaling);
// A row per group with two or more accelerator counts: its systems, counts,
// reference, largest count with E' there, and the break-even by both rules.
Table mlperf_break_even_table(const mlperf::MlperfScaling& scaling);

// One table: a row per curve and predicted size (accelerators,
// predicted_minutes, low, high, measured_minutes, ...), the fitted laws as notes.
Table mlperf_predictions_table(const std::vector<mlperf::CurveForecast>& forecasts);

// The error by extrapolation factor per model, the default model's error per
// curve, and with `cases` every case.
std::vector<Table> validation_tables(const scaling::Validation& validation, bool cases);

// validation_tables with the rounds fitted and tested in the titles, the
// error and coverage per benchmark, and the calibration used (its source).
std::vector<Table> round_validation_tables(const mlperf::RoundValidation& validation, bool cases);

// The validated-range column of a prediction: "yes", or why not.
Cell validated_range_cell(const std::string& outside_validated);

}  // namespace scalescope::report
