#include "collect/nccl_kernel_name.hpp"

#include <gtest/gtest.h>

namespace scalescope::collect {
namespace {

using trace::NcclOp;

TEST(CollectNcclName, Nccl2_19PlusFromARealTrace) {
  // Names as they appear in the shared Kineto trace (NCCL 2.28.9).
  auto n = parse_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllReduce);
  EXPECT_EQ(n->reduction, "Sum");
  EXPECT_EQ(n->datatype, "f32");
  EXPECT_EQ(n->algorithm, "RING");
  EXPECT_EQ(n->protocol, "LL");
  n = parse_nccl_kernel_name("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kBroadcast);
  EXPECT_EQ(n->datatype, "");
  EXPECT_EQ(n->algorithm, "RING");
  EXPECT_EQ(n->protocol, "LL");
}

TEST(CollectNcclName, ModernVariants) {
  auto n = parse_nccl_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kReduceScatter);
  EXPECT_EQ(n->datatype, "bf16");
  EXPECT_EQ(n->algorithm, "COLLNET_DIRECT");
  EXPECT_EQ(n->protocol, "SIMPLE");
  n = parse_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->algorithm, "NVLS_TREE");
  EXPECT_EQ(n->datatype, "f16");
  n = parse_nccl_kernel_name("ncclDevKernel_AllGather_PAT_LL128");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllGather);
  EXPECT_EQ(n->algorithm, "PAT");
  EXPECT_EQ(n->protocol, "LL128");
  n = parse_nccl_kernel_name("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kSendRecv);
  EXPECT_EQ(n->algorithm, "");
  n = parse_nccl_kernel_name("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kUnknown);  // an NCCL kernel, op not in the name
}

TEST(CollectNcclName, Nccl2_12To2_18) {
  auto n = parse_nccl_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllReduce);
  EXPECT_EQ(n->algorithm, "RING");
  EXPECT_EQ(n->protocol, "LL");
  EXPECT_EQ(n->reduction, "Sum");
  EXPECT_EQ(n->datatype, "float");
  n = parse_nccl_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kSendRecv);
  EXPECT_EQ(n->datatype, "int8_t");
}

TEST(CollectNcclName, Legacy) {
  auto n = parse_nccl_kernel_name("ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllReduce);
  EXPECT_EQ(n->algorithm, "RING");
  EXPECT_EQ(n->protocol, "LL");
  EXPECT_EQ(n->reduction, "sum");
  EXPECT_EQ(n->datatype, "f32");
  n = parse_nccl_kernel_name("ncclBroadcastTreeSimpleKernel_copy_i8");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kBroadcast);
  EXPECT_EQ(n->algorithm, "TREE");
  EXPECT_EQ(n->protocol, "SIMPLE");
}

TEST(CollectNcclName, NotNccl) {
  EXPECT_FALSE(parse_nccl_kernel_name("void at::native::vectorized_elementwise_kernel<4>(int)"));
  EXPECT_FALSE(parse_nccl_kernel_name("sm90_xmma_gemm_f16f16_f16f32"));
  EXPECT_FALSE(parse_nccl_kernel_name(""));
  EXPECT_FALSE(parse_nccl_kernel_name("ncclDevKernel_"));
  EXPECT_FALSE(parse_nccl_kernel_name("ncclSomethingKernel"));
}

}  // namespace
}  // namespace scalescope::collect
