#include "trace/model/kernel_short_name.hpp"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

// Names as they appear in ../shared/data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz.
const std::string kFillFloat =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
    "at::native::FillFunctor<float>, std::array<char*, 1ul>)";
const std::string kFillHalf =
    "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> "
    ">(int, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul>)";
const std::string kAdd =
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul> "
    ">(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)";
const std::string kMul2 =
    "void at::native::vectorized_elementwise_kernel<2, at::native::AUnaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)";
const std::string kMul4 =
    "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)";
const std::string kClamp =
    "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() "
    "const::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() "
    "const::{lambda(c10::Half)#1}, std::array<char*, 2ul>)";
const std::string kReduceMean =
    "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::Half, at::native::MeanOps<c10::Half, float, "
    "float, c10::Half>, unsigned int, c10::Half, 4, 8> >(at::native::ReduceOp<c10::Half, "
    "at::native::MeanOps<c10::Half, float, float, c10::Half>, unsigned int, c10::Half, 4, 8>)";
const std::string kBatchNorm0 =
    "void cudnn::batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5, 4, 1, 0, false, false, true, "
    "2>(cudnn::NhwcBatchNormFwdParams<__half, float>)";
const std::string kBatchNorm1 =
    "void cudnn::batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5, 4, 1, 1, false, false, true, "
    "2>(cudnn::NhwcBatchNormFwdParams<__half, float>)";
const std::string kCutlassA =
    "void "
    "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_64x64_64x4_nt_align8>(cutlass_80_tensorop_s16816gemm_f16_"
    "64x64_64x4_nt_align8::Params)";
const std::string kCutlassB =
    "void "
    "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_64x64_64x6_nt_align8>(cutlass_80_tensorop_s16816gemm_f16_"
    "64x64_64x6_nt_align8::Params)";
const std::string kSoftmax =
    "void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 4, true, false>(c10::Half*, "
    "c10::Half const*, int, int, int, bool const*, int, bool)";
const std::string kNccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const std::string kCublas = "nvjet_sm90_hsh_128x192_64x5_2x1_v_ssched_bz_coopB_NNN";
const std::string kCudnnConv =
    "sm90_xmma_depthwise_convolution_dgrad_tiling_f16f16_f32f32_f32_nhwckrsc_nhwc_tilesize1x4x4_1x3x3_1x1x1_1x1x1_"
    "stage6_warpsize4x1x1_g64_betaFalse_execute_kernel__5x_cudnn";
const std::string kCopyLambda7 =
    "void at::native::elementwise_kernel<128, 2, "
    "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
    "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
    "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})";

