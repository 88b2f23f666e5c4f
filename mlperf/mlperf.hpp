#pragma once
// scalescope::mlperf: MLPerf Training results as MLCommons publishes them
// (<submitter>/systems/<system>.json, <submitter>/results/<system>/<benchmark>/
// result_*.txt with ":::MLLOG {json}" lines, optional scaling.json).
//
//   auto ingest = mlperf::ingest_results({"/data/training_results_v4.1"}, {});
//   auto scores = mlperf::score_folders(ingest);          // one per result folder
//   mlperf::write_runs_csv(ingest.runs, "runs.csv");
//   auto scaling = mlperf::analyze(ingest.runs, {});      // typed groups per benchmark and accelerator
//
// Typed results only: report/mlperf_tables.hpp draws them as tables.
//
// Rules implemented (with sources) are in docs/mlperf.md.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scaling/scaling.hpp"
#include "mlperf/mllog_parser.hpp"
#include "base/number_check.hpp"

namespace scalescope::mlperf {

// Benchmarks and their rules.

struct BenchmarkRule {
  std::string_view canonical;  // e.g. "retinanet"
  std::string_view aliases;    // comma-separated folder names of other rounds, e.g. "ssd"
  int required_runs = 0;       // minimum number of runs of a result
  int max_non_converged = 0;   // also the number of runs dropped at each end
};

// The rule for a benchmark folder name of any round ("ssd" and "retinanet"
// both give the retinanet rule); nullptr for an unknown name. Case-insensitive.
const BenchmarkRule* find_benchmark_rule(std::string_view name);
// The canonical name, or the name itself (lower case) when unknown.
std::string canonical_benchmark(std::string_view name);

// Accelerator names normalised for grouping: vendor prefix dropped, case and
// separators folded. "NVIDIA H100-SXM5-80GB" and "H100 SXM5 80GB" give the same key.
std::string accelerator_key(std::string_view name);
// The display form: vendor prefix dropped, spaces trimmed ("H100-SXM5-80GB").
std::string accelerator_display(std::string_view name);

// One MLLOG file: read by mlperf/mllog_parser.hpp, the one MLLOG reader (the
// sweep's `--metric mlperf` uses it too, so both keep the same run_stop).

using trace::LogSummary;
using trace::MllogParser;
using trace::parse_mllog;
inline constexpr size_t kMaxLineBytes = trace::kMaxMllogLineBytes;

// Ingest of a results tree.

// One row per run log.
struct Run {
  std::string submitter;
  std::string system;            // the system's folder / description file name
  std::string system_name;       // "system_name" of the description ("" when missing)
  std::string benchmark;         // canonical name
  std::string benchmark_folder;  // the folder's own name ("ssd")
  std::string division;
  std::string accelerator;  // accelerator_model_name as written
  int nodes = 0;
  int accelerators_per_node = 0;
  int accelerators = 0;  // nodes * accelerators_per_node; 0 when unknown
  std::string framework;
  std::optional<int64_t> global_batch_size;
  std::optional<double> progress_at_stop;  // LogSummary::progress_at_stop (benchmark's unit)
  std::optional<int64_t> run_start_ms, run_stop_ms;
  std::string status;                    // run_stop status; "missing run_stop" / "missing run_start" otherwise
  std::optional<double> minutes;         // (run_stop - run_start) / 60000 when both known
  bool converged = false;                // run_start and run_stop with status "success"
  std::optional<double> scaling_factor;  // the folder's scaling.json
  std::string log_path;
  uint64_t malformed_lines = 0;
  // Why ingest refuses to score this run's folder (bad scaling.json, invalid
  // system description); "" when none. Kept in the runs CSV's "problem" column.
  std::string problem;
};

// RCP scaling factors lie near 1 (1.00 to 1.06 in all of v4.1): one outside
// [0.001, 1000] (1e-320, 1e300) is a corrupt file, refused as unusable.
inline constexpr trace::NumberRange kScalingFactorRange{1e-3, 1e3};

// A result folder (<system>/<benchmark>) as found, with or without logs.
struct ResultFolder {
  std::string submitter, system, benchmark_folder;
  std::filesystem::path path;
  std::optional<double> scaling_factor;
  std::string problem;  // e.g. unreadable scaling.json; "" when none
  size_t runs = 0;      // run logs found
};

struct IngestOptions {
  unsigned threads = 0;                                         // 0: hardware concurrency
  std::function<void(uint64_t done, uint64_t total)> progress;  // called from workers
};

struct IngestResult {
  std::vector<Run> runs;              // sorted by submitter, system, benchmark, log path
  std::vector<ResultFolder> folders;  // sorted likewise
  uint64_t logs = 0, bytes = 0, mllog_lines = 0, malformed_lines = 0, overlong_lines = 0;
  uint64_t ignored_files = 0;      // files in result folders without any MLLOG line
  std::vector<std::string> notes;  // one line each: missing system descriptions, unreadable files
};

// Finds every result folder under each directory (a whole results tree, one
// submitter folder, one system folder or one benchmark folder) and parses
// every run log with a pool of threads. Throws scalescope::Error when a
// directory does not exist or holds no result folder.
IngestResult ingest_results(const std::vector<std::filesystem::path>& dirs, const IngestOptions& options);

// Official score of a result folder.

struct Score {
  std::string submitter, system, benchmark, benchmark_folder, division, accelerator;
  int accelerators = 0;
  int runs = 0, converged = 0, required = 0;
  std::optional<double> scaling_factor;
  std::optional<double> minutes;  // the score (scaled); nullopt when not scored
  std::optional<double> unscaled_minutes;
  std::string reason;  // why not scored; "" when scored
};

// Scores one folder's runs by the rules of docs/mlperf.md: drop the fastest and
// slowest, average the rest; a non-converged run is the slowest; more than
// max_non_converged invalidates; fewer runs than required are not scored.
Score score_runs(const std::vector<const Run*>& runs, const std::string& benchmark_folder);
// Groups runs by (submitter, system, benchmark folder); folders without runs
// (from ingest) get their reason too. Sorted like the folders.
std::vector<Score> score_folders(const std::vector<Run>& runs, const std::vector<ResultFolder>& folders = {});

// The per-run table as CSV (the format `mlperf analyze` reads).

void write_runs_csv(const std::vector<Run>& runs, std::ostream& out);
// Writes to a temporary file beside `path` and renames it, so a failure never
// leaves a half-written table in place of an old one.
void write_runs_csv(const std::vector<Run>& runs, const std::filesystem::path& path);
// `source` names the input in errors. Throws scalescope::Error on a bad header,
// a row with the wrong number of fields or a bad number (naming line and column).
std::vector<Run> read_runs_csv(std::string_view text, std::string_view source);
std::vector<Run> read_runs_csv(const std::filesystem::path& path);

// The table that scalescope produced from all of MLPerf Training v4.1,
// embedded at build time (examples/mlperf/v4.1-runs.csv).
std::string_view default_runs_csv();
// The columns of the runs CSV, in order: the names of run_fields()
// (mlperf/run_fields.hpp), also the runs table's and the JSON's keys.
const std::vector<std::string>& runs_csv_columns();

// Scaling across systems.

struct AnalyzeOptions {
  std::string benchmark;    // canonical or folder name; "" = all
  std::string accelerator;  // matched by accelerator_key; "" = all
  std::string ref_system;   // reference system; "" = fewest accelerators
  double threshold = 0.8;   // E' threshold of break-even rule (a)
};

// One scored system (result folder) of a group, against the group's reference.
struct SystemScaling {
  enum class Role { kOther, kReference, kFastestAtN };
  std::string system, submitter;
  int accelerators = 0, nodes = 0;
  double seconds = 0;     // official score, in seconds (what the scaling library is given)
  double gpu_hours = 0;   // accelerators * seconds / 3600
  double speedup = 0;     // T_ref / T
  double efficiency = 0;  // E' = (N_ref * T_ref) / (N * T)
  bool pareto = false;    // on the Pareto front of (time, GPU-hours)
  Role role = Role::kOther;
  double minutes() const { return seconds / 60.0; }
};

// One benchmark, accelerator model and division. Closed and open division
// results are not comparable: they never share a group.
struct SystemGroup {
  std::string benchmark;               // canonical name
  std::string division;                // as submitted ("closed", "open"; "" when unknown)
  std::string title;                   // "bert", or "bert (open division)" outside the closed division
  std::string accelerator;             // display name (the most common spelling in the group)
  std::vector<SystemScaling> systems;  // ascending accelerators, then time, then system
  size_t reference = 0;                // index into systems
  bool ref_chosen = false;             // the reference was named with AnalyzeOptions::ref_system
  // The curve of the reference at its count and the fastest system at every
  // other count (times in seconds), with the break-even by both rules;
  // curve_systems[i] is the index into systems of curve.rows[i].
  scaling::ScalingTable curve;
  std::vector<size_t> curve_systems;

