// Where the NVML sampler's CPU time goes on a real GPU host (rank 0's
// sampler used ~70 ms of CPU a second at 10 Hz on 2 H200s, of which PCIe
// queries were only ~2 %). Runs the collector's own sampler for a while at
// the collector's rate and prints its CPU time per query family.
//   collect_nvml_query_cost [SECONDS=5] [HZ=10]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "collect/nvml_sampler.hpp"

using namespace scalescope::collect;

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  double hz = argc > 2 ? std::atof(argv[2]) : 10.0;
  if (!(seconds > 0) || !(hz > 0)) {
    std::fprintf(stderr, "collect_nvml_query_cost: SECONDS and HZ must be positive numbers\n");
    return 2;
  }
  NvmlApi api;
  std::string error;
  if (!api.load("libnvidia-ml.so.1", &error)) {
    std::fprintf(stderr, "collect_nvml_query_cost: %s\n", error.c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto sampler = NvmlSampler::create(
      api, [] { return scalescope::trace::Timestamp{0}; }, &error);
  double init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!sampler) {
    std::fprintf(stderr, "collect_nvml_query_cost: %s\n", error.c_str());
    return 1;
  }
  sampler->start(hz);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  sampler->stop();
  std::vector<scalescope::trace::CounterRecord> samples;
  sampler->drain(samples);
  double total_ms = sampler->thread_cpu_ns() / 1e6;
  std::printf(
      "{\"devices\": %zu, \"seconds\": %g, \"hz\": %g, \"init_wall_ms\": %.1f, \"counter_records\": %zu, "
      "\"sampler_cpu_ms\": %.1f, \"sampler_cpu_ms_per_s\": %.2f, \"by_query_cpu_ms\": {",
      sampler->device_count(), seconds, hz, init_ms, samples.size(), total_ms, total_ms / seconds);
  for (size_t q = 0; q < static_cast<size_t>(NvmlQuery::kCount); ++q)
    std::printf("%s\"%s\": %.1f", q ? ", " : "", nvml_query_name(NvmlQuery(q)),
                sampler->query_cpu_ns(NvmlQuery(q)) / 1e6);
  std::printf("}}\n");
  return 0;
}
