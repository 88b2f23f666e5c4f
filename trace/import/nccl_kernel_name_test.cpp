#include "trace/model/nccl_kernel_name.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "trace/import/clock_alignment.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/import/nsys_importer.hpp"

namespace scalescope::trace {
namespace {

TEST(NcclKernelName, Nccl2_19PlusFromARealTrace) {
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

TEST(NcclKernelName, ModernVariants) {
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

TEST(NcclKernelName, Nccl2_12To2_18) {
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

TEST(NcclKernelName, Legacy) {
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

TEST(NcclKernelName, NotNccl) {
  EXPECT_FALSE(parse_nccl_kernel_name("void at::native::vectorized_elementwise_kernel<4>(int)"));
  EXPECT_FALSE(parse_nccl_kernel_name("sm90_xmma_gemm_f16f16_f16f32"));
  EXPECT_FALSE(parse_nccl_kernel_name(""));
  EXPECT_FALSE(parse_nccl_kernel_name("ncclDevKernel_"));
  EXPECT_FALSE(parse_nccl_kernel_name("ncclSomethingKernel"));
}

TEST(NcclKernelName, DemangledWithReturnTypeAndMangled) {
  auto n = parse_nccl_kernel_name("void ncclDevKernel_AllGather_PAT_LL128(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllGather);
  EXPECT_EQ(n->algorithm, "PAT");
  n = parse_nccl_kernel_name("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op, NcclOp::kAllReduce);
  EXPECT_EQ(n->datatype, "f32");
  EXPECT_EQ(n->protocol, "LL");
  EXPECT_FALSE(parse_nccl_kernel_name("_Z6squarePfi"));
  EXPECT_FALSE(parse_nccl_kernel_name("_Z999ncclDevKernel_AllReduce"));  // length past the end
}

// Every reader of kernel names gets the same collective from a name (issue
// 19: the Kineto and nsys importers and the clock alignment each had a parser;
// nsys read COLLNET_DIRECT as COLLNET and NVLS_TREE as TREE, and neither
// importer knew names before NCCL 2.12, which the clock alignment did).
const char* const kNames[] = {
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE",
    "ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE",
    "ncclDevKernel_AllGather_PAT_LL128(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)",
    "ncclBroadcastTreeSimpleKernel_copy_i8",
    "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
};

void expect_as_parsed(const Trace& t, const std::string& name, const std::string& reader) {
  const NcclKernelName want = parse_nccl_kernel_name(name).value_or(NcclKernelName{});
  ASSERT_EQ(t.nccl.size(), 1u) << reader << ": " << name;
  EXPECT_EQ(t.nccl.op[0], want.op) << reader << ": " << name;
  EXPECT_EQ(t.strings.view(t.nccl.algorithm[0]), want.algorithm) << reader << ": " << name;
  EXPECT_EQ(t.strings.view(t.nccl.protocol[0]), want.protocol) << reader << ": " << name;
  EXPECT_EQ(t.strings.view(t.nccl.datatype[0]), want.datatype) << reader << ": " << name;
}

TEST(NcclKernelName, KinetoImporterReadsNamesAsTheParser) {
  for (const std::string name : kNames) {
    const std::string json = R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" + name +
                             R"(", "pid": 0, "tid": 17, "ts": 300, "dur": 10, "args": {"device": 0, "stream": 17}}]})";
    expect_as_parsed(import_kineto_json(json, "t.json"), name, "kineto");
  }
}

TEST(NcclKernelName, NsysImporterReadsNamesAsTheParser) {
  namespace fs = std::filesystem;
  std::ifstream in(fs::path(SCALESCOPE_SOURCE_DIR) / "trace/testdata/nsys/nccl_payload.sql");
  ASSERT_TRUE(in);
  const std::string sql((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path db = fs::temp_directory_path() / ("nccl_kernel_name_test_" + std::to_string(::getpid()) + ".sqlite");
  for (const std::string name : kNames) {
    fs::remove(db);
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    // The fixture's kernels are named by string 2; only the first one is kept.
    const std::string all = "BEGIN;" + sql + ";UPDATE StringIds SET value = '" + name +
                            "' WHERE id = 2; DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId <> 11; COMMIT;";
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(h, all.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(h);
    const std::vector<Trace> traces = import_nsys_file(db);
    ASSERT_EQ(traces.size(), 1u);
    expect_as_parsed(traces[0], name, "nsys");
  }
  fs::remove(db);
}

TEST(NcclKernelName, ClockAlignmentReadsOpsAsTheParser) {
  for (const std::string name : kNames)
    EXPECT_EQ(nccl_op_of_kernel_name(name), parse_nccl_kernel_name(name).value_or(NcclKernelName{}).op) << name;
}

}  // namespace
}  // namespace scalescope::trace
