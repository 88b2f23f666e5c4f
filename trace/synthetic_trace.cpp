#include "trace/synthetic_trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace scalescope::trace {
namespace {

// One kernel of the step's fixed sequence; durations in ns.
struct KernelShape {
  StringId name;
  uint32_t grid_x, grid_y, block_x, registers, shared;
  int64_t duration;
};

// Names as they appear in real PyTorch/cuDNN/cuBLAS traces of a CNN.
constexpr std::array kForwardNames = {
    "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, "
    "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, "
    "__half*)",
    "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    "void at::native::(anonymous namespace)::batch_norm_collect_statistics_channels_last_kernel<__half, "
    "float, 4>(__half const*, float*, float*, float*, int*, int, int, int)",
    "void at::native::batch_norm_transform_input_channels_last_kernel<__half, float, float, 4, "
    "true>(__half const*, __half const*, float const*, float const*, float const*, float const*, __half*, "
    "int, int, bool)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() "
    "const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() "
    "const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>("
    "cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, "
    "3>)",
    "sm90_xmma_fprop_depthwise_f16f16_f16f32_f32_nhwckrsc_nhwc_kernel_cudnn",
};
constexpr std::array kBackwardNames = {
    "sm90_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_kernel__5x_cudnn",
    "sm90_xmma_wgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_kernel__5x_cudnn",
    "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, __half, float, float>(__half "
    "const*, __half const*, float const*, float const*, float*, float*, float*, float*, int*, int, int)",
    "void at::native::batch_norm_backward_elemt_channels_last_kernel<4, __half, float, float>(__half "
    "const*, __half const*, float const*, float const*, float const*, float const*, float const*, "
    "__half*, int const*, int, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
    "namespace)::hardtanh_backward_kernel(at::TensorIterator&, c10::Scalar const&, c10::Scalar "
    "const&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half, "
    "c10::Half)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous "
    "namespace)::hardtanh_backward_kernel(at::TensorIterator&, c10::Scalar const&, c10::Scalar "
    "const&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half, "
    "c10::Half)#1}, at::detail::Array<char*, 3>)",
    "void cudnn::engines_precompiled::nhwcToNchwKernel<float, __half, float, true, false, "
    "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nhwc2nchw_params_t<float>, float const*, "
    "__half*)",
};
constexpr std::array kOptimizerNames = {
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 4>, "
    "float*, double, double, double, bool, bool, bool, float*, float*>(at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 4>, "
    "float*, double, double, double, bool, bool, bool, float*, float*)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
};
constexpr const char* kNcclKernel = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";

constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kNcclStream = 13;
constexpr uint32_t kCopyStream = 7;  // PyTorch copies inputs on the current stream
constexpr uint32_t kForwardLayers = 52;
constexpr uint32_t kBuckets = 4;  // DDP gradient buckets (25 MB each in PyTorch)
constexpr uint32_t kOptimizerKernels = 8;
constexpr int64_t kLaunchNs = 4'500;  // cudaLaunchKernel CPU time
constexpr int64_t kLaunchLatencyNs = 3'000;

}  // namespace

