// One rank of a simulated data-parallel job, for the two-node test without a
// GPU (two_node_test.cpp): loads the collector named by CUDA_INJECTION64_PATH
// over the fake CUPTI (as CUDA would at cuInit) and plays ITERATIONS steps of
// a compute kernel followed by an all-reduce. The all-reduce is a real
// rendezvous with the other ranks through files in RENDEZVOUS_DIR: each rank
// writes its arrival time (the fake CUPTI clock, CLOCK_MONOTONIC, which all
// processes of this machine share) and the collective ends for every rank at
// the last arrival plus 300 us, as a GPU collective does. A rank's compute
// lasts 2 ms plus EXTRA_US, so a rank given more is the straggler.
// Usage: fake_rank RENDEZVOUS_DIR ITERATIONS EXTRA_US
// Its own rank and world size (for the rendezvous) come from torchrun's
// RANK/WORLD_SIZE, else Open MPI's or Slurm's variables, so that it runs
// under mpirun and srun as they start it; the collector finds the rank by
// itself.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <thread>

namespace {

using KernelFn = void (*)(const char*, uint64_t, uint64_t);

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void sleep_until_ns(uint64_t t) {
  while (now_ns() < t) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// The first of `names` that is set.
int env_int(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fake_rank RENDEZVOUS_DIR ITERATIONS EXTRA_US\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int iterations = std::atoi(argv[2]);
  const uint64_t extra_ns = static_cast<uint64_t>(std::atoll(argv[3])) * 1000;
  const int rank = env_int({"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"});
  const int world = env_int({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"});
  if (rank < 0 || world < 1) {
    std::fprintf(stderr, "fake_rank: RANK and WORLD_SIZE (or Open MPI's or Slurm's rank variables) must be set\n");
    return 2;
  }
  const char* collector_path = std::getenv("CUDA_INJECTION64_PATH");
  void* collector = collector_path ? dlopen(collector_path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  void* cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  auto* kernel = cupti ? reinterpret_cast<KernelFn>(dlsym(cupti, "fake_cupti_named_kernel")) : nullptr;
  auto* init = collector ? reinterpret_cast<int (*)()>(dlsym(collector, "InitializeInjection")) : nullptr;
  if (!collector || !kernel || !init) {
    std::fprintf(stderr,
                 "fake_rank: needs CUDA_INJECTION64_PATH (the collector) over the fake CUPTI (LD_LIBRARY_PATH)\n");
    return 3;
  }
  init();
  std::filesystem::create_directories(dir);
  for (int it = 0; it < iterations; ++it) {
    const uint64_t start = now_ns();
    const uint64_t compute_end = start + 2'000'000 + extra_ns;
    kernel("void fake_gemm_kernel<float>(float const*, float*)", start, compute_end);
    sleep_until_ns(compute_end);
    const uint64_t arrival = compute_end + 10'000;
    {
      const auto path = dir / ("arrive-" + std::to_string(it) + "-" + std::to_string(rank));
      const auto tmp = dir / (".arrive-" + std::to_string(it) + "-" + std::to_string(rank));
      std::ofstream(tmp) << arrival << '\n';
      std::filesystem::rename(tmp, path);
    }
    uint64_t last = arrival;
    for (int r = 0; r < world; ++r) {
      const auto path = dir / ("arrive-" + std::to_string(it) + "-" + std::to_string(r));
      const uint64_t give_up = now_ns() + 30'000'000'000ULL;
      while (!std::filesystem::exists(path)) {
        if (now_ns() > give_up) {
          std::fprintf(stderr, "fake_rank %d: rank %d never arrived at iteration %d\n", rank, r, it);
          return 4;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      uint64_t t = 0;
      std::ifstream(path) >> t;
      last = std::max(last, t);
    }
    const uint64_t end = last + 300'000;
    kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", arrival, end);
    sleep_until_ns(end);
  }
  return 0;
}
