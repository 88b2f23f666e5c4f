// A CUDA program with KNOWN numbers of kernels, pageable and pinned copies,
// memsets, synchronizations, NVTX ranges and NCCL all-reduces over 2 GPUs
// (ground_truth_spec.hpp). Profiled by run_gpu_tests.sh; the trace must
// contain exactly these. Exits non-zero on any CUDA/NCCL error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include "ground_truth_spec.hpp"

namespace gt = scalescope::collect::ground_truth;

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "ground_truth: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)
#define NCHECK(call)                                                                        \
  do {                                                                                      \
    ncclResult_t r_ = (call);                                                               \
    if (r_ != ncclSuccess) {                                                                \
      std::fprintf(stderr, "ground_truth: %s failed: %s\n", #call, ncclGetErrorString(r_)); \
      std::exit(3);                                                                         \
    }                                                                                       \
  } while (0)

__global__ void gt_add(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void gt_event_kernel(float* x) { x[0] += 1.0f; }

__global__ void gt_scale(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

int main() {
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  if (devices < gt::kNcclDevices) {
    std::fprintf(stderr, "ground_truth: needs %d GPUs, found %d\n", gt::kNcclDevices, devices);
    return 4;
  }
  CHECK(cudaSetDevice(0));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const int n = 1 << 20;
  float* d = nullptr;
  float* d2 = nullptr;
  CHECK(cudaMalloc(&d, 8u << 20));
  CHECK(cudaMalloc(&d2, 8u << 20));
  CHECK(cudaMemset(d, 0, 8u << 20));  // not counted: outside the spec's sizes
  CHECK(cudaDeviceSynchronize());

  nvtxRangePushA("gt_kernels");
  for (int i = 0; i < gt::kAddKernels; ++i) gt_add<<<n / 256, 256, 0, s1>>>(d, n);
  for (int i = 0; i < gt::kScaleKernels; ++i) gt_scale<<<n / 256, 256, 0, s1>>>(d, n, 0.5f);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s1));  // outside gt_sync: not counted
  nvtxRangePop();

  nvtxRangePushA("gt_copies");
  std::vector<char> pageable(8u << 20);
  char* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, 8u << 20));
  for (int i = 0; i < gt::kPageableHtoD; ++i)
    CHECK(cudaMemcpy(d, pageable.data(), gt::kPageableHtoDBytes, cudaMemcpyHostToDevice));
  for (int i = 0; i < gt::kPinnedHtoD; ++i)
    CHECK(cudaMemcpyAsync(d, pinned, gt::kPinnedHtoDBytes, cudaMemcpyHostToDevice, s1));
  for (int i = 0; i < gt::kPinnedDtoH; ++i)
    CHECK(cudaMemcpyAsync(pinned, d, gt::kPinnedDtoHBytes, cudaMemcpyDeviceToHost, s1));
  CHECK(cudaStreamSynchronize(s1));
  for (int i = 0; i < gt::kPageableDtoH; ++i)
    CHECK(cudaMemcpy(pageable.data(), d, gt::kPageableDtoHBytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < gt::kDtoD; ++i) CHECK(cudaMemcpyAsync(d2, d, gt::kDtoDBytes, cudaMemcpyDeviceToDevice, s1));
  CHECK(cudaStreamSynchronize(s1));
  nvtxRangePop();

  nvtxRangePushA("gt_memsets");
  for (int i = 0; i < gt::kMemsets; ++i) CHECK(cudaMemsetAsync(d2, 1, gt::kMemsetBytes, s2));
  CHECK(cudaStreamSynchronize(s2));
  nvtxRangePop();
  nvtxMarkA(gt::kMark);

  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  for (int i = 0; i < gt::kEventKernels; ++i) gt_event_kernel<<<1, 1, 0, s1>>>(d);
  CHECK(cudaEventRecord(ev, s1));
  CHECK(cudaStreamSynchronize(s1));
  nvtxRangePushA("gt_sync");
  for (int i = 0; i < gt::kStreamSyncs; ++i) CHECK(cudaStreamSynchronize(i % 2 ? s1 : s2));
  for (int i = 0; i < gt::kDeviceSyncs; ++i) CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < gt::kEventSyncs; ++i) CHECK(cudaEventSynchronize(ev));
  for (int i = 0; i < gt::kStreamWaitEvents; ++i) CHECK(cudaStreamWaitEvent(s2, ev, 0));
  nvtxRangePop();
  CHECK(cudaDeviceSynchronize());

  nvtxRangePushA("gt_nccl");
  ncclComm_t comms[gt::kNcclDevices];
  int devs[gt::kNcclDevices];
  for (int i = 0; i < gt::kNcclDevices; ++i) devs[i] = i;
  NCHECK(ncclCommInitAll(comms, gt::kNcclDevices, devs));
  float* buf[gt::kNcclDevices];
  cudaStream_t streams[gt::kNcclDevices];
  for (int i = 0; i < gt::kNcclDevices; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaMalloc(&buf[i], gt::kAllReduceFloats * sizeof(float)));
    CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  for (int r = 0; r < gt::kAllReduces; ++r) {
    NCHECK(ncclGroupStart());
    for (int i = 0; i < gt::kNcclDevices; ++i)
      NCHECK(ncclAllReduce(buf[i], buf[i], gt::kAllReduceFloats, ncclFloat, ncclSum, comms[i], streams[i]));
    NCHECK(ncclGroupEnd());
  }
  for (int i = 0; i < gt::kNcclDevices; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaStreamSynchronize(streams[i]));
  }
  for (int i = 0; i < gt::kNcclDevices; ++i) NCHECK(ncclCommDestroy(comms[i]));
  nvtxRangePop();

  CHECK(cudaSetDevice(0));
  CHECK(cudaFreeHost(pinned));
  std::printf("ground_truth: done\n");
  return 0;
}
