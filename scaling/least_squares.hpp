#pragma once
// Private to scaling/: the small least-squares pieces that fit_model
// (scaling.cpp) and fit_curve (curve_prediction.cpp) share.

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "scaling/scaling.hpp"

namespace scalescope::scaling::detail {

// Exact non-negative least squares for a handful of columns (every subset of
// free columns solved unconstrained; the best feasible one wins).
std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& b, size_t p);

// kAmdahl (a/N + c) and kComputeCommFixed (a/N + d(N-1) + c, or a/N + comm(N) + c
// with a measured CommModel), fitted on relative error with a, c, d >= 0.
size_t fixed_law_parameters(ModelKind kind, bool with_comm);
std::vector<double> fit_fixed_law(ModelKind kind, const std::vector<FitPoint>& points,
                                  const std::optional<CommModel>& comm);
double evaluate_fixed_law(ModelKind kind, const std::vector<double>& x, const std::optional<CommModel>& comm, int gpus);

// Leave-one-out over points with `gpus` and `time`: each point's time
// predicted by `predict_without(the other points, its gpus)`; the mean and
// the largest |relative error|.
template <typename Point, typename Predict>
std::pair<double, double> leave_one_out(const std::vector<Point>& pts, Predict predict_without) {
  double sum = 0, mx = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    std::vector<Point> rest;
    for (size_t k = 0; k < pts.size(); ++k)
      if (k != i) rest.push_back(pts[k]);
    const double e = std::abs(predict_without(rest, pts[i].gpus) - pts[i].time) / pts[i].time;
    sum += e;
    mx = std::max(mx, e);
  }
  return {sum / static_cast<double>(pts.size()), mx};
}

}  // namespace scalescope::scaling::detail
