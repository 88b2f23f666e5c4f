// Analyses on small synthetic traces with known answers.
#include "analyze/analyze.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/tests/trace_builder.hpp"
#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"
#include <fmt/format.h>

namespace scalescope::analyze {
namespace {

using testing::TraceBuilder;
using trace::MemcpyKind;
using trace::MemoryKind;
using trace::NcclOp;

const char* kNcclNew = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

void expect_parts_sum(const RankBreakdown& b) {
  EXPECT_EQ(b.compute_ns + b.exposed_communication_ns + b.copy_ns + b.idle_ns, b.wall_ns);
  EXPECT_GE(b.idle_ns, 0);
}

// ---- kernel classes --------------------------------------------------------

TEST(KernelClassifierTest, RealNamesFromTheMobileNetTrace) {
  KernelClassifier c;
  for (
      const char* name : {
          "nvjet_sm90_hsh_192x192_64x4_1x2_h_ssched_bz_coopB_TNN",
          "nvjet_sm90_hsh_64x32_64x16_1x2_h_bz_splitK_NTT",
          "sm90_xmma_depthwise_convolution_dgrad_tiling_f16f16_f32f32_f32_nhwckrsc_nhwc_tilesize1x8x8_1x3x3_1x1x1_1x1x1_"
          "stage4_warpsize4x1x1_g64_betaFalse_execute_kernel__5x_cudnn",
          "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x32x16_stage1_"
          "warpsize4x1x1_g1_tensor16x8x16_aligna2_alignc4_execute_kernel__5x_cudnn",
          "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_64x64_64x4_nt_align8>"
          "(cutlass_80_tensorop_s16816gemm_f16_64x64_64x4_nt_align8::Params)",
          "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_nn_align2>"
          "(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_nn_align2::Params)",
          "void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float, __half, false, float, __half, __half, "
          "true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __half const*)",
      }) {
    const KernelInfo k = c.classify(name);
    EXPECT_EQ(k.cls, KernelClass::kCompute) << name;
    EXPECT_EQ(k.precision, Precision::kTensorCore) << name;
    EXPECT_FALSE(k.layout_conversion) << name;
  }
  // Real names that are neither GEMM/conv precision nor layout conversions.
  for (const char* name : {"void cudnn::batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5, 4, 1, 1, "
                           "false, false, true, 2>(cudnn::NhwcBatchNormFwdParams<__half, float>)",
                           "conv2d_c1_k1_nhwc_specialized", "wgrad2d_c1_k1_nhwc_reduce",
                           "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
                           "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >"}) {
    const KernelInfo k = c.classify(name);
    EXPECT_EQ(k.cls, KernelClass::kCompute) << name;
    EXPECT_EQ(k.precision, Precision::kOther) << name;
    EXPECT_FALSE(k.layout_conversion) << name;
  }
}

TEST(KernelClassifierTest, Fp32WithoutTensorCores) {
  KernelClassifier c;
  for (const char* name : {"volta_sgemm_128x64_nn", "ampere_sgemm_128x64_tn",
                           "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(Params)",
                           "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, "
                           "false, true>(int, int, int, float const*, int, float*, float const*)",
                           "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x128x8_stage3_"
                           "warpsize2x2x1_g1_execute_kernel__5x_cudnn",
                           "nvjet_sm90_sss_128x64_32x8_1x1_v_bz_TNN"}) {
    const KernelInfo k = c.classify(name);
    EXPECT_EQ(k.precision, Precision::kFp32NoTensor) << name;
  }
  // TF32: tensor cores at half the BF16 rate.
  EXPECT_EQ(c.classify("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16").precision,
            Precision::kTf32);
  EXPECT_EQ(c.classify("nvjet_sss_tf32_128x256_TNT").precision, Precision::kTf32);
  EXPECT_EQ(c.classify("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)").precision,
            Precision::kTf32);
  EXPECT_EQ(c.classify("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn").precision,
            Precision::kTensorCore);
  EXPECT_EQ(
      c.classify(
           "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas")
          .precision,
      Precision::kTensorCore);
}

// nvjet's type code: BF16 inputs are "t" (names from a bf16 LoRA run on H200
// and public profiles of aten::mm on c10::BFloat16), not TF32.
TEST(KernelClassifierTest, NvjetTypeCodes) {
  KernelClassifier c;
  for (const char* name :
       {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_tst_32x64_64x16_4x1_v_bz_TNN",
        "nvjet_sm90_tss_64x8_64x16_1x1_h_bz_splitK_TNT", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN",
        "nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_NNT", "nvjet_sm100_hsh_64x8_64x16_1x1_h_bz_splitK_NNT"})
    EXPECT_EQ(c.classify(name).precision, Precision::kTensorCore) << name;
  EXPECT_EQ(c.classify("nvjet_sm90_sss_128x64_32x8_1x1_v_bz_TNN").precision, Precision::kFp32NoTensor);
  EXPECT_EQ(c.classify("nvjet_sss_tf32_128x256_TNT").precision, Precision::kTf32);
  EXPECT_EQ(c.classify("nvjet_sm90_ddd_64x64_TNN").precision, Precision::kFp64);
  EXPECT_EQ(c.classify("nvjet_sm90_xyz_64x64_TNN").precision, Precision::kOther);  // unknown code: no claim
  EXPECT_EQ(c.classify("nvjet_splitk_reduce").precision, Precision::kOther);
}

TEST(KernelClassifierTest, Fp64) {
  KernelClassifier c;
  for (const char* name : {"ampere_dgemm_64x32_nn", "void gemmSN_NN_kernel<double, 256, 4, 2, 8, 3, 4, false>(params)",
                           "void cutlass::Kernel<cutlass_80_tensorop_d884gemm_64x32_16x3_nn_align1>(Params)",
                           "xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize32x32x16_stage3"}) {
    EXPECT_EQ(c.classify(name).precision, Precision::kFp64) << name;
  }
  // Not GEMM/conv, but FP64 work (names from a 1-GPU fp64 MobileNetV2 run on H200).
  for (
      const char* name :
      {"void cudnn::bn_bw_1C11_kernel_new<double, double, double2, 512, true, 1>(double, double, double, double)",
       "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<3, double, int>(at::GenericPackedTensorAccessor)",
       "void cudnn::bn_fw_tr_1C11_kernel_NCHW<double, double, int, 512, true, 1, true>(cudnnTensorStruct)",
       "void reduce_kernel<double2>(float*)"}) {
    EXPECT_EQ(c.classify(name).precision, Precision::kFp64) << name;
  }
  // A double argument, a double scalar after the data type (fused SGD's learning
  // rate, from a real fp16 trace) or a word that starts with "double" is not FP64 work.
  for (const char* name :
       {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(float, double, double)",
        "void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, int>(double)",
        "void double_buffer_kernel<float>(float*)", "void k<doubleword>(int)", "elementwise_kernel(double)",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 4>, "
        "float*, double, double, double, bool, bool, bool, float*, float*>(double)",
        "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<3, float, int>(double)"}) {
    EXPECT_EQ(c.classify(name).precision, Precision::kOther) << name;
  }
}

// Half-precision kernels that exist only for NCHW data (names from fp16 NCHW
// and NHWC MobileNetV2 runs on H200): the NHWC tensor-core path not taken.
TEST(KernelClassifierTest, NchwOnlyHalfPrecisionKernels) {
  KernelClassifier c;
  for (const char* name :
       {"void cudnn::bn_bw_1C11_kernel_new<__half, float, float2, 512, true, 1>(float, float, float, float)",
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, int, 512, true, 1, true>(cudnnTensorStruct)",
        "void at::native::(anonymous namespace)::conv_depthwise2d_backward_kernel<3, 2, c10::Half, int>(at::Tensor)",
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, int, 128, true, 1, true>(cudnnTensorStruct)"}) {
    EXPECT_TRUE(c.classify(name).nchw_half) << name;
  }
  for (const char* name :
       {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float)",                 // fp32
        "void cudnn::bn_bw_1C11_kernel_new<double, double, double2, 512, true, 1>(double, double)",            // fp64
        "void cudnn::batchnorm_bwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 3, 4, 1, 0, true>(int)",  // NHWC
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true>(int)",  // a conversion
        "conv2d_c1_k1_nchw_shmem_tiling",  // no type in the name: no claim
        "sm90_xmma_depthwise_convolution_fprop_tiling_f16f16_f32f32_f32_nhwckrsc_nhwc_tilesize1x8x8"}) {
    EXPECT_FALSE(c.classify(name).nchw_half) << name;
  }
}

TEST(KernelClassifierTest, LayoutCommunicationMemory) {
  KernelClassifier c;
  EXPECT_TRUE(
      c.classify(
           "void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __half const*, __half*)")
          .layout_conversion);
  EXPECT_TRUE(
      c.classify(
           "void nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(nhwc2nchw_params_t<float>, float const*, float*)")
          .layout_conversion);
  for (const char* name :
       {kNcclNew, "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)"}) {
    EXPECT_EQ(c.classify(name).cls, KernelClass::kCommunication) << name;
    EXPECT_EQ(c.classify(name).precision, Precision::kOther) << name;
  }
  EXPECT_EQ(
      c.classify(
           "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >")
          .cls,
      KernelClass::kMemory);
  EXPECT_EQ(c.classify("my_spin_kernel").cls, KernelClass::kSynchronization);
}

TEST(KernelClassifierTest, UserRulesFileOverridesBuiltIns) {
  const std::string path = ::testing::TempDir() + "/classes.txt";
  {
    std::ofstream f(path);
    f << "# my rules\ncommunication my_allgather\nmemory Gemm_Copy  # trailing comment\n\n";
  }
  const KernelClassifier c = KernelClassifier::from_file(path);
  EXPECT_EQ(c.classify("x_my_allgather_kernel").cls, KernelClass::kCommunication);
  EXPECT_EQ(c.classify("gemm_copy_kernel").cls, KernelClass::kMemory);
  EXPECT_EQ(c.classify(kNcclNew).cls, KernelClass::kCommunication);
  {
    std::ofstream f(path);
    f << "computation foo\n";
  }
  try {
    KernelClassifier::from_file(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("classes.txt:1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(KernelClassifier::from_file(path + ".missing"), Error);
}

// What the fuzzer (kernel_classes_fuzz) checks for any text, here with known answers.
TEST(KernelClassifierTest, RulesTextErrorsNameSourceAndLineOnOneLine) {
  auto error_of = [](std::string_view text) {
    try {
      KernelClassifier::parse(text, "r.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("compute\n"), "r.txt:1: expected '<class> <substring>', got 'compute'");
  EXPECT_EQ(error_of("# c\n\ngpu\tnccl\r\n"),
            "r.txt:3: unknown kernel class 'gpu' (expected compute, communication, memory or synchronization)");
  // Control characters and long text are not echoed raw: the error stays one line.
  const std::string e = error_of("x\ry" + std::string(500, 'z') + "\n");
  EXPECT_EQ(e.find('\r'), std::string::npos) << e;
  EXPECT_LT(e.size(), 200u) << e;
  EXPECT_NE(error_of(std::string(KernelClassifier::kMaxRulesBytes + 1, '#')).find("larger than 1 MiB"),
            std::string::npos);
  std::string many;
  for (size_t i = 0; i <= KernelClassifier::kMaxRules; ++i) many += "compute k" + std::to_string(i) + "\n";
  EXPECT_NE(error_of(many).find("more than 10000 kernel class rules"), std::string::npos);
  // Tabs, CRLF, comments and case: still parsed.
  const KernelClassifier c = KernelClassifier::parse("MEMORY\tMy_Copy\r\ncommunication  all gather # x\n", "r.txt");
  EXPECT_EQ(c.classify("my_copy_kernel").cls, KernelClass::kMemory);
  EXPECT_EQ(c.classify("fused all gather").cls, KernelClass::kCommunication);
  EXPECT_EQ(c.classify("all").cls, KernelClass::kCompute);
}

TEST(KernelClassifierTest, RulesFileThatIsADirectoryOrHugeIsRefused) {
  EXPECT_THROW(KernelClassifier::from_file(::testing::TempDir()), Error);
  const std::string huge = ::testing::TempDir() + "/huge-classes.txt";
  {
    std::ofstream f(huge);
    f << std::string(KernelClassifier::kMaxRulesBytes + 10, '#');
  }
  try {
    KernelClassifier::from_file(huge);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("huge-classes.txt: kernel class rules file larger than"), std::string::npos)
        << e.what();
  }
}

// A FIFO (no writer) or a device is refused at once with one line: reading it
// would wait forever (a FIFO) or never end (/dev/zero).
TEST(KernelClassifierTest, RulesFileThatIsNotARegularFileIsRefusedWithoutWaiting) {
  const std::string fifo = ::testing::TempDir() + "/classes-fifo-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::string error;
  std::thread reader([&] {
    try {
      KernelClassifier::from_file(fifo);
    } catch (const Error& e) {
      error = e.what();
    }
    done = true;
  });
  for (int i = 0; i < 100 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const bool in_time = done;
  if (!in_time) {  // unblock a reader stuck in open() or read() so that the test ends
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  reader.join();
  ::unlink(fifo.c_str());
  EXPECT_TRUE(in_time) << "the reader waited on the FIFO";
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
  for (const char* device : {"/dev/zero", "/dev/null"}) {
    try {
      KernelClassifier::from_file(device);
      ADD_FAILURE() << device << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

// ---- breakdown -------------------------------------------------------------

TraceBuilder overlapping() {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 100, 7)
      .kernel("elementwise", 20, 60, 8)
      .kernel(kNcclNew, 50, 150, 20)
      .copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 140, 200, 4096)
      .api("cudaLaunchKernel", 0, 300);
  return b;
}

TEST(BreakdownTest, OverlappingIntervalsOnSeveralStreams) {
  const RankAnalysis r = analyze_rank(overlapping().t, Options{});
  const RankBreakdown& b = r.breakdown;
  ASSERT_TRUE(b.availability.available);
  EXPECT_EQ(b.wall_ns, 300);
  EXPECT_EQ(b.compute_ns, 100);
  EXPECT_EQ(b.communication_ns, 100);
  EXPECT_EQ(b.overlap_ns, 50);
  EXPECT_EQ(b.exposed_communication_ns, 50);
  EXPECT_EQ(b.copy_ns, 50);
  EXPECT_EQ(b.idle_ns, 100);
  EXPECT_DOUBLE_EQ(b.overlap_fraction, 0.5);
  expect_parts_sum(b);
  ASSERT_EQ(b.streams.size(), 4u);
  EXPECT_EQ(b.streams[0].stream, 7u);
  EXPECT_EQ(b.streams[0].busy_ns, 100);
  EXPECT_EQ(b.streams[1].busy_ns, 40);
  EXPECT_EQ(b.streams[2].stream, 9u);
  EXPECT_EQ(b.streams[2].busy_ns, 60);
  EXPECT_EQ(b.streams[3].busy_ns, 100);
  EXPECT_EQ(r.classes[static_cast<int>(KernelClass::kCommunication)].total_ns, 100);
  EXPECT_EQ(r.classes[static_cast<int>(KernelClass::kCompute)].count, 2);
}

TEST(BreakdownTest, NcclRecordDuplicatingItsKernelCountsOnce) {
  TraceBuilder b = overlapping();
  b.nccl(NcclOp::kAllReduce, 50, 150);
  const RankBreakdown br = analyze_rank(b.t, Options{}).breakdown;
  EXPECT_EQ(br.communication_ns, 100);
  EXPECT_EQ(br.exposed_communication_ns, 50);
  expect_parts_sum(br);
}

TEST(BreakdownTest, WindowClipsEvents) {
  Options o;
  o.window = WindowSpec::parse("50%:100%");
  const RankBreakdown b = analyze_rank(overlapping().t, o).breakdown;
  EXPECT_EQ(b.window_start, 150);
  EXPECT_EQ(b.wall_ns, 150);
  EXPECT_EQ(b.compute_ns, 0);
  EXPECT_EQ(b.communication_ns, 0);
  EXPECT_EQ(b.copy_ns, 50);
  EXPECT_EQ(b.idle_ns, 100);
  expect_parts_sum(b);
  o.window = WindowSpec::parse("40:120");  // ns after the first event
  const RankBreakdown c = analyze_rank(overlapping().t, o).breakdown;
  EXPECT_EQ(c.wall_ns, 80);
  EXPECT_EQ(c.compute_ns, 60);
  EXPECT_EQ(c.overlap_ns, 50);
  EXPECT_EQ(c.exposed_communication_ns, 20);
  expect_parts_sum(c);
}

TEST(BreakdownTest, EmptyTraceIsSkippedNotWrong) {
  trace::Trace t;
  const RankAnalysis r = analyze_rank(t, Options{});
  EXPECT_FALSE(r.breakdown.availability.available);
  EXPECT_NE(r.breakdown.availability.reason.find("no GPU activity"), std::string::npos);
  EXPECT_EQ(r.breakdown.wall_ns, 0);
  EXPECT_FALSE(r.iterations.availability.available);
  EXPECT_FALSE(r.launch.availability.available);
  EXPECT_FALSE(r.precision.availability.available);
  EXPECT_FALSE(r.copies.availability.available);
  EXPECT_FALSE(r.sync.availability.available);
  EXPECT_FALSE(r.numa.availability.available);
  const RunAnalysis run = combine({r});
  EXPECT_FALSE(run.stragglers.availability.available);
  EXPECT_EQ(run.ranks.size(), 1u);  // nothing else has GPU activity: kept, and said to be empty
  EXPECT_TRUE(run.left_out.empty());
}

// torchrun's agent loads CUDA, so the collector traces it, but it has no rank
// and runs nothing on the GPU: it is left out of the ranks, by name.
TEST(BreakdownTest, RanklessProcessWithoutGpuWorkIsLeftOut) {
  trace::Trace agent;  // rank -1, no GPU records
  trace::Trace rank0;
  rank0.meta.rank = 0;
  rank0.kernels.push({.start = 100, .end = 200, .device = 0, .stream = 7, .name = rank0.strings.intern("k")});
  std::vector<RankAnalysis> ranks;
  ranks.push_back(analyze_rank(agent, Options{}));
  ranks.push_back(analyze_rank(rank0, Options{}));
  const RunAnalysis run = combine(std::move(ranks));
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  ASSERT_EQ(run.left_out.size(), 1u);
  EXPECT_EQ(run.left_out[0], "rank ?");
  // A rank-less process that did use the GPU (a plain single-process job) stays.
  trace::Trace lone;
  lone.kernels.push({.start = 100, .end = 200, .device = 0, .stream = 7, .name = lone.strings.intern("k")});
  EXPECT_EQ(combine({analyze_rank(lone, Options{})}).ranks.size(), 1u);
}

// A trace that lost data (a torn tail, a chunk failing its checksum) is still
// analysed, but the analysis says so.
TEST(BreakdownTest, DataLossIsCarriedIntoTheAnalysis) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 100);
  EXPECT_TRUE(analyze_rank(b.t, Options{}).data_loss.empty());
  b.t.problems.add(trace::Problem::kTornTail);
  b.t.problems.add(trace::Problem::kChecksumMismatch, 2);
  b.t.problems.add(trace::Problem::kUnknownEvent, 5);  // not data loss
  const RankAnalysis r = analyze_rank(b.t, Options{});
  EXPECT_EQ(r.data_loss, (std::vector<std::string>{"torn_tail x1", "checksum_mismatch x2"}));
  EXPECT_EQ(nlohmann::json(r)["data_loss"][0], "torn_tail x1");
}

TEST(BreakdownTest, OneEventTrace) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 100, 200);
  const RankAnalysis r = analyze_rank(b.t, Options{});
  EXPECT_EQ(r.breakdown.wall_ns, 100);
  EXPECT_EQ(r.breakdown.compute_ns, 100);
  EXPECT_EQ(r.breakdown.idle_ns, 0);
  EXPECT_FALSE(r.iterations.availability.available);
  EXPECT_EQ(r.launch.kernel_count, 1);
  ASSERT_EQ(r.top_kernels.size(), 1u);
  EXPECT_EQ(r.top_kernels[0].total_ns, 100);
}

// ---- windows ---------------------------------------------------------------

TEST(WindowSpecTest, ParsesFormsAndRejectsBadInput) {
  WindowSpec w = WindowSpec::parse("10%:90%");
  EXPECT_EQ(w.kind, WindowSpec::Kind::kPercent);
  EXPECT_DOUBLE_EQ(w.start, 10);
  EXPECT_DOUBLE_EQ(w.end, 90);
  w = WindowSpec::parse("it5:it50");
  EXPECT_EQ(w.kind, WindowSpec::Kind::kIterations);
  EXPECT_DOUBLE_EQ(w.end, 50);
  w = WindowSpec::parse("1000:2000000");
  EXPECT_EQ(w.kind, WindowSpec::Kind::kNanoseconds);
  for (const char* bad : {"", "abc", "10%", "10%:20", "5:3", "it1:20", "-5:10", "10%:150%", "it1.5:it3", "1:nan",
                          "0x10:0x20", " 5:10", "5:inf", "1e19:2e19", "it0:it1e10", "1:2:3", "5e:6", ":5"})
    EXPECT_THROW(WindowSpec::parse(bad), Error) << bad;
  EXPECT_DOUBLE_EQ(WindowSpec::parse("1.5e3:2e6").start, 1500);
  // Time with units, each end its own: ns, us, ms, s.
  w = WindowSpec::parse("5s:10s");
  EXPECT_EQ(w.kind, WindowSpec::Kind::kNanoseconds);
  EXPECT_DOUBLE_EQ(w.start, 5e9);
  EXPECT_DOUBLE_EQ(w.end, 1e10);
  w = WindowSpec::parse("500ms:2s");
  EXPECT_DOUBLE_EQ(w.start, 5e8);
  EXPECT_DOUBLE_EQ(w.end, 2e9);
  w = WindowSpec::parse("1.5us:2000ns");
  EXPECT_DOUBLE_EQ(w.start, 1500);
  EXPECT_DOUBLE_EQ(w.end, 2000);
  for (const char* bad : {"5x:10x", "s:5s", "5 s:10s", "5S:10S", "10s:5s", "5s:it10", "5%:10s", "1e10s:2e10s"})
    EXPECT_THROW(WindowSpec::parse(bad), Error) << bad;
  try {
    WindowSpec::parse("5min:10min");
    FAIL() << "expected an error";
  } catch (const Error& e) {  // the error says what --window takes
    EXPECT_NE(std::string(e.what()).find("units ns, us, ms, s"), std::string::npos) << e.what();
  }
  try {
    WindowSpec::parse("1:\n2");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();  // one line
  }
}

// A window past the end of a rank's trace leaves nothing to share out: the
// windowed analyses say so instead of reporting zeros.
TEST(WindowSpecTest, WindowPastTheEndSkipsWithReason) {
  Options o;
  o.window = WindowSpec::parse("1000000:2000000");
  const RankAnalysis r = analyze_rank(overlapping().t, o);
  EXPECT_FALSE(r.breakdown.availability.available);
  EXPECT_NE(r.breakdown.availability.reason.find("holds no time of this rank's trace"), std::string::npos)
      << r.breakdown.availability.reason;
  EXPECT_FALSE(r.launch.availability.available);
  EXPECT_FALSE(r.precision.availability.available);
}

// Timestamps near the ends of int64: resolving a window must not overflow.
TEST(WindowSpecTest, ExtremeTimestampsDoNotOverflow) {
  TraceBuilder b;
  b.kernel("gemm_kernel", std::numeric_limits<int64_t>::max() - 1000, std::numeric_limits<int64_t>::max() - 10);
  Options o;
  o.window = WindowSpec::parse("100:1e18");
  const RankBreakdown br = analyze_rank(b.t, o).breakdown;
  EXPECT_EQ(br.wall_ns, 890);
  expect_parts_sum(br);
}

// ---- iterations ------------------------------------------------------------

TraceBuilder profiler_steps(int64_t offset = 0) {
  TraceBuilder b;
  int64_t t = offset;
  for (int i = 0; i < 10; ++i) {
    const int64_t d = i == 0 ? 3000 : i == 5 ? 1200 : 1000;
    b.range("ProfilerStep#" + std::to_string(i), t, t + d);
    t += d;
  }
  b.kernel("gemm_kernel", offset, t);
  return b;
}

// Each idle gap judged by the activity that ends it: its launch call after
// the gap began (host wait), else a gap under 30 us (kernel wait), else other.
TEST(IdleBreakdownTest, GapsJudgedByTheLaunchOfTheActivityThatEndsThem) {
  TraceBuilder b;
  b.api("cudaGetDevice", 50'000, 51'000);  // the trace (and the window) starts here
  b.range("ProfilerStep#0", 50'000, 400'000);
  b.range("ProfilerStep#1", 400'000, 800'000);
  b.api("cudaLaunchKernel", 60'000, 62'000, 1).kernel("k1", 100'000, 200'000, 7, 0, 1);  // late: 50 us host wait
  b.api("cudaLaunchKernel", 150'000, 152'000, 2).kernel("k2", 210'000, 300'000, 7, 0, 2);   // queued: 10 us kernel wait
  b.api("cudaLaunchKernel", 350'000, 352'000, 3).kernel("k3", 400'000, 500'000, 7, 0, 3);   // late: 100 us host wait
  b.api("cudaMemcpyAsync", 450'000, 452'000, 4)
      .copy(MemcpyKind::kDtoD, MemoryKind::kDevice, MemoryKind::kDevice, 700'000, 800'000, 64, true, 9, 4);  // 200 us other
  const RankAnalysis r = analyze_rank(b.t, Options{});
  const IdleBreakdown& i = r.idle_breakdown;
  ASSERT_TRUE(i.availability.available) << i.availability.reason;
  ASSERT_EQ(r.iterations.count, 2);
  EXPECT_EQ(i.host_wait_ns, 50'000 + 100'000);
  EXPECT_EQ(i.kernel_wait_ns, 10'000);
  EXPECT_EQ(i.other_ns, 200'000);
  EXPECT_EQ(i.idle_ns, i.host_wait_ns + i.kernel_wait_ns + i.other_ns);
  EXPECT_EQ(i.idle_ns, r.idle_cover.idle_ns);
  EXPECT_EQ(i.host_wait_gaps, 2);
  EXPECT_EQ(i.kernel_wait_gaps, 1);
  EXPECT_EQ(i.other_gaps, 1);
  EXPECT_EQ(i.unlaunched_gaps, 0);
}

// A kernel on another stream keeps the GPU busy: no idle time there.
TEST(IdleBreakdownTest, AnyStreamKeepsTheGpuBusyAndUnlaunchedGapsGoByLength) {
  TraceBuilder b;
  b.range("ProfilerStep#0", 0, 400'000);
  b.kernel("a", 0, 100'000, 7).kernel("b", 50'000, 200'000, 8);  // overlapping streams: busy until 200 us
  b.kernel("c", 210'000, 300'000, 7);                             // no launch call: 10 us gap by length
  b.kernel("d", 350'000, 400'000, 7);                             // no launch call: 50 us gap by length
  const RankAnalysis r = analyze_rank(b.t, Options{});
  const IdleBreakdown& i = r.idle_breakdown;
  ASSERT_TRUE(i.availability.available) << i.availability.reason;
  EXPECT_EQ(i.idle_ns, 60'000);
  EXPECT_EQ(i.host_wait_ns, 0);
  EXPECT_EQ(i.kernel_wait_ns, 10'000);
  EXPECT_EQ(i.other_ns, 50'000);
  EXPECT_EQ(i.unlaunched_gaps, 2);
}

TEST(IterationsTest, ProfilerStepRangesWithWarmup) {
  const IterationStats s = find_iterations(profiler_steps().t, Options{});
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_EQ(s.source, "nvtx:ProfilerStep#");
  EXPECT_EQ(s.count, 10);
  EXPECT_EQ(s.warmup_count, 1);
  EXPECT_TRUE(s.iterations[0].warmup);
  EXPECT_DOUBLE_EQ(s.median_ns, 1000);
  // p95 interpolates between the closest ranks (base/quantile.hpp): 1200 +
  // 0.55 x 1800 of all ten, 1000 + 0.6 x 200 of the nine steady ones.
  EXPECT_DOUBLE_EQ(s.p95_ns, 2190);
  EXPECT_DOUBLE_EQ(s.steady_median_ns, 1000);
  EXPECT_DOUBLE_EQ(s.steady_p95_ns, 1120);
  EXPECT_NEAR(s.steady_cv, 0.0615, 1e-4);  // sd 62.85 / mean 1022.2
}

TEST(IterationsTest, IterationWindowSelectsIterations) {
  Options o;
  o.window = WindowSpec::parse("it1:it4");
  const RankAnalysis r = analyze_rank(profiler_steps().t, o);
  EXPECT_EQ(r.iterations.count, 3);
  EXPECT_EQ(r.breakdown.window_start, 3000);
  EXPECT_EQ(r.breakdown.wall_ns, 3000);
  o.window = WindowSpec::parse("it5:it11");
  EXPECT_THROW(analyze_rank(profiler_steps().t, o), Error);
}

// A ProfilerStep range that opens before the trace's first event is not an
// iteration of the table (it does not lie inside the trace), but it is one
// of --window's numbers (ProfilerStep#N is itN): the steady pass must count
// it when it names its window, or it takes in that step and leaves out the
// last one.
TEST(IterationsTest, AStepBeforeTheFirstEventShiftsNoIterationNumber) {
  TraceBuilder b;
  int64_t t = 0;
  for (int i = 0; i < 6; ++i) {
    const int64_t step = i == 0 ? 4000 : 1000;
    b.range("ProfilerStep#" + std::to_string(i), t, t + step);
    b.kernel("volta_sgemm_128x64_nn", t + 10, t + 10 + (i == 0 ? 3000 : 300));  // the trace starts at 10
    b.kernel("elementwise_kernel", t + step - 10, t + step);                       // and ends with the last step
    t += step;
  }
  const RankAnalysis r = analyze_rank(b.t, Options{});
  ASSERT_EQ(r.iterations.count, 5) << "step 0 begins before the first event";
  EXPECT_EQ(r.iterations.iterations[0].start, 4000);
  EXPECT_EQ(r.iterations.first_number, 1);
  ASSERT_NE(r.steady, nullptr);
  EXPECT_EQ(r.steady_first_iteration, 1);
  EXPECT_EQ(r.steady_end_iteration, 6);
  EXPECT_EQ(r.steady->breakdown.window_start, 4000);
  EXPECT_EQ(r.steady->breakdown.window_end, 9000) << "the last step is in the steady window";
  EXPECT_EQ(r.steady->breakdown.compute_ns, 5 * 310) << "step 0's 3000 ns kernel is not";
  Options o;
  o.window = WindowSpec::parse("it1:it2");
  EXPECT_EQ(analyze_rank(b.t, o).breakdown.window_start, 4000) << "it1 is ProfilerStep#1";
}

// Without --window the analysis also covers the steady iterations alone (what
// the advisor judges): from the first iteration after warm-up to the last,
// named in the JSON as advisor_window. With a window, only that window.
TEST(IterationsTest, SteadyIterationsAreAnalysedForTheAdvisor) {
  const RankAnalysis r = analyze_rank(profiler_steps().t, Options{});
  ASSERT_NE(r.steady, nullptr);
  EXPECT_EQ(r.steady_first_iteration, 1);  // iteration 0 is warm-up
  EXPECT_EQ(r.steady_end_iteration, 10);
  EXPECT_EQ(r.steady->iterations.count, 9);
  EXPECT_EQ(r.steady->breakdown.window_start, r.iterations.iterations[1].start);
  EXPECT_EQ(r.steady->breakdown.window_end, r.iterations.iterations.back().end);
  EXPECT_EQ(r.steady->steady, nullptr);
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("advisor_window").at("iterations"), "it1:it10");
  EXPECT_EQ(j.at("advisor_window").at("wall_ns"), r.steady->breakdown.wall_ns);
  Options o;
  o.window = WindowSpec::parse("0%:100%");
  const RankAnalysis windowed = analyze_rank(profiler_steps().t, o);
  EXPECT_EQ(windowed.steady, nullptr);
  EXPECT_FALSE(nlohmann::json(windowed).contains("advisor_window"));
  TraceBuilder no_iterations;
  no_iterations.kernel("gemm_kernel", 0, 5000);
  EXPECT_EQ(analyze_rank(no_iterations.t, Options{}).steady, nullptr);
}

// torchrun's agent has a trace beside its ranks' but no GPU work: an
// iteration window leaves it whole instead of failing the whole run; a
// process with GPU work and no iterations still fails, naming itself.
TEST(IterationsTest, IterationWindowSkipsProcessesWithoutGpuWork) {
  Options o;
  o.window = WindowSpec::parse("it1:it4");
  TraceBuilder agent;
  agent.range("torchrun agent", 0, 5000);
  agent.t.meta.pid = 41;
  EXPECT_NO_THROW(analyze_rank(agent.t, o));
  TraceBuilder busy;
  busy.kernel("gemm_kernel", 0, 5000);
  busy.t.meta.pid = 42;
  try {
    analyze_rank(busy.t, o);
    ADD_FAILURE() << "a process with GPU work and no iterations must fail an iteration window";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pid 42"), std::string::npos) << e.what();
  }
}

TEST(IterationsTest, UserRangeThatDoesNotTile) {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) b.range("Optimizer.step#SGD.step", 1000 * i + 800, 1000 * i + 900);
  b.kernel("gemm_kernel", 0, 5000);
  Options o;
  o.iteration_range = "Optimizer.step#SGD.step";
  const IterationStats s = find_iterations(b.t, o);
  ASSERT_EQ(s.count, 5);
  EXPECT_EQ(s.iterations[0].start, 800);
  EXPECT_EQ(s.iterations[0].end, 1800);
  EXPECT_EQ(s.iterations[4].end, 5000);  // the last one ends with GPU activity
  EXPECT_EQ(s.source, "range:Optimizer.step#SGD.step");
  o.iteration_range = "NoSuchRange";
  EXPECT_THROW(find_iterations(b.t, o), Error);
}

TEST(IterationsTest, GpuProjectedRangesArePreferred) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.range("DistributedDataParallel.forward", 1000 * i, 1000 * i + 300);           // host
    b.range("DistributedDataParallel.forward", 1000 * i + 150, 1000 * i + 600, 0);  // GPU
  }
  b.kernel("gemm_kernel", 0, 4200);
  Options o;
  o.iteration_range = "DistributedDataParallel.forward";
  const IterationStats s = find_iterations(b.t, o);
  ASSERT_EQ(s.count, 4);
  EXPECT_EQ(s.iterations[0].start, 150);
}

TEST(IterationsTest, DetectedFromRepeatingKernels) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 1000 * i;
    b.kernel("kernel_a", t, t + 50).kernel("kernel_b", t + 100, t + 150).kernel("kernel_c", t + 300, t + 350);
    b.kernel("kernel_twice", t + 500, t + 520).kernel("kernel_twice", t + 600, t + 620);
  }
  const IterationStats s = find_iterations(b.t, Options{});
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_EQ(s.count, 10);
  EXPECT_NE(s.source.find("kernel_a"), std::string::npos) << s.source;
  EXPECT_DOUBLE_EQ(s.median_ns, 1000);
}

// A job waiting on its DataLoader: every step launches the same kernels,
// but the steps last 2 to 30 times as long as each other (the wait before
// the copy in). The steps are found from the kernel sequence alone.
TEST(IterationsTest, DetectedFromTheKernelSequenceDespiteIrregularSteps) {
  TraceBuilder b;
  const int steps = 66;
  int64_t t = 0;
  for (int i = 0; i < steps; ++i) {
    t += 1000 * (1 + (i * 7919) % 29);  // the loader's wait: irregular
    b.kernel("copy_in_kernel", t, t + 10);
    for (int k = 0; k < 12; ++k) b.kernel("conv_kernel_" + std::to_string(k % 4), t + 20 + 30 * k, t + 40 + 30 * k);
    b.kernel("sgd_kernel", t + 400, t + 420);
    t += 500;
  }
  const IterationStats s = find_iterations(b.t, Options{});
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_NEAR(s.count, steps, 1);
  EXPECT_NE(s.source.find("copy_in_kernel"), std::string::npos) << s.source;
}

// A model of 12 identical layers: each layer's kernels repeat 12 times per
// step at a stable distance, but the step (embedding, 12 layers, loss,
// optimizer) is the block that repeats whole.
TEST(IterationsTest, DetectedStepsNotLayers) {
  TraceBuilder b;
  const int steps = 10;
  int64_t t = 0;
  for (int i = 0; i < steps; ++i) {
    b.kernel("embedding_kernel", t, t + 10);
    t += 20;
    for (int layer = 0; layer < 12; ++layer)
      for (const char* k : {"qkv_gemm", "attention", "out_gemm", "mlp_up", "mlp_down"}) {
        b.kernel(k, t, t + 10);
        t += 20;
      }
    for (const char* k : {"loss_kernel", "adam_kernel", "grad_norm_kernel"}) {
      b.kernel(k, t, t + 10);
      t += 20;
    }
    t += 100 * (i % 3);
  }
  const IterationStats s = find_iterations(b.t, Options{});
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_EQ(s.count, steps) << s.source;
}

TEST(IterationsTest, DetectedFromAnnotationsIgnoringOperators) {
  TraceBuilder b;
  for (int i = 0; i < 6; ++i) {
    const int64_t t = 1000 * i;
    b.range("DistributedDataParallel.forward", t + 10, t + 400);
    b.range("Optimizer.step#SGD.step", t + 800, t + 900);
    for (int k = 0; k < 3; ++k) b.range("aten::conv2d", t + 20 + 100 * k, t + 60 + 100 * k, -1, "cpu_op");
  }
  b.kernel("gemm_kernel", 0, 6000);
  const IterationStats s = find_iterations(b.t, Options{});
  EXPECT_EQ(s.count, 6);
  EXPECT_NE(s.source.find("DistributedDataParallel.forward"), std::string::npos) << s.source;
}

TEST(IterationsTest, NoIterationsIsSkippedWithReason) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) b.kernel("unique_kernel_" + std::to_string(i), 100 * i, 100 * i + 50);
  const IterationStats s = find_iterations(b.t, Options{});
  EXPECT_FALSE(s.availability.available);
  EXPECT_NE(s.availability.reason.find("no ProfilerStep"), std::string::npos);
  Options o;
  o.window = WindowSpec::parse("it0:it2");
  EXPECT_THROW(analyze_rank(b.t, o), Error);
}

// ---- stragglers ------------------------------------------------------------

// Rank r runs its clock `r * 7777` ns behind Unix time; rank 2 arrives 100 ns
// late at each collective, rank 1 10 ns late.
trace::Trace straggler_rank(int32_t r, bool nccl_table) {
  TraceBuilder b;
  b.rank(r);
  const int64_t clock_offset = r * 7777;
  b.t.meta.clock.push_back({0, clock_offset});
  const int64_t late = r == 2 ? 100 : r == 1 ? 10 : 0;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = 1000 * i - clock_offset;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 1000);
    b.kernel("gemm_kernel", t, t + 500).kernel("gemm_kernel", t + 900, t + 1000);
    if (nccl_table) b.nccl(NcclOp::kAllReduce, t + 500 + late, t + 900, i);
    else b.kernel(kNcclNew, t + 500 + late, t + 900, 20);
  }
  return std::move(b.t);
}

class StragglerTest : public ::testing::TestWithParam<bool> {};

TEST_P(StragglerTest, LateRankFoundAcrossClocks) {
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(analyze_rank(straggler_rank(r, GetParam()), Options{}));
  const RunAnalysis run = combine(std::move(ranks));
  const StragglerStats& s = run.stragglers;
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_EQ(s.matched_collectives, 10);
  EXPECT_EQ(s.total_wait_ns, 1000);
  ASSERT_EQ(s.ranks.size(), 3u);
  EXPECT_EQ(s.ranks[0].rank, 2);
  EXPECT_EQ(s.ranks[0].total_late_ns, 1000);
  EXPECT_EQ(s.ranks[0].max_late_ns, 100);
  EXPECT_EQ(s.ranks[0].times_last, 10);
  EXPECT_DOUBLE_EQ(s.ranks[0].late_per_iteration_ns, 100);
  EXPECT_EQ(s.ranks[1].rank, 1);
  EXPECT_EQ(s.ranks[1].total_late_ns, 100);
  EXPECT_EQ(s.ranks[2].total_late_ns, 0);
  EXPECT_TRUE(run.ranks[0].collectives.empty());  // dropped after matching
}

INSTANTIATE_TEST_SUITE_P(NcclTableOrKernels, StragglerTest, ::testing::Bool());

TEST(StragglerTest, MisalignedClocksAreSkippedNotWrong) {
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    trace::Trace t = straggler_rank(r, true);
    if (r == 1) t.meta.clock.front().unix_ns += 5000;  // rank 1's clock 5 us off: it "arrives" after rank 0 finished
    ranks.push_back(analyze_rank(t, Options{}));
  }
  // Without clock alignment (--no-align-clocks); with it the offset is removed
  // (trace/import/clock_alignment_test.cpp, analyze/nodes_test.cpp).
  const StragglerStats s = combine(std::move(ranks), /*align_clocks=*/false).stragglers;
  EXPECT_FALSE(s.availability.available);
  EXPECT_NE(s.availability.reason.find("clocks do not line up"), std::string::npos) << s.availability.reason;
}

// Iteration 0 is a long warm-up (10 us, the others 1 us). Rank 0 waits once
// there, 5 us late at the first collective; rank 1 is 100 ns late at every
// steady one. By total lateness rank 0 would come first (5000 > 900); the
// ranking, the steady figures and the advisor name rank 1.
trace::Trace warmup_straggler_rank(int32_t r) {
  TraceBuilder b;
  b.rank(r);
  b.t.meta.clock.push_back({0, 0});
  for (int i = 0; i < 10; ++i) {
    const int64_t t = i == 0 ? 0 : 10000 + 1000 * (i - 1);
    const int64_t len = i == 0 ? 10000 : 1000;
    const int64_t late = i == 0 ? (r == 0 ? 5000 : 0) : (r == 1 ? 100 : 0);
    b.range("ProfilerStep#" + std::to_string(i), t, t + len);
    b.kernel("gemm_kernel", t, t + len / 4);
    b.nccl(NcclOp::kAllReduce, t + len / 4 + late, t + len - 50, i);
    b.kernel("gemm_kernel", t + len - 50, t + len);
  }
  return std::move(b.t);
}

TEST(StragglerTest, OneWaitAtStartUpDoesNotOutweighASteadyLateness) {
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) ranks.push_back(analyze_rank(warmup_straggler_rank(r), Options{}));
  ASSERT_EQ(ranks[0].iterations.warmup_count, 1);
  const RunAnalysis run = combine(std::move(ranks), /*align_clocks=*/false);
  const StragglerStats& s = run.stragglers;
  ASSERT_TRUE(s.availability.available) << s.availability.reason;
  EXPECT_EQ(s.matched_collectives, 10);
  EXPECT_EQ(s.steady_matched_collectives, 9);
  EXPECT_EQ(s.ranked_by, "steady iterations");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 1);
  EXPECT_EQ(s.ranks[0].steady_late_ns, 900);
  EXPECT_EQ(s.ranks[0].steady_times_last, 9);
  EXPECT_DOUBLE_EQ(s.ranks[0].steady_late_per_iteration_ns, 100);
  EXPECT_EQ(s.ranks[1].rank, 0);
  EXPECT_EQ(s.ranks[1].total_late_ns, 5000);  // whole-window figures are kept
  EXPECT_EQ(s.ranks[1].steady_late_ns, 0);
}

