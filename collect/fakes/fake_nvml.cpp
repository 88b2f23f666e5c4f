// A fake libnvidia-ml.so.1 for tests without a GPU: one device that always
// reports 50 % utilisation. Only what NvmlApi::load requires, plus
// utilisation so that samples exist; the optional queries are absent, as on
// GPUs that lack them.
#include "collect/nvml_sampler.hpp"

using scalescope::collect::NvmlApi;

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() { return 0; }
__attribute__((visibility("default"))) int nvmlShutdown() { return 0; }
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 1;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int index, NvmlApi::Device* device) {
  static int the_device;
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &the_device;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(NvmlApi::Device, NvmlApi::Utilization* u) {
  u->gpu = 50;
  u->memory = 10;
  return 0;
}
}
