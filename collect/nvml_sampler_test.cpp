#include "collect/nvml_sampler.hpp"

#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <map>
#include <set>

namespace scalescope::collect {
namespace {

// A fake NVML with two devices and known readings.
struct Fake {
  static inline int inits = 0, shutdowns = 0;
  static inline std::atomic<unsigned long long> nvlink_tx_kib = 0, energy_mj = 123456;
  static inline std::atomic<int> energy_calls = 0;
  static int init() { return ++inits, 0; }
  static int shutdown() { return ++shutdowns, 0; }
  static int count(unsigned int* n) { return *n = 2, 0; }
  static int by_index(unsigned int i, NvmlApi::Device* d) {
    *d = reinterpret_cast<NvmlApi::Device>(uintptr_t{i} + 1);
    return 0;
  }
  static int util(NvmlApi::Device, NvmlApi::Utilization* u) { return *u = {87, 40}, 0; }
  static int mem(NvmlApi::Device, NvmlApi::Memory* m) { return *m = {100, 40, 60}, 0; }
  static int power(NvmlApi::Device d, unsigned int* mw) {
    *mw = d == reinterpret_cast<NvmlApi::Device>(1) ? 650000 : 3;
    return d == reinterpret_cast<NvmlApi::Device>(1) ? 0 : 3;  // device 1: NOT_SUPPORTED
  }
  static int energy(NvmlApi::Device, unsigned long long* mj) { return ++energy_calls, *mj = energy_mj, 0; }
  static int clock(NvmlApi::Device, int type, unsigned int* mhz) { return *mhz = type == 1 ? 1980 : 3201, 0; }
  static int reasons(NvmlApi::Device, unsigned long long* r) { return *r = 0x4 | 0x20, 0; }  // power cap, thermal
  static int max_clock(NvmlApi::Device, int type, unsigned int* mhz) { return *mhz = type == 1 ? 1980 : 0, 0; }
  static int power_limit(NvmlApi::Device, unsigned int* mw) { return *mw = 700000, 0; }
  static int temperature_threshold(NvmlApi::Device, int threshold, unsigned int* c) {
    return threshold == 1 ? (*c = 87, 0) : 3;  // only the slowdown threshold
  }
  // NVML index 0 sits at bus 0x19, index 1 at 0x3B (NVML's PCI order).
  static int pci(NvmlApi::Device d, NvmlApi::PciInfo* p) {
    std::snprintf(p->bus_id, sizeof(p->bus_id), "00000000:%s:00.0",
                  d == reinterpret_cast<NvmlApi::Device>(1) ? "19" : "3B");
    return 0;
  }
  static int fields(NvmlApi::Device, int n, NvmlApi::FieldValue* f) {
    for (int i = 0; i < n; ++i) {
      f[i].nvml_return = 0;
      f[i].value.ull = f[i].field_id == 138 ? nvlink_tx_kib.load() : 0ull;
    }
    return 0;
  }
};

NvmlApi fake_api() {
  NvmlApi api;
  api.init = Fake::init;
  api.shutdown = Fake::shutdown;
  api.device_count = Fake::count;
  api.device_by_index = Fake::by_index;
  api.utilization = Fake::util;
  api.memory_info = Fake::mem;
  api.power_mw = Fake::power;
  api.energy_mj = Fake::energy;
  api.clock_mhz = Fake::clock;
  api.clocks_event_reasons = Fake::reasons;
  api.max_clock_mhz = Fake::max_clock;
  api.power_limit_mw = Fake::power_limit;
  api.temperature_threshold = Fake::temperature_threshold;
  api.field_values = Fake::fields;
  api.pci_info = Fake::pci;
  return api;
}

TEST(CollectNvml, MissingLibraryIsAnErrorNotACrash) {
  NvmlApi api;
  std::string error;
  EXPECT_FALSE(api.load("libnvidia-ml-does-not-exist.so.1", &error));
  EXPECT_NE(error.find("cannot load"), std::string::npos);
  EXPECT_EQ(NvmlSampler::create(
                api, [] { return trace::Timestamp{0}; }, &error),
            nullptr);
}

TEST(CollectNvml, SamplesEveryDeviceAndMetric) {
  trace::Timestamp now = 1'000'000'000;
  std::string error;
  auto s = NvmlSampler::create(
      fake_api(), [&] { return now; }, &error);
  ASSERT_NE(s, nullptr) << error;
  EXPECT_EQ(s->device_count(), 2u);
  Fake::nvlink_tx_kib = 1000;
  s->sample_once();  // the first sample reads everything, the running totals too
  for (int i = 0; i < 9; ++i) s->sample_once();
  now += 500'000'000;  // 0.5 s later, 1 MiB more sent over NVLink
  Fake::nvlink_tx_kib = 2024;
  s->sample_once();  // the 11th: the running totals again
  std::vector<trace::CounterRecord> out;
  s->drain(out);
  std::map<std::pair<uint32_t, trace::CounterMetric>, double> last;
  for (const auto& r : out) last[{r.device, r.metric}] = r.value;
  using M = trace::CounterMetric;
  EXPECT_EQ(last.at({0, M::kGpuUtilizationPercent}), 87);
  EXPECT_EQ(last.at({1, M::kMemoryUtilizationPercent}), 40);
  EXPECT_EQ(last.at({0, M::kMemoryUsedBytes}), 60);
  EXPECT_EQ(last.at({0, M::kPowerWatts}), 650);
  EXPECT_EQ(last.count({1, M::kPowerWatts}), 0u);  // unsupported: no made-up zero
  EXPECT_EQ(last.at({0, M::kEnergyJoules}), 123.456);
  EXPECT_EQ(last.at({0, M::kSmClockMHz}), 1980);
  EXPECT_EQ(last.at({0, M::kMemoryClockMHz}), 3201);
  EXPECT_EQ(last.at({1, M::kClocksEventReasons}), 0x24);
  EXPECT_EQ(last.at({0, M::kSmClockMaxMHz}), 1980);
  EXPECT_EQ(last.at({0, M::kPowerLimitWatts}), 700);
  EXPECT_EQ(last.at({1, M::kTemperatureSlowdownCelsius}), 87);
  size_t reasons = 0, limits = 0;
  for (const auto& r : out) {
    reasons += r.metric == M::kClocksEventReasons;
    limits += r.metric == M::kPowerLimitWatts;
  }
  EXPECT_EQ(reasons, 11u * 2);  // every sample of both devices
  EXPECT_EQ(limits, 2u * 2);    // with the running totals: samples 0 and 10
  EXPECT_DOUBLE_EQ(last.at({0, M::kNvlinkTxBytesPerSecond}), 1024.0 * 1024.0 * 2);
  EXPECT_DOUBLE_EQ(last.at({0, M::kNvlinkRxBytesPerSecond}), 0);
  out.clear();
  s->drain(out);
  EXPECT_TRUE(out.empty());
}

// A PCIe throughput query that spins like NVML's (~20 ms there, 3 ms of
// this thread's CPU here): sampled on every 10th sample only, and its CPU
// time is reported apart.
int spinning_pcie_calls = 0;
uint64_t thread_cpu_ns_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}
void spin_thread_cpu(uint64_t ns) {
  const uint64_t end = thread_cpu_ns_now() + ns;
  while (thread_cpu_ns_now() < end) {}
}
int spinning_pcie(NvmlApi::Device, int, unsigned int* kbps) {
  ++spinning_pcie_calls;
  spin_thread_cpu(3'000'000);
  return *kbps = 5, 0;
}

TEST(CollectNvml, PcieThroughputIsSampledRarelyAndItsCpuTimeCounted) {
  NvmlApi api = fake_api();
  api.pcie_throughput_kbps = spinning_pcie;
  std::string error;
  auto s = NvmlSampler::create(
      api, [] { return trace::Timestamp{1}; }, &error);
  ASSERT_NE(s, nullptr) << error;
  spinning_pcie_calls = 0;
  for (int i = 0; i < 11; ++i) s->sample_once();
  EXPECT_EQ(spinning_pcie_calls, 2 * 2 * 2);                        // samples 0 and 10, 2 devices, TX and RX
  EXPECT_GE(s->query_cpu_ns(NvmlQuery::kPcie), 8 * 3'000'000u);     // 8 calls of 3 ms CPU each
  EXPECT_LT(s->query_cpu_ns(NvmlQuery::kUtilization), 3'000'000u);  // the fakes return at once
  std::vector<trace::CounterRecord> out;
  s->drain(out);
  size_t pcie = 0;
  for (const auto& r : out) pcie += r.metric == trace::CounterMetric::kPcieTxBytesPerSecond;
  EXPECT_EQ(pcie, 4u);
}

// A slow NVLink field query: its CPU time lands under "nvlink" only, so a
// run's breakdown names the counter that costs.
// Long enough that one misattributed call stands out from the other
// families' own cost, which sanitizers and a loaded machine stretch to
// a few milliseconds over 11 samples.
constexpr uint64_t kFieldSpinNs = 10'000'000;

int spinning_fields(NvmlApi::Device, int n, NvmlApi::FieldValue* f) {
  spin_thread_cpu(kFieldSpinNs);
  for (int i = 0; i < n; ++i) f[i].nvml_return = 0, f[i].value.ull = 0;
  return 0;
}

// Energy and NVLink cost milliseconds a call on an H200: read once a second
// (every hz-th sample), and once more when the sampler stops, so a run's
// energy (last minus first reading) misses nothing at the end.
TEST(CollectNvml, RunningTotalsAreReadOnceASecondAndAtStop) {
  std::string error;
  auto s = NvmlSampler::create(
      fake_api(), [] { return trace::Timestamp{1}; }, &error);
  ASSERT_NE(s, nullptr) << error;
  Fake::energy_calls = 0;
  Fake::energy_mj = 1'000'000;
  s->start(1000);  // 1 kHz: the totals every 1000th sample, i.e. the first one within this test
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Fake::energy_mj = 1'500'000;  // 500 J more by the end
  s->stop();
  std::vector<trace::CounterRecord> out;
  s->drain(out);
  std::vector<double> energy;
  size_t utilization = 0;
  for (const auto& r : out) {
    if (r.device != 0) continue;
    if (r.metric == trace::CounterMetric::kEnergyJoules) energy.push_back(r.value);
    utilization += r.metric == trace::CounterMetric::kGpuUtilizationPercent;
  }
  EXPECT_GT(utilization, 10u);  // the fast families at the sampler's rate
  ASSERT_EQ(energy.size(), 2u) << "first and final readings only; the thread ran " << utilization << " samples";
  EXPECT_EQ(energy.front(), 1000.0);
  EXPECT_EQ(energy.back(), 1500.0);
  EXPECT_EQ(Fake::energy_calls, 4);  // 2 readings x 2 devices
}

TEST(CollectNvml, QueryCpuTimeIsCountedPerFamily) {
  NvmlApi api = fake_api();
  api.field_values = spinning_fields;
  std::string error;
  auto s = NvmlSampler::create(
      api, [] { return trace::Timestamp{1}; }, &error);
  ASSERT_NE(s, nullptr) << error;
  for (int i = 0; i < 11; ++i) s->sample_once();
  EXPECT_GE(s->query_cpu_ns(NvmlQuery::kNvlink), 4 * kFieldSpinNs);  // samples 0 and 10 x 2 devices
  uint64_t others = 0;
  for (auto q : {NvmlQuery::kUtilization, NvmlQuery::kMemory, NvmlQuery::kPower, NvmlQuery::kEnergy, NvmlQuery::kClocks,
                 NvmlQuery::kTemperature, NvmlQuery::kPcie})
    others += s->query_cpu_ns(q);
  EXPECT_LT(others, kFieldSpinNs);  // not one field read counted elsewhere
  EXPECT_STREQ(nvml_query_name(NvmlQuery::kNvlink), "nvlink");
  EXPECT_STREQ(nvml_query_name(NvmlQuery::kUtilization), "utilization");
}

TEST(CollectNvml, ThreadSamplesAtRateAndStops) {
  std::string error;
  auto s = NvmlSampler::create(
      fake_api(), [] { return trace::Timestamp{1}; }, &error);
  ASSERT_NE(s, nullptr);
  int shutdowns = Fake::shutdowns;
  s->start(200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s->stop();
  std::vector<trace::CounterRecord> out;
  s->drain(out);
  EXPECT_GT(out.size(), 0u);
  s.reset();
  EXPECT_EQ(Fake::shutdowns, shutdowns + 1);
}

TEST(CollectNvml, MapsNvmlOrderToCudaOrdinalsByBusId) {
  // NVML: PCI order over the machine. CUDA: CUDA_VISIBLE_DEVICES=2,0 on a
  // 4-GPU node makes ordinal 0 the NVML index 2 and ordinal 1 index 0; the
  // driver spells bus ids with a 4-digit domain, NVML with 8 and upper case.
  std::vector<std::string> nvml = {"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0"};
  std::vector<std::string> cuda = {"0000:4c:00.0", "0000:19:00.0"};
  EXPECT_EQ(map_nvml_to_cuda(nvml, cuda), (std::vector<int32_t>{1, -1, 0, -1}));
  // All visible, CUDA in the same order: identity.
  EXPECT_EQ(map_nvml_to_cuda(nvml, {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0"}),
            (std::vector<int32_t>{0, 1, 2, 3}));
  // Unknown bus ids map nowhere (never guessed from the index).
  EXPECT_EQ(map_nvml_to_cuda({"", "0000:3b:00.0"}, {"0000:19:00.0", "0000:3b:00.0"}), (std::vector<int32_t>{-1, 1}));
  EXPECT_EQ(map_nvml_to_cuda(nvml, {}), (std::vector<int32_t>{-1, -1, -1, -1}));
  EXPECT_TRUE(map_nvml_to_cuda({}, cuda).empty());
  // Functions differ: 0000:19:00.1 is not 0000:19:00.0.
  EXPECT_EQ(map_nvml_to_cuda({"0000:19:00.1"}, {"0000:19:00.0"}), (std::vector<int32_t>{-1}));
}

TEST(CollectNvml, DrainRenumbersDevicesOnceMapped) {
  std::string error;
  auto s = NvmlSampler::create(
      fake_api(), [] { return trace::Timestamp{1}; }, &error);
  ASSERT_NE(s, nullptr) << error;
  EXPECT_EQ(s->bus_ids(), (std::vector<std::string>{"0000:19:00.0", "0000:3b:00.0"}));
  EXPECT_FALSE(s->has_device_map());
  s->sample_once();
  std::vector<trace::CounterRecord> out;
  s->drain(out);  // no map yet: NVML indices
  std::set<uint32_t> devices;
  for (const auto& r : out) devices.insert(r.device);
  EXPECT_EQ(devices, (std::set<uint32_t>{0, 1}));
  // CUDA_VISIBLE_DEVICES=1: the only visible GPU (ordinal 0) is NVML index 1 (bus 3b).
  s->set_device_map(map_nvml_to_cuda(s->bus_ids(), {"0000:3B:00.0"}));
  EXPECT_TRUE(s->has_device_map());
  s->sample_once();
  out.clear();
  s->drain(out);
  ASSERT_FALSE(out.empty());
  for (const auto& r : out) {
    EXPECT_EQ(r.device, 0u);
    // NVML index 1 has no power reading (fake): its records are the ones kept.
    EXPECT_NE(r.metric, trace::CounterMetric::kPowerWatts);
  }
  // NVML index 0 gave the same metrics plus power; all of them were dropped.
  EXPECT_EQ(s->unmapped_samples(), out.size() + 1);
  // Swapped order (CUDA_VISIBLE_DEVICES=1,0): both kept, renumbered.
  s->set_device_map(map_nvml_to_cuda(s->bus_ids(), {"0000:3b:00.0", "0000:19:00.0"}));
  s->sample_once();
  out.clear();
  s->drain(out);
  std::map<uint32_t, bool> has_power;
  for (const auto& r : out) has_power[r.device] |= r.metric == trace::CounterMetric::kPowerWatts;
  EXPECT_EQ(has_power.size(), 2u);
  EXPECT_TRUE(has_power[1]);  // NVML index 0 (the one with power) is CUDA ordinal 1
  EXPECT_FALSE(has_power[0]);
}

}  // namespace
}  // namespace scalescope::collect