TEST(KernelShortName, DropsReturnTypeTemplatesAndParameters) {
  EXPECT_EQ(short_kernel_name(kFillFloat), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(short_kernel_name(kReduceMean), "at::native::reduce_kernel");
  EXPECT_EQ(short_kernel_name(kBatchNorm0), "cudnn::batchnorm_fwtr_nhwc_semiPersist");
  EXPECT_EQ(short_kernel_name(kCutlassA), "cutlass::Kernel2");
  EXPECT_EQ(short_kernel_name(kClamp), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(short_kernel_name(kCopyLambda7), "at::native::elementwise_kernel");
}

TEST(KernelShortName, AnonymousNamespaceDropped) {
  EXPECT_EQ(short_kernel_name(kSoftmax), "softmax_warp_forward");
}

TEST(KernelShortName, PlainNamesUnchanged) {
  EXPECT_EQ(short_kernel_name(kCublas), kCublas);
  EXPECT_EQ(short_kernel_name(kCudnnConv), kCudnnConv);
  EXPECT_EQ(short_kernel_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(short_kernel_name(kNccl), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(short_kernel_name(""), "");
}

TEST(KernelShortName, MangledNamesDemangled) {
  const std::string mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
  EXPECT_EQ(demangle_kernel_name(mangled), kFillFloat);
  EXPECT_EQ(short_kernel_name(mangled), "at::native::vectorized_elementwise_kernel");
  // Not a valid mangling: kept as it is.
  EXPECT_EQ(short_kernel_name("_Zbogus"), "_Zbogus");
}

TEST(KernelShortName, UnbalancedTextKeptWhole) {
  EXPECT_EQ(short_kernel_name("void f<int(int)"), "void f<int(int)");
  EXPECT_EQ(short_kernel_name("g>h"), "g>h");
}

TEST(KernelShortName, CollisionsKeepTheArgumentsThatDiffer) {
  const std::vector<std::string_view> names = {kFillFloat, kFillHalf, kAdd,   kMul2,      kMul4,      kClamp,
                                               kCutlassA,  kCutlassB, kNccl, kBatchNorm0, kBatchNorm1, kSoftmax};
  const auto s = distinct_short_names(names);
  ASSERT_EQ(s.size(), names.size());
  EXPECT_EQ(s[0], "at::native::vectorized_elementwise_kernel<FillFunctor<float>>");
  EXPECT_EQ(s[1], "at::native::vectorized_elementwise_kernel<FillFunctor<Half>>");
  EXPECT_EQ(s[2], "at::native::vectorized_elementwise_kernel<CUDAFunctor_add>");
  EXPECT_EQ(s[3], "at::native::vectorized_elementwise_kernel<2, AUnaryFunctor>");
  EXPECT_EQ(s[4], "at::native::vectorized_elementwise_kernel<4, AUnaryFunctor>");
  EXPECT_EQ(s[5], "at::native::vectorized_elementwise_kernel<launch_clamp_scalar>");
  EXPECT_EQ(s[6], "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_64x64_64x4_nt_align8>");
  EXPECT_EQ(s[7], "cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_f16_64x64_64x6_nt_align8>");
  EXPECT_EQ(s[8], "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(s[9], "cudnn::batchnorm_fwtr_nhwc_semiPersist<0>");
  EXPECT_EQ(s[10], "cudnn::batchnorm_fwtr_nhwc_semiPersist<1>");
  EXPECT_EQ(s[11], "softmax_warp_forward");
  EXPECT_EQ(std::set<std::string>(s.begin(), s.end()).size(), s.size());
}

TEST(KernelShortName, NoCollisionLeavesTheShortName) {
  const auto s = distinct_short_names({kFillFloat, kCutlassA, kReduceMean});
  EXPECT_EQ(s, (std::vector<std::string>{"at::native::vectorized_elementwise_kernel", "cutlass::Kernel2",
                                         "at::native::reduce_kernel"}));
}

TEST(KernelShortName, NamesNoArgumentSeparatesAreNumbered) {
  // Overloads that differ only in their parameters.
  const auto s = distinct_short_names({"void k(int)", "void k(float)", "void k(int)"});
  EXPECT_EQ(s, (std::vector<std::string>{"k", "k #2", "k"}));
}

TEST(KernelShortName, MangledAndDemangledSpellingsOfOneKernelAgree) {
  const auto s = distinct_short_names(
      {kFillFloat, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
       kAdd});
  EXPECT_EQ(s[0], s[1]);
  EXPECT_NE(s[0], s[2]);
}

TEST(KernelShortName, NestedArgumentsTellLambdasApart) {
  const std::string hardtanh =
      "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
      "namespace)::hardtanh_backward_kernel(at::TensorIterator&, c10::Scalar const&, c10::Scalar "
      "const&)::{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half, "
      "c10::Half)#1}>(at::TensorIteratorBase&, int const&)::{lambda(int)#1}>(int, int)";
  const auto s = distinct_short_names({kCopyLambda7, hardtanh});
  // Both differ in the 2nd argument (2, 4) and the 3rd: the named one is kept.
  EXPECT_EQ(s[0], "at::native::elementwise_kernel<gpu_kernel_impl_nocast<direct_copy_kernel_cuda>>");
  EXPECT_EQ(s[1], "at::native::elementwise_kernel<gpu_kernel_impl_nocast<hardtanh_backward_kernel>>");
}

}  // namespace
}  // namespace scalescope::trace
