#include "scaling/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "scaling/least_squares.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/quantile.hpp"

namespace scalescope::scaling {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Largest j (1-based) such that [X_(j), X_(n-j+1)] covers the median with
// probability >= level: coverage = 1 - 2 * P(B <= j-1), B ~ Binomial(n, 1/2).
// Returns 0 when even [min, max] falls short.
size_t order_statistic_rank(size_t n, double level, double& coverage) {
  boost::math::binomial_distribution<double> b(static_cast<double>(n), 0.5);
  size_t best = 0;
  for (size_t j = 1; 2 * j <= n + 1; ++j) {
    const double c = 1.0 - 2.0 * boost::math::cdf(b, static_cast<double>(j - 1));
    if (c + 1e-12 < level) break;
    best = j;
    coverage = c;
  }
  return best;
}

double ratio_low(double num_low, double den_high) { return den_high <= 0 ? kNaN : num_low / den_high; }
double ratio_high(double num_high, double den_low) { return den_low <= 0 ? kInf : num_high / den_low; }

// Solves the normal equations (A^T A) x = A^T b for the columns in `cols`;
// false when singular.
bool solve_subset(const std::vector<std::vector<double>>& a, const std::vector<double>& b,
                  const std::vector<size_t>& cols, std::vector<double>& x) {
  const size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t r = 0; r < a.size(); ++r) {
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) m[i][j] += a[r][cols[i]] * a[r][cols[j]];
      m[i][k] += a[r][cols[i]] * b[r];
    }
  }
  for (size_t i = 0; i < k; ++i) {
    size_t piv = i;
    for (size_t r = i + 1; r < k; ++r)
      if (std::abs(m[r][i]) > std::abs(m[piv][i])) piv = r;
    if (std::abs(m[piv][i]) < 1e-12) return false;
    std::swap(m[i], m[piv]);
    for (size_t r = 0; r < k; ++r) {
      if (r == i) continue;
      const double f = m[r][i] / m[i][i];
      for (size_t c = i; c <= k; ++c) m[r][c] -= f * m[i][c];
    }
  }
  x.assign(k, 0.0);
  for (size_t i = 0; i < k; ++i) x[i] = m[i][k] / m[i][i];
  return true;
}

struct Basis {
  std::vector<std::string> names;
  std::vector<double> (*row)(int gpus);
};

std::vector<double> amdahl_row(int n) { return {1.0 / n, 1.0}; }
std::vector<double> latency_row(int n) { return {1.0 / n, static_cast<double>(n - 1), 1.0}; }

Basis basis_for(ModelKind kind, bool with_comm) {
  if (kind == ModelKind::kAmdahl || with_comm) return {{"a", "c"}, amdahl_row};
  return {{"a", "d", "c"}, latency_row};
}

double comm_time(const std::optional<CommModel>& comm, ModelKind kind, int gpus) {
  return (kind == ModelKind::kComputeCommFixed && comm) ? comm->time(gpus) : 0.0;
}

// Fits on `points` (relative weights); returns coefficients.
std::vector<double> fit_coefficients(ModelKind kind, const Basis& basis, const std::vector<FitPoint>& points,
                                     const std::optional<CommModel>& comm) {
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (const auto& pt : points) {
    auto row = basis.row(pt.gpus);
    for (double& v : row) v /= pt.time;
    a.push_back(std::move(row));
    b.push_back((pt.time - comm_time(comm, kind, pt.gpus)) / pt.time);
  }
  return detail::nnls(a, b, basis.names.size());
}

double evaluate(ModelKind kind, const Basis& basis, const std::vector<double>& x, const std::optional<CommModel>& comm,
                int gpus) {
  const auto row = basis.row(gpus);
  double t = comm_time(comm, kind, gpus);
  for (size_t j = 0; j < row.size(); ++j) t += row[j] * x[j];
  return t;
}

}  // namespace

