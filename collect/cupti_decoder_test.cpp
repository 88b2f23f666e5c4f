// The decoder fed with synthetic CUPTI records of every kind it handles, built
// from the CUDA 13 struct versions in cupti_activity.h.
#include "collect/cupti_decoder.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtPayload.h>

namespace scalescope::collect {
namespace {

using trace::ApiDomain;
using trace::MemcpyKind;
using trace::MemoryKind;
using trace::SyncKind;

class CollectDecoder : public ::testing::Test {
 protected:
  CollectDecoder()
      : decoder_(strings_, [](ApiDomain d, uint32_t cbid) {
          if (d == ApiDomain::kRuntime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
            return std::string("cudaLaunchKernel_v7000");
          if (d == ApiDomain::kDriver && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
            return std::string("cuLaunchKernelEx");
          return std::string();
        }) {}

  template <typename T>
  static T zeroed(CUpti_ActivityKind kind) {
    T r;
    std::memset(&r, 0, sizeof(r));
    r.kind = kind;
    return r;
  }
  bool decode(const void* record) { return decoder_.decode(record, batch_); }
  std::string_view str(trace::StringId id) const { return strings_.view(id); }

  trace::StringTable strings_;
  CuptiDecoder decoder_;
  trace::Trace batch_;
};

TEST_F(CollectDecoder, ConcurrentKernel) {
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 1000;
  k.end = 1500;
  k.deviceId = 1;
  k.streamId = 7;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.correlationId = 42;
  k.name = "_Z6squarePfi";
  ASSERT_TRUE(decode(&k));
  ASSERT_EQ(batch_.kernels.size(), 1u);
  auto r = batch_.kernels.row(0);
  EXPECT_EQ(r.start, 1000);
  EXPECT_EQ(r.end, 1500);
  EXPECT_EQ(r.device, 1u);
  EXPECT_EQ(r.stream, 7u);
  EXPECT_EQ(str(r.name), "square(float*, int)");  // demangled, as other tools show it
  EXPECT_EQ(r.grid_x, 128u);
  EXPECT_EQ(r.grid_y, 2u);
  EXPECT_EQ(r.block_x, 256u);
  EXPECT_EQ(r.registers_per_thread, 32u);
  EXPECT_EQ(r.shared_memory_bytes, 3072u);
  EXPECT_EQ(r.correlation, 42u);
  EXPECT_EQ(batch_.nccl.size(), 0u);
  // The same name pointer again hits the cache and gives the same id.
  k.start = 2000;
  k.end = 2500;
  ASSERT_TRUE(decode(&k));
  EXPECT_EQ(batch_.kernels.name[1], batch_.kernels.name[0]);
}

TEST_F(CollectDecoder, NcclKernelAlsoFillsNcclTable) {
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 10;
  k.end = 90;
  k.deviceId = 0;
  k.streamId = 13;
  k.correlationId = 5;
  // Mangled as CUPTI reports it.
  k.name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
  ASSERT_TRUE(decode(&k));
  ASSERT_EQ(batch_.kernels.size(), 1u);
  EXPECT_EQ(str(batch_.kernels.name[0]), "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(batch_.nccl.size(), 0u);  // the row waits for its call's bytes
  decoder_.drain_nccl(batch_, /*force=*/true);
  ASSERT_EQ(batch_.nccl.size(), 1u);
  auto n = batch_.nccl.row(0);
  EXPECT_EQ(n.op, trace::NcclOp::kAllReduce);
  EXPECT_EQ(str(n.datatype), "f32");
  EXPECT_EQ(str(n.algorithm), "RING");
  EXPECT_EQ(str(n.protocol), "LL");
  EXPECT_EQ(n.start, 10);
  EXPECT_EQ(n.end, 90);
  EXPECT_EQ(n.stream, 13u);
  EXPECT_EQ(n.correlation, 5u);
  EXPECT_EQ(n.sequence, -1);  // not in the name
}

// NCCL 2.28's all-reduce range: payload {commHash, bytes, ncclRedOp_t} under
// a static schema id, the op an enum; CUPTI copies the payload into a
// MARKER_DATA record (malloc()ed, the reader frees it) and hands out the
// registered schema by (CUPTI domain, schema id).
class CollectDecoderNccl : public CollectDecoder {
 protected:
  static constexpr uint32_t kDomain = 3;
  static constexpr uint64_t kSchema = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
  static constexpr uint64_t kRedOp = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 20;
  struct Payload {
    uint64_t comm;
    size_t bytes;
    int op;
  };

  CollectDecoderNccl()
      : nccl_decoder_(
            strings_,
            [](ApiDomain d, uint32_t cbid) {
              return d == ApiDomain::kDriver && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
                         ? std::string("cuLaunchKernelEx")
                         : std::string("cuMemcpy");
            },
            [this](uint32_t domain, uint64_t id, uint32_t* type, const void** attr) {
              if (domain != kDomain) return false;
              if (id == kSchema) {
                *type = CUPTI_NVTX_EXT_PAYLOAD_TYPE_SCHEMA;
                *attr = &schema_;
                return true;
              }
              if (id == kRedOp) {
                *type = CUPTI_NVTX_EXT_PAYLOAD_TYPE_ENUM;
                *attr = &enum_;
                return true;
              }
              return false;
            }) {
    schema_.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                        NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                        NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    schema_.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    schema_.entries = entries_;
    schema_.numEntries = 3;
    schema_.payloadStaticSize = sizeof(Payload);
    schema_.schemaId = kSchema;
    enum_.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                      NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    enum_.entries = red_ops_;
    enum_.numEntries = 5;
    enum_.sizeOfEnum = sizeof(int);
    enum_.schemaId = kRedOp;
  }

  void marker(uint32_t id, uint32_t flags, uint64_t t, const char* name = nullptr, const char* domain = nullptr) {
    auto m = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
    m.flags = static_cast<CUpti_ActivityFlag>(flags);
    m.timestamp = t;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.threadId = 77;
    m.name = name;
    m.domain = domain;
    ASSERT_TRUE(nccl_decoder_.decode(&m, batch_));
  }
  void payload(uint32_t id, uint64_t bytes, uint32_t domain = kDomain) {
    Payload p{0xc0ffee, bytes, 0};
    auto* data = static_cast<nvtxPayloadData_t*>(std::malloc(sizeof(nvtxPayloadData_t)));
    void* copy = std::malloc(sizeof(p));
    std::memcpy(copy, &p, sizeof(p));
    *data = {kSchema, sizeof(p), copy};
    auto d = zeroed<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
    d.id = id;
    d.cuptiDomainId = domain;
    d.payloadKind = CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD;
    d.payload.metricValueNvtxExtendedPayload = reinterpret_cast<uintptr_t>(data);
    ASSERT_TRUE(nccl_decoder_.decode(&d, batch_));  // frees data and copy (ASan checks)
  }
  void launch(uint64_t t, uint32_t correlation) {
    auto a = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
    a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
    a.start = t;
    a.end = t + 5;
    a.threadId = 77;
    a.correlationId = correlation;
    ASSERT_TRUE(nccl_decoder_.decode(&a, batch_));
  }
  void kernel(uint32_t correlation) {
    auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    k.start = 1000 + correlation;
    k.end = 2000 + correlation;
    k.correlationId = correlation;
    k.name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
    ASSERT_TRUE(nccl_decoder_.decode(&k, batch_));
  }

  nvtxPayloadSchemaEntry_t entries_[3] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(Payload, comm), nullptr,
       nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(Payload, bytes), nullptr, nullptr},
      {0, kRedOp, "Reduction operation", nullptr, 0, offsetof(Payload, op), nullptr, nullptr}};
  nvtxPayloadEnum_t red_ops_[5] = {{"Sum", 0, 0}, {"Product", 1, 0}, {"Max", 2, 0}, {"Min", 3, 0}, {"Avg", 4, 0}};
  nvtxPayloadSchemaAttr_t schema_{};
  nvtxPayloadEnumAttr_t enum_{};
  CuptiDecoder nccl_decoder_;
};

TEST_F(CollectDecoderNccl, KernelGetsBytesOfItsNvtxPayload) {
  marker(9, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "ncclAllReduce", "NCCL");
  payload(9, 4u << 20);
  launch(120, 5);
  marker(9, CUPTI_ACTIVITY_FLAG_MARKER_END, 150);
  // The second call's MARKER_DATA comes before its start record.
  payload(10, 1000);
  marker(10, CUPTI_ACTIVITY_FLAG_MARKER_START, 200, "ncclAllReduce", "NCCL");
  launch(220, 6);
  marker(10, CUPTI_ACTIVITY_FLAG_MARKER_END, 250);
  // A range whose registered name CUPTI did not resolve: the op comes from
  // NCCL's schema id.
  marker(12, CUPTI_ACTIVITY_FLAG_MARKER_START, 260, nullptr, "NCCL");
  payload(12, 2000);
  launch(270, 7);
  marker(12, CUPTI_ACTIVITY_FLAG_MARKER_END, 280);
  // Payloads of other domains are freed and ignored.
  marker(11, CUPTI_ACTIVITY_FLAG_MARKER_START, 300, "step", "app");
  payload(11, 5, 4);
  marker(11, CUPTI_ACTIVITY_FLAG_MARKER_END, 350);
  kernel(5);
  kernel(6);
  auto generic = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  generic.correlationId = 7;
  generic.start = 1007;
  generic.end = 2007;
  generic.name = "ncclDevKernel_Generic_1";  // the op is not in the name
  ASSERT_TRUE(nccl_decoder_.decode(&generic, batch_));
  EXPECT_EQ(batch_.nccl.size(), 0u);
  nccl_decoder_.drain_nccl(batch_, false);
  ASSERT_EQ(batch_.nccl.size(), 3u);
  EXPECT_EQ(batch_.nccl.op[2], trace::NcclOp::kAllReduce);
  EXPECT_EQ(batch_.nccl.bytes[2], 2000u);
  EXPECT_EQ(batch_.nccl.sequence[2], 2);
  auto n = batch_.nccl.row(0);
  EXPECT_EQ(n.bytes, 4u << 20);
  EXPECT_EQ(n.count, 1u << 20);
  EXPECT_EQ(n.sequence, 0);
  EXPECT_EQ(str(n.communicator), "0000000000c0ffee");
  EXPECT_EQ(str(n.algorithm), "RING");  // still from the kernel name
  n = batch_.nccl.row(1);
  EXPECT_EQ(n.bytes, 1000u);
  EXPECT_EQ(n.sequence, 1);
  EXPECT_EQ(nccl_decoder_.nccl_join().stats().joined, 3u);
  EXPECT_EQ(batch_.nvtx.size(), 4u);  // the ranges themselves are kept as before
}

TEST_F(CollectDecoderNccl, PayloadWithoutRegisteredSchemaIsCounted) {
  marker(9, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "ncclAllReduce", "NCCL");
  auto d = zeroed<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  auto* data = static_cast<nvtxPayloadData_t*>(std::malloc(sizeof(nvtxPayloadData_t)));
  *data = {kSchema + 1, 8, std::malloc(8)};  // an id CUPTI does not know
  d.id = 9;
  d.cuptiDomainId = kDomain;
  d.payloadKind = CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD;
  d.payload.metricValueNvtxExtendedPayload = reinterpret_cast<uintptr_t>(data);
  ASSERT_TRUE(nccl_decoder_.decode(&d, batch_));
  EXPECT_EQ(nccl_decoder_.undecoded_payloads(), 1u);
  launch(120, 5);
  marker(9, CUPTI_ACTIVITY_FLAG_MARKER_END, 150);
  kernel(5);
  nccl_decoder_.drain_nccl(batch_, true);
  ASSERT_EQ(batch_.nccl.size(), 1u);
  EXPECT_EQ(batch_.nccl.bytes[0], 0u);
  EXPECT_EQ(nccl_decoder_.nccl_join().stats().unjoined, 1u);
}

TEST_F(CollectDecoder, MemcpyPageableVsPinned) {
  auto m = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = 0;
  m.bytes = 1 << 20;
  m.start = 100;
  m.end = 300;
  m.deviceId = 0;
  m.streamId = 7;
  m.correlationId = 9;
  ASSERT_TRUE(decode(&m));
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 4096;
  ASSERT_TRUE(decode(&m));
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
  ASSERT_TRUE(decode(&m));
  ASSERT_EQ(batch_.memcpys.size(), 3u);
  auto a = batch_.memcpys.row(0);
  EXPECT_EQ(a.kind, MemcpyKind::kHtoD);
  EXPECT_EQ(a.src_kind, MemoryKind::kPageable);
  EXPECT_EQ(a.dst_kind, MemoryKind::kDevice);
  EXPECT_FALSE(a.is_async);
  EXPECT_EQ(a.bytes, 1u << 20);
  EXPECT_EQ(a.correlation, 9u);
  auto b = batch_.memcpys.row(1);
  EXPECT_EQ(b.kind, MemcpyKind::kDtoH);
  EXPECT_EQ(b.dst_kind, MemoryKind::kPinned);
  EXPECT_TRUE(b.is_async);
  auto c = batch_.memcpys.row(2);
  EXPECT_EQ(c.src_kind, MemoryKind::kManaged);
  EXPECT_EQ(c.dst_kind, MemoryKind::kDevice);
}

TEST_F(CollectDecoder, PeerToPeerCopy) {
  auto p = zeroed<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  p.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  p.bytes = 64 << 20;
  p.start = 5;
  p.end = 50;
  p.deviceId = 1;
  p.srcDeviceId = 1;
  p.dstDeviceId = 0;
  p.correlationId = 77;
  ASSERT_TRUE(decode(&p));
  // A DtoD between two devices is peer-to-peer too.
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  p.deviceId = 0;
  p.srcDeviceId = 1;
  ASSERT_TRUE(decode(&p));
  ASSERT_EQ(batch_.memcpys.size(), 2u);
  auto r = batch_.memcpys.row(0);
  EXPECT_EQ(r.kind, MemcpyKind::kPtoP);
  EXPECT_EQ(r.device, 1u);
  EXPECT_EQ(r.peer_device, 0u);
  EXPECT_EQ(r.bytes, 64u << 20);
  EXPECT_EQ(batch_.memcpys.row(1).kind, MemcpyKind::kPtoP);
  EXPECT_EQ(batch_.memcpys.row(1).peer_device, 1u);
}

TEST_F(CollectDecoder, Memset) {
  auto m = zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.bytes = 123;
  m.start = 1;
  m.end = 2;
  m.deviceId = 1;
  m.streamId = 3;
  m.correlationId = 4;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
  ASSERT_TRUE(decode(&m));
  auto r = batch_.memsets.row(0);
  EXPECT_EQ(r.bytes, 123u);
  EXPECT_EQ(r.dst_kind, MemoryKind::kDevice);
  EXPECT_TRUE(r.is_async);
  EXPECT_EQ(r.device, 1u);
}

TEST_F(CollectDecoder, SynchronizationKindsAndContextDevice) {
  auto ctx = zeroed<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  ctx.contextId = 11;
  ctx.deviceId = 1;
  ASSERT_TRUE(decode(&ctx));
  const CUpti_ActivitySynchronizationType types[] = {
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE};
  for (auto t : types) {
    auto s = zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    s.type = t;
    s.start = 10;
    s.end = 20;
    s.contextId = 11;
    s.correlationId = 3;
    s.streamId = t == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : 7;
    s.cudaEventId =
        t == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : 99;
    ASSERT_TRUE(decode(&s));
  }
  ASSERT_EQ(batch_.syncs.size(), 4u);
  EXPECT_EQ(batch_.syncs.row(0).kind, SyncKind::kEventSynchronize);
  EXPECT_EQ(batch_.syncs.row(0).event, 99u);
  EXPECT_EQ(batch_.syncs.row(1).kind, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(batch_.syncs.row(2).kind, SyncKind::kStreamSynchronize);
  EXPECT_EQ(batch_.syncs.row(2).event, 0u);
  EXPECT_EQ(batch_.syncs.row(2).stream, 7u);
  EXPECT_EQ(batch_.syncs.row(3).kind, SyncKind::kDeviceSynchronize);
  EXPECT_EQ(batch_.syncs.row(3).stream, 0u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(batch_.syncs.device[i], 1u);
}

TEST_F(CollectDecoder, RuntimeAndDriverApi) {
  auto a = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 1;
  a.end = 4;
  a.threadId = 1234;
  a.correlationId = 42;
  ASSERT_TRUE(decode(&a));
  auto d = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  d.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
  d.correlationId = 43;
  d.returnValue = 1;
  ASSERT_TRUE(decode(&d));
  auto unknown = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  unknown.cbid = 9999;
  ASSERT_TRUE(decode(&unknown));
  ASSERT_EQ(batch_.api.size(), 3u);
  auto r = batch_.api.row(0);
  EXPECT_EQ(r.domain, ApiDomain::kRuntime);
  EXPECT_EQ(str(r.name), "cudaLaunchKernel_v7000");
  EXPECT_EQ(r.thread, 1234u);
  EXPECT_EQ(r.correlation, 42u);
  EXPECT_EQ(r.callback_id, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  auto q = batch_.api.row(1);
  EXPECT_EQ(q.domain, ApiDomain::kDriver);
  EXPECT_EQ(str(q.name), "cuLaunchKernelEx");
  EXPECT_EQ(q.return_code, 1);
  EXPECT_EQ(str(batch_.api.row(2).name), "driver_cbid_9999");
}

// A call timed in the collector's own callbacks gives the row its activity
// record would, correlation shifted into the generation like every record.
TEST_F(CollectDecoder, ApiCallFromCallbacksMatchesTheActivityRecord) {
  auto a = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 10;
  a.end = 25;
  a.threadId = 99;
  a.correlationId = 5;
  a.returnValue = 2;
  ASSERT_TRUE(decode(&a));
  CuptiDecoder::ApiCall c;
  c.start = 10;
  c.end = 25;
  c.thread = 99;
  c.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  c.correlation = 5;
  c.return_code = 2;
  c.domain = ApiDomain::kRuntime;
  decoder_.decode_api_call(c, batch_);
  ASSERT_EQ(batch_.api.size(), 2u);
  auto x = batch_.api.row(0), y = batch_.api.row(1);
  EXPECT_EQ(x.start, y.start);
  EXPECT_EQ(x.end, y.end);
  EXPECT_EQ(x.thread, y.thread);
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.callback_id, y.callback_id);
  EXPECT_EQ(x.correlation, y.correlation);
  EXPECT_EQ(x.return_code, y.return_code);
  EXPECT_EQ(x.domain, y.domain);
  // After a detach CUPTI numbers from 1 again: the call moves past every id seen, as a record would.
  decoder_.new_generation();
  c.correlation = 1;
  decoder_.decode_api_call(c, batch_);
  EXPECT_GT(batch_.api.row(2).correlation, 5u);
}

TEST_F(CollectDecoder, NvtxRangesPairAcrossBatchesAndMarks) {
  auto start = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.timestamp = 100;
  start.id = 1;
  start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  start.objectId.pt.threadId = 77;
  start.name = "step 0";
  start.domain = nullptr;
  ASSERT_TRUE(decode(&start));
  auto nested = start;
  nested.id = 2;
  nested.timestamp = 110;
  nested.name = "ncclAllReduce";
  nested.domain = "NCCL";
  ASSERT_TRUE(decode(&nested));
  EXPECT_EQ(decoder_.open_ranges(), 2u);
  EXPECT_EQ(batch_.nvtx.size(), 0u);

  auto end = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.id = 2;
  end.timestamp = 150;
  ASSERT_TRUE(decode(&end));
  trace::Trace next_batch;  // the outer range ends in a later buffer
  end.id = 1;
  end.timestamp = 200;
  ASSERT_TRUE(decoder_.decode(&end, next_batch));
  auto mark = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  mark.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  mark.timestamp = 120;
  mark.name = "checkpoint";
  ASSERT_TRUE(decode(&mark));
  end.id = 55;  // an end without a start is counted, not invented
  ASSERT_TRUE(decode(&end));

  ASSERT_EQ(batch_.nvtx.size(), 2u);
  auto inner = batch_.nvtx.row(0);
  EXPECT_EQ(inner.start, 110);
  EXPECT_EQ(inner.end, 150);
  EXPECT_EQ(str(inner.text), "ncclAllReduce");
  EXPECT_EQ(str(inner.domain), "NCCL");
  EXPECT_EQ(inner.thread, 77u);
  EXPECT_EQ(inner.kind, trace::NvtxKind::kRange);
  auto m = batch_.nvtx.row(1);
  EXPECT_EQ(m.kind, trace::NvtxKind::kMark);
  EXPECT_EQ(m.start, m.end);
  ASSERT_EQ(next_batch.nvtx.size(), 1u);
  EXPECT_EQ(str(next_batch.nvtx.text[0]), "step 0");
  EXPECT_EQ(next_batch.nvtx.start[0], 100);
  EXPECT_EQ(next_batch.nvtx.end[0], 200);
  EXPECT_EQ(decoder_.open_ranges(), 0u);
  EXPECT_EQ(decoder_.unmatched_range_ends(), 1u);
}

// After cuptiFinalize and a new attach, CUPTI may number correlations and
// markers from the start again: the next generation must not join with the
// old one.
TEST_F(CollectDecoder, NewGenerationKeepsCorrelationsApartAndCutsOpenRanges) {
  auto launch = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  launch.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  launch.correlationId = 5;
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "_Z6squarePfi";
  k.correlationId = 5;
  k.start = 100;
  k.end = 200;
  ASSERT_TRUE(decode(&launch));
  ASSERT_TRUE(decode(&k));
  launch.correlationId = 9;
  ASSERT_TRUE(decode(&launch));
  auto open = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  open.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  open.id = 1;
  open.name = "spans the detach";
  ASSERT_TRUE(decode(&open));

  decoder_.new_generation();
  EXPECT_EQ(decoder_.open_ranges(), 0u);
  EXPECT_EQ(decoder_.ranges_cut_by_detach(), 1u);
  launch.correlationId = 5;  // numbering started over
  k.correlationId = 5;
  ASSERT_TRUE(decode(&launch));
  ASSERT_TRUE(decode(&k));
  auto end = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.id = 1;  // the old range's id, now meaning nothing
  ASSERT_TRUE(decode(&end));
  EXPECT_EQ(batch_.nvtx.size(), 0u);
  EXPECT_EQ(decoder_.unmatched_range_ends(), 1u);

  ASSERT_EQ(batch_.api.size(), 3u);
  ASSERT_EQ(batch_.kernels.size(), 2u);
  EXPECT_EQ(batch_.api.correlation[0], 5u);
  EXPECT_EQ(batch_.kernels.correlation[0], 5u);
  EXPECT_EQ(batch_.api.correlation[2], 14u);      // past the old generation's highest (9)
  EXPECT_EQ(batch_.kernels.correlation[1], 14u);  // still joined with its own launch
  auto none = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  ASSERT_TRUE(decode(&none));
  EXPECT_EQ(batch_.api.correlation[3], 0u);  // 0 stays "no correlation"
}

TEST_F(CollectDecoder, OpenRangesAreBounded) {
  auto start = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.name = "leak";
  for (uint32_t i = 0; i < CuptiDecoder::kMaxOpenRanges + 10; ++i) {
    start.id = i;
    decode(&start);
  }
  EXPECT_EQ(decoder_.open_ranges(), CuptiDecoder::kMaxOpenRanges);
  EXPECT_EQ(decoder_.unmatched_range_ends(), 10u);
}

// A forced flush hands over records of GPU work not yet finished, with
// timestamp 0: counted and left out, so one cannot stretch the trace from
// 0 to now (a killed run's wall time read 1.8e18 ns before this).
TEST_F(CollectDecoder, UnfinishedGpuRecordsAreCountedNotRecorded) {
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "_Z6squarePfi";
  k.correlationId = 1;
  ASSERT_TRUE(decode(&k));              // start and end 0
  k.start = 1'796'035'686'390'749'185;  // started, not ended
  ASSERT_TRUE(decode(&k));
  k.end = k.start - 1;  // ends before it starts
  ASSERT_TRUE(decode(&k));
  k.name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
  k.end = 0;
  ASSERT_TRUE(decode(&k));  // an NCCL kernel: no NCCL row either
  auto m = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.start = 5;
  ASSERT_TRUE(decode(&m));
  auto p = zeroed<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  ASSERT_TRUE(decode(&p));
  auto ms = zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  ASSERT_TRUE(decode(&ms));
  auto sync = zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  ASSERT_TRUE(decode(&sync));
  EXPECT_EQ(decoder_.incomplete_records(), 8u);
  decoder_.drain_nccl(batch_, /*force=*/true);
  EXPECT_EQ(
      batch_.kernels.size() + batch_.memcpys.size() + batch_.memsets.size() + batch_.syncs.size() + batch_.nccl.size(),
      0u);
  // A finished one right after is kept.
  k.start = 10;
  k.end = 20;
  k.name = "_Z6squarePfi";
  ASSERT_TRUE(decode(&k));
  EXPECT_EQ(batch_.kernels.size(), 1u);
  EXPECT_EQ(decoder_.incomplete_records(), 8u);
}

TEST_F(CollectDecoder, DeviceRecordAndUnknownKinds) {
  auto d = zeroed<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.id = 1;
  d.name = "NVIDIA H200";
  d.numMultiprocessors = 132;
  d.globalMemorySize = 150ull << 30;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  for (int i = 0; i < 16; ++i) d.uuid.bytes[i] = static_cast<char>(i);
  ASSERT_TRUE(decode(&d));
  ASSERT_TRUE(decode(&d));  // the same device again replaces, not duplicates
  ASSERT_EQ(decoder_.devices().size(), 1u);
  const auto& info = decoder_.devices()[0];
  EXPECT_EQ(info.name, "NVIDIA H200");
  EXPECT_EQ(info.sm_count, 132u);
  EXPECT_EQ(info.compute_major, 9);
  EXPECT_EQ(info.uuid, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  auto other = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  EXPECT_FALSE(decode(&other));
  EXPECT_EQ(batch_.event_count(), 0u);
}

}  // namespace
}  // namespace scalescope::collect
