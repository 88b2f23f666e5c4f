#pragma once
// Tables of scaling predictions and of their validation, from the typed
// results of mlperf/ and scaling/ (the one place they are formatted).
//
//   report::mlperf_predictions_table(mlperf::predict(runs, {}, p)).print(std::cout, OutputFormat::kCsv);

#include <vector>

#include "report/table.hpp"

namespace scalescope::mlperf {
struct CurveForecast;
struct RoundValidation;
}
namespace scalescope::scaling {
struct Validation;
}

namespace scalescope::report {

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