namespace detail {

// Exact non-negative least squares for a handful of columns: every subset of
// free columns is solved unconstrained; the feasible one with the smallest
// residual wins (the NNLS optimum is one of them).
std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& b, size_t p) {
  std::vector<double> best(p, 0.0);
  double best_res = kInf;
  for (unsigned mask = 0; mask < (1u << p); ++mask) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < p; ++j)
      if (mask & (1u << j)) cols.push_back(j);
    std::vector<double> x;
    if (!cols.empty() && !solve_subset(a, b, cols, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < -1e-12; })) continue;
    std::vector<double> full(p, 0.0);
    for (size_t i = 0; i < cols.size(); ++i) full[cols[i]] = std::max(0.0, x[i]);
    double res = 0;
    for (size_t r = 0; r < a.size(); ++r) {
      double pred = 0;
      for (size_t j = 0; j < p; ++j) pred += a[r][j] * full[j];
      res += (pred - b[r]) * (pred - b[r]);
    }
    if (res < best_res - 1e-15) {
      best_res = res;
      best = full;
    }
  }
  return best;
}

size_t fixed_law_parameters(ModelKind kind, bool with_comm) {
  return basis_for(kind, kind == ModelKind::kComputeCommFixed && with_comm).names.size();
}

std::vector<double> fit_fixed_law(ModelKind kind, const std::vector<FitPoint>& points,
                                  const std::optional<CommModel>& comm) {
  return fit_coefficients(kind, basis_for(kind, kind == ModelKind::kComputeCommFixed && comm.has_value()), points,
                          comm);
}

double evaluate_fixed_law(ModelKind kind, const std::vector<double>& x, const std::optional<CommModel>& comm,
                          int gpus) {
  return evaluate(kind, basis_for(kind, kind == ModelKind::kComputeCommFixed && comm.has_value()), x, comm, gpus);
}

}  // namespace detail

const char* ci_method_name(CiMethod method) {
  static constexpr std::array<const char*, 3> kNames{"none (fewer than 2 samples)",
                                                     "distribution-free order-statistic CI of the median (binomial)",
                                                     "Student t CI of the mean (too few samples for order statistics)"};
  return name_by_value<CiMethod::kStudentT>(kNames, method, "?");
}

Summary summarize(std::span<const double> samples, double level) {
  if (samples.empty()) fail("cannot summarize an empty set of samples");
  if (!(level > 0 && level < 1)) fail("confidence level {} is not between 0 and 1", level);
  for (double v : samples)
    if (!std::isfinite(v)) fail("a sample is not a finite number ({})", v);
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  Summary s;
  s.n = v.size();
  s.ci_level = level;
  s.min = v.front();
  s.max = v.back();
  s.median = trace::quantile_of_sorted(v, 0.5);  // base/quantile.hpp
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(s.n);
  if (s.n >= 2) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  if (s.n < 2) {
    s.ci_low = s.ci_high = kNaN;
    s.ci_method = CiMethod::kNone;
    return s;
  }
  double coverage = 0;
  const size_t j = order_statistic_rank(s.n, level, coverage);
  if (j > 0) {
    s.ci_low = v[j - 1];
    s.ci_high = v[s.n - j];
    s.ci_coverage = coverage;
    s.ci_method = CiMethod::kOrderStatistic;
  } else {
    boost::math::students_t_distribution<double> t(static_cast<double>(s.n - 1));
    const double q = boost::math::quantile(t, 0.5 + level / 2);
    const double half = q * s.stddev / std::sqrt(static_cast<double>(s.n));
    s.ci_low = s.mean - half;
    s.ci_high = s.mean + half;
    s.ci_coverage = level;
    s.ci_method = CiMethod::kStudentT;
  }
  return s;
}

std::vector<double> to_time_samples(std::span<const double> samples, Better better) {
  std::vector<double> out(samples.begin(), samples.end());
  if (better == Better::kHigher) {
    for (double& v : out) {
      if (!(v > 0) || !std::isfinite(v)) fail("a throughput sample is not a positive number ({})", v);
      v = 1.0 / v;
    }
  }
  return out;
}

std::vector<double> weak_scaling_unit_times(std::span<const double> step_times, int gpus, double units_per_gpu_step) {
  if (gpus < 1) fail("weak scaling: GPU count {} is not positive", gpus);
  if (!(units_per_gpu_step > 0) || !std::isfinite(units_per_gpu_step))
    fail("weak scaling: work per GPU per step {} is not a positive number", units_per_gpu_step);
  std::vector<double> out(step_times.begin(), step_times.end());
  for (double& v : out) v /= static_cast<double>(gpus) * units_per_gpu_step;
  return out;
}

