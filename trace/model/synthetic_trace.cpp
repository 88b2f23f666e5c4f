#include "trace/model/synthetic_trace.hpp"

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

void describe_machine(const SyntheticOptions& o, Metadata& m) {
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
}

// Writes training steps into a trace. The random draws, string interning and
// correlation numbers happen in one fixed order, so a seed gives one trace.
class StepWriter {
 public:
  StepWriter(Trace& t, const SyntheticOptions& o)
      : t_(t), o_(o), rng_(o.seed), main_thread_(t.meta.pid), nccl_thread_(t.meta.pid + 7) {
    // The fixed kernel sequence of one step: a network of kForwardLayers layers.
    for (uint32_t l = 0; l < kForwardLayers; ++l)
      for (size_t i = 0; i < 4; ++i)
        forward_.push_back(shape(kForwardNames[(l + i * 3) % kForwardNames.size()], 40'000));
    for (uint32_t l = 0; l < kForwardLayers; ++l)
      for (size_t i = 0; i < 5; ++i)
        backward_.push_back(shape(kBackwardNames[(l + i) % kBackwardNames.size()], 60'000));
    for (uint32_t i = 0; i < kOptimizerKernels; ++i)
      optimizer_.push_back(shape(kOptimizerNames[i % kOptimizerNames.size()], 150'000));

    launch_ = t.strings.intern("cudaLaunchKernel");
    memcpy_api_ = t.strings.intern("cudaMemcpyAsync");
    memset_api_ = t.strings.intern("cudaMemsetAsync");
    sync_api_ = t.strings.intern("cudaStreamSynchronize");
    nccl_kernel_ = t.strings.intern(kNcclKernel);
    nvtx_domain_ = t.strings.intern("PyTorch");
    nvtx_forward_ = t.strings.intern("DistributedDataParallel.forward");
    nvtx_backward_ = t.strings.intern("autograd::engine::evaluate_function");
    nvtx_optimizer_ = t.strings.intern("Optimizer.step#SGD.step");
    dtype_ = t.strings.intern("Float");
    ring_ = t.strings.intern("RING");
    ll_ = t.strings.intern("LL");
    comm_ = t.strings.intern("default_pg");
  }

  void write_step(uint64_t step) {
    const Timestamp step_start = cpu_;
    const uint32_t step_corr = correlation_;
    const StringId step_name = t_.strings.intern(fmt::format("ProfilerStep#{}", step));
    copy_input();
    forward_pass();
    backward_pass();
    optimizer_step();
    wait_for_gpu();
    nvtx(step_name, step_start, cpu_, step_corr);
    sample_counters(step, step_start);
  }

 private:
  int64_t jitter(int64_t ns) { return std::max<int64_t>(1'000, static_cast<int64_t>(ns * (0.95 + 0.1 * unit_(rng_)))); }

  KernelShape shape(const char* name, int64_t base_ns) {
    KernelShape k{};
    k.name = t_.strings.intern(name);
    k.grid_x = 1u << (4 + rng_() % 8);
    k.grid_y = 1 + static_cast<uint32_t>(rng_() % 2);
    k.block_x = 128u << (rng_() % 3);
    k.registers = 32 + 8 * static_cast<uint32_t>(rng_() % 20);
    k.shared = static_cast<uint32_t>(rng_() % 4) * 16384;
    k.duration = static_cast<int64_t>(base_ns * (0.3 + 2.0 * unit_(rng_)));
    return k;
  }

  ApiRecord api(StringId name, int64_t duration, uint32_t thread, uint32_t cbid) {
    ApiRecord a;
    a.start = cpu_;
    a.end = cpu_ + jitter(duration);
    a.thread = thread;
    a.domain = ApiDomain::kRuntime;
    a.callback_id = cbid;
    a.name = name;
    a.correlation = correlation_;
    t_.api.push(a);
    cpu_ = a.end + jitter(1'500);  // Python/dispatcher time between launches
    return a;
  }

  KernelRecord launch_kernel(const KernelShape& s, uint32_t stream, Timestamp& stream_free) {
    ApiRecord a = api(launch_, kLaunchNs, main_thread_, 211);
    KernelRecord k;
    k.start = std::max(a.start + kLaunchLatencyNs, stream_free) + jitter(1'200);
    k.end = k.start + jitter(s.duration);
    k.device = o_.device;
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
    k.correlation = correlation_++;
    t_.kernels.push(k);
    stream_free = k.end;
    return k;
  }

  void nvtx(StringId text, Timestamp start, Timestamp end, uint32_t corr) {
    NvtxRecord r;
    r.start = start;
    r.end = end;
    r.domain = nvtx_domain_;
    r.text = text;
    r.thread = main_thread_;
    r.correlation = corr;
    t_.nvtx.push(r);
  }

  // Input batch: pinned HtoD copy, then a memset of the gradient buffers.
  void copy_input() {
    ApiRecord a = api(memcpy_api_, 9'000, main_thread_, 41);
    MemcpyRecord c;
    c.start = std::max(a.start + kLaunchLatencyNs, gpu_);
    c.bytes = 256ull * 3 * 224 * 224 * 2;
    c.end = c.start + jitter(static_cast<int64_t>(c.bytes / 50));  // ~50 GB/s
    c.device = o_.device;
    c.stream = kCopyStream;
    c.correlation = correlation_++;
    c.kind = MemcpyKind::kHtoD;
    c.src_kind = MemoryKind::kPinned;
    c.dst_kind = MemoryKind::kDevice;
    c.is_async = true;
    t_.memcpys.push(c);
    gpu_ = c.end;
    ApiRecord b = api(memset_api_, 5'000, main_thread_, 51);
    MemsetRecord s;
    s.start = std::max(b.start + kLaunchLatencyNs, gpu_);
    s.bytes = 14'000'000;
    s.end = s.start + jitter(6'000);
    s.device = o_.device;
    s.stream = kComputeStream;
    s.correlation = correlation_++;
    s.dst_kind = MemoryKind::kDevice;
    t_.memsets.push(s);
    gpu_ = s.end;
  }

  void forward_pass() {
    const Timestamp fwd_start = cpu_;
    for (const KernelShape& s : forward_) launch_kernel(s, kComputeStream, gpu_);
    nvtx(nvtx_forward_, fwd_start, cpu_, 0);
  }

  // Backward: after each quarter a gradient bucket is all-reduced on the
  // NCCL stream, overlapping the rest of the backward pass.
  void backward_pass() {
    const Timestamp bwd_start = cpu_;
    const size_t per_bucket = backward_.size() / kBuckets;
    for (size_t i = 0; i < backward_.size(); ++i) {
      launch_kernel(backward_[i], kComputeStream, gpu_);
      if ((i + 1) % per_bucket == 0 && (i + 1) / per_bucket <= kBuckets) all_reduce_bucket();
    }
    nvtx(nvtx_backward_, bwd_start, cpu_, 0);
  }

  // Launched from the NCCL comm thread while the main thread goes on.
  void all_reduce_bucket() {
    Timestamp nccl_at = std::max(nccl_free_, gpu_);
    const Timestamp main_cpu = cpu_;
    const KernelShape ks{nccl_kernel_, 32, 1, 512, 96, 0, 700'000};
    KernelRecord k = launch_kernel(ks, kNcclStream, nccl_at);
    nccl_free_ = nccl_at;
    t_.api.thread.back() = nccl_thread_;
    cpu_ = main_cpu;
    NcclRecord n;
    n.start = k.start;
    n.end = k.end;
    n.device = o_.device;
    n.stream = kNcclStream;
    n.op = NcclOp::kAllReduce;
    n.count = 6'553'600;
    n.bytes = n.count * 4;
    n.datatype = dtype_;
    n.algorithm = ring_;
    n.protocol = ll_;
    n.communicator = comm_;
    n.sequence = sequence_++;
    n.group_size = o_.world_size;
    n.correlation = k.correlation;
    t_.nccl.push(n);
  }

  // The optimizer waits for the last all-reduce.
  void optimizer_step() {
    gpu_ = std::max(gpu_, nccl_free_);
    const Timestamp opt_start = cpu_;
    for (const KernelShape& s : optimizer_) launch_kernel(s, kComputeStream, gpu_);
    nvtx(nvtx_optimizer_, opt_start, cpu_, 0);
  }

  // loss.item(): the host waits for the GPU.
  void wait_for_gpu() {
    ApiRecord a;
    a.start = cpu_;
    a.end = std::max(cpu_ + 3'000, gpu_ + 2'000);
    a.thread = main_thread_;
    a.callback_id = 131;
    a.name = sync_api_;
    a.correlation = correlation_;
    t_.api.push(a);
    SyncRecord y;
    y.start = a.start + 1'000;
    y.end = gpu_ + 1'000;
    y.kind = SyncKind::kStreamSynchronize;
    y.device = o_.device;
    y.stream = kComputeStream;
    y.thread = main_thread_;
    y.correlation = correlation_++;
    t_.syncs.push(y);
    cpu_ = a.end + jitter(20'000);
  }

  // Counters: one sample per metric per step, as an NVML sampler would give.
  void sample_counters(uint64_t step, Timestamp step_start) {
    const double busy = static_cast<double>(gpu_ - step_start) / static_cast<double>(cpu_ - step_start);
    const double watts = 420 + 250 * busy + 10 * unit_(rng_);
    const std::array<std::pair<CounterMetric, double>, 6> samples = {{
        {CounterMetric::kGpuUtilizationPercent, std::round(std::min(100.0, 100 * busy))},
        {CounterMetric::kMemoryUsedBytes, 41.5e9 + 1e6 * static_cast<double>(rng_() % 64)},
        {CounterMetric::kPowerWatts, watts},
        {CounterMetric::kEnergyJoules, 1e5 + static_cast<double>(step) * watts * 0.04},
        {CounterMetric::kSmClockMHz, 1980},
        {CounterMetric::kTemperatureCelsius, 55 + static_cast<double>(rng_() % 8)},
    }};
    for (const auto& [metric, value] : samples) {
      CounterRecord c;
      c.time = cpu_;
      c.device = o_.device;
      c.metric = metric;
      c.value = value;
      t_.counters.push(c);
    }
  }

  Trace& t_;
  const SyntheticOptions& o_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::vector<KernelShape> forward_, backward_, optimizer_;
  StringId launch_{}, memcpy_api_{}, memset_api_{}, sync_api_{}, nccl_kernel_{};
  StringId nvtx_domain_{}, nvtx_forward_{}, nvtx_backward_{}, nvtx_optimizer_{};
  StringId dtype_{}, ring_{}, ll_{}, comm_{};
  const uint32_t main_thread_;
  const uint32_t nccl_thread_;
  uint32_t correlation_ = 1;
  int64_t sequence_ = 0;
  Timestamp cpu_ = o_.start_ns;        // main thread's clock
  Timestamp gpu_ = o_.start_ns;        // compute stream free at
  Timestamp nccl_free_ = o_.start_ns;  // NCCL stream free at
};

}  // namespace

Trace make_synthetic_trace(const SyntheticOptions& o) {
  Trace t;
  describe_machine(o, t.meta);
  StepWriter writer(t, o);
  for (uint64_t step = 0; t.event_count() < o.events; ++step) writer.write_step(step);
  return t;
}

}  // namespace scalescope::trace
