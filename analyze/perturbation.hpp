#pragma once
// The collector's own measure of how much tracing slowed the job.

#include <unordered_map>
#include <cstdint>
#include <string>

namespace scalescope::analyze {

// The collector's self-measured perturbation (sampled windows by iteration,
// docs/collector.md): how much longer iterations inside traced windows took
// than iterations while CUPTI was detached, from the trace's metadata.
struct ProfilerPerturbation {
  std::string sampling;  // "sampled", "full", "windows", or "" (not the collector, or an older one)
  bool measured = false;
  double percent = 0, ci_low = 0, ci_high = 0;
  int64_t inside = 0, outside = 0, seen = 0;
  std::string text;  // the collector's sentence (or why not measured, or the no-marker note);
                     // with --repeat-every, plus a note that the steady analysis spans the
                     // detached stretches between windows
  // The interval's lower bound is above kPerturbationMatters: figures read
  // from CPU-side timing (launch gaps, idle gaps, host syncs) are inflated.
  bool matters = false;
};
inline constexpr double kPerturbationMatters = 5.0;  // percent, the same as collect::kPerturbationThresholdPercent

namespace detail {

// From the collector's sampling facts in the trace's metadata (Metadata::extra).
ProfilerPerturbation read_perturbation(const std::unordered_map<std::string, std::string>& extra);

}  // namespace detail
}  // namespace scalescope::analyze