WorkPerStepEvidence classify_work_per_step(std::vector<std::pair<int, double>> work) {
  WorkPerStepEvidence e;
  std::erase_if(work, [](const auto& p) { return p.first < 1 || !(p.second > 0) || !std::isfinite(p.second); });
  std::sort(work.begin(), work.end());
  if (work.size() < 2 || work.front().first == work.back().first) {
    e.detail = "needs the work per step at two or more GPU counts";
    return e;
  }
  const double tolerance = std::log(1.25);
  bool weak = true, strong = true;
  std::vector<std::string> parts;
  for (size_t i = 1; i < work.size(); ++i) {
    if (work[i].first == work.front().first) continue;
    const double ratio = work[i].second / work.front().second;
    const double strong_ratio = static_cast<double>(work.front().first) / work[i].first;
    const double to_weak = std::fabs(std::log(ratio)), to_strong = std::fabs(std::log(ratio / strong_ratio));
    weak = weak && to_weak <= tolerance && to_weak < to_strong;
    strong = strong && to_strong <= tolerance && to_strong < to_weak;
    parts.push_back(fmt::format("{:.2f}x at N={} (weak: 1, strong: {:.3g})", ratio, work[i].first, strong_ratio));
  }
  e.kind = weak ? WorkPerStep::kFixedPerGpu : strong ? WorkPerStep::kFixedTotal : WorkPerStep::kUnknown;
  e.detail = fmt::format("{} of N={}", fmt::join(parts, ", "), work.front().first);
  return e;
}

std::vector<size_t> pareto_front(std::span<const std::pair<double, double>> points) {
  std::vector<size_t> idx(points.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return points[a].first != points[b].first ? points[a].first < points[b].first : points[a].second < points[b].second;
  });
  std::vector<size_t> front;
  double best_y = kInf;
  for (size_t i : idx) {
    if (points[i].second < best_y) {
      front.push_back(i);
      best_y = points[i].second;
    }
  }
  return front;
}

std::optional<size_t> knee_index(std::span<const std::pair<double, double>> front) {
  if (front.size() < 3) return std::nullopt;
  const double x0 = front.front().first, x1 = front.back().first;
  const double y0 = front.front().second, y1 = front.back().second;
  if (!(x1 > x0) || !(y0 > y1)) return std::nullopt;
  std::optional<size_t> best;
  double best_d = 1e-9;
  for (size_t i = 1; i + 1 < front.size(); ++i) {
    const double u = (front[i].first - x0) / (x1 - x0);
    const double v = (front[i].second - y1) / (y0 - y1);
    // Chord from (0,1) to (1,0); a convex front lies below it (u + v < 1).
    const double d = (1.0 - u - v) / std::sqrt(2.0);
    if (d > best_d) {
      best_d = d;
      best = i;
    }
  }
  return best;
}

