// Input starvation of a window from its sums.
#include "analyze/input.hpp"

#include <algorithm>

namespace scalescope::analyze {

using trace::Timestamp;

std::pair<Timestamp, Timestamp> detail::input_span(const IterationStats& its, Timestamp ws, Timestamp we) {
  if (its.count > 0) return {its.iterations.front().start, its.iterations.back().end};
  return {ws, we};
}

void detail::finish_input(InputStats& in, const IterationStats& its, Timestamp ws, Timestamp we, bool any_htod,
                          int64_t compute_ns) {
  in.iterations = its.count;
  in.compute_ns = compute_ns;
  const auto [span_start, span_end] = input_span(its, ws, we);
  const int64_t denom = its.count > 0 ? std::max<int64_t>(1, span_end - span_start) : std::max<int64_t>(0, we - ws);
  in.fraction = denom > 0 ? static_cast<double>(in.starvation_ns) / static_cast<double>(denom) : 0;
  if (!any_htod) in.availability = {false, "skipped: no host-to-device copies in the window"};
  else if (compute_ns == 0) in.availability = {false, "skipped: no compute kernels in the window"};
}

}  // namespace scalescope::analyze