TEST(StragglerTest, WithoutWarmUpTheWholeWindowRanks) {
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(analyze_rank(straggler_rank(r, true), Options{}));
  const StragglerStats s = combine(std::move(ranks)).stragglers;
  EXPECT_EQ(s.steady_matched_collectives, s.matched_collectives);
  for (const RankLateness& l : s.ranks) EXPECT_EQ(l.steady_late_ns, l.total_late_ns);
}

TEST(StragglerTest, OneRankIsSkipped) {
  const RunAnalysis run = combine({analyze_rank(straggler_rank(0, true), Options{})});
  EXPECT_FALSE(run.stragglers.availability.available);
  EXPECT_NE(run.stragglers.availability.reason.find("two ranks"), std::string::npos);
}

// ---- copies, sync, launch, input, NUMA -------------------------------------

TEST(CopiesTest, PageableAndSynchronousCopies) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 10000);
  for (int i = 0; i < 5; ++i) {
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 1000 * i, 1000 * i + 200, 1000, false);
    b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 1000 * i + 300, 1000 * i + 400, 1000);
  }
  b.memset(9000, 9100);
  const CopyStats c = analyze_rank(b.t, Options{}).copies;
  ASSERT_TRUE(c.availability.available);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].src_kind, MemoryKind::kPageable);
  EXPECT_EQ(c.groups[0].count, 5);
  EXPECT_EQ(c.groups[0].time_ns, 1000);
  EXPECT_DOUBLE_EQ(c.groups[0].bandwidth_gbps, 5.0);  // 5000 B / 1000 ns
  EXPECT_EQ(c.groups[0].sync_count, 5);
  EXPECT_EQ(c.pageable_ns, 1000);
  EXPECT_EQ(c.pageable_bytes, 5000u);
  EXPECT_DOUBLE_EQ(c.pageable_fraction, 0.5);
  EXPECT_EQ(c.sync_copy_count, 5);
  EXPECT_EQ(c.memset_count, 1);
  EXPECT_EQ(c.memset_ns, 100);
}

