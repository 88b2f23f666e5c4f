#include "collect/nvml_sampler.hpp"
#include "collect/sampler_common.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>

#include "base/enum_names.hpp"
#include "collect/host_facts.hpp"

namespace scalescope::collect {
namespace {

constexpr int kNvmlSuccess = 0;
constexpr int kClockSm = 1, kClockMem = 2;                      // nvmlClockType_t
constexpr int kTemperatureGpu = 0;                              // nvmlTemperatureSensors_t
constexpr int kTemperatureThresholdSlowdown = 1;                // nvmlTemperatureThresholds_t
constexpr int kPcieTx = 0, kPcieRx = 1;                         // nvmlPcieUtilCounter_t
constexpr unsigned kFieldNvlinkTx = 138, kFieldNvlinkRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_{TX,RX}, KiB
constexpr size_t kMaxPending = 1 << 20;                         // bounds memory if nobody drains

template <typename F>
void sym(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

bool NvmlApi::load(const char* library, std::string* error) {
  handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    if (error) *error = std::string("cannot load ") + library;
    return false;
  }
  sym(handle, "nvmlInit_v2", init);
  sym(handle, "nvmlShutdown", shutdown);
  sym(handle, "nvmlDeviceGetCount_v2", device_count);
  sym(handle, "nvmlDeviceGetHandleByIndex_v2", device_by_index);
  sym(handle, "nvmlDeviceGetUtilizationRates", utilization);
  sym(handle, "nvmlDeviceGetMemoryInfo", memory_info);
  sym(handle, "nvmlDeviceGetPowerUsage", power_mw);
  sym(handle, "nvmlDeviceGetTotalEnergyConsumption", energy_mj);
  sym(handle, "nvmlDeviceGetClockInfo", clock_mhz);
  sym(handle, "nvmlDeviceGetTemperature", temperature);
  sym(handle, "nvmlDeviceGetCurrentClocksEventReasons", clocks_event_reasons);
  if (!clocks_event_reasons) sym(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", clocks_event_reasons);
  sym(handle, "nvmlDeviceGetMaxClockInfo", max_clock_mhz);
  sym(handle, "nvmlDeviceGetEnforcedPowerLimit", power_limit_mw);
  sym(handle, "nvmlDeviceGetTemperatureThreshold", temperature_threshold);
  sym(handle, "nvmlDeviceGetPcieThroughput", pcie_throughput_kbps);
  sym(handle, "nvmlDeviceGetFieldValues", field_values);
  sym(handle, "nvmlDeviceGetPciInfo_v3", pci_info);
  if (!init || !shutdown || !device_count || !device_by_index) {
    if (error) *error = std::string(library) + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2";
    dlclose(handle);
    handle = nullptr;
    return false;
  }
  return true;
}

std::unique_ptr<NvmlSampler> NvmlSampler::create(const NvmlApi& api, Clock clock, std::string* error) {
  if (!api.init || !api.device_count || !api.device_by_index) {
    if (error) *error = "NVML not loaded";
    return nullptr;
  }
  if (int rc = api.init(); rc != kNvmlSuccess) {
    if (error) *error = "nvmlInit failed with code " + std::to_string(rc);
    return nullptr;
  }
  std::unique_ptr<NvmlSampler> s(new NvmlSampler(api, std::move(clock)));
  unsigned int n = 0;
  if (api.device_count(&n) != kNvmlSuccess) n = 0;
  for (unsigned int i = 0; i < n && i < 1024; ++i) {
    NvmlApi::Device d = nullptr;
    if (api.device_by_index(i, &d) == kNvmlSuccess) s->devices_.push_back(d);
  }
  if (s->devices_.empty()) {
    if (error) *error = "NVML sees no GPU";
    if (api.shutdown) api.shutdown();
    return nullptr;
  }
  s->nvlink_.resize(s->devices_.size());
  for (NvmlApi::Device d : s->devices_) {
    NvmlApi::PciInfo pci{};
    std::string id;
    if (api.pci_info && api.pci_info(d, &pci) == kNvmlSuccess) {
      pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
      pci.bus_id_legacy[sizeof(pci.bus_id_legacy) - 1] = '\0';
      id = normalize_pci_bus_id(pci.bus_id[0] ? pci.bus_id : pci.bus_id_legacy);
    }
    s->bus_ids_.push_back(std::move(id));
  }
  return s;
}

std::vector<int32_t> map_nvml_to_cuda(const std::vector<std::string>& nvml_bus_ids,
                                      const std::vector<std::string>& cuda_bus_ids) {
  std::vector<int32_t> out(nvml_bus_ids.size(), -1);
  for (size_t n = 0; n < nvml_bus_ids.size(); ++n) {
    std::string id = normalize_pci_bus_id(nvml_bus_ids[n]);
    if (id.empty()) continue;
    for (size_t c = 0; c < cuda_bus_ids.size(); ++c) {
      if (normalize_pci_bus_id(cuda_bus_ids[c]) != id) continue;
      out[n] = static_cast<int32_t>(c);
      break;
    }
  }
  return out;
}

void NvmlSampler::set_device_map(std::vector<int32_t> cuda_ordinal_by_nvml_index) {
  std::lock_guard lock(mutex_);
  device_map_ = std::move(cuda_ordinal_by_nvml_index);
}

bool NvmlSampler::has_device_map() const {
  std::lock_guard lock(mutex_);
  return device_map_.has_value();
}

uint64_t NvmlSampler::unmapped_samples() const {
  std::lock_guard lock(mutex_);
  return unmapped_;
}

NvmlSampler::~NvmlSampler() {
  stop();
  if (api_.shutdown) api_.shutdown();
}

void NvmlSampler::push(uint32_t device, trace::CounterMetric metric, double value, trace::Timestamp t) {
  if (pending_.size() >= kMaxPending) return;
  pending_.push_back({t, device, metric, value});
}

const char* nvml_query_name(NvmlQuery q) {
  static constexpr std::array<const char*, 8> kNames{"utilization", "memory",      "power", "energy",
                                                     "clocks",      "temperature", "pcie",  "nvlink"};
  return name_by_value<NvmlQuery::kNvlink>(kNames, q, "?");
}

void NvmlSampler::sample_once() { sample(samples_ % slow_every_ == 0 ? Slow::kAll : Slow::kNone); }

// Each query family's CPU time, measured around its calls (two clock reads
// of ~100 ns against calls of microseconds or more).
template <class Query>
void NvmlSampler::timed(NvmlQuery q, Query&& query) {
  const uint64_t cpu0 = thread_cpu_now();
  query();
  query_cpu_ns_[static_cast<size_t>(q)].fetch_add(thread_cpu_now() - cpu0, std::memory_order_relaxed);
}

void NvmlSampler::sample(Slow slow) {
  // The slow families cost milliseconds of CPU per device and call (H200,
  // driver 580: energy 3.5-5 ms, NVLink fields 2.5 ms; PCIe throughput blocks
  // ~20 ms), so they are read once a second, not at the sampler's rate. Energy
  // and NVLink bytes are running totals: a lower rate loses none of either.
  const bool pcie = api_.pcie_throughput_kbps && slow == Slow::kAll;
  const bool totals = slow != Slow::kNone;
  ++samples_;
  std::vector<trace::CounterRecord> local;
  for (uint32_t i = 0; i < devices_.size(); ++i) sample_device(i, totals, pcie, local);
  std::lock_guard lock(mutex_);
  for (const auto& r : local) push(r.device, r.metric, r.value, r.time);
}

void NvmlSampler::sample_device(uint32_t i, bool totals, bool pcie, std::vector<trace::CounterRecord>& local) {
  using M = trace::CounterMetric;
  using Q = NvmlQuery;
  NvmlApi::Device d = devices_[i];
  trace::Timestamp t = clock_();
  auto add = [&](M m, double v) { local.push_back({t, i, m, v}); };
  if (api_.utilization)
    timed(Q::kUtilization, [&] {
      NvmlApi::Utilization u{};
      if (api_.utilization(d, &u) != kNvmlSuccess) return;
      add(M::kGpuUtilizationPercent, u.gpu);
      add(M::kMemoryUtilizationPercent, u.memory);
    });
  if (api_.memory_info)
    timed(Q::kMemory, [&] {
      NvmlApi::Memory mem{};
      if (api_.memory_info(d, &mem) == kNvmlSuccess) add(M::kMemoryUsedBytes, static_cast<double>(mem.used));
    });
  unsigned int v = 0;
  if (api_.power_mw)
    timed(Q::kPower, [&] {
      if (api_.power_mw(d, &v) == kNvmlSuccess) add(M::kPowerWatts, v / 1000.0);
    });
  if (api_.energy_mj && totals)
    timed(Q::kEnergy, [&] {
      unsigned long long mj = 0;
      if (api_.energy_mj(d, &mj) == kNvmlSuccess) add(M::kEnergyJoules, static_cast<double>(mj) / 1000.0);
    });
  if (api_.clock_mhz)
    timed(Q::kClocks, [&] {
      if (api_.clock_mhz(d, kClockSm, &v) == kNvmlSuccess) add(M::kSmClockMHz, v);
      if (api_.clock_mhz(d, kClockMem, &v) == kNvmlSuccess) add(M::kMemoryClockMHz, v);
    });
  // Why the clock is where it is, at every sample; the limits it is held
  // against change rarely and are read with the running totals.
  if (api_.clocks_event_reasons)
    timed(Q::kClocks, [&] {
      unsigned long long reasons = 0;
      if (api_.clocks_event_reasons(d, &reasons) == kNvmlSuccess)
        add(M::kClocksEventReasons, static_cast<double>(reasons));
    });
  if (api_.max_clock_mhz && totals)
    timed(Q::kClocks, [&] {
      if (api_.max_clock_mhz(d, kClockSm, &v) == kNvmlSuccess) add(M::kSmClockMaxMHz, v);
    });
  if (api_.power_limit_mw && totals)
    timed(Q::kPower, [&] {
      if (api_.power_limit_mw(d, &v) == kNvmlSuccess) add(M::kPowerLimitWatts, v / 1000.0);
    });
  if (api_.temperature_threshold && totals)
    timed(Q::kTemperature, [&] {
      if (api_.temperature_threshold(d, kTemperatureThresholdSlowdown, &v) == kNvmlSuccess)
        add(M::kTemperatureSlowdownCelsius, v);
    });
  if (api_.temperature)
    timed(Q::kTemperature, [&] {
      if (api_.temperature(d, kTemperatureGpu, &v) == kNvmlSuccess) add(M::kTemperatureCelsius, v);
    });
  if (pcie)
    timed(Q::kPcie, [&] {
      if (api_.pcie_throughput_kbps(d, kPcieTx, &v) == kNvmlSuccess) add(M::kPcieTxBytesPerSecond, v * 1024.0);
      if (api_.pcie_throughput_kbps(d, kPcieRx, &v) == kNvmlSuccess) add(M::kPcieRxBytesPerSecond, v * 1024.0);
    });
  if (api_.field_values && totals) timed(Q::kNvlink, [&] { sample_nvlink_rates(i, d, t, local); });
}

// Cumulative KiB over all links (scope UINT_MAX); the rate is the difference.
void NvmlSampler::sample_nvlink_rates(uint32_t i, NvmlApi::Device d, trace::Timestamp t,
                                      std::vector<trace::CounterRecord>& local) {
  NvmlApi::FieldValue f[2] = {};
  f[0].field_id = kFieldNvlinkTx;
  f[1].field_id = kFieldNvlinkRx;
  f[0].scope_id = f[1].scope_id = UINT_MAX;
  if (api_.field_values(d, 2, f) != kNvmlSuccess || f[0].nvml_return != kNvmlSuccess ||
      f[1].nvml_return != kNvmlSuccess)
    return;
  LinkState& s = nvlink_[i];
  unsigned long long tx = f[0].value.ull, rx = f[1].value.ull;
  if (s.time >= 0 && t > s.time && tx >= s.tx_kib && rx >= s.rx_kib) {
    double seconds = static_cast<double>(t - s.time) / 1e9;
    local.push_back(
        {t, i, trace::CounterMetric::kNvlinkTxBytesPerSecond, static_cast<double>(tx - s.tx_kib) * 1024.0 / seconds});
    local.push_back(
        {t, i, trace::CounterMetric::kNvlinkRxBytesPerSecond, static_cast<double>(rx - s.rx_kib) * 1024.0 / seconds});
  }
  s = {t, tx, rx};
}

void NvmlSampler::drain(std::vector<trace::CounterRecord>& out) {
  std::lock_guard lock(mutex_);
  if (!device_map_) {
    out.insert(out.end(), pending_.begin(), pending_.end());
  } else {
    for (auto r : pending_) {
      int32_t ordinal = r.device < device_map_->size() ? (*device_map_)[r.device] : -1;
      if (ordinal < 0) {
        ++unmapped_;
        continue;
      }
      r.device = static_cast<uint32_t>(ordinal);
      out.push_back(r);
    }
  }
  pending_.clear();
}

void NvmlSampler::start(double hz) {
  if (hz <= 0 || thread_.joinable()) return;
  slow_every_ = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(hz)));  // once a second
  auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / hz));
  thread_ = std::thread([this, period] {
    run_every(period, stop_, [this] {
      sample_once();
      cpu_ns_.store(thread_cpu_now(), std::memory_order_relaxed);
    });
    // The running totals once more at the end, so a run's energy is first to
    // last reading with nothing missing at the tail (PCIe would block stop()).
    if (samples_ > 0) sample(Slow::kTotalsOnly);
    cpu_ns_.store(thread_cpu_now(), std::memory_order_relaxed);
  });
}

void NvmlSampler::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

uint64_t NvmlSampler::thread_cpu_ns() const { return cpu_ns_.load(std::memory_order_relaxed); }

}  // namespace scalescope::collect