Trace make_synthetic_trace(const SyntheticOptions& o) {
  Trace t;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto jitter = [&](int64_t ns) {
    return std::max<int64_t>(1'000, static_cast<int64_t>(ns * (0.95 + 0.1 * unit(rng))));
  };

  Metadata& m = t.meta;
  m.source = "synthetic";
  m.producer_version = "scalescope synthetic 1";
  m.hostname = "synthetic-node-0";
  m.pid = 4000 + static_cast<uint32_t>(std::max(o.rank, 0));
  m.rank = o.rank;
  m.local_rank = o.rank;
  m.world_size = o.world_size;
  m.launcher = "torchrun";
  m.command_line = "python train.py --model mobilenet_v2 --batch-size 256 --amp";
  for (uint32_t cpu = 0; cpu < 16; ++cpu) m.cpu_affinity.push_back(cpu);
  for (uint32_t cpu = 0; cpu < 32; ++cpu) m.cpu_numa_node.push_back(cpu < 16 ? 0 : 1);
  m.memory_policy = "default";
  m.pages_at_start = {{0, 1'500'000'000}, {1, 20'000'000}};
  m.pages_at_end = {{0, 9'400'000'000}, {1, 60'000'000}};
  DeviceInfo dev;
  dev.id = o.device;
  dev.name = "NVIDIA H200";
  dev.uuid = fmt::format("GPU-5f1e2d3c-{:04x}-4b5a-9c8d-7e6f5a4b3c2d", o.device);
  dev.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x19 + 0x10 * o.device);
  dev.numa_node = o.device < 4 ? 0 : 1;
  dev.sm_count = 132;
  dev.memory_bytes = 150'754'820'096;
  dev.compute_major = 9;
  dev.compute_minor = 0;
  m.devices.push_back(dev);
  m.clock.push_back({o.start_ns, 1'764'000'000'000'000'000 + o.rank * 1'000});

  // The fixed kernel sequence of one step: a network of kForwardLayers layers.
  std::vector<KernelShape> forward, backward, optimizer;
  auto shape = [&](const char* name, int64_t base_ns) {
    KernelShape k{};
    k.name = t.strings.intern(name);
    k.grid_x = 1u << (4 + rng() % 8);
    k.grid_y = 1 + static_cast<uint32_t>(rng() % 2);
    k.block_x = 128u << (rng() % 3);
    k.registers = 32 + 8 * static_cast<uint32_t>(rng() % 20);
    k.shared = static_cast<uint32_t>(rng() % 4) * 16384;
    k.duration = static_cast<int64_t>(base_ns * (0.3 + 2.0 * unit(rng)));
    return k;
  };
  for (uint32_t l = 0; l < kForwardLayers; ++l)
    for (size_t i = 0; i < 4; ++i) forward.push_back(shape(kForwardNames[(l + i * 3) % kForwardNames.size()], 40'000));
  for (uint32_t l = 0; l < kForwardLayers; ++l)
    for (size_t i = 0; i < 5; ++i) backward.push_back(shape(kBackwardNames[(l + i) % kBackwardNames.size()], 60'000));
  for (uint32_t i = 0; i < kOptimizerKernels; ++i)
    optimizer.push_back(shape(kOptimizerNames[i % kOptimizerNames.size()], 150'000));

  const StringId launch = t.strings.intern("cudaLaunchKernel");
  const StringId memcpy_api = t.strings.intern("cudaMemcpyAsync");
  const StringId memset_api = t.strings.intern("cudaMemsetAsync");
  const StringId sync_api = t.strings.intern("cudaStreamSynchronize");
  const StringId nccl_kernel = t.strings.intern(kNcclKernel);
  const StringId nvtx_domain = t.strings.intern("PyTorch");
  const StringId nvtx_forward = t.strings.intern("DistributedDataParallel.forward");
  const StringId nvtx_backward = t.strings.intern("autograd::engine::evaluate_function");
  const StringId nvtx_optimizer = t.strings.intern("Optimizer.step#SGD.step");
  const StringId dtype = t.strings.intern("Float");
  const StringId ring = t.strings.intern("RING");
  const StringId ll = t.strings.intern("LL");
  const StringId comm = t.strings.intern("default_pg");

  const uint32_t main_thread = m.pid;
  const uint32_t nccl_thread = m.pid + 7;
  uint32_t correlation = 1;
  int64_t sequence = 0;
  Timestamp cpu = o.start_ns;        // main thread's clock
  Timestamp gpu = o.start_ns;        // compute stream free at
  Timestamp nccl_free = o.start_ns;  // NCCL stream free at

  auto api = [&](StringId name, int64_t duration, uint32_t thread, uint32_t cbid) {
    ApiRecord a;
    a.start = cpu;
    a.end = cpu + jitter(duration);
    a.thread = thread;
    a.domain = ApiDomain::kRuntime;
    a.callback_id = cbid;
    a.name = name;
    a.correlation = correlation;
    t.api.push(a);
    cpu = a.end + jitter(1'500);  // Python/dispatcher time between launches
    return a;
  };
  auto launch_kernel = [&](const KernelShape& s, uint32_t stream, Timestamp& stream_free) {
    ApiRecord a = api(launch, kLaunchNs, main_thread, 211);
    KernelRecord k;
    k.start = std::max(a.start + kLaunchLatencyNs, stream_free) + jitter(1'200);
    k.end = k.start + jitter(s.duration);
    k.device = o.device;
    k.stream = stream;
    k.name = s.name;
    k.grid_x = s.grid_x;
    k.grid_y = s.grid_y;
    k.grid_z = 1;
    k.block_x = s.block_x;
    k.block_y = 1;
    k.block_z = 1;
    k.registers_per_thread = s.registers;
    k.shared_memory_bytes = s.shared;
    k.correlation = correlation++;
    t.kernels.push(k);
    stream_free = k.end;
    return k;
  };
  auto nvtx = [&](StringId text, Timestamp start, Timestamp end, uint32_t corr) {
    NvtxRecord r;
    r.start = start;
    r.end = end;
    r.domain = nvtx_domain;
    r.text = text;
    r.thread = main_thread;
    r.correlation = corr;
    t.nvtx.push(r);
  };

  for (uint64_t step = 0; t.event_count() < o.events; ++step) {
    const Timestamp step_start = cpu;
    const uint32_t step_corr = correlation;
    const StringId step_name = t.strings.intern(fmt::format("ProfilerStep#{}", step));

    // Input batch: pinned HtoD copy, then a memset of the gradient buffers.
    {
      ApiRecord a = api(memcpy_api, 9'000, main_thread, 41);
      MemcpyRecord c;
      c.start = std::max(a.start + kLaunchLatencyNs, gpu);
      c.bytes = 256ull * 3 * 224 * 224 * 2;
      c.end = c.start + jitter(static_cast<int64_t>(c.bytes / 50));  // ~50 GB/s
      c.device = o.device;
      c.stream = kCopyStream;
      c.correlation = correlation++;
      c.kind = MemcpyKind::kHtoD;
      c.src_kind = MemoryKind::kPinned;
      c.dst_kind = MemoryKind::kDevice;
      c.is_async = true;
      t.memcpys.push(c);
      gpu = c.end;
      ApiRecord b = api(memset_api, 5'000, main_thread, 51);
      MemsetRecord s;
      s.start = std::max(b.start + kLaunchLatencyNs, gpu);
      s.bytes = 14'000'000;
      s.end = s.start + jitter(6'000);
      s.device = o.device;
      s.stream = kComputeStream;
      s.correlation = correlation++;
      s.dst_kind = MemoryKind::kDevice;
      t.memsets.push(s);
      gpu = s.end;
    }

    const Timestamp fwd_start = cpu;
    for (const KernelShape& s : forward) launch_kernel(s, kComputeStream, gpu);
    nvtx(nvtx_forward, fwd_start, cpu, 0);

    // Backward: after each quarter a gradient bucket is all-reduced on the
    // NCCL stream, overlapping the rest of the backward pass.
    const Timestamp bwd_start = cpu;
    const size_t per_bucket = backward.size() / kBuckets;
    for (size_t i = 0; i < backward.size(); ++i) {
      launch_kernel(backward[i], kComputeStream, gpu);
      if ((i + 1) % per_bucket == 0 && (i + 1) / per_bucket <= kBuckets) {
        // Launched from the NCCL comm thread while the main thread goes on.
        Timestamp nccl_at = std::max(nccl_free, gpu);
        const Timestamp main_cpu = cpu;
        const KernelShape ks{nccl_kernel, 32, 1, 512, 96, 0, 700'000};
        KernelRecord k = launch_kernel(ks, kNcclStream, nccl_at);
        nccl_free = nccl_at;
        t.api.thread.back() = nccl_thread;
        cpu = main_cpu;
        NcclRecord n;
        n.start = k.start;
        n.end = k.end;
        n.device = o.device;
        n.stream = kNcclStream;
        n.op = NcclOp::kAllReduce;
        n.count = 6'553'600;
        n.bytes = n.count * 4;
        n.datatype = dtype;
        n.algorithm = ring;
        n.protocol = ll;
        n.communicator = comm;
        n.sequence = sequence++;
        n.group_size = o.world_size;
        n.correlation = k.correlation;
        t.nccl.push(n);
      }
    }
    nvtx(nvtx_backward, bwd_start, cpu, 0);

    // The optimizer waits for the last all-reduce.
    gpu = std::max(gpu, nccl_free);
    const Timestamp opt_start = cpu;
    for (const KernelShape& s : optimizer) launch_kernel(s, kComputeStream, gpu);
    nvtx(nvtx_optimizer, opt_start, cpu, 0);

    // loss.item(): the host waits for the GPU.
    {
      ApiRecord a;
      a.start = cpu;
      a.end = std::max(cpu + 3'000, gpu + 2'000);
      a.thread = main_thread;
      a.callback_id = 131;
      a.name = sync_api;
      a.correlation = correlation;
      t.api.push(a);
      SyncRecord y;
      y.start = a.start + 1'000;
      y.end = gpu + 1'000;
      y.kind = SyncKind::kStreamSynchronize;
      y.device = o.device;
      y.stream = kComputeStream;
      y.thread = main_thread;
      y.correlation = correlation++;
      t.syncs.push(y);
      cpu = a.end + jitter(20'000);
    }
    nvtx(step_name, step_start, cpu, step_corr);

    // Counters: one sample per metric per step, as an NVML sampler would give.
    const double busy = static_cast<double>(gpu - step_start) / static_cast<double>(cpu - step_start);
    const double watts = 420 + 250 * busy + 10 * unit(rng);
    const std::array<std::pair<CounterMetric, double>, 6> samples = {{
        {CounterMetric::kGpuUtilizationPercent, std::round(std::min(100.0, 100 * busy))},
        {CounterMetric::kMemoryUsedBytes, 41.5e9 + 1e6 * static_cast<double>(rng() % 64)},
        {CounterMetric::kPowerWatts, watts},
        {CounterMetric::kEnergyJoules, 1e5 + static_cast<double>(step) * watts * 0.04},
        {CounterMetric::kSmClockMHz, 1980},
        {CounterMetric::kTemperatureCelsius, 55 + static_cast<double>(rng() % 8)},
    }};
    for (const auto& [metric, value] : samples) {
      CounterRecord c;
      c.time = cpu;
      c.device = o.device;
      c.metric = metric;
      c.value = value;
      t.counters.push(c);
    }
  }
  return t;
}

}  // namespace scalescope::trace