TEST(SyncTest, HostSynchronizeFromRecordsAndFromApiCalls) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 2000).kernel("gemm_kernel", 6000, 10000);
  b.sync(trace::SyncKind::kStreamSynchronize, 2000, 3000).sync(trace::SyncKind::kStreamSynchronize, 5000, 6000);
  b.sync(trace::SyncKind::kDeviceSynchronize, 8000, 8500).sync(trace::SyncKind::kStreamWaitEvent, 100, 200);
  const SyncStats s = analyze_rank(b.t, Options{}).sync;
  EXPECT_EQ(s.host_sync_ns, 2500);
  EXPECT_DOUBLE_EQ(s.fraction, 0.25);
  ASSERT_EQ(s.groups.size(), 3u);
  TraceBuilder a;
  a.kernel("gemm_kernel", 0, 1000).api("cudaStreamSynchronize", 100, 300).api("cudaLaunchKernel", 0, 5);
  const SyncStats s2 = analyze_rank(a.t, Options{}).sync;
  EXPECT_EQ(s2.host_sync_ns, 200);
  TraceBuilder none;
  none.kernel("gemm_kernel", 0, 1000);
  EXPECT_FALSE(analyze_rank(none.t, Options{}).sync.availability.available);
}

// One median (base/quantile.hpp): an even count's median is the mean of the
// middle two, in the launch table as in the iteration table (it used to take
// the upper middle here: 3000 for 1000, 2000, 3000, 10000).
TEST(LaunchTest, MedianKernelOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  TraceBuilder b;
  const int64_t durations[] = {1000, 10000, 2000, 3000};
  for (int i = 0; i < 4; ++i) {
    b.api("cudaLaunchKernel", 20000 * i, 20000 * i + 100 * (i + 1));
    b.kernel("tiny_kernel", 20000 * i + 500, 20000 * i + 500 + durations[i]);
  }
  const LaunchStats l = analyze_rank(b.t, Options{}).launch;
  EXPECT_DOUBLE_EQ(l.median_kernel_ns, 2500);
  EXPECT_DOUBLE_EQ(l.median_launch_ns, 250);  // 100, 200, 300, 400
}