ScalingTable scaling_table(const std::vector<ScalingPoint>& points, const ScalingOptions& options) {
  ScalingTable table;
  table.break_even.threshold = options.threshold;
  std::vector<const ScalingPoint*> with;
  std::vector<int> seen;
  for (const auto& p : points) {
    if (p.gpus < 1) fail("GPU count {} is not a positive number", p.gpus);
    if (std::find(seen.begin(), seen.end(), p.gpus) != seen.end()) fail("GPU count {} appears twice", p.gpus);
    seen.push_back(p.gpus);
    if (p.times.empty()) table.missing_gpus.push_back(p.gpus);
    else with.push_back(&p);
  }
  std::sort(table.missing_gpus.begin(), table.missing_gpus.end());
  if (with.empty()) fail("no GPU count has a successful run: nothing to compute scaling from");
  std::sort(with.begin(), with.end(), [](auto* a, auto* b) { return a->gpus < b->gpus; });
  const ScalingPoint* ref = with.front();
  if (options.ref_gpus) {
    auto it = std::find_if(with.begin(), with.end(), [&](auto* p) { return p->gpus == *options.ref_gpus; });
    if (it == with.end()) fail("reference GPU count {} has no successful run", *options.ref_gpus);
    ref = *it;
  }
  table.ref_gpus = ref->gpus;
  const double wide = 1.0 - (1.0 - options.level) / 2.0;  // Bonferroni: two intervals
  const Summary ref_s = summarize(ref->times, options.level);
  const Summary ref_w = summarize(ref->times, wide);
  table.ci_method = fmt::format(
      "{:.0f}% CI of each median: order statistics from Binomial(n,1/2) when n is large enough for the level, "
      "else Student t of the mean; speedup/E' CIs: ratio of {:.1f}% interval endpoints (Bonferroni, joint >= {:.0f}%)",
      options.level * 100, wide * 100, options.level * 100);

  for (const auto* p : with) {
    ScalingRow r;
    r.gpus = p->gpus;
    r.time = summarize(p->times, options.level);
    const Summary w = summarize(p->times, wide);
    r.speedup = ref_s.median / r.time.median;
    const double scale = static_cast<double>(ref->gpus) / p->gpus;
    r.efficiency = r.speedup * scale;
    if (p == ref) {
      r.speedup_low = r.speedup_high = 1.0;
      r.efficiency_low = r.efficiency_high = 1.0;
    } else if (ref_w.ci_method == CiMethod::kNone || w.ci_method == CiMethod::kNone) {
      r.speedup_low = r.speedup_high = r.efficiency_low = r.efficiency_high = kNaN;
    } else {
      r.speedup_low = ratio_low(ref_w.ci_low, w.ci_high);
      r.speedup_high = ratio_high(ref_w.ci_high, w.ci_low);
      r.efficiency_low = r.speedup_low * scale;
      r.efficiency_high = r.speedup_high * scale;
    }
    r.gpu_hours = p->gpus * r.time.median / 3600.0;
    if (!p->energy_j.empty()) r.energy_j = summarize(p->energy_j, options.level);
    if (options.price_per_gpu_hour) r.cost = r.gpu_hours * *options.price_per_gpu_hour;
    table.rows.push_back(std::move(r));
  }

  auto& be = table.break_even;
  be.knee_method =
      "knee of the time vs GPU-hours Pareto front: maximum normalized distance to the chord (Kneedle-like)";
  if (table.rows.size() < 2) {
    // One measured count is its own reference (E' = 1 by definition): no rule applies.
    if (!table.rows.empty()) {
      table.rows[0].pareto = true;
      be.notes.push_back(
          fmt::format("only N={} measured: no speedup, efficiency or break-even to report", table.rows[0].gpus));
    }
  } else {
    // Rule (a).
    for (const auto& r : table.rows) {
      if (r.efficiency >= options.threshold) {
        be.by_threshold = r.gpus;
        if (std::isfinite(r.efficiency_low) && r.efficiency_low < options.threshold && r.gpus != ref->gpus)
          be.notes.push_back(fmt::format("E' at N={} is {:.3f} but its CI reaches down to {:.3f}, below the threshold",
                                         r.gpus, r.efficiency, r.efficiency_low));
      }
    }
    // Rule (b).
    std::vector<std::pair<double, double>> pts;
    for (const auto& r : table.rows) pts.emplace_back(r.time.median, r.gpu_hours);
    const auto front = pareto_front(pts);
    std::vector<std::pair<double, double>> front_pts;
    for (size_t i : front) {
      table.rows[i].pareto = true;
      front_pts.push_back(pts[i]);
    }
    if (auto k = knee_index(front_pts)) {
      be.by_knee = table.rows[front[*k]].gpus;
    } else {
      be.notes.push_back(
          fmt::format("no knee: the Pareto front has {} point(s){}", front_pts.size(),
                      front_pts.size() < 3 ? " (a knee needs at least 3)" : " and none below its chord"));
    }
  }
  if (!table.missing_gpus.empty())
    be.notes.push_back(
        fmt::format("GPU counts without any successful run (left out): {}", fmt::join(table.missing_gpus, ",")));
  return table;
}

