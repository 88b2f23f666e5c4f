#pragma once
// GPU counters through NVML, loaded at run time (dlopen libnvidia-ml.so.1)
// with our own minimal declarations, so a machine without NVML still traces.
// One sampler per node (the collector starts it in local rank 0) samples every
// GPU of the node at a fixed rate on its own thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::collect {

// The NVML entry points the sampler uses (signatures from NVIDIA's NVML
// reference). A test fills them with fakes; load() fills them with dlsym.
struct NvmlApi {
  struct Utilization {
    unsigned int gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  union Value {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
  };
  struct FieldValue {
    unsigned int field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type, nvml_return;
    Value value;
  };
  struct PciInfo {  // nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];  // "00000000:3B:00.0"
  };
  using Device = void*;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*device_count)(unsigned int*) = nullptr;
  int (*device_by_index)(unsigned int, Device*) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*memory_info)(Device, Memory*) = nullptr;
  int (*power_mw)(Device, unsigned int*) = nullptr;
  int (*energy_mj)(Device, unsigned long long*) = nullptr;
  int (*clock_mhz)(Device, int clock_type, unsigned int*) = nullptr;
  int (*temperature)(Device, int sensor, unsigned int*) = nullptr;
  // Why clocks are held down (nvmlDeviceGetCurrentClocksEventReasons, or its
  // older name ...ThrottleReasons), and the limits they are held against.
  int (*clocks_event_reasons)(Device, unsigned long long*) = nullptr;
  int (*max_clock_mhz)(Device, int clock_type, unsigned int*) = nullptr;
  int (*power_limit_mw)(Device, unsigned int*) = nullptr;
  int (*temperature_threshold)(Device, int threshold, unsigned int*) = nullptr;
  int (*pcie_throughput_kbps)(Device, int counter, unsigned int*) = nullptr;  // blocks ~20 ms
  int (*field_values)(Device, int count, FieldValue*) = nullptr;
  int (*pci_info)(Device, PciInfo*) = nullptr;  // to map NVML's order to CUDA ordinals
  void* handle = nullptr;

  // dlopen + dlsym; false with *error set when the library or a required
  // symbol is missing (the optional ones stay null).
  bool load(const char* library, std::string* error);
};

// NVML numbers GPUs in PCI order over the whole machine; CUDA numbers them
// by its own order (CUDA_DEVICE_ORDER) after CUDA_VISIBLE_DEVICES. For each
// NVML index: the CUDA ordinal whose PCI bus id matches (any spelling:
// "00000000:3B:00.0" = "0000:3b:00.0"), or -1 when this process cannot see
// that GPU. `cuda_bus_ids[i]` is cuDeviceGetPCIBusId of ordinal i.
//   map_nvml_to_cuda({"0000:19:00.0", "0000:3b:00.0"}, {"0000:3B:00.0"}) == {-1, 0}
std::vector<int32_t> map_nvml_to_cuda(const std::vector<std::string>& nvml_bus_ids,
                                      const std::vector<std::string>& cuda_bus_ids);

// The query families one sample makes, for the sampler's CPU breakdown.
enum class NvmlQuery : uint8_t {
  kUtilization,
  kMemory,
  kPower,
  kEnergy,
  kClocks,
  kTemperature,
  kPcie,
  kNvlink,
  kCount
};
const char* nvml_query_name(NvmlQuery q);  // "utilization", ..., "nvlink"

class NvmlSampler {
 public:
  using Clock = std::function<trace::Timestamp()>;

  // Initialises NVML and finds the devices; nullptr with *error on failure.
  static std::unique_ptr<NvmlSampler> create(const NvmlApi& api, Clock clock, std::string* error);
  ~NvmlSampler();

  void start(double hz);  // sampling thread
  void stop();            // bounded: the thread wakes at least every period
  // One sample of every device (tests call it directly). The slow families
  // (energy, NVLink, PCIe) are read on every slow_every-th call only: once a
  // second after start(hz), every 10th call before.
  void sample_once();
  // Moves the samples taken so far into `out`, their devices as CUDA
  // ordinals once set_device_map() was called (samples of GPUs mapped to -1
  // are dropped and counted), as NVML indices before.
  void drain(std::vector<trace::CounterRecord>& out);
  size_t device_count() const { return devices_.size(); }
  // Normalised PCI bus ids in NVML order ("" where NVML gave none).
  const std::vector<std::string>& bus_ids() const { return bus_ids_; }
  void set_device_map(std::vector<int32_t> cuda_ordinal_by_nvml_index);
  bool has_device_map() const;
  uint64_t unmapped_samples() const;  // dropped: GPUs this process cannot see
  uint64_t thread_cpu_ns() const;     // the sampler thread's CPU time so far
  // Of that, the part spent in one query family (PCIe throughput spins ~20 ms
  // a call), so a run shows which counter costs what.
  uint64_t query_cpu_ns(NvmlQuery q) const {
    return query_cpu_ns_[static_cast<size_t>(q)].load(std::memory_order_relaxed);
  }

 private:
  NvmlSampler(const NvmlApi& api, Clock clock) : api_(api), clock_(std::move(clock)) {}
  enum class Slow : uint8_t { kNone, kTotalsOnly, kAll };  // kTotalsOnly: energy and NVLink, not PCIe
  void sample(Slow slow);
  void sample_device(uint32_t i, bool totals, bool pcie, std::vector<trace::CounterRecord>& local);
  void sample_nvlink_rates(uint32_t i, NvmlApi::Device d, trace::Timestamp t, std::vector<trace::CounterRecord>& local);
  template <class Query>
  void timed(NvmlQuery q, Query&& query);
  void push(uint32_t device, trace::CounterMetric metric, double value, trace::Timestamp t);

  NvmlApi api_;
  Clock clock_;
  std::vector<NvmlApi::Device> devices_;
  std::vector<std::string> bus_ids_;
  struct LinkState {
    trace::Timestamp time = -1;
    unsigned long long tx_kib = 0, rx_kib = 0;
  };
  std::vector<LinkState> nvlink_;
  uint64_t samples_ = 0;
  uint64_t slow_every_ = 10;
  mutable std::mutex mutex_;
  std::vector<trace::CounterRecord> pending_;
  std::optional<std::vector<int32_t>> device_map_;  // under mutex_
  uint64_t unmapped_ = 0;                           // under mutex_
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> cpu_ns_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(NvmlQuery::kCount)> query_cpu_ns_{};
  std::thread thread_;
};

}  // namespace scalescope::collect
