#pragma once
// scalescope::scaling: statistics of repeated runs and scaling efficiency.
// Pure functions over plain structs; one implementation shared by `scaling`
// (sweeps), `mlperf` (submission results) and the HTML report.
//
// Conventions: times are seconds (or any "time per unit of work"); a metric
// where higher is better (throughput) is converted with to_time_samples first.
// Nothing here invents a number: a statistic that cannot be computed is
// std::nullopt or NaN with a note saying why.
//
//   auto s = scaling::summarize({10.1, 10.4, 9.9, 10.0, 10.2, 10.3});
//   auto t = scaling::scaling_table({{1, {100, 101, 99}}, {2, {52, 51, 53}}}, {});
//   // t.rows[1].speedup ~ 1.94, t.rows[1].efficiency ~ 0.97

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace scalescope::scaling {

// Summary of repeated samples.

// How the confidence interval of a median was obtained.
enum class CiMethod {
  kNone,            // n < 2: no interval
  kOrderStatistic,  // distribution-free: ranks from Binomial(n, 1/2) quantiles (Boost.Math); n >= 6
  kStudentT,        // 2 <= n <= 5: mean +- t(n-1) * s / sqrt(n) (order statistics cannot reach 95% there)
};
const char* ci_method_name(CiMethod method);  // one line, for tables and notes

struct Summary {
  size_t n = 0;
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;  // stddev: sample (n-1); 0 when n < 2
  double ci_low = 0, ci_high = 0;                             // of the median; NaN when method is kNone
  double ci_level = 0.95;                                     // the level asked for
  double ci_coverage = 0;  // achieved coverage (order statistics give >= level); 0 for kNone
  CiMethod ci_method = CiMethod::kNone;
};

// Summarizes finite samples; throws scalescope::Error if samples is empty or
// holds a NaN/inf. level in (0, 1).
Summary summarize(std::span<const double> samples, double level = 0.95);

enum class Better { kLower, kHigher };
// Times from a metric: kLower returns samples unchanged, kHigher returns 1/x
// (time per unit of work from a throughput). Non-positive throughputs throw.
std::vector<double> to_time_samples(std::span<const double> samples, Better better);

// Strong and weak scaling.
//
// S and E' compare times per unit of work. A time per step (the iteration time
// of a trace) is one only under strong scaling: the global batch is fixed and
// split across the GPUs. Under weak scaling (a fixed per-GPU batch, the usual
// DDP set-up) a step at N GPUs does N times the work of a one-GPU step, and E'
// taken on step times is low by the factor N/N_ref (the same DDP runs gave
// E'(2) = 0.43 on iteration time and 0.89 on throughput).

enum class WorkPerStep { kUnknown, kFixedTotal, kFixedPerGpu };  // unknown, strong, weak

// Weak scaling: times per unit of work from step times at `gpus` GPUs:
// step time / (gpus x units_per_gpu_step). With the per-GPU batch (images,
// tokens) as units_per_gpu_step the unit is one sample, so 1/value is samples
// per second; with 1 it is one GPU's step. E' on these is T_step(ref)/T_step(N).
//   weak_scaling_unit_times({0.085}, 2, 128)  // {0.085 / 256}: seconds per image
std::vector<double> weak_scaling_unit_times(std::span<const double> step_times, int gpus,
                                            double units_per_gpu_step = 1);

// Which kind of scaling a measure of ONE GPU's work per step shows across GPU
// counts (e.g. a rank's GPU compute time per iteration, from traces): about
// constant in N is weak scaling, about proportional to 1/N is strong. Each
// count's ratio to the smallest count must lie within 25% of one expectation
// (and nearer to it than to the other); else kUnknown. `detail` gives the
// ratios: "1.02x at N=2 (weak: 1, strong: 0.5)".
struct WorkPerStepEvidence {
  WorkPerStep kind = WorkPerStep::kUnknown;
  std::string detail;
};
// per_gpu_work: (GPU count, median work measure > 0), any order.
WorkPerStepEvidence classify_work_per_step(std::vector<std::pair<int, double>> per_gpu_work);

// Scaling table.

struct ScalingPoint {
  int gpus = 0;
  std::vector<double> times;     // one per successful run, seconds per unit of work
  std::vector<double> energy_j;  // one per run where known (may be empty)
};

struct ScalingOptions {
  std::optional<int> ref_gpus;               // default: the smallest GPU count with samples
  double threshold = 0.8;                    // E' threshold for break-even rule (a)
  std::optional<double> price_per_gpu_hour;  // adds cost
  double level = 0.95;                       // CI level
};

struct ScalingRow {
  int gpus = 0;
  Summary time;
  // S = T_ref / T_N and E' = (N_ref*T_ref) / (N*T_N) from medians. CIs: each
  // median's interval at level' = 1 - (1-level)/2 (Bonferroni), ratio taken
  // from the endpoints, so joint coverage >= level. NaN when either side has n < 2.
  double speedup = 0, speedup_low = 0, speedup_high = 0;
  double efficiency = 0, efficiency_low = 0, efficiency_high = 0;
  double gpu_hours = 0;             // N * median(T) / 3600
  std::optional<Summary> energy_j;  // of per-run energy, when any known
  std::optional<double> cost;       // gpu_hours * price, when a price is given
  bool pareto = false;              // on the time vs GPU-hours Pareto front
};

struct BreakEven {
  double threshold = 0.8;
  // Rule (a): the largest N whose median E' >= threshold (the reference
  // always qualifies, E' = 1). nullopt with fewer than 2 measured counts
  // (one count is its own reference: a note says so).
  std::optional<int> by_threshold;
  // Rule (b): knee of the Pareto front of (time, GPU-hours), both minimized:
  // both axes normalized to [0,1] over the front, the front point with the
  // largest distance to the chord joining its two ends (Kneedle-like).
  // nullopt when the front has fewer than 3 points (a note says so, except
  // with a single count, where the note above covers both rules).
  std::optional<int> by_knee;
  std::string knee_method;
  std::vector<std::string> notes;
};

struct ScalingTable {
  int ref_gpus = 0;
  std::vector<ScalingRow> rows;   // ascending GPU count, only points with samples
  std::vector<int> missing_gpus;  // points given without any sample (e.g. all runs failed)
  BreakEven break_even;
  std::string ci_method;  // how the CIs were computed, for the report
};

// Throws scalescope::Error when no point has samples, when GPU counts repeat or
// are < 1, or when ref_gpus names a count without samples.
ScalingTable scaling_table(const std::vector<ScalingPoint>& points, const ScalingOptions& options);

// Indices of the points (x, y) not dominated in "both smaller is better"
// (ties: first kept), sorted by ascending x.
std::vector<size_t> pareto_front(std::span<const std::pair<double, double>> points);
// Index into `front` (already sorted by ascending x, descending y) of the knee
// by maximum normalized distance to the chord; nullopt with fewer than 3 points
// or when every point lies on the chord.
std::optional<size_t> knee_index(std::span<const std::pair<double, double>> front);

// Two-sample comparison (is configuration B different from A beyond noise?).

struct Comparison {
  size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  double ratio = 0;  // median_b / median_a
  // Welch's t-test on log times (Boost.Math students_t, Welch-Satterthwaite
  // df): p-value and CI of the ratio of geometric means. NaN when n < 2 on a side.
  double welch_p = 0;
  double ratio_low = 0, ratio_high = 0;  // CI of exp(mean log b - mean log a)
  // Mann-Whitney U (two-sided): exact distribution when both n <= 20 and no
  // ties, else normal approximation with tie correction and continuity.
  double u = 0;
  double mann_whitney_p = 0;
  bool mann_whitney_exact = false;
  // Decision: Welch p < alpha (MW p is reported as a distribution-free check).
  bool differs = false;
  double alpha = 0.05;
  std::string test;  // the test names, for the report
};

// Throws scalescope::Error if a side is empty or has non-positive samples.
Comparison compare(std::span<const double> a, std::span<const double> b, double alpha = 0.05);

// Prediction of time against GPU count.

// Ring all-reduce cost measured from a trace: per step, t_comm(N) =
// 2(N-1)/N * bytes / bus_bw + latency * (N-1).
struct CommModel {
  double bytes_per_step = 0;         // all-reduced bytes per unit of work
  double bandwidth_bytes_per_s = 0;  // measured algorithm bandwidth
  double latency_s = 0;              // per ring hop
  double time(int gpus) const;
};

enum class ModelKind {
  // T(N) = T1 * (s + (1-s)/N); fitted as a/N + c with a, c >= 0; s = c/(a+c).
  kAmdahl,
  // T(N) = a/N + comm(N) + c. With a CommModel, comm is taken as measured
  // (not fitted) and a, c >= 0 are fitted; without one, comm(N) = d*(N-1)
  // (a per-hop latency-like term) and a, d, c >= 0 are fitted.
  kComputeCommFixed,
  // Time-to-train = steps to converge x time per step, for runs whose global
  // batch B grows with N (MLPerf): time per unit of progress u(N) = k/N + c/B(N)
  // (compute split over N; a fixed per-step cost c, shared by the B samples of
  // a step), progress to converge P(B) = P0 (B/B0)^g with g in [0, 1] (more
  // samples at a larger batch, at most in proportion), T = P(B(N)) u(N). B(N)
  // is fitted on the points as B0 (N/N0)^b, b in [0, 1]. Fitted by fit_curve only.
  kStepConverge,
  // T(N) = A N^-b (least squares on log T against log N). Fitted by fit_curve only.
  kPowerLaw,
};
const char* model_name(ModelKind kind);

struct Prediction {
  int gpus = 0;
  double time = 0;
  double efficiency = 0;  // (N_ref * T_ref) / (N * T_pred), T_ref measured
};

struct Fit {
  ModelKind kind = ModelKind::kAmdahl;
  bool ok = false;                                     // false: too few points (see note)
  std::vector<std::pair<std::string, double>> params;  // e.g. {"a",..},{"c",..},{"s",..}
  double rms_rel_residual = 0;                         // on the points used
  // Leave-one-out: refit without each point, relative error at that point.
  // NaN when there are not more points than parameters + 1.
  double loo_mean_abs_rel_error = 0, loo_max_abs_rel_error = 0;
  std::vector<Prediction> predictions;
  std::string formula;  // the fitted law with numbers, for the report
  std::string note;
};

struct FitPoint {
  int gpus = 0;
  double time = 0;  // the median
};

// Non-negative least squares on relative error (weights 1/T^2): exact NNLS by
// trying every subset of the (at most 3) parameters. Needs at least as many
// distinct GPU counts as parameters, else ok=false with a note. ref_gpus/ref_time
// give E' of predictions. kAmdahl and kComputeCommFixed only (fit_curve fits all).
Fit fit_model(ModelKind kind, const std::vector<FitPoint>& points, const std::optional<CommModel>& comm,
              const std::vector<int>& predict_gpus, int ref_gpus, double ref_time);

// Assumptions behind fit_model, one sentence each, for docs and reports.
std::vector<std::string> model_assumptions(ModelKind kind, bool with_comm);

// Prediction along a scaling curve, with a prediction interval
// (curve_prediction.cpp). The methods and the evidence behind the default
// model are in docs/scaling.md, "Prediction".
//
//   auto f = scaling::fit_curve(scaling::ModelKind::kStepConverge,
//                               {{8, 30.0, 256, 2.0e6}, {16, 17.0, 512, 2.4e6}}, {64}, {});
//   // f.predictions[0]: time, low, high (80 %), the batch assumed at 64

struct CurvePoint {
  int gpus = 0;
  double time = 0;                     // > 0; the curve's time (e.g. minutes to train)
  std::optional<double> global_batch;  // samples per step at this size, when known
  std::optional<double> progress;      // work done to converge (epochs, samples, tokens), when known
};

// A reference convergence point: the progress (epochs, samples, tokens) a
// reference implementation needed to converge at a global batch (MLPerf's RCPs).
struct ReferenceConvergence {
  double global_batch = 0;
  double progress = 0;
};

struct SpreadCalibration;

// kStepConverge with reference convergence points: the global batch assumed
// beyond the largest fitted size (without a planned one). Submitters keep the
// batch, grow it with the accelerators, or something between; the
// calibration names the rule (SpreadCalibration::batch_rule; per-accelerator
// in the embedded one: docs/scaling.md, "Two rounds"). Every rule is capped
// at the largest reference batch (a larger one has no RCP and is not allowed).
//   kPerAccelerator: the largest fitted size's batch per accelerator, x N.
//   kGeometricMiddle: the geometric middle of that and the largest fitted size's batch.
//   kKept: the largest fitted size's batch.
//   kFitted: the log-linear batch law fitted on the fitted sizes.
enum class BatchRule { kPerAccelerator, kGeometricMiddle, kKept, kFitted };
inline constexpr BatchRule kBatchRules[] = {BatchRule::kPerAccelerator, BatchRule::kGeometricMiddle, BatchRule::kKept,
                                            BatchRule::kFitted};
const char* batch_rule_name(BatchRule rule);

struct CurveFitOptions {
  double level = 0.8;             // of the prediction interval
  // The interval's spread per model, batch setting and extrapolation bucket;
  // nullptr: default_spread_calibration() (the embedded one).
  const SpreadCalibration* calibration = nullptr;
  // The family of the curve (an MLPerf benchmark); not "" and not among the
  // calibration's groups: the predictions are outside the validated range.
  std::string group;
  std::optional<CommModel> comm;  // measured communication for kComputeCommFixed
  // Points without a global batch: false = the same batch at every size; true
  // = the batch grows as N (fixed per-GPU batch) and each point's time is of
  // a fixed number of steps (a sweep's per-step or per-run time).
  bool batch_grows = false;
  // kStepConverge with reference convergence points (sorted or not; batches
  // and progress > 0): P(B) is their linear interpolation in B (the RCP
  // checker's rule), flat below the smallest batch, scaled by the fitted
  // sizes' mean log ratio of measured to reference progress; and beyond the
  // largest fitted size the batch follows `batch_rule` (or the calibration's),
  // capped at the largest reference batch. Empty, or points without a global
  // batch: P(B) and B(N) are log-linear laws fitted on the points.
  std::vector<ReferenceConvergence> reference;
  // The global batch planned at predicted sizes (kStepConverge): used there
  // instead of the fitted batch law (the batch is a choice made before the run).
  std::map<int, double> planned_batch;
  // The batch rule beyond the fitted sizes; unset: the calibration's.
  std::optional<BatchRule> batch_rule;
};

struct CurvePrediction {
  int gpus = 0;
  double time = 0;           // NaN when the fit gives bounds only (one measured size)
  double low = 0, high = 0;  // prediction interval at the fit's level
  double global_batch = 0;   // the batch assumed at this size (kStepConverge), else NaN
  double extrapolation = 0;  // gpus / the largest fitted count (or smallest / gpus below the range)
  // The time at the fastest and the slowest of the batches this size may run
  // at. kStepConverge with reference convergence points, beyond the fitted
  // sizes and without a planned batch: every batch from the geometric middle
  // of the largest fitted size's and the per-accelerator one (capped) to the
  // per-accelerator one, widened to `global_batch`, since which one a
  // submitter picks is not known (docs/scaling.md). Otherwise both
  // are `time`. The interval is [range_low exp(-z sd), range_high exp(z sd)].
  double range_low = 0, range_high = 0;
  double tau = 0;       // the spread per unit of distance used here (the calibration's row)
  double distance = 0;  // the interval's extrapolation distance (spread_distance)
  // Where `global_batch` came from, and the batches the interval spans
  // (batch_low = batch_high = global_batch unless the batch is extrapolated).
  enum class BatchBasis { kNone, kMeasured, kPlanned, kExtrapolated };
  BatchBasis batch_basis = BatchBasis::kNone;
  double batch_low = 0, batch_high = 0;
  // Time to train split (kStepConverge): steps to converge P(B)/B at the
  // assumed batch, and the time per step (time / steps, the unit of `time`);
  // a batch change moves the steps through P(B)/B and the step through k B/N + c.
  // NaN for models without a batch.
  double steps = 0, step_time = 0;
  // "" inside what the calibration's backtests cover; else why not
  // ("outside the validated range: ..."), e.g. an extrapolation beyond the
  // largest one validated, a bucket with too few cases or a group never seen.
  std::string outside_validated;
};
const char* batch_basis_name(CurvePrediction::BatchBasis basis);  // "measured", "planned", "extrapolated", ""

struct CurveFit {
  ModelKind kind = ModelKind::kStepConverge;
  bool ok = false;    // a model was fitted; false: bounds only or nothing (see note)
  size_t points = 0;  // sizes fitted
  size_t parameters = 0;
  int fit_min_gpus = 0, fit_max_gpus = 0;
  double level = 0.8;
  // Spread of the interval on log time: sqrt(residual_sd^2 + (tau d)^2), d
  // the extrapolation distance (spread_distance, CurvePrediction::distance);
  // tau per model, extrapolation bucket and batch setting from the
  // calibration (CurvePrediction::tau), residual_sd from this fit's residuals
  // (NaN when no degree of freedom is left).
  double residual_sd = 0;
  double loo_mean_abs_rel_error = 0, loo_max_abs_rel_error = 0;  // NaN without spare points
  std::string formula, note;
  std::vector<CurvePrediction> predictions;
};

// Fits `kind` to the points (distinct GPU counts; a repeated count keeps the
// faster time) and predicts each of `predict`. One point: bounds only (ideal
// scaling to no speedup), time NaN, ok=false. Too few points for the model: ok=false,
// no predictions. Throws scalescope::Error on a count < 1 or a time that is not
// a positive number.
CurveFit fit_curve(ModelKind kind, const std::vector<CurvePoint>& points, const std::vector<int>& predict,
                   const CurveFitOptions& options);

// tau of each model at an extrapolation factor (>= 1; the bucket of
// extrapolation_bucket) and batch setting (kStepConverge only: the batch at
// the predicted size planned, or extrapolated) in the default calibration:
// the spread per unit of distance of its log extrapolation error outside the
// batch range over validation cases of that bucket (docs/scaling.md).
double extrapolation_spread(ModelKind kind, double factor, bool batch_planned = false);

// ---- the interval's spread as data (spread_calibration.cpp) ----

// How far a prediction is from what was fitted, the unit tau is per.
//   kDoublings: 1 + log2(extrapolation factor), 1 inside the fitted range.
//   kLeverage: sqrt(1 + 1/k + (x - mean)^2 / Sxx) in x = log2 N over the k
//   fitted sizes (a regression's prediction variance): it grows with the
//   distance and shrinks with more, and more widely spread, fitted sizes.
enum class SpreadDistance { kDoublings, kLeverage };
const char* spread_distance_name(SpreadDistance d);
double spread_distance(SpreadDistance kind, int gpus, const std::vector<int>& fitted);

// One cell: a model, batch setting and extrapolation bucket.
struct SpreadRow {
  ModelKind kind = ModelKind::kStepConverge;
  bool batch_planned = false;
  std::string bucket;       // "2x", "4x", "8x", "16x+"
  double tau = 0;           // conformal level-quantile of (log distance outside the range / d) / z
  size_t cases = 0;         // validation cases it was estimated from
  double max_factor = 0;    // the kMinValidatedCases-th largest extrapolation among them (the largest with fewer)
  std::vector<std::string> groups;  // the groups (benchmarks) of those cases
};

// The interval's spread, with where it came from. Stored as JSON
// (scaling/prediction_calibration.json is the embedded default, written by
// `scalescope mlperf validate --fit ... --write-calibration`).
struct SpreadCalibration {
  double level = 0.8;
  SpreadDistance distance = SpreadDistance::kDoublings;
  // tau estimated from each bucket's cases alone (Mondrian), or from all the
  // cases of a model and setting (pooled: one tau for every bucket of them).
  bool pooled = false;
  std::string source;  // the rounds and the command it was fitted by
  std::vector<SpreadRow> rows;
  // The default model's batch rule beyond the fitted sizes, and the backtests
  // on the fitted rounds that chose it (batch extrapolated: cases and
  // batch_rule_score per rule; empty when the rule was given, not chosen).
  BatchRule batch_rule = BatchRule::kPerAccelerator;
  struct RuleBacktest {
    BatchRule rule = BatchRule::kPerAccelerator;
    size_t cases = 0;
    double score = 0;
  };
  std::vector<RuleBacktest> batch_rule_backtests;
  // The row of a model, setting and extrapolation factor; nullptr when none.
  const SpreadRow* find(ModelKind kind, bool batch_planned, double factor) const;
  bool knows_group(const std::string& group) const;
};

// Fewer validation cases than this in a bucket: predictions there are marked
// outside the validated range (coverage of an 80 % interval is not measurable).
inline constexpr size_t kMinValidatedCases = 8;

// The embedded calibration (scaling/prediction_calibration.json).
const SpreadCalibration& default_spread_calibration();
// Throws scalescope::Error naming `source` on malformed JSON or fields.
SpreadCalibration read_spread_calibration(std::string_view json_text, std::string_view source);
std::string write_spread_calibration(const SpreadCalibration& c);  // JSON text, rows sorted

struct ValidationCase;
// How well a batch rule's backtests predict: the mean over extrapolation
// buckets (those with at least kMinValidatedCases cases; every bucket when none
// has) of the bucket's median |relative error|, so the far buckets, where the
// rules differ most, count as much as the many 2x cases. NaN without cases.
double batch_rule_score(const std::vector<const ValidationCase*>& cases);

// tau per model, setting and bucket from validation cases (their residual_sd,
// fitted sizes and batch range), at `level`, with `distance`.
SpreadCalibration calibrate_spread(const std::vector<ValidationCase>& cases, double level, SpreadDistance distance,
                                   bool pooled, std::string source);

// The default model of `mlperf analyze --predict` and `scaling --predict`, chosen by the validation.
inline constexpr ModelKind kDefaultCurveModel = ModelKind::kStepConverge;

// ---- validation: fit on the smallest k sizes, predict each larger one ----

struct NamedCurve {
  std::string name;   // e.g. "bert on H100-SXM5-80GB"
  std::string group;  // held out together when estimating tau (e.g. the benchmark)
  std::vector<CurvePoint> points;
  std::vector<ReferenceConvergence> reference;  // for kStepConverge (CurveFitOptions::reference)
  std::string round;                            // the data set it came from (an MLPerf round, "v4.1"); may be ""
};

struct ValidationCase {
  std::string curve, group, round;
  std::vector<int> fitted;  // the sizes fitted
  double residual_sd = 0;   // of the fit (0 when no degree of freedom was left)
  ModelKind kind = ModelKind::kStepConverge;
  size_t fit_points = 0;
  int fit_max_gpus = 0, gpus = 0;
  double factor = 0;  // gpus / fit_max_gpus
  double predicted = 0, low = 0, high = 0, measured = 0;
  double range_low = 0, range_high = 0;  // CurvePrediction's: the times over the batches considered
  double rel_error = 0;                  // (predicted - measured) / measured
  bool covered = false;                  // low <= measured <= high
  bool covered_held_out = false;         // same, tau estimated without this case's group
  bool batch_planned = false;            // the measured batch at `gpus` was given (CurveFitOptions::planned_batch)
};

struct ValidationBucket {
  ModelKind kind = ModelKind::kStepConverge;
  bool batch_planned = false;  // cases predicted with the measured batch given
  std::string bucket;          // "2x", "4x", "8x", "16x+" or "all"
  size_t cases = 0;
  double median_abs_rel_error = 0, worst_abs_rel_error = 0;
  std::string worst;  // the worst case: "bert on H100 fitted up to 8, at 64"
  double coverage = 0, coverage_held_out = 0;
};

// Per group (benchmark), model and setting: error and coverage.
struct ValidationGroup {
  std::string group;
  ModelKind kind = ModelKind::kStepConverge;
  bool batch_planned = false;
  size_t curves = 0, cases = 0;
  double median_abs_rel_error = 0, worst_abs_rel_error = 0, coverage = 0;
};

struct ValidationCurve {
  std::string curve;
  ModelKind kind = ModelKind::kStepConverge;
  bool batch_planned = false;
  size_t sizes = 0, cases = 0;
  double median_abs_rel_error = 0, worst_abs_rel_error = 0;
  int worst_fit_max_gpus = 0, worst_gpus = 0;
};

struct Validation {
  double level = 0.8;
  size_t curves = 0;  // curves with at least min_sizes sizes
  std::vector<ValidationCase> cases;
  std::vector<ValidationBucket> buckets;   // per model: 2x, 4x, 8x, 16x+, all
  std::vector<ValidationCurve> per_curve;  // per model and curve
  std::vector<ValidationGroup> per_group;  // per model and group (benchmark)
  // tau re-estimated from all the cases of each model, setting and bucket
  // (the conformal level-quantile of the log distance outside the batch range
  // / d, over z): what extrapolation_spread should be on this evidence.
  struct TauEstimate {
    ModelKind kind = ModelKind::kStepConverge;
    bool batch_planned = false;
    std::string bucket;        // "2x", "4x", "8x", "16x+"
    double tau = 0, used = 0;  // the estimate, and extrapolation_spread's constant
  };
  std::vector<TauEstimate> tau_estimates;
};

// The extrapolation bucket of a factor: "2x" below 2*sqrt(2), "4x" below
// 4*sqrt(2), "8x" below 8*sqrt(2), else "16x+".
const char* extrapolation_bucket(double factor);

// Every curve with at least min_sizes sizes, for k = 2 .. sizes-1: fit each
// model on the smallest k sizes and predict every larger measured one. With
// plan_batches, kStepConverge is also run a second time with each predicted
// size's measured global batch given as planned (cases with batch_planned).
// Held-out coverage: tau from the other groups' cases of the same model,
// setting and extrapolation bucket, as the conformal quantile (the
// ceil((n+1) level)-th of n scores; Mondrian: per bucket).
// Intervals and coverage from the calibration (nullptr: the default one).
Validation validate_curves(const std::vector<NamedCurve>& curves, const std::vector<ModelKind>& kinds,
                           size_t min_sizes = 4, double level = 0.8, bool plan_batches = false,
                           const SpreadCalibration* calibration = nullptr);

// The cases of `v` whose round is in `rounds`, their intervals rebuilt with
// `calibration` (coverage judged by a spread fitted elsewhere), the held-out
// coverage and the summaries recomputed over them.
Validation select_rounds(const Validation& v, const std::vector<std::string>& rounds,
                         const SpreadCalibration& calibration);

// JSON (nlohmann ADL hooks: json j = summary;).
void to_json(nlohmann::json& j, const Summary& s);
void to_json(nlohmann::json& j, const ScalingRow& r);
void to_json(nlohmann::json& j, const BreakEven& b);
void to_json(nlohmann::json& j, const ScalingTable& t);
void to_json(nlohmann::json& j, const Comparison& c);
void to_json(nlohmann::json& j, const Prediction& p);
void to_json(nlohmann::json& j, const Fit& f);
void to_json(nlohmann::json& j, const CurvePrediction& p);
void to_json(nlohmann::json& j, const CurveFit& f);
void to_json(nlohmann::json& j, const Validation& v);
void to_json(nlohmann::json& j, const SpreadCalibration& c);

}  // namespace scalescope::scaling