namespace {

void require_positive_samples(std::span<const double> x) {
  for (double v : x)
    if (!(v > 0) || !std::isfinite(v)) fail("a sample to compare is not a positive number ({})", v);
}

// Mean and sample variance of log(x); the variance is NaN below 2 samples.
void log_mean_and_variance(std::span<const double> x, double& mean, double& var) {
  mean = 0;
  for (double v : x) mean += std::log(v);
  mean /= static_cast<double>(x.size());
  var = 0;
  for (double v : x) var += (std::log(v) - mean) * (std::log(v) - mean);
  var = x.size() > 1 ? var / static_cast<double>(x.size() - 1) : kNaN;
}

// Welch's t-test on log times: p-value and the CI of the ratio of geometric means.
void welch_test_on_logs(std::span<const double> a, std::span<const double> b, double alpha, Comparison& c) {
  double ma, va, mb, vb;
  log_mean_and_variance(a, ma, va);
  log_mean_and_variance(b, mb, vb);
  const double diff = mb - ma;
  if (c.n_a < 2 || c.n_b < 2) {
    c.welch_p = c.ratio_low = c.ratio_high = kNaN;
    return;
  }
  const double qa = va / static_cast<double>(c.n_a), qb = vb / static_cast<double>(c.n_b);
  const double se = std::sqrt(qa + qb);
  if (se <= 0) {
    c.welch_p = diff == 0 ? 1.0 : 0.0;
    c.ratio_low = c.ratio_high = std::exp(diff);
    return;
  }
  const double df =
      (qa + qb) * (qa + qb) / (qa * qa / static_cast<double>(c.n_a - 1) + qb * qb / static_cast<double>(c.n_b - 1));
  boost::math::students_t_distribution<double> t(df);
  c.welch_p = 2 * boost::math::cdf(boost::math::complement(t, std::abs(diff) / se));
  const double q = boost::math::quantile(t, 1 - alpha / 2);
  c.ratio_low = std::exp(diff - q * se);
  c.ratio_high = std::exp(diff + q * se);
}

// Two-sided p of U for m a's and n b's without ties: the exact distribution.
double mann_whitney_exact_p(size_t m, size_t n, double u) {
  // f[i][j][k]: arrangements of i a's and j b's with U = k (pairs a < b).
  // The largest element is an a (adds no pair) or a b (adds i pairs).
  const size_t kmax = m * n;
  std::vector<std::vector<std::vector<double>>> f(
      m + 1, std::vector<std::vector<double>>(n + 1, std::vector<double>(kmax + 1)));
  for (size_t i = 0; i <= m; ++i)
    for (size_t j = 0; j <= n; ++j) {
      if (i == 0 || j == 0) {
        f[i][j][0] = 1;
        continue;
      }
      for (size_t k = 0; k <= i * j; ++k) f[i][j][k] = f[i - 1][j][k] + (k >= i ? f[i][j - 1][k - i] : 0.0);
    }
  double total = 0, le = 0, ge = 0;
  for (size_t k = 0; k <= kmax; ++k) {
    total += f[m][n][k];
    if (static_cast<double>(k) <= u) le += f[m][n][k];
    if (static_cast<double>(k) >= u) ge += f[m][n][k];
  }
  return std::min(1.0, 2 * std::min(le, ge) / total);
}

// Two-sided p of U: normal approximation with tie correction and continuity.
double mann_whitney_normal_p(size_t m, size_t n, double u, double tie_term) {
  const double big_n = static_cast<double>(m + n);
  const double mu = static_cast<double>(m * n) / 2;
  const double var = static_cast<double>(m * n) / 12 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)));
  if (var <= 0) return 1.0;
  const double z = std::max(0.0, std::abs(u - mu) - 0.5) / std::sqrt(var);
  boost::math::normal_distribution<double> norm;
  return std::min(1.0, 2 * boost::math::cdf(boost::math::complement(norm, z)));
}

void mann_whitney_test(std::span<const double> a, std::span<const double> b, Comparison& c) {
  // Mann-Whitney U = #(a_i < b_j) + 0.5 #(a_i == b_j).
  double u = 0;
  bool ties = false;
  for (double x : a)
    for (double y : b) {
      if (x < y) u += 1;
      else if (x == y) {
        u += 0.5;
        ties = true;
      }
    }
  // Ties within a sample also break the exact distribution.
  std::vector<double> all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  double tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    i = j;
  }
  c.u = u;
  c.mann_whitney_exact = c.n_a <= 20 && c.n_b <= 20 && !ties;
  c.mann_whitney_p =
      c.mann_whitney_exact ? mann_whitney_exact_p(c.n_a, c.n_b, u) : mann_whitney_normal_p(c.n_a, c.n_b, u, tie_term);
}

}  // namespace

