// GPU clocks and throttling from the collector's NVML samples (t.counters):
// per GPU over a window, the SM clock against the GPU's highest, the reasons
// NVML gave for holding it down, and temperature and power against their
// limits. docs/advisor.md (gpu-throttling) says how the advisor reads them.
#include "analyze/gpu_clocks.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyze/detail.hpp"

namespace scalescope::analyze::detail {
namespace {

using trace::CounterMetric;
using trace::Timestamp;

// The reasons that lower the clock of a GPU at work (GPU idle and display
// clocks do not cost a busy GPU any time).
constexpr uint64_t kThermal = trace::kClocksEventSwThermalSlowdown | trace::kClocksEventHwThermalSlowdown;
constexpr uint64_t kHwSlowdown = trace::kClocksEventHwSlowdown | trace::kClocksEventHwPowerBrakeSlowdown;
constexpr uint64_t kThrottled = trace::kClocksEventSwPowerCap | kThermal | kHwSlowdown |
                                trace::kClocksEventSyncBoost | trace::kClocksEventApplicationsClocks;

struct DeviceSamples {
  std::vector<std::pair<Timestamp, double>> clock;  // in the window
  std::unordered_map<Timestamp, uint64_t> reasons;  // in the window, by sample time
  std::vector<double> temperature, power;           // in the window
  double max_clock = 0, power_limit = 0, slowdown = 0;  // anywhere in the trace: read once a second
};

double median_of(std::vector<double> v) { return v.empty() ? 0 : median(v); }

}  // namespace

std::vector<GpuClockStats> sampled_gpus(const trace::Trace& t, Timestamp ws, Timestamp we) {
  const auto& c = t.counters;
  std::map<uint32_t, DeviceSamples> devices;
  for (size_t i = 0; i < c.size(); ++i) {
    const double v = c.value[i];
    if (!(v >= 0)) continue;  // NaN or negative: not a reading
    const bool in = c.time[i] >= ws && c.time[i] <= we;
    switch (c.metric[i]) {
      case CounterMetric::kSmClockMHz:
        if (in) devices[c.device[i]].clock.emplace_back(c.time[i], v);
        break;
      case CounterMetric::kClocksEventReasons:
        if (in) devices[c.device[i]].reasons[c.time[i]] = static_cast<uint64_t>(v);
        break;
      case CounterMetric::kTemperatureCelsius:
        if (in) devices[c.device[i]].temperature.push_back(v);
        break;
      case CounterMetric::kPowerWatts:
        if (in) devices[c.device[i]].power.push_back(v);
        break;
      case CounterMetric::kSmClockMaxMHz:
        devices[c.device[i]].max_clock = std::max(devices[c.device[i]].max_clock, v);
        break;
      case CounterMetric::kPowerLimitWatts: devices[c.device[i]].power_limit = v; break;
      case CounterMetric::kTemperatureSlowdownCelsius: devices[c.device[i]].slowdown = v; break;
      default: break;
    }
  }
  std::vector<GpuClockStats> out;
  for (auto& [device, d] : devices) {
    GpuClockStats g;
    g.device = device;
    for (const auto& info : t.meta.devices)
      if (info.id == device) g.pci_bus_id = info.pci_bus_id;
    std::vector<double> clock;
    for (const auto& [time, mhz] : d.clock) {
      auto it = d.reasons.find(time);
      if (it != d.reasons.end() && (it->second & trace::kClocksEventGpuIdle)) continue;
      clock.push_back(mhz);
    }
    int64_t busy_reasons = 0, power = 0, thermal = 0, hw = 0, sync = 0, app = 0, any = 0;
    for (const auto& [time, bits] : d.reasons) {
      if (bits & trace::kClocksEventGpuIdle) continue;
      ++busy_reasons;
      power += (bits & trace::kClocksEventSwPowerCap) != 0;
      thermal += (bits & kThermal) != 0;
      hw += (bits & kHwSlowdown) != 0;
      sync += (bits & trace::kClocksEventSyncBoost) != 0;
      app += (bits & trace::kClocksEventApplicationsClocks) != 0;
      any += (bits & kThrottled) != 0;
    }
    if (clock.empty()) {
      g.availability = {false, d.clock.empty() ? "skipped: no SM clock samples of this GPU in the window"
                                               : "skipped: the GPU was idle at every SM clock sample in the window"};
    }
    g.clock_samples = static_cast<int64_t>(clock.size());
    if (!clock.empty()) {
      g.sm_clock_min_mhz = *std::min_element(clock.begin(), clock.end());
      g.sm_clock_median_mhz = median_of(std::move(clock));
    }
    g.sm_clock_max_mhz = d.max_clock;
    g.clock_ratio = d.max_clock > 0 ? std::min(1.0, g.sm_clock_median_mhz / d.max_clock) : 0;
    g.reason_samples = busy_reasons;
    if (busy_reasons > 0) {
      const double n = static_cast<double>(busy_reasons);
      g.power_cap_share = static_cast<double>(power) / n;
      g.thermal_share = static_cast<double>(thermal) / n;
      g.hw_slowdown_share = static_cast<double>(hw) / n;
      g.sync_boost_share = static_cast<double>(sync) / n;
      g.app_clocks_share = static_cast<double>(app) / n;
      g.throttled_share = static_cast<double>(any) / n;
    }
    if (!d.temperature.empty())
      g.temperature_max_c = *std::max_element(d.temperature.begin(), d.temperature.end());
    g.temperature_median_c = median_of(std::move(d.temperature));
    g.temperature_slowdown_c = d.slowdown;
    if (!d.power.empty()) g.power_max_w = *std::max_element(d.power.begin(), d.power.end());
    g.power_median_w = median_of(std::move(d.power));
    g.power_limit_w = d.power_limit;
    out.push_back(std::move(g));
  }
  return out;
}

int64_t busiest_device(const std::map<uint32_t, int64_t>& kernels_by_device) {
  int64_t best = -1, most = 0;
  for (const auto& [d, n] : kernels_by_device)
    if (n > most) {
      best = d;
      most = n;
    }
  return best;
}

GpuClockStats own_gpu_clocks(const trace::Trace& t, const std::vector<GpuClockStats>& sampled, int64_t kernel_device) {
  int64_t device = kernel_device;
  if (device < 0 && t.meta.devices.size() == 1) device = t.meta.devices.front().id;
  if (device < 0 && sampled.size() == 1) device = sampled.front().device;
  for (const GpuClockStats& g : sampled)
    if (static_cast<int64_t>(g.device) == device) return g;
  GpuClockStats g;
  if (device >= 0) {
    g.device = static_cast<uint32_t>(device);
    for (const auto& info : t.meta.devices)
      if (info.id == g.device) g.pci_bus_id = info.pci_bus_id;
  }
  if (t.counters.size() == 0)
    g.availability = {false, t.meta.source == "collector"
                                 ? "skipped: the trace has no GPU counter samples (NVML unavailable, --nvml-hz 0, or "
                                   "another rank of the node sampled them)"
                                 : "skipped: the trace has no GPU counter samples (only the collector records them)"};
  else
    g.availability = {false, device < 0 ? "skipped: the rank's GPU is not known (no kernels)"
                                        : "skipped: the trace has no NVML samples of this rank's GPU"};
  return g;
}

void share_sampled_gpus(std::vector<RankAnalysis>& ranks) {
  // What another rank of the same host sampled of a GPU, by PCI bus id.
  auto find = [&](const RankAnalysis& me, bool steady) -> const GpuClockStats* {
    const std::string& bus = (steady && me.steady ? me.steady->gpu_clocks : me.gpu_clocks).pci_bus_id;
    if (bus.empty()) return nullptr;
    for (const RankAnalysis& other : ranks) {
      if (&other == &me || other.hostname != me.hostname) continue;
      const auto& list = steady && other.steady ? other.steady->sampled_gpus : other.sampled_gpus;
      for (const GpuClockStats& g : list)
        if (g.pci_bus_id == bus && g.availability.available) return &g;
    }
    return nullptr;
  };
  std::vector<std::pair<const GpuClockStats*, const GpuClockStats*>> found(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].gpu_clocks.availability.available) found[i].first = find(ranks[i], false);
    if (ranks[i].steady && !ranks[i].steady->gpu_clocks.availability.available) found[i].second = find(ranks[i], true);
  }
  std::vector<std::pair<GpuClockStats, GpuClockStats>> taken(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto copy = [&](const GpuClockStats* from, const RankAnalysis* source, GpuClockStats& to) {
      to = *from;
      to.sampled_by = source ? source->label : std::string();
    };
    auto owner = [&](const GpuClockStats* g) -> const RankAnalysis* {
      for (const RankAnalysis& r : ranks) {
        const auto in = [&](const std::vector<GpuClockStats>& v) {
          return !v.empty() && g >= v.data() && g < v.data() + v.size();
        };
        if (in(r.sampled_gpus) || (r.steady && in(r.steady->sampled_gpus))) return &r;
      }
      return nullptr;
    };
    if (found[i].first) copy(found[i].first, owner(found[i].first), taken[i].first);
    if (found[i].second) copy(found[i].second, owner(found[i].second), taken[i].second);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankAnalysis& r = ranks[i];
    if (found[i].first) r.gpu_clocks = std::move(taken[i].first);
    r.sampled_gpus.clear();
    if (r.steady && (found[i].second || !r.steady->sampled_gpus.empty())) {
      auto steady = std::make_shared<RankAnalysis>(*r.steady);
      if (found[i].second) steady->gpu_clocks = std::move(taken[i].second);
      steady->sampled_gpus.clear();
      r.steady = std::move(steady);
    }
  }
}

}  // namespace scalescope::analyze::detail
