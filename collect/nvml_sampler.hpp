#pragma once
// GPU counters through NVML, loaded at run time (dlopen libnvidia-ml.so.1)
// with our own minimal declarations, so a machine without NVML still traces.
// One sampler per node (the collector starts it in local rank 0) samples every
// GPU of the node at a fixed rate on its own thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trace/trace.hpp"

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
  int (*pcie_throughput_kbps)(Device, int counter, unsigned int*) = nullptr;  // blocks ~20 ms
  int (*field_values)(Device, int count, FieldValue*) = nullptr;
  void* handle = nullptr;

  // dlopen + dlsym; false with *error set when the library or a required
  // symbol is missing (the optional ones stay null).
  bool load(const char* library, std::string* error);
};

class NvmlSampler {
 public:
  using Clock = std::function<trace::Timestamp()>;

  // Initialises NVML and finds the devices; nullptr with *error on failure.
  static std::unique_ptr<NvmlSampler> create(const NvmlApi& api, Clock clock, std::string* error);
  ~NvmlSampler();

  void start(double hz);  // sampling thread
  void stop();            // bounded: the thread wakes at least every period
  void sample_once();     // one sample of every device (tests call it directly)
  // Moves the samples taken so far into `out`.
  void drain(std::vector<trace::CounterRecord>& out);
  size_t device_count() const { return devices_.size(); }
  uint64_t thread_cpu_ns() const;  // the sampler thread's CPU time so far

 private:
  NvmlSampler(const NvmlApi& api, Clock clock) : api_(api), clock_(std::move(clock)) {}
  void push(uint32_t device, trace::CounterMetric metric, double value, trace::Timestamp t);

  NvmlApi api_;
  Clock clock_;
  std::vector<NvmlApi::Device> devices_;
  struct LinkState {
    trace::Timestamp time = -1;
    unsigned long long tx_kib = 0, rx_kib = 0;
  };
  std::vector<LinkState> nvlink_;
  uint64_t samples_ = 0;
  std::mutex mutex_;
  std::vector<trace::CounterRecord> pending_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> cpu_ns_{0};
  std::thread thread_;
};

}  // namespace scalescope::collect