  // The system on the curve at `accelerators`; throws std::out_of_range when none.
  const SystemScaling& curve_system(int accelerators) const;
};

struct MlperfScaling {
  std::vector<SystemGroup> groups;    // by benchmark, accelerator key, division
  std::vector<std::string> left_out;  // "submitter/system/folder" scored without a known accelerator count
};

// "reference", "fastest at N", "" (the tables' and the JSON's role).
std::string_view to_string(SystemScaling::Role role);

// JSON (nlohmann ADL hooks: json j = scaling;): the typed form of
// `mlperf analyze --format json`, the C library's and Python's.
void to_json(nlohmann::json& j, const SystemScaling& s);
void to_json(nlohmann::json& j, const SystemGroup& g);
void to_json(nlohmann::json& j, const MlperfScaling& m);
// A run as the runs CSV has it, keyed by run_fields() (missing numbers are
// null; converged is a boolean).
void to_json(nlohmann::json& j, const Run& r);
// A folder's score: `mlperf scores --format json`'s rows.
void to_json(nlohmann::json& j, const Score& s);
// `mlperf ingest --format json`: runs, each folder's score, and the counts.
void to_json(nlohmann::json& j, const IngestResult& result);

// Per benchmark, accelerator model and division: every scored system ordered by
// accelerator count, with speedup, E' and GPU-hours against the reference,
// the Pareto front of time against GPU-hours and the break-even point by both
// rules (through scalescope::scaling). With ref_system, only the groups holding
// that system. Throws scalescope::Error when nothing matches, when ref_system
// names no selected system or when the threshold is not in (0, 1].
MlperfScaling analyze(const std::vector<Run>& runs, const AnalyzeOptions& options);

// Prediction along the scaling curves (scaling_curve.cpp).
//
//   auto curves = mlperf::scaling_curves(runs, {});   // fastest system at each size
//   mlperf::PredictOptions p;  p.predict = {512, 1024};  p.fit_up_to = 64;
//   auto predictions = mlperf::predict(runs, {}, p);  // typed; rendered in report/
//   auto v = mlperf::validate(runs, {});              // fit small, predict large, on every curve

// One size of a curve: the fastest scored system with that many accelerators.
struct CurveSize {
  int accelerators = 0;
  double minutes = 0;  // official score
  std::string system, submitter;
  std::optional<double> global_batch_size;  // of its runs (the most common value)
  // Mean progress_at_stop of its converged runs times the RCP scaling factor
  // (the factor says convergence was luckier than the reference's: it
  // scales the work done as it scales the time).
  std::optional<double> progress;
};

struct ScalingCurve {
  std::string benchmark, accelerator, division;  // accelerator: display name
  std::vector<CurveSize> sizes;                  // ascending accelerators
  std::string name() const;                      // "bert on H100-SXM5-80GB" (", open division")
  std::vector<scaling::CurvePoint> points(std::optional<int> up_to = std::nullopt) const;
};

// Per benchmark, accelerator model (accelerator_key) and division, with the
// benchmark and accelerator filters of AnalyzeOptions. Throws scalescope::Error
// when nothing matches.
std::vector<ScalingCurve> scaling_curves(const std::vector<Run>& runs, const AnalyzeOptions& options);

struct PredictOptions {
  std::vector<int> predict;      // accelerator counts
  std::optional<int> fit_up_to;  // fit on the sizes <= this; default: every measured size
  scaling::ModelKind model = scaling::kDefaultCurveModel;
  double level = 0.8;                   // of the prediction interval
  std::map<int, double> planned_batch;  // global batch planned at predicted sizes (scaling::CurveFitOptions)
  const scaling::SpreadCalibration* calibration = nullptr;  // nullptr: the embedded one
};

// "512:2048,1024:4096" -> {512: 2048, 1024: 4096}; empty -> {}. Throws
// scalescope::Error naming the item on a malformed one, a count < 1, a batch
// that is not a positive number or a repeated count.
std::map<int, double> parse_planned_batch(const std::string& text);

struct CurveForecast {
  ScalingCurve curve;
  std::vector<int> fitted;                         // the sizes fitted
  scaling::CurveFit fit;                           // fit.predictions follow PredictOptions::predict
  std::vector<std::optional<CurveSize>> measured;  // per prediction: the curve's size there, if measured
};

// Per curve: fit on the sizes up to fit_up_to and predict each given size,
// with the measured time where the curve has that size. Curves without any
// size up to fit_up_to are left out. Throws scalescope::Error on an empty
// predict list, a size < 1 or when nothing matches.
std::vector<CurveForecast> predict(const std::vector<Run>& runs, const AnalyzeOptions& filter,
                                   const PredictOptions& options);

// The MLPerf Training v4.1 reference convergence points of a canonical
// benchmark name (reference_convergence.cpp; empty for a benchmark without
// them in that round): the progress to converge by global batch, which the
// default model uses for P(B) and to cap the batch (docs/scaling.md).
std::vector<scaling::ReferenceConvergence> reference_convergence(std::string_view benchmark);

// The curves as named curves for scaling::validate_curves (group: the
// benchmark; reference: reference_convergence of the benchmark; round: `round`,
// also put before the name when not "": "v5.0: bert on H100-SXM5-80GB").
std::vector<scaling::NamedCurve> named_curves(const std::vector<ScalingCurve>& curves, const std::string& round = "");

// A runs table of one round ("v4.1", "v5.0").
struct RoundRuns {
  std::string round;
  std::vector<Run> runs;
};

struct ValidateOptions {
  double level = 0.8;
  // Calibrate the interval's spread on the cases of fit_rounds and judge it
  // on those of test_rounds (leave-one-round-out: fit on one, test on the
  // other). No fit_rounds: the calibration given (or the embedded one). No
  // test_rounds: every round's cases.
  std::vector<std::string> fit_rounds, test_rounds;
  scaling::SpreadDistance distance = scaling::SpreadDistance::kDoublings;  // of a calibration fitted here
  bool pooled = false;  // one tau over every bucket of a model and setting (SpreadCalibration::pooled)
  const scaling::SpreadCalibration* calibration = nullptr;  // without fit_rounds; nullptr: the embedded one
  std::string source;  // recorded in a calibration fitted here (the command line)
  // The default model's batch rule beyond the fitted sizes; unset: the calibration's.
  std::optional<scaling::BatchRule> batch_rule;
  // With fit_rounds: the rule whose backtests on those rounds alone score
  // best (scaling::batch_rule_score, batch extrapolated) instead; every rule's
  // score is recorded in the calibration fitted.
  bool choose_batch_rule = false;
};

struct RoundValidation {
  scaling::Validation validation;          // the test rounds' cases, intervals from `calibration`
  scaling::SpreadCalibration calibration;  // fitted on fit_rounds, or the one given
  std::vector<std::string> fit_rounds, test_rounds;
};

// Every curve with at least four sizes: each model fitted on the smallest k
// sizes, every larger size predicted (scaling::validate_curves), for the
// default model and the baselines (power law, Amdahl, compute+comm+fixed);
// the default model also with each predicted size's measured batch given as
// planned (scaling::ValidationCase::batch_planned). Throws scalescope::Error
// on a round named twice, a fit or test round without a table, or a round
// both fitted and tested.
RoundValidation validate(const std::vector<RoundRuns>& rounds, const AnalyzeOptions& filter,
                         const ValidateOptions& options);
// JSON (nlohmann ADL hooks): `mlperf analyze --predict` and `mlperf validate
// --format json`, the C library's and Python's. Times of a curve in minutes;
// a size not measured is null.
void to_json(nlohmann::json& j, const CurveSize& s);
void to_json(nlohmann::json& j, const ScalingCurve& c);
void to_json(nlohmann::json& j, const CurveForecast& f);
void to_json(nlohmann::json& j, const RoundValidation& v);
// One table, the embedded calibration: validate({{"", runs}}, filter, {level}).validation.
scaling::Validation validate(const std::vector<Run>& runs, const AnalyzeOptions& filter, double level = 0.8);

}  // namespace scalescope::mlperf