TEST(LaunchTest, ManyShortKernelsWithGapsAreLaunchBound) {
  TraceBuilder b;
  for (int i = 0; i < 100; ++i) {
    b.api("cudaLaunchKernel", 10000 * i, 10000 * i + 5000);
    b.kernel("tiny_kernel", 10000 * i + 6000, 10000 * i + 8000);
  }
  const LaunchStats l = analyze_rank(b.t, Options{}).launch;
  EXPECT_EQ(l.kernel_count, 100);
  EXPECT_EQ(l.launch_api_count, 100);
  EXPECT_DOUBLE_EQ(l.median_kernel_ns, 2000);
  EXPECT_DOUBLE_EQ(l.median_launch_ns, 5000);
  EXPECT_EQ(l.gap_count, 99);
  EXPECT_EQ(l.gpu_gap_ns, 99 * 8000);
  EXPECT_DOUBLE_EQ(l.small_kernel_fraction, 1.0);
  EXPECT_TRUE(l.launch_bound);
  TraceBuilder busy;
  for (int i = 0; i < 100; ++i) busy.kernel("big_kernel", 10000 * i, 10000 * i + 9900);
  EXPECT_FALSE(analyze_rank(busy.t, Options{}).launch.launch_bound);
}

TEST(InputTest, IdleGapEndingWithInputCopyIsStarvation) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 1000).kernel("gemm_kernel", 3000, 4000);
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 2000, 2900, 1 << 20);
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 3100, 3200, 1 << 20);  // under compute
  const InputStats in = analyze_rank(b.t, Options{}).input;
  ASSERT_TRUE(in.availability.available);
  EXPECT_EQ(in.starvation_ns, 2000);
  EXPECT_EQ(in.starved_iterations, 1);
  EXPECT_DOUBLE_EQ(in.fraction, 0.5);
  TraceBuilder no_copies;
  no_copies.kernel("gemm_kernel", 0, 1000);
  EXPECT_FALSE(analyze_rank(no_copies.t, Options{}).input.availability.available);
}

