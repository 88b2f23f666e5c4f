#pragma once
// Turns CUPTI activity records into trace records. A plain class over record
// structs, with no CUPTI library call, so that tests feed it synthetic records
// built from cupti_activity.h (the struct versions CUDA 13 emits:
// Kernel10, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, Marker2, API,
// Device5, Context3).
//
//   CuptiDecoder dec(strings, resolver);
//   for (record in buffer) dec.decode(record, batch);  // batch: a fresh Trace

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collect/nccl_nvtx_joiner.hpp"
#include "collect/nccl_nvtx_payload.hpp"
#include "trace/model/trace.hpp"

struct nvtxPayloadSchemaAttr_v1;  // nvToolsExtPayload.h's nvtxPayloadSchemaAttr_t

namespace scalescope::collect {

// A registered payload schema (NVTX's attributes, as CUPTI or the collector's
// hooks keep them) as the payload decoder reads it.
PayloadSchema schema_from_nvtx(uint64_t id, const nvtxPayloadSchemaAttr_v1& a);

// Names an API call: (domain, CUPTI callback id) -> "cudaLaunchKernel".
using ApiNameResolver = std::function<std::string(trace::ApiDomain, uint32_t cbid)>;
// CUPTI's cuptiActivityGetNvtxExtPayloadAttr: the schema or enum registered
// under `id` in CUPTI's NVTX domain `domain`. Sets *type (1 schema, 2 enum)
// and *attributes (nvtxPayloadSchemaAttr_t* or nvtxPayloadEnumAttr_t*).
using NvtxPayloadAttrResolver =
    std::function<bool(uint32_t domain, uint64_t id, uint32_t* type, const void** attributes)>;

// One range or mark the collector's own NVTX hooks recorded inside a window.
struct HookedNvtxEvent {
  uint64_t start = 0, end = 0;  // CUPTI's clock; equal for a mark
  uint32_t thread = 0;          // the OS thread id, as CUPTI's records (system thread ids)
  bool mark = false;
  uint32_t domain = 0;  // 0: NVTX's default domain; else the order of nvtxDomainCreate
  std::string domain_name, text;
  uint64_t schema_id = 0;  // the first extended payload's schema (0: none)
  std::vector<uint8_t> payload;
};

class CuptiDecoder {
 public:
  // Interns every name into `strings`, which outlives the decoder and is
  // shared by every batch (the trace writer's string table).
  CuptiDecoder(trace::StringTable& strings, ApiNameResolver resolver, NvtxPayloadAttrResolver payloads = nullptr);

  // Appends what `record` (a CUpti_Activity*, an anonymous struct that cannot
  // be forward-declared) describes to `batch`'s tables. Returns false for
  // kinds it does not decode. A kernel of NCCL also gets an NcclTable row,
  // but only through drain_nccl(): the row waits for the bytes, communicator
  // and sequence of its call (NCCL's NVTX range and payload, MARKER_DATA
  // records whose payload copies this decoder frees).
  bool decode(const void* record, trace::Trace& batch);
  // One API call timed by the collector's own CUPTI callbacks (enter and exit
  // timestamps, SCALESCOPE_API_RECORDS=callbacks): the same row a RUNTIME or
  // DRIVER activity record of that call gives, correlation id shifted into
  // this generation as for every record.
  struct ApiCall {
    uint64_t start = 0, end = 0;
    uint32_t thread = 0;
    uint32_t cbid = 0;
    uint32_t correlation = 0;
    int32_t return_code = 0;
    trace::ApiDomain domain = trace::ApiDomain::kRuntime;
  };
  void decode_api_call(const ApiCall& call, trace::Trace& batch);
  // One range or mark recorded by the collector's own NVTX hooks
  // (SCALESCOPE_NVTX_RECORDS=hooks, nvtx_hooks.hpp) instead of CUPTI's MARKER
  // records: the same NVTX row, and for a range of domain "NCCL" its call
  // from the extended payload, decoded by the schema registered under
  // (domain, schema_id) as the payload resolver finds it.
  void decode_hooked_nvtx(const HookedNvtxEvent& e, trace::Trace& batch);
  // Moves the NCCL rows that are joined, or waited long enough, to `batch`
  // (all of them when `force`: at the end). Call once per flush.
  void drain_nccl(trace::Trace& batch, bool force);
  const NcclNvtxJoiner& nccl_join() const { return nccl_join_; }
  NcclNvtxJoiner& nccl_join() { return nccl_join_; }
  // NCCL payloads that could not be decoded (no schema registered with CUPTI).
  uint64_t undecoded_payloads() const { return undecoded_payloads_; }
  // GPU records (kernel, copy, memset, sync) handed over unfinished by a
  // forced flush (timestamp 0): counted, not recorded.
  uint64_t incomplete_records() const { return incomplete_records_; }

