#pragma once
// Private to scaling/: the small least-squares pieces that fit_model
// (scaling.cpp) and fit_curve (curve_prediction.cpp) share.

#include <optional>
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

}  // namespace scalescope::scaling::detail