Comparison compare(std::span<const double> a, std::span<const double> b, double alpha) {
  if (a.empty() || b.empty()) fail("a comparison needs samples on both sides");
  require_positive_samples(a);
  require_positive_samples(b);
  Comparison c;
  c.alpha = alpha;
  c.n_a = a.size();
  c.n_b = b.size();
  c.median_a = summarize(a).median;
  c.median_b = summarize(b).median;
  c.ratio = c.median_b / c.median_a;
  c.test = "Welch's t-test on log times (ratio of geometric means); Mann-Whitney U as a distribution-free check";
  welch_test_on_logs(a, b, alpha, c);
  mann_whitney_test(a, b, c);
  c.differs = std::isfinite(c.welch_p) && c.welch_p < alpha;
  return c;
}

double CommModel::time(int gpus) const {
  if (gpus <= 1) return 0.0;
  const double n = gpus;
  const double bw = bandwidth_bytes_per_s > 0 ? 2 * (n - 1) / n * bytes_per_step / bandwidth_bytes_per_s : 0.0;
  return bw + latency_s * (n - 1);
}

const char* model_name(ModelKind kind) {
  static constexpr std::array<const char*, 4> kNames{"amdahl", "compute+comm+fixed", "step x converge", "power law"};
  return name_by_value<ModelKind::kPowerLaw>(kNames, kind, "?");
}

std::vector<std::string> model_assumptions(ModelKind kind, bool with_comm) {
  std::vector<std::string> out = {
      "The work per step (global batch) is the same at every GPU count (strong scaling).",
      "Compute divides evenly across GPUs: per-GPU compute time is a/N.",
      "Fixed per-step costs (data loading, optimizer, launch overhead) do not change with N.",
      "The fit minimizes relative error on the medians; it is as good as the GPU counts measured.",
  };
  if (kind == ModelKind::kStepConverge) {
    out[0] =
        "The global batch may grow with N (as in MLPerf); its law B(N) is fitted on the measured sizes, "
        "or told (--global-batch-grows), and assumed to hold at the predicted sizes.";
    out.push_back(
        "step x converge: time per unit of progress is k/N + c/B(N) (compute split over N, a fixed "
        "per-step cost c shared by the batch); progress to converge grows as B^g, 0 <= g <= 1.");
  } else if (kind == ModelKind::kPowerLaw) {
    out.push_back("power law: T(N) = A N^-b keeps the slope of the measured sizes on a log-log plot.");
  } else if (kind == ModelKind::kAmdahl) {
    out.push_back("Amdahl: a serial fraction s does not shrink with N; communication is folded into s.");
  } else if (with_comm) {
    out.push_back(
        "Communication is a ring all-reduce of the measured bytes per step at the measured bandwidth: "
        "2(N-1)/N * bytes / bw + latency * (N-1), not overlapped with compute.");
    out.push_back("Bandwidth and latency measured at the traced GPU count hold at larger N (same interconnect).");
  } else {
    out.push_back(
        "Without a trace, communication is a per-hop term d*(N-1) (the bandwidth part of a ring all-reduce, "
        "2(N-1)/N, is indistinguishable from a/N + c and is absorbed by them).");
  }
  return out;
}