  // Devices seen in DEVICE records, for Metadata::devices.
  const std::vector<trace::DeviceInfo>& devices() const { return devices_; }
  // NVTX ranges started and not yet ended (bounded: see kMaxOpenRanges).
  size_t open_ranges() const { return open_ranges_.size(); }
  // Ranges whose start was never seen or that overflowed the open set.
  uint64_t unmatched_range_ends() const { return unmatched_range_ends_; }

  // CUPTI was detached (cuptiFinalize) and attached again between windows:
  // its correlation and marker ids may start over, so later records are
  // shifted past every correlation id seen so far, and NVTX ranges still open
  // are cut (their ends, if any, come from the old numbering).
  void new_generation();
  // Ranges open when a generation ended, dropped with it.
  uint64_t ranges_cut_by_detach() const { return ranges_cut_by_detach_; }

  static constexpr size_t kMaxOpenRanges = 1 << 16;

 private:
  struct OpenRange {
    trace::Timestamp start;
    trace::StringId domain, text;
    uint32_t thread;
    bool nccl;  // domain "NCCL": its end goes to the NCCL join
  };
  struct CachedName {
    std::string raw;
    trace::StringId id;
    bool is_nccl;
    trace::NcclRecord nccl;  // op, datatype, algorithm, protocol filled
  };

  const CachedName& kernel_name(const char* raw);
  trace::StringId api_name(trace::ApiDomain domain, uint32_t cbid);
  bool is_launch(trace::StringId api);
  uint32_t device_of_context(uint32_t context_id) const;
  // decode's steps, one per kind of record (raw: the record of that kind).
  bool decode_kernel(const void* raw, trace::Trace& batch);
  bool decode_memcpy(const void* raw, trace::Trace& batch);
  template <class CuptiMemcpy>
  trace::MemcpyRecord memcpy_record(const CuptiMemcpy& m);
  bool decode_peer_memcpy(const void* raw, trace::Trace& batch);
  bool decode_memset(const void* raw, trace::Trace& batch);
  bool decode_sync(const void* raw, trace::Trace& batch);
  bool decode_api_activity(const void* raw, trace::Trace& batch);
  bool decode_marker(const void* raw, trace::Trace& batch);
  bool decode_device(const void* raw);
  void decode_marker_payload(uint32_t marker_id, uint32_t cupti_domain, const void* payload_data);
  void decode_nccl_payload(uint32_t marker_id, trace::StringId range_name, uint32_t cupti_domain, uint64_t schema_id,
                           std::span<const uint8_t> bytes);
  std::optional<NcclNvtxCall> nccl_call_of(trace::StringId range_name, uint32_t domain, uint64_t schema_id,
                                           std::span<const uint8_t> bytes);

  trace::StringTable& strings_;
  ApiNameResolver resolver_;
  // CUPTI shares one name pointer across all records of a kernel, so the
  // pointer is a cheap key; the stored text guards against reuse in tests.
  std::unordered_map<const char*, CachedName> kernel_names_;
  std::unordered_map<uint64_t, trace::StringId> api_names_;
  std::unordered_map<uint32_t, OpenRange> open_ranges_;
  std::unordered_map<uint32_t, uint32_t> context_device_;
  std::vector<trace::DeviceInfo> devices_;
  uint64_t unmatched_range_ends_ = 0;

  NvtxPayloadAttrResolver payloads_;
  NcclNvtxJoiner nccl_join_;
  std::unordered_map<uint32_t, NcclNvtxCall> marker_calls_;  // by marker id, until the range ends
  struct EarlyPayload {
    uint32_t domain;
    uint64_t schema_id;
    std::vector<uint8_t> bytes;
  };
  static constexpr size_t kMaxEarlyPayloads = 1024;
  std::unordered_map<uint32_t, EarlyPayload> early_payloads_;  // MARKER_DATA before its MARKER start
  // Registered schemas and enums by (CUPTI domain, id); nullopt: not found.
  std::map<std::pair<uint32_t, uint64_t>, std::optional<PayloadSchema>> schemas_;
  std::map<std::pair<uint32_t, uint64_t>, std::optional<PayloadEnum>> enums_;
  std::unordered_map<trace::StringId, bool> launch_names_;
  uint64_t undecoded_payloads_ = 0;
  uint64_t incomplete_records_ = 0;
  uint32_t correlation(uint32_t cupti_id);  // shifted into this generation's range
  uint32_t correlation_offset_ = 0, max_correlation_ = 0;
  uint64_t ranges_cut_by_detach_ = 0;
};

// Demangles a C++ symbol ("_Z6kernelPf" -> "kernel(float*)"); returns the
// input when it is not mangled.
std::string demangle(const char* name);

}  // namespace scalescope::collect