// Start-up before the first iteration (a long idle gap ended by the first
// batch's copy) is not waiting for input: only gaps inside iterations count.
TEST(InputTest, StarvationCountsOnlyInsideIterations) {
  TraceBuilder b;
  b.kernel("init_kernel", 0, 100);
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 9000, 9500, 1 << 20);  // first batch
  for (int i = 0; i < 4; ++i) {
    const int64_t t = 10000 + 1000 * i;
    b.range("ProfilerStep#" + std::to_string(i), t, t + 1000);
    b.kernel("gemm_kernel", t + 200, t + 1000);
  }
  b.copy(MemcpyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, 12000, 12100, 1 << 20);  // a late batch
  const InputStats in = analyze_rank(b.t, Options{}).input;
  ASSERT_TRUE(in.availability.available);
  // The gap 100..10200 is cut to its part inside step 0 (10000..10200); step 2's wait is 12000..12200.
  EXPECT_EQ(in.starvation_ns, 400);
  EXPECT_EQ(in.starved_iterations, 2);
  EXPECT_DOUBLE_EQ(in.fraction, 400.0 / 4000.0);
}

TEST(NumaTest, CrossNodePlacementAndSkippedForImports) {
  TraceBuilder b;
  b.kernel("gemm_kernel", 0, 1000);
  b.t.meta.cpu_affinity = {0, 1, 2, 3};
  b.t.meta.cpu_numa_node = {0, 0, 1, 1};
  trace::DeviceInfo d;
  d.numa_node = 0;
  b.t.meta.devices.push_back(d);
  b.t.meta.pages_at_end = {{0, 100}, {1, 300}};
  const NumaStats n = analyze_rank(b.t, Options{}).numa;
  ASSERT_TRUE(n.availability.available);
  EXPECT_EQ(n.gpu_node, 0);
  EXPECT_EQ(n.cpu_nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(n.cpus_cross_node);
  EXPECT_DOUBLE_EQ(n.remote_memory_fraction, 0.75);
  TraceBuilder k;
  k.kernel("gemm_kernel", 0, 1000);
  k.t.meta.source = "kineto";
  const NumaStats kn = analyze_rank(k.t, Options{}).numa;
  EXPECT_FALSE(kn.availability.available);
  EXPECT_EQ(kn.availability.reason, "skipped: the trace has no host facts (imported from PyTorch profiler)");
}

TEST(PrecisionTest, SharesOfKernelTime) {
  TraceBuilder b;
  b.kernel("volta_sgemm_128x64_nn", 0, 6000)
      .kernel("nvjet_sm90_hsh_64x32_64x16_1x2_h_bz_splitK_NTT", 6000, 8000)
      .kernel("ampere_dgemm_64x32_nn", 8000, 9000)
      .kernel("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)0>", 9000,
              10000);
  const RankAnalysis r = analyze_rank(b.t, Options{});
  EXPECT_EQ(r.precision.kernel_ns, 10000);
  EXPECT_DOUBLE_EQ(r.precision.fp32_no_tensor_fraction, 0.6);
  EXPECT_DOUBLE_EQ(r.precision.tensor_core_fraction, 0.2);
  EXPECT_DOUBLE_EQ(r.precision.fp64_fraction, 0.1);
  ASSERT_EQ(r.precision.top_fp32.size(), 1u);
  EXPECT_EQ(r.precision.top_fp32[0].name, "volta_sgemm_128x64_nn");
  EXPECT_EQ(r.layout.conversion_count, 1);
  EXPECT_DOUBLE_EQ(r.layout.fraction, 0.1);
}

// ---- diff and JSON -----------------------------------------------------------

TEST(DiffTest, PinnedAgainstPageable) {
  auto run = [](MemoryKind src, int64_t copy_ns) {
    TraceBuilder b;
    int64_t t = 0;
    for (int i = 0; i < 5; ++i) {
      b.range("ProfilerStep#" + std::to_string(i), t, t + 1000 + copy_ns);
      b.copy(MemcpyKind::kHtoD, src, MemoryKind::kDevice, t, t + copy_ns, 1000, src != MemoryKind::kPageable);
      b.kernel("gemm_kernel", t + copy_ns, t + copy_ns + 1000);
      t += 1000 + copy_ns;
    }
    return combine({analyze_rank(b.t, Options{})});
  };
  const RunDiff d = diff(run(MemoryKind::kPageable, 500), run(MemoryKind::kPinned, 100));
  EXPECT_DOUBLE_EQ(d.iteration.a, 1500);
  EXPECT_DOUBLE_EQ(d.iteration.b, 1100);
  EXPECT_NEAR(d.iteration.ratio, 1100.0 / 1500.0, 1e-12);
  ASSERT_FALSE(d.breakdown.empty());
  EXPECT_EQ(d.basis, "per steady iteration");
  EXPECT_EQ(d.breakdown[0].what, "wall");
  EXPECT_DOUBLE_EQ(d.breakdown[0].a, 1500);  // per step, not the 7500 ns of five
  EXPECT_DOUBLE_EQ(d.breakdown[0].b, 1100);
  bool saw_pageable = false, saw_pinned = false;
  for (const Delta& c : d.copies) {
    if (c.what == "HtoD pageable->device time_ns") {
      saw_pageable = true;
      EXPECT_DOUBLE_EQ(c.a, 500);
      EXPECT_DOUBLE_EQ(c.b, 0);
    }
    if (c.what == "HtoD pinned->device time_ns") {
      saw_pinned = true;
      EXPECT_DOUBLE_EQ(c.b, 100);
    }
  }
  EXPECT_TRUE(saw_pageable);
  EXPECT_TRUE(saw_pinned);
  EXPECT_EQ(d.verdict, "B is 26.7 % faster per step (1.500 us -> 1.100 us): pageable copies -500 ns, pinned copies "
                       "+100 ns per step");
}

// Two runs of different lengths: A 10 steps of 1000 ns with an FP32 GEMM
// (800 ns) and 200 ns idle, B 20 steps of 800 ns with a tensor-core GEMM
// (600 ns) and the same idle. Per step the idle time is unchanged (in total
// B has twice as much), and the verdict names the GEMM.
TEST(DiffTest, RunsOfDifferentLengthsCompareStepForStep) {
  auto run = [](int steps, int64_t step, const std::string& gemm, int64_t gemm_ns) {
    TraceBuilder b;
    for (int i = 0; i < steps; ++i) {
      const int64_t t = step * i;
      b.range("ProfilerStep#" + std::to_string(i), t, t + step);
      b.kernel(gemm, t, t + gemm_ns);
    }
    b.kernel("tail_kernel", step * steps - 1, step * steps);
    return combine({analyze_rank(b.t, Options{})});
  };
  const RunDiff d = diff(run(10, 1000, "volta_sgemm_128x64_nn", 800),
                         run(20, 800, "nvjet_sm90_hsh_192x192_64x4_1x2_h_ssched_bz_coopB_TNN", 600));
  ASSERT_EQ(d.basis, "per steady iteration");
  const auto row = [&](const std::vector<Delta>& v, const std::string& what) {
    auto it = std::find_if(v.begin(), v.end(), [&](const Delta& x) { return x.what == what; });
    return it == v.end() ? Delta{} : *it;
  };
  const Delta idle = row(d.breakdown, "idle");
  EXPECT_NEAR(idle.a, 200, 1);  // the last step's 1 ns tail kernel aside
  EXPECT_NEAR(idle.b, 200, 1);
  EXPECT_NEAR(idle.ratio, 1.0, 0.01);
  EXPECT_NEAR(row(d.classes, "precision: fp32-no-tensor-core").a, 800, 1e-9);
  EXPECT_NEAR(row(d.classes, "precision: fp32-no-tensor-core").b, 0, 1e-9);
  EXPECT_EQ(d.added_kernels, std::vector<std::string>{"nvjet_sm90_hsh_192x192_64x4_1x2_h_ssched_bz_coopB_TNN"});
  EXPECT_EQ(d.removed_kernels, std::vector<std::string>{"volta_sgemm_128x64_nn"});
  ASSERT_FALSE(d.changes.empty());
  EXPECT_EQ(d.changes[0].what, "FP32 GEMM/convolution kernels (CUDA cores)");
  EXPECT_EQ(d.verdict.rfind("B is 20.0 % faster per step (1.000 us -> 800 ns): FP32 GEMM/convolution kernels (CUDA "
                            "cores) -800 ns, FP16/BF16 tensor-core kernels +600 ns",
                            0),
            0u)
      << d.verdict;
  // Without iterations on one side: no per-step verdict, and it says why.
  TraceBuilder flat;
  flat.kernel("gemm_kernel", 0, 1000);
  const RunDiff no_steps = diff(run(10, 1000, "volta_sgemm_128x64_nn", 800), combine({analyze_rank(flat.t, Options{})}));
  EXPECT_EQ(no_steps.basis, "per rank, whole window");
  EXPECT_EQ(no_steps.verdict.rfind("no per-step verdict", 0), 0u) << no_steps.verdict;
}

TEST(JsonTest, RunAnalysisHasEveryAnalysis) {
  const RunAnalysis run = combine({analyze_rank(overlapping().t, Options{})});
  const nlohmann::json j = run;
  const auto& r = j.at("ranks").at(0);
  EXPECT_EQ(r.at("breakdown").at("compute_ns"), 100);
  for (const char* key :
       {"iterations", "launch", "copies", "sync", "precision", "layout", "input", "numa", "classes", "top_kernels"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_FALSE(r.at("numa").at("availability").at("available").get<bool>());
  EXPECT_FALSE(j.at("stragglers").at("availability").at("reason").get<std::string>().empty());
}

// ---- host threads (the collector's host sampler) ----------------------------

namespace host_case {
using namespace testing::host_case;
using trace::ProcessRole;
using trace::ThreadState;
}  // namespace host_case

TEST(AnalyzeHost, MainThreadSharesWorkersAndIterations) {
  using namespace host_case;
  TraceBuilder b = steps();
  for (uint32_t w = 0; w < 4; ++w) b.host_thread(200 + w, 200 + w, "pt_data_worker", ProcessRole::kDescendant, 100);
  b.host_thread(100, 101, "pt_pin_memory");
  b.t.meta.cpu_affinity = {0, 1, 2, 3, 4, 5, 6, 7};
  b.t.meta.cpu_numa_node = {0, 0, 0, 0, 1, 1, 1, 1};
  trace::DeviceInfo d;
  d.numa_node = 1;
  b.t.meta.devices.push_back(d);
  each_sample([&](int64_t t) {
    // Main: 2 ms on a CPU, 1 ms runnable waiting, asleep otherwise; on CPU 5 (node 1) or 1 (node 0).
    b.host_sample(t, 100, 100, ThreadState::kSleeping, t % (20 * kMs) == 0 ? 5 : 1, 2 * kMs, 1 * kMs, 3, 1);
    b.host_sample(t, 100, 101, ThreadState::kSleeping, 2, 1 * kMs);
    for (uint32_t w = 0; w < 4; ++w) b.host_sample(t, 200 + w, 200 + w, ThreadState::kRunning, int32_t(4 + w), 8 * kMs);
  });
  const RankAnalysis r = analyze_rank(b.t, Options{});
  const HostStats& h = r.host;
  ASSERT_TRUE(h.availability.available) << h.availability.reason;
  EXPECT_EQ(h.method, "procfs+schedstat");
  EXPECT_TRUE(h.has_run_wait);
  EXPECT_DOUBLE_EQ(h.hz, 100);
  EXPECT_EQ(h.main_tid, 100u);
  EXPECT_EQ(h.worker_processes, 4);
  EXPECT_EQ(h.thread_count, 6);
  EXPECT_EQ(h.cores, 8);
  EXPECT_NEAR(h.window.main_busy, 0.2, 1e-9);
  EXPECT_NEAR(h.window.main_run_wait, 0.1, 1e-9);
  EXPECT_NEAR(h.window.main_sleep, 0.7, 1e-9);
  EXPECT_NEAR(h.window.main_io, 0, 1e-9);
  EXPECT_NEAR(h.window.worker_cores, 3.2, 1e-9);
  EXPECT_NEAR(h.window.main_other_threads_cores, 0.1, 1e-9);
  EXPECT_NEAR(h.window.mean_runnable, 4, 1e-9);
  EXPECT_EQ(h.window.max_runnable, 4);
  EXPECT_DOUBLE_EQ(h.contended_instants, 0);
  // Per iteration: 10 samples each, the same shares.
  ASSERT_EQ(h.iterations.size(), 10u);
  for (const auto& it : h.iterations) {
    EXPECT_EQ(it.shares.wall_ns, 100 * kMs);
    EXPECT_NEAR(it.shares.main_busy, 0.2, 1e-9);
    EXPECT_NEAR(it.shares.worker_cores, 3.2, 1e-9);
    EXPECT_EQ(it.shares.main_samples, 10);
  }
  // NUMA, measured: the GPU is on node 1; the main thread ran there half the time.
  EXPECT_EQ(h.gpu_node, 1);
  EXPECT_EQ(h.main_cpus, (std::vector<int32_t>{1, 5}));
  EXPECT_NEAR(h.main_on_gpu_node, 0.5, 1e-9);
  EXPECT_EQ(h.nodes, (std::vector<int32_t>{0, 1}));
  // Threads: the main thread first, then by CPU time.
  ASSERT_EQ(h.threads.size(), 6u);
  EXPECT_TRUE(h.threads[0].is_main);
  EXPECT_EQ(h.threads[0].name, "python");
  EXPECT_EQ(h.threads[0].voluntary_switches, 300);
  EXPECT_EQ(h.threads[1].role, trace::ProcessRole::kDescendant);
  EXPECT_EQ(h.threads[1].name, "pt_data_worker");
  EXPECT_EQ(h.threads.back().name, "pt_pin_memory");
  // JSON carries it; a trace without samples says why.
  const nlohmann::json j = r;
  EXPECT_NEAR(j["host"]["window"]["worker_cores"].get<double>(), 3.2, 1e-9);
  EXPECT_EQ(j["host"]["iterations"].size(), 10u);
  const RankAnalysis none = analyze_rank(steps().t, Options{});
  EXPECT_FALSE(none.host.availability.available);
  EXPECT_NE(none.host.availability.reason.find("no host thread samples"), std::string::npos);
  EXPECT_FALSE(nlohmann::json(none).contains("host"));
}

// Every scheduler state is counted per thread; the main thread's time off the
// CPU splits into sleeping and I/O by its samples.
TEST(AnalyzeHost, EveryStateCountedAndIoWaitSplit) {
  using namespace host_case;
  TraceBuilder b = steps();
  b.host_thread(100, 102, "mixed");
  int k = 0;
  each_sample([&](int64_t t) {
    // Main: half its samples in D, half in S, 1 ms on CPU each; no run-queue wait.
    b.host_sample(t, 100, 100, (k % 2) ? ThreadState::kDiskWait : ThreadState::kSleeping, 0, 1 * kMs);
    b.host_sample(t, 100, 102, static_cast<ThreadState>(k % trace::kThreadStateCount), 1, 0);
    ++k;
  });
  const HostStats h = analyze_rank(b.t, Options{}).host;
  ASSERT_TRUE(h.availability.available);
  EXPECT_NEAR(h.window.main_busy, 0.1, 1e-9);
  EXPECT_NEAR(h.window.main_sleep, 0.45, 1e-9);
  EXPECT_NEAR(h.window.main_io, 0.45, 1e-9);
  const auto& mixed =
      *std::find_if(h.threads.begin(), h.threads.end(), [](const HostThreadSummary& s) { return s.tid == 102; });
  for (int s = 0; s < trace::kThreadStateCount; ++s) EXPECT_GT(mixed.state_samples[size_t(s)], 10) << s;
  EXPECT_EQ(mixed.samples, 100);
}

// A worker process that starts and ends inside the window: its CPU counts
// only in the iterations it lived in.
TEST(AnalyzeHost, WorkerStartingAndEndingInsideTheWindow) {
  using namespace host_case;
  TraceBuilder b = steps();
  b.host_thread(300, 300, "pt_data_worker", ProcessRole::kDescendant, 100);
  each_sample([&](int64_t t) {
    b.host_sample(t, 100, 100, ThreadState::kRunning, 0, 10 * kMs);
    if (t > 300 * kMs && t <= 500 * kMs) b.host_sample(t, 300, 300, ThreadState::kRunning, 1, 5 * kMs);
  });
  const HostStats h = analyze_rank(b.t, Options{}).host;
  ASSERT_EQ(h.iterations.size(), 10u);
  for (const auto& it : h.iterations) {
    const bool alive = it.index == 3 || it.index == 4;
    EXPECT_NEAR(it.shares.worker_cores, alive ? 0.5 : 0.0, 1e-9) << it.index;
    EXPECT_EQ(it.shares.max_runnable, alive ? 2 : 1) << it.index;
  }
  EXPECT_NEAR(h.window.worker_cores, 0.1, 1e-9);
  EXPECT_EQ(h.worker_processes, 1);
}

// A run directory of `n` synthetic ranks (rank files named so that input
// order is rank order), in a fresh temporary folder.
std::filesystem::path synthetic_run(const std::string& name, int n) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("scalescope_{}_{}", name, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "job.ssrun");
  for (int rank = 0; rank < n; ++rank) {
    trace::SyntheticOptions o;
    o.events = 3'000;
    o.rank = rank;
    o.world_size = n;
    o.seed = static_cast<uint64_t>(rank + 1);
    trace::write_trace(dir / "job.ssrun" / fmt::format("rank{:02}.sstrace", rank), trace::make_synthetic_trace(o));
  }
  return dir / "job.ssrun";
}

// The run pipeline's visitor (the HTML report takes what it draws there):
// every rank once, one call at a time, in input order, while several ranks
// load at once; input_index ties each visit to its rank in the result.
TEST(AnalyzePath, VisitorSeesEveryRankOnceInInputOrder) {
  const auto run = synthetic_run("visit", 6);
  std::vector<size_t> order;
  std::vector<int32_t> rank_of_visit;
  std::vector<size_t> events_of_visit;
  std::atomic<int> inside{0};
  int most_inside = 0;
  const RunAnalysis result =
      analyze_path(run, Options{}, 3, {}, [&](size_t i, const trace::Trace& t, const RankAnalysis& r) {
        most_inside = std::max(most_inside, ++inside);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let the other loaders catch up
        order.push_back(i);
        rank_of_visit.push_back(t.meta.rank);
        events_of_visit.push_back(t.event_count());
        EXPECT_EQ(r.rank, t.meta.rank);
        --inside;
      });
  EXPECT_EQ(most_inside, 1);
  ASSERT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(result.ranks.size(), 6u);
  for (const RankAnalysis& r : result.ranks) {
    ASSERT_LT(r.input_index, rank_of_visit.size());
    EXPECT_EQ(rank_of_visit[r.input_index], r.rank) << r.label;
  }
  std::filesystem::remove_all(run.parent_path());
}

// A bad file among the ranks: its error is the one reported (naming it), and
// the ranks waiting for their turn to be visited do not hang.
TEST(AnalyzePath, BadFileWithAVisitorIsNamedAndNothingWaitsForever) {
  const auto run = synthetic_run("visit_bad", 6);
  {  // a trace of a newer format: listed by content (magic), refused when loaded
    std::fstream f(run / "rank02.sstrace", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char major[2] = {99, 0};
    f.write(major, 2);
  }
  std::vector<size_t> visited;
  try {
    analyze_path(run, Options{}, 3, {}, [&](size_t i, const trace::Trace&, const RankAnalysis&) {
      // Rank 0 slow: rank 1 waits for its turn while rank 2 fails.
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      visited.push_back(i);
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank02.sstrace"), std::string::npos) << e.what();
  }
  for (size_t i : visited) EXPECT_LT(i, 2u);
  std::filesystem::remove_all(run.parent_path());
}

// Native call stacks (format 1.3): per thread, the functions its samples
// ended in and its most frequent stacks, inside the window only; frames
// without a name show as module+address. Traces without stacks keep their
// JSON unchanged.
TEST(AnalyzeHost, TopFunctionsAndStacksPerThread) {
  using namespace host_case;
  TraceBuilder b = steps();
  b.t.meta.extra["host_stack_sampling"] = "perf_event_open task-clock, frame-pointer callchains";
  b.host_thread(100, 101, "pt_main_loader");
  auto& cs = b.t.host_callsites;
  const auto exe = b.t.strings.intern("/usr/bin/python3.12");
  cs.push({1, 0, b.t.strings.intern("main"), exe, 0x10});
  cs.push({2, 1, b.t.strings.intern("_PyEval_EvalFrameDefault"), exe, 0x20});
  cs.push({3, 2, b.t.strings.intern("cudaLaunchKernel"), b.t.strings.intern("/lib/libcudart.so.12"), 0x30});
  // Offline naming (format 1.4) found no file for libtorch_cpu: the frame says so.
  cs.push(
      {4, 2, trace::kNoString, b.t.strings.intern("/lib/libtorch_cpu.so"), 0xbeef, trace::FrameStatus::kModuleMissing});
  b.t.meta.extra["host_stack_naming"] = "offline: 4 of 6 frames named; module missing 1 (libtorch_cpu.so)";
  cs.push({5, 1, trace::kNoString, exe, 0x40});                   // first written unnamed ...
  cs.push({5, 1, b.t.strings.intern("decode_jpeg"), exe, 0x40});  // ... then named: the last row wins
  int k = 0;
  each_sample([&](int64_t t) {
    b.host_sample(t, 100, 100, ThreadState::kRunning, 0, 10 * kMs);
    b.host_sample(t, 100, 101, ThreadState::kRunning, 1, 10 * kMs);
    // Main: 60 % in cudaLaunchKernel, 40 % in an unnamed libtorch frame.
    b.t.host_stack_samples.push({t - kMs, 100, 100, k % 5 < 3 ? 3u : 4u});
    b.t.host_stack_samples.push({t - kMs, 100, 101, 5});
    ++k;
  });
  b.t.host_stack_samples.push({2000 * kMs, 100, 100, 5});  // outside the window: not counted
  const HostStats h = analyze_rank(b.t, Options{}).host;
  ASSERT_TRUE(h.availability.available);
  EXPECT_EQ(h.stack_method, "perf_event_open task-clock, frame-pointer callchains");
  EXPECT_EQ(h.stack_samples, 200);
  const auto& main =
      *std::find_if(h.threads.begin(), h.threads.end(), [](const HostThreadSummary& s) { return s.tid == 100; });
  EXPECT_EQ(main.stack_samples, 100);
  ASSERT_EQ(main.top_functions.size(), 2u);
  EXPECT_EQ(main.top_functions[0].what, "cudaLaunchKernel");
  EXPECT_EQ(main.top_functions[0].samples, 60);
  EXPECT_NEAR(main.top_functions[0].share, 0.6, 1e-12);
  EXPECT_EQ(main.top_functions[1].what, "libtorch_cpu.so+0xbeef [module missing]");
  EXPECT_EQ(h.stack_naming, "offline: 4 of 6 frames named; module missing 1 (libtorch_cpu.so)");
  ASSERT_EQ(main.top_stacks.size(), 2u);
  EXPECT_EQ(main.top_stacks[0].what, "main;_PyEval_EvalFrameDefault;cudaLaunchKernel");
  EXPECT_EQ(main.top_stacks[1].what, "main;_PyEval_EvalFrameDefault;libtorch_cpu.so+0xbeef [module missing]");
  const auto& loader =
      *std::find_if(h.threads.begin(), h.threads.end(), [](const HostThreadSummary& s) { return s.tid == 101; });
  ASSERT_EQ(loader.top_functions.size(), 1u);
  EXPECT_EQ(loader.top_functions[0].what, "decode_jpeg");
  EXPECT_EQ(loader.top_stacks[0].what, "main;decode_jpeg");
  const nlohmann::json j = h;
  EXPECT_EQ(j["stack_samples"], 200);
  EXPECT_EQ(j["stack_naming"], h.stack_naming);
  bool seen = false;
  for (const auto& th : j["threads"])
    if (th["tid"] == 100) {
      seen = true;
      EXPECT_EQ(th["top_functions"][0]["name"], "cudaLaunchKernel");
      EXPECT_EQ(th["top_stacks"][0]["samples"], 60);
    }
  EXPECT_TRUE(seen);
  // The same rank without stacks: no stack keys at all.
  TraceBuilder plain = steps();
  each_sample([&](int64_t t) { plain.host_sample(t, 100, 100, ThreadState::kRunning, 0, 10 * kMs); });
  const nlohmann::json p = analyze_rank(plain.t, Options{}).host;
  EXPECT_FALSE(p.contains("stack_method"));
  EXPECT_FALSE(p["threads"][0].contains("top_functions"));
}

// One NVML sampler per node (local rank 0) samples every GPU of the node:
// rank 1's GPU (bus 3b) is found in rank 0's trace by its PCI bus id, and
// each rank's summary is of its own GPU, with the figures of its samples.
TEST(AnalyzeGpuClocks, EachRankGetsItsOwnGpusSamplesFromTheNodesSampler) {
  using M = trace::CounterMetric;
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b;
    b.rank(r);
    b.t.meta.hostname = "node1";
    trace::DeviceInfo d;
    d.id = static_cast<uint32_t>(r);
    d.pci_bus_id = r == 0 ? "0000:19:00.0" : "0000:3b:00.0";
    b.t.meta.devices.push_back(d);
    for (int i = 0; i < 4; ++i) b.kernel("gemm_kernel", 1000 * i, 1000 * i + 800, 7, static_cast<uint32_t>(r));
    if (r == 0) {
      trace::DeviceInfo other;
      other.id = 1;
      other.pci_bus_id = "0000:3b:00.0";
      b.t.meta.devices.push_back(other);
      for (uint32_t dev = 0; dev < 2; ++dev)
        for (int64_t t : {100, 1100, 2100, 3100}) {
          b.t.counters.push({t, dev, M::kSmClockMHz, dev == 0 ? 1980.0 : 1500.0 + static_cast<double>(t) / 100});
          b.t.counters.push({t, dev, M::kClocksEventReasons, dev == 0 ? 0.0 : 0x20});
          b.t.counters.push({t, dev, M::kTemperatureCelsius, dev == 0 ? 60.0 : 86.0});
        }
      b.t.counters.push({0, 1, M::kSmClockMaxMHz, 1980});
      b.t.counters.push({0, 1, M::kTemperatureSlowdownCelsius, 87});
    }
    RankAnalysis a = analyze_rank(b.t, Options{});
    a.label = "rank " + std::to_string(r);
    ranks.push_back(std::move(a));
  }
  EXPECT_FALSE(ranks[1].gpu_clocks.availability.available);  // its own trace has no samples
  const RunAnalysis run = combine(std::move(ranks));
  const GpuClockStats& g0 = run.ranks[0].gpu_clocks;
  const GpuClockStats& g1 = run.ranks[1].gpu_clocks;
  ASSERT_TRUE(g0.availability.available);
  ASSERT_TRUE(g1.availability.available) << g1.availability.reason;
  EXPECT_EQ(g0.sm_clock_median_mhz, 1980);
  EXPECT_EQ(g0.sampled_by, "");
  EXPECT_EQ(g0.reason_samples, 4);
  EXPECT_EQ(g0.throttled_share, 0);
  EXPECT_EQ(g1.device, 1u);
  EXPECT_EQ(g1.sampled_by, "rank 0");
  EXPECT_EQ(g1.clock_samples, 4);
  EXPECT_EQ(g1.sm_clock_median_mhz, 1516);  // 1501, 1511, 1521, 1531
  EXPECT_EQ(g1.sm_clock_min_mhz, 1501);
  EXPECT_NEAR(g1.clock_ratio, 1516.0 / 1980, 1e-12);
  EXPECT_EQ(g1.thermal_share, 1.0);
  EXPECT_EQ(g1.temperature_max_c, 86);
  EXPECT_EQ(g1.temperature_slowdown_c, 87);
  for (const auto& r : run.ranks) EXPECT_TRUE(r.sampled_gpus.empty());  // dropped once shared
  const nlohmann::json j = run.ranks[1];
  EXPECT_EQ(j["gpu_clocks"]["sampled_by"], "rank 0");
}

}  // namespace
}  // namespace scalescope::analyze

namespace scalescope {
// A planted hang: ranks 0-2 wait in all_reduce #5 of one communicator; rank 3
// left #4 and never entered #5. The report names rank 3 and the sequence.
TEST(HangReport, NamesTheRankThatNeverEnteredAndTheSequence) {
  std::vector<trace::HangDump> dumps;
  for (int32_t rank = 0; rank < 4; ++rank) {
    trace::HangDump d;
    d.host = "node";
    d.pid = static_cast<uint32_t>(100 + rank);
    d.rank = rank;
    d.reason = "hang-after";
    d.collectives_recorded = true;
    for (uint64_t seq = 1; seq <= (rank == 3 ? 4u : 5u); ++seq)
      // NCCL's call returns once its kernel is queued: rank 0 has left #5
      // (it waits in the kernel), ranks 1 and 2 are still inside the call.
      d.collectives.push_back({trace::NcclOp::kAllReduce, 0xC0FFEE, seq, 4096, int64_t(seq * 10),
                               seq == 5 && rank != 0 ? 0 : int64_t(seq * 10 + 5)});
    d.iterations.push_back({rank == 3 ? 3u : 4u, 1});
    dumps.push_back(d);
  }
  std::reverse(dumps.begin(), dumps.end());  // files come in any order
  const analyze::HangReport h = analyze::find_hang(dumps);
  ASSERT_TRUE(h.in_collective);
  EXPECT_EQ(h.sequence, 5u);
  EXPECT_EQ(h.communicator, 0xC0FFEEu);
  EXPECT_EQ(h.text,
            "hung: ranks 0-2 wait in AllReduce #5 of communicator 0xc0ffee; rank 3 never entered it and was last in "
            "AllReduce #4 of communicator 0xc0ffee (left), iteration 3");
  ASSERT_EQ(h.processes.size(), 4u);
  EXPECT_EQ(h.processes[3].state, "not entered");
  EXPECT_EQ(h.processes[0].state, "waiting");
  // Every rank at the same count, none inside a call: no collective is blamed.
  auto even = dumps;
  for (auto& d : even) d.collectives.resize(4);
  const analyze::HangReport same = analyze::find_hang(even);
  EXPECT_FALSE(same.in_collective);
  EXPECT_NE(same.text.find("rank 3 last in AllReduce #4 of communicator 0xc0ffee (left)"), std::string::npos)
      << same.text;
  // Without collectives in the dumps (NVTX went to CUPTI): no collective named.
  for (auto& d : dumps) d.collectives.clear(), d.collectives_recorded = false;
  const analyze::HangReport none = analyze::find_hang(dumps);
  EXPECT_FALSE(none.in_collective);
  EXPECT_EQ(none.processes[0].state, "no collectives recorded");
}

TEST(HangReport, NamesWhereTheMainThreadWasInPython) {
  std::vector<trace::HangDump> dumps(2);
  for (int32_t rank = 0; rank < 2; ++rank) {
    auto& d = dumps[static_cast<size_t>(rank)];
    d.host = "node";
    d.pid = static_cast<uint32_t>(100 + rank);
    d.rank = rank;
    d.reason = "hang-after";
    d.collectives_recorded = true;
    for (uint64_t seq = 1; seq <= (rank == 1 ? 6u : 7u); ++seq)
      d.collectives.push_back({trace::NcclOp::kAllReduce, 0xAB, seq, 64, int64_t(seq * 10), int64_t(seq * 10 + 5)});
  }
  // Rank 1's main thread (tid = pid) sleeps in the job's own code; a helper
  // thread of it, read first, must not be taken for it.
  dumps[1].python.push_back({777, {{"/usr/lib/python3.11/threading.py", 320, "wait"}}});
  dumps[1].python.push_back({101,
                             {{"/usr/lib/python3.11/time.py", 5, "sleep_a_while"},
                              {"/job/train.py", 43, "before_all_reduce"},
                              {"/job/train.py", 60, "main"},
                              {"/job/train.py", 70, "<module>"}}});
  dumps[0].python_note = "pid 100: permission denied";
  const analyze::HangReport h = analyze::find_hang(dumps);
  ASSERT_TRUE(h.in_collective);
  EXPECT_EQ(h.processes[1].python, "time.py:5 sleep_a_while < train.py:43 before_all_reduce < train.py:60 main");
  EXPECT_EQ(h.processes[0].python, "");
  EXPECT_EQ(h.processes[0].python_note, "pid 100: permission denied");
  EXPECT_EQ(h.text,
            "hung: rank 0 waits in AllReduce #7 of communicator 0xab; rank 1 never entered it and was last in "
            "AllReduce #6 of communicator 0xab (left) (Python: time.py:5 sleep_a_while < train.py:43 "
            "before_all_reduce < train.py:60 main)");
}
}  // namespace scalescope