Fit fit_model(ModelKind kind, const std::vector<FitPoint>& points, const std::optional<CommModel>& comm,
              const std::vector<int>& predict_gpus, int ref_gpus, double ref_time) {
  if (kind != ModelKind::kAmdahl && kind != ModelKind::kComputeCommFixed)
    fail("fit_model fits amdahl and compute+comm+fixed; {} is fitted by fit_curve", model_name(kind));
  Fit f;
  f.kind = kind;
  const bool with_comm = kind == ModelKind::kComputeCommFixed && comm.has_value();
  const Basis basis = basis_for(kind, with_comm);
  const size_t p = basis.names.size();
  std::vector<FitPoint> pts;
  for (const auto& pt : points) {
    if (pt.gpus < 1 || !(pt.time > 0) || !std::isfinite(pt.time)) continue;
    pts.push_back(pt);
  }
  if (pts.size() < p) {
    f.note = fmt::format("{} needs at least {} GPU counts with results; have {}", model_name(kind), p, pts.size());
    f.loo_mean_abs_rel_error = f.loo_max_abs_rel_error = f.rms_rel_residual = kNaN;
    return f;
  }
  const auto x = fit_coefficients(kind, basis, pts, comm);
  f.ok = true;
  for (size_t j = 0; j < p; ++j) f.params.emplace_back(basis.names[j], x[j]);
  double ss = 0;
  for (const auto& pt : pts) {
    const double r = (evaluate(kind, basis, x, comm, pt.gpus) - pt.time) / pt.time;
    ss += r * r;
  }
  f.rms_rel_residual = std::sqrt(ss / static_cast<double>(pts.size()));

  if (pts.size() >= p + 1) {
    std::tie(f.loo_mean_abs_rel_error, f.loo_max_abs_rel_error) =
        detail::leave_one_out(pts, [&](const std::vector<FitPoint>& rest, int gpus) {
          return evaluate(kind, basis, fit_coefficients(kind, basis, rest, comm), comm, gpus);
        });
  } else {
    f.loo_mean_abs_rel_error = f.loo_max_abs_rel_error = kNaN;
    f.note = fmt::format("leave-one-out needs at least {} GPU counts; have {}", p + 1, pts.size());
  }

  if (kind == ModelKind::kAmdahl) {
    const double t1 = x[0] + x[1];
    const double s = t1 > 0 ? x[1] / t1 : kNaN;
    f.params.emplace_back("T1", t1);
    f.params.emplace_back("s", s);
    f.formula = fmt::format("T(N) = {:.6g} * ({:.4g} + {:.4g}/N)", t1, s, 1 - s);
  } else if (with_comm) {
    f.formula = fmt::format("T(N) = {:.6g}/N + ring(N; {:.6g} B, {:.6g} B/s, {:.3g} s/hop) + {:.6g}", x[0],
                            comm->bytes_per_step, comm->bandwidth_bytes_per_s, comm->latency_s, x[1]);
  } else {
    f.formula = fmt::format("T(N) = {:.6g}/N + {:.6g}*(N-1) + {:.6g}", x[0], x[1], x[2]);
  }
  for (int n : predict_gpus) {
    if (n < 1) fail("cannot predict for GPU count {}", n);
    Prediction pr;
    pr.gpus = n;
    pr.time = evaluate(kind, basis, x, comm, n);
    pr.efficiency = pr.time > 0 ? ref_gpus * ref_time / (n * pr.time) : kNaN;
    f.predictions.push_back(pr);
  }
  return f;
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = json_with(SCALESCOPE_JSON_FIELDS(s, n, median, mean, stddev, min, max, ci_low, ci_high, ci_level, ci_coverage),
                {{"ci_method", ci_method_name(s.ci_method)}});
}

void to_json(nlohmann::json& j, const ScalingRow& r) {
  j = json_with(
      SCALESCOPE_JSON_FIELDS(r, gpus, time, speedup, efficiency, gpu_hours, pareto),
      {{"speedup_ci", {r.speedup_low, r.speedup_high}}, {"efficiency_ci", {r.efficiency_low, r.efficiency_high}}});
  j["energy_j"] = or_null(r.energy_j);
  j["cost"] = or_null(r.cost);
}

void to_json(nlohmann::json& j, const BreakEven& b) {
  j = SCALESCOPE_JSON_FIELDS(b, threshold, knee_method, notes);
  j["by_threshold"] = or_null(b.by_threshold);
  j["by_knee"] = or_null(b.by_knee);
}

void to_json(nlohmann::json& j, const ScalingTable& t) {
  j = SCALESCOPE_JSON_FIELDS(t, ref_gpus, rows, missing_gpus, break_even, ci_method);
}

void to_json(nlohmann::json& j, const Comparison& c) {
  j = json_with(SCALESCOPE_JSON_FIELDS(c, n_a, n_b, median_a, median_b, ratio, welch_p, u, mann_whitney_p,
                                       mann_whitney_exact, differs, alpha, test),
                {{"ratio_ci", {c.ratio_low, c.ratio_high}}});
}

void to_json(nlohmann::json& j, const Prediction& p) { j = SCALESCOPE_JSON_FIELDS(p, gpus, time, efficiency); }

void to_json(nlohmann::json& j, const Fit& f) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : f.params) params[k] = v;
  j = json_with(SCALESCOPE_JSON_FIELDS(f, ok, rms_rel_residual, loo_mean_abs_rel_error, loo_max_abs_rel_error,
                                       predictions, formula, note),
                {{"model", model_name(f.kind)}, {"params", params}});
}

}  // namespace scalescope::scaling
