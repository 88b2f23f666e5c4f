#pragma once
// GPU clocks and throttling from the collector's NVML samples (gpu_clocks.cpp).

#include <cstdint>
#include <string>

#include "analyze/availability.hpp"

namespace scalescope::analyze {

// One GPU's NVML samples over a window: its SM clock against the highest the
// GPU allows, why the clock was held down, and its temperature and power
// against their limits. Clock figures are of the samples taken while the GPU
// was not idle (NVML's GPU-idle reason unset), where reasons are recorded:
// an idle GPU lowers its clock without losing time.
struct GpuClockStats {
  Availability availability;
  uint32_t device = 0;     // CUDA ordinal in the trace that holds the samples
  std::string pci_bus_id;  // "" unknown
  // "" when the rank's own trace holds the samples; else the label of the
  // rank whose trace does (one sampler per node, in local rank 0).
  std::string sampled_by;
  int64_t clock_samples = 0;  // SM clock samples used (not idle)
  double sm_clock_median_mhz = 0, sm_clock_min_mhz = 0;
  double sm_clock_max_mhz = 0;  // the GPU's highest SM clock; 0: not recorded
  double clock_ratio = 0;       // median / max; 0 when the max is not recorded
  // Shares of the clocks-event-reason samples (the GPU not idle) with each
  // reason set; reason_samples 0: the collector did not record reasons.
  int64_t reason_samples = 0;
  double power_cap_share = 0;     // software power cap
  double thermal_share = 0;       // software or hardware thermal slowdown
  double hw_slowdown_share = 0;   // hardware slowdown or power brake
  double sync_boost_share = 0;    // held to the slowest GPU of its sync-boost group
  double app_clocks_share = 0;    // application clocks set below the maximum
  double throttled_share = 0;     // any of the five
  double temperature_median_c = 0, temperature_max_c = 0;
  double temperature_slowdown_c = 0;  // 0: not recorded
  double power_median_w = 0, power_max_w = 0;
  double power_limit_w = 0;  // 0: not recorded
};

}  // namespace scalescope::analyze
