#pragma once
// The known numbers of ground_truth.cu, shared with the checker
// (check_ground_truth.cpp) so that the two cannot drift apart. Sizes are odd
// on purpose: no copy or memset of the CUDA runtime or NCCL has them.

#include <cstdint>

namespace scalescope::collect::ground_truth {

inline constexpr int kAddKernels = 100;   // gt_add<<<>>> on device 0
inline constexpr int kScaleKernels = 37;  // gt_scale<<<>>> on device 0
inline constexpr int kEventKernels = 1;   // gt_event_kernel<<<>>> before the event the syncs wait on
inline constexpr int kPageableHtoD = 10;  // cudaMemcpy from malloc()ed memory
inline constexpr uint64_t kPageableHtoDBytes = (1u << 20) + 4 * 7;
inline constexpr int kPinnedHtoD = 20;  // cudaMemcpyAsync from cudaMallocHost memory
inline constexpr uint64_t kPinnedHtoDBytes = (4u << 20) + 4 * 11;
inline constexpr int kPinnedDtoH = 5;
inline constexpr uint64_t kPinnedDtoHBytes = (2u << 20) + 4 * 13;
inline constexpr int kPageableDtoH = 3;
inline constexpr uint64_t kPageableDtoHBytes = (512u << 10) + 4 * 17;
inline constexpr int kDtoD = 4;
inline constexpr uint64_t kDtoDBytes = (1u << 20) + 4 * 19;
inline constexpr int kMemsets = 6;  // cudaMemsetAsync
inline constexpr uint64_t kMemsetBytes = (3u << 20) + 4 * 23;
// Inside the NVTX range "gt_sync" only (the checker counts in that window).
inline constexpr int kStreamSyncs = 7;
inline constexpr int kDeviceSyncs = 3;
inline constexpr int kEventSyncs = 4;
inline constexpr int kStreamWaitEvents = 2;
// NCCL: ncclCommInitAll over 2 GPUs in one process, then all-reduces of floats.
inline constexpr int kNcclDevices = 2;
inline constexpr int kAllReduces = 10;  // per device: one kernel each
inline constexpr uint64_t kAllReduceFloats = 1u << 20;
// NVTX ranges pushed by the program, and one mark.
inline constexpr const char* kRanges[] = {"gt_kernels", "gt_copies", "gt_memsets", "gt_sync", "gt_nccl"};
inline constexpr int kRangeCount = 5;
inline constexpr const char* kMark = "gt_mark";

}  // namespace scalescope::collect::ground_truth
