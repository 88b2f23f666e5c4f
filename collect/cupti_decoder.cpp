#include "collect/cupti_decoder.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include <cupti_activity.h>
// Types only: the collector hands NVTX to CUPTI, it implements nothing of NVTX.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtPayload.h>

#include "trace/model/nccl_kernel_name.hpp"

namespace scalescope::collect {
namespace {

using trace::MemcpyKind;
using trace::MemoryKind;
using trace::SyncKind;

trace::Timestamp ts(uint64_t t) { return static_cast<trace::Timestamp>(t); }

MemcpyKind memcpy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return MemcpyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return MemcpyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return MemcpyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::kPtoP;
    default: return MemcpyKind::kUnknown;
  }
}

MemoryKind memory_kind(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::kManaged;
    default: return MemoryKind::kUnknown;
  }
}

SyncKind sync_kind(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncKind::kEventSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncKind::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncKind::kStreamSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncKind::kDeviceSynchronize;
    default: return SyncKind::kUnknown;
  }
}

// Copies of what CUPTI returns for a registered schema or enum, bounded: the
// job registered them.
constexpr size_t kMaxSchemaEntries = 256;
constexpr size_t kMaxPayloadBytes = 64 << 10;

std::string bounded(const char* s) { return s ? std::string(s, strnlen(s, 256)) : std::string(); }

PayloadEnum enum_from_nvtx(uint64_t id, const nvtxPayloadEnumAttr_t& a) {
  PayloadEnum out;
  out.id = id;
  if (a.sizeOfEnum != 0) out.size = a.sizeOfEnum;
  if (a.entries)
    for (size_t i = 0; i < std::min(a.numEntries, kMaxSchemaEntries); ++i)
      out.values.emplace_back(bounded(a.entries[i].name), a.entries[i].value);
  return out;
}

std::string format_uuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char out[64];
  std::snprintf(out, sizeof(out), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

// A payload schema or enum of a domain: asked of CUPTI once and kept, its
// absence too.
template <typename Described, typename Attr, typename Convert>
const Described* described_once(std::map<std::pair<uint32_t, uint64_t>, std::optional<Described>>& cache,
                                const NvtxPayloadAttrResolver& payloads, uint32_t domain, uint64_t id,
                                uint32_t wanted_type, Convert convert) {
  const auto key = std::make_pair(domain, id);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::optional<Described> found;
    uint32_t type = 0;
    const void* attr = nullptr;
    if (payloads && payloads(domain, id, &type, &attr) && attr && type == wanted_type)
      found = convert(id, *static_cast<const Attr*>(attr));
    it = cache.emplace(key, std::move(found)).first;
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace

// CUPTI's copies of the attributes are read whatever their fieldMask says
// (NCCL sets it, a tool's copy may not): pointers and counts decide.
PayloadSchema schema_from_nvtx(uint64_t id, const nvtxPayloadSchemaAttr_v1& a) {
  PayloadSchema out;
  out.id = id;
  if (a.type != 0) out.schema_type = a.type;
  out.static_size = a.payloadStaticSize;
  if (a.entries) {
    size_t n = a.numEntries;
    if (n == 0)  // no count: the array ends with an entry of type 0
      while (n < kMaxSchemaEntries && a.entries[n].type != 0) ++n;
    n = std::min(n, kMaxSchemaEntries);
    for (size_t i = 0; i < n; ++i) {
      const nvtxPayloadSchemaEntry_t& e = a.entries[i];
      out.entries.push_back({e.flags, e.type, bounded(e.name), e.arrayOrUnionDetail, e.offset});
    }
  }
  return out;
}


std::string demangle(const char* name) {
  if (name == nullptr) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

CuptiDecoder::CuptiDecoder(trace::StringTable& strings, ApiNameResolver resolver, NvtxPayloadAttrResolver payloads)
    : strings_(strings), resolver_(std::move(resolver)), payloads_(std::move(payloads)) {}

bool CuptiDecoder::is_launch(trace::StringId api) {
  auto it = launch_names_.find(api);
  if (it != launch_names_.end()) return it->second;
  std::string_view name = strings_.view(api);
  bool launch = name.starts_with("cuLaunch") || name.starts_with("cudaLaunch");
  launch_names_.emplace(api, launch);
  return launch;
}

void CuptiDecoder::decode_marker_payload(uint32_t marker_id, uint32_t cupti_domain, const void* raw) {
  auto* data = static_cast<nvtxPayloadData_t*>(const_cast<void*>(raw));
  if (data->payload) {
    std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data->payload), std::min(data->size, kMaxPayloadBytes));
    auto open = open_ranges_.find(marker_id);
    if (open != open_ranges_.end()) {
      if (open->second.nccl) decode_nccl_payload(marker_id, open->second.text, cupti_domain, data->schemaId, bytes);
    } else {
      // Its range's start record has not come yet: keep a copy until it does.
      // Copies whose start never came are dropped together when the set is full.
      if (early_payloads_.size() >= kMaxEarlyPayloads) early_payloads_.clear();
      early_payloads_[marker_id] = {cupti_domain, data->schemaId, std::vector<uint8_t>(bytes.begin(), bytes.end())};
    }
  }
  // CUPTI allocated the copy of the payload and its descriptor; the reader frees them.
  std::free(const_cast<void*>(data->payload));
  std::free(data);
}

void CuptiDecoder::decode_nccl_payload(uint32_t marker_id, trace::StringId range_name, uint32_t cupti_domain,
                                       uint64_t schema_id, std::span<const uint8_t> bytes) {
  auto call = nccl_call_of(range_name, cupti_domain, schema_id, bytes);
  if (call && marker_calls_.size() < kMaxOpenRanges) marker_calls_[marker_id] = *call;
}

void CuptiDecoder::decode_hooked_nvtx(const HookedNvtxEvent& e, trace::Trace& batch) {
  trace::NvtxRecord r;
  r.start = ts(e.start);
  r.end = ts(e.mark ? e.start : e.end);
  r.kind = e.mark ? trace::NvtxKind::kMark : trace::NvtxKind::kRange;
  r.domain = strings_.intern(e.domain_name);
  r.text = strings_.intern(e.text);
  r.thread = e.thread;
  batch.nvtx.push(r);
  if (e.mark || e.domain_name != "NCCL") return;
  std::optional<NcclNvtxCall> call;
  if (e.schema_id != 0 && !e.payload.empty()) call = nccl_call_of(r.text, e.domain, e.schema_id, e.payload);
  nccl_join_.add_range(r.thread, r.start, r.end, std::move(call));
}

std::optional<NcclNvtxCall> CuptiDecoder::nccl_call_of(trace::StringId range_name, uint32_t cupti_domain,
                                                       uint64_t schema_id, std::span<const uint8_t> bytes) {
  const PayloadSchema* schema = described_once<PayloadSchema, nvtxPayloadSchemaAttr_t>(
      schemas_, payloads_, cupti_domain, schema_id, CUPTI_NVTX_EXT_PAYLOAD_TYPE_SCHEMA,
      [](uint64_t id, const nvtxPayloadSchemaAttr_t& a) { return schema_from_nvtx(id, a); });
  if (!schema) {
    ++undecoded_payloads_;
    return std::nullopt;
  }
  auto enums = [this, cupti_domain](uint64_t id) {
    return described_once<PayloadEnum, nvtxPayloadEnumAttr_t>(
        enums_, payloads_, cupti_domain, id, CUPTI_NVTX_EXT_PAYLOAD_TYPE_ENUM,
        [](uint64_t enum_id, const nvtxPayloadEnumAttr_t& a) { return enum_from_nvtx(enum_id, a); });
  };
  auto call = nccl_call_from_payload(strings_.view(range_name), decode_payload(bytes, *schema, enums));
  if (call && call->op == trace::NcclOp::kUnknown && call->bytes) call->op = nccl_op_from_schema_id(schema_id);
  return call;
}

uint32_t CuptiDecoder::correlation(uint32_t cupti_id) {
  if (cupti_id == 0) return 0;  // 0: no correlation
  uint32_t c = cupti_id + correlation_offset_;
  if (c > max_correlation_) max_correlation_ = c;
  return c;
}

void CuptiDecoder::new_generation() {
  correlation_offset_ = max_correlation_;
  ranges_cut_by_detach_ += open_ranges_.size();
  open_ranges_.clear();
  marker_calls_.clear();
  early_payloads_.clear();
}

void CuptiDecoder::drain_nccl(trace::Trace& batch, bool force) { nccl_join_.drain(batch.nccl, strings_, force); }

const CuptiDecoder::CachedName& CuptiDecoder::kernel_name(const char* raw) {
  static const CachedName kUnnamed{"", trace::kNoString, false, {}};
  if (raw == nullptr) return kUnnamed;
  auto it = kernel_names_.find(raw);
  if (it != kernel_names_.end() && it->second.raw == raw) return it->second;
  CachedName c{raw, trace::kNoString, false, {}};
  std::string pretty = demangle(raw);
  c.id = strings_.intern(pretty);
  if (auto n = trace::parse_nccl_kernel_name(pretty)) {
    c.is_nccl = true;
    c.nccl.op = n->op;
    c.nccl.datatype = strings_.intern(n->datatype);
    c.nccl.algorithm = strings_.intern(n->algorithm);
    c.nccl.protocol = strings_.intern(n->protocol);
  }
  return kernel_names_.insert_or_assign(raw, std::move(c)).first->second;
}

trace::StringId CuptiDecoder::api_name(trace::ApiDomain domain, uint32_t cbid) {
  uint64_t key = (uint64_t{static_cast<uint8_t>(domain)} << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  std::string name = resolver_ ? resolver_(domain, cbid) : std::string();
  if (name.empty()) name = std::string(trace::to_string(domain)) + "_cbid_" + std::to_string(cbid);
  trace::StringId id = strings_.intern(name);
  api_names_.emplace(key, id);
  return id;
}

uint32_t CuptiDecoder::device_of_context(uint32_t context_id) const {
  auto it = context_device_.find(context_id);
  return it == context_device_.end() ? 0 : it->second;
}

// A forced flush (cuptiActivityFlushAll with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED,
// as at exit, at a detach, or when a job is killed mid-kernel) also hands over
// records of GPU work that had not finished: their timestamps are 0. Kept, one
// such kernel made a killed run's wall time 1.8e18 ns (the span from 0 to
// now), so they are counted and left out.
namespace {
bool unfinished(uint64_t start, uint64_t end) { return trace::unfinished_span(ts(start), ts(end)); }
}  // namespace

void CuptiDecoder::decode_api_call(const ApiCall& call, trace::Trace& batch) {
  trace::ApiRecord r;
  r.start = ts(call.start);
  r.end = ts(call.end);
  r.thread = call.thread;
  r.domain = call.domain;
  r.callback_id = call.cbid;
  r.name = api_name(call.domain, call.cbid);
  r.correlation = correlation(call.correlation);
  r.return_code = call.return_code;
  batch.api.push(r);
  if (is_launch(r.name)) nccl_join_.add_launch(r.thread, r.start, r.correlation);
}

bool CuptiDecoder::decode(const void* raw, trace::Trace& batch) {
  const auto* record = static_cast<const CUpti_Activity*>(raw);
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return decode_kernel(raw, batch);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return decode_memcpy(raw, batch);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return decode_peer_memcpy(raw, batch);
    case CUPTI_ACTIVITY_KIND_MEMSET: return decode_memset(raw, batch);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return decode_sync(raw, batch);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return decode_api_activity(raw, batch);
    case CUPTI_ACTIVITY_KIND_MARKER: return decode_marker(raw, batch);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
      const auto* d = reinterpret_cast<const CUpti_ActivityMarkerData2*>(record);
      if (d->payloadKind == CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD && d->payload.metricValueNvtxExtendedPayload)
        decode_marker_payload(
            d->id, d->cuptiDomainId,
            reinterpret_cast<const void*>(static_cast<uintptr_t>(d->payload.metricValueNvtxExtendedPayload)));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(record);
      context_device_[c->contextId] = c->deviceId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: return decode_device(raw);
    default: return false;
  }
}

inline bool CuptiDecoder::decode_kernel(const void* raw, trace::Trace& batch) {
  const auto* k = static_cast<const CUpti_ActivityKernel10*>(raw);
  if (unfinished(k->start, k->end)) return ++incomplete_records_, true;
  const CachedName& name = kernel_name(k->name);
  trace::KernelRecord r;
  r.start = ts(k->start);
  r.end = ts(k->end);
  r.device = k->deviceId;
  r.stream = k->streamId;
  r.name = name.id;
  r.grid_x = static_cast<uint32_t>(k->gridX);
  r.grid_y = static_cast<uint32_t>(k->gridY);
  r.grid_z = static_cast<uint32_t>(k->gridZ);
  r.block_x = static_cast<uint32_t>(k->blockX);
  r.block_y = static_cast<uint32_t>(k->blockY);
  r.block_z = static_cast<uint32_t>(k->blockZ);
  r.registers_per_thread = k->registersPerThread;
  r.shared_memory_bytes = static_cast<uint32_t>(k->staticSharedMemory) + static_cast<uint32_t>(k->dynamicSharedMemory);
  r.correlation = correlation(k->correlationId);
  batch.kernels.push(r);
  if (name.is_nccl) {
    trace::NcclRecord n = name.nccl;
    n.start = r.start;
    n.end = r.end;
    n.device = r.device;
    n.stream = r.stream;
    n.correlation = r.correlation;
    nccl_join_.add_kernel(n);  // leaves through drain_nccl()
  }
  return true;
}

// The fields of a copy record that a copy between host and device and one
// between devices share.
template <class CuptiMemcpy>
inline trace::MemcpyRecord CuptiDecoder::memcpy_record(const CuptiMemcpy& m) {
  trace::MemcpyRecord r;
  r.start = ts(m.start);
  r.end = ts(m.end);
  r.device = m.deviceId;
  r.stream = m.streamId;
  r.correlation = correlation(m.correlationId);
  r.bytes = m.bytes;
  r.kind = memcpy_kind(m.copyKind);
  r.src_kind = memory_kind(m.srcKind);
  r.dst_kind = memory_kind(m.dstKind);
  r.is_async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  return r;
}

inline bool CuptiDecoder::decode_memcpy(const void* raw, trace::Trace& batch) {
  const auto* m = static_cast<const CUpti_ActivityMemcpy6*>(raw);
  if (unfinished(m->start, m->end)) return ++incomplete_records_, true;
  trace::MemcpyRecord r = memcpy_record(*m);
  r.peer_device = m->deviceId;
  batch.memcpys.push(r);
  return true;
}

inline bool CuptiDecoder::decode_peer_memcpy(const void* raw, trace::Trace& batch) {
  const auto* m = static_cast<const CUpti_ActivityMemcpyPtoP4*>(raw);
  if (unfinished(m->start, m->end)) return ++incomplete_records_, true;
  trace::MemcpyRecord r = memcpy_record(*m);
  if (r.kind == MemcpyKind::kUnknown || r.kind == MemcpyKind::kDtoD) {
    if (m->srcDeviceId != m->dstDeviceId) r.kind = MemcpyKind::kPtoP;
  }
  // The record's device is the one that ran the copy; the peer is the other end.
  r.peer_device = m->srcDeviceId == m->deviceId ? m->dstDeviceId : m->srcDeviceId;
  batch.memcpys.push(r);
  return true;
}

inline bool CuptiDecoder::decode_memset(const void* raw, trace::Trace& batch) {
  const auto* m = static_cast<const CUpti_ActivityMemset4*>(raw);
  if (unfinished(m->start, m->end)) return ++incomplete_records_, true;
  trace::MemsetRecord r;
  r.start = ts(m->start);
  r.end = ts(m->end);
  r.device = m->deviceId;
  r.stream = m->streamId;
  r.correlation = correlation(m->correlationId);
  r.bytes = m->bytes;
  r.dst_kind = memory_kind(m->memoryKind);
  r.is_async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
  batch.memsets.push(r);
  return true;
}

inline bool CuptiDecoder::decode_sync(const void* raw, trace::Trace& batch) {
  const auto* s = static_cast<const CUpti_ActivitySynchronization2*>(raw);
  if (unfinished(s->start, s->end)) return ++incomplete_records_, true;
  trace::SyncRecord r;
  r.start = ts(s->start);
  r.end = ts(s->end);
  r.kind = sync_kind(s->type);
  r.device = device_of_context(s->contextId);
  r.stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId;
  r.event = s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->cudaEventId;
  r.correlation = correlation(s->correlationId);
  batch.syncs.push(r);
  return true;
}

inline bool CuptiDecoder::decode_api_activity(const void* raw, trace::Trace& batch) {
  const auto* a = static_cast<const CUpti_ActivityAPI*>(raw);
  ApiCall call;
  call.start = a->start;
  call.end = a->end;
  call.thread = a->threadId;
  call.cbid = a->cbid;
  call.correlation = a->correlationId;
  call.return_code = static_cast<int32_t>(a->returnValue);
  call.domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? trace::ApiDomain::kRuntime : trace::ApiDomain::kDriver;
  decode_api_call(call, batch);
  return true;
}

inline bool CuptiDecoder::decode_marker(const void* raw, trace::Trace& batch) {
  const auto* m = static_cast<const CUpti_ActivityMarker2*>(raw);
  uint32_t thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
  if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    trace::NvtxRecord r;
    r.start = r.end = ts(m->timestamp);
    r.kind = trace::NvtxKind::kMark;
    r.domain = strings_.intern(m->domain ? m->domain : "");
    r.text = strings_.intern(m->name ? m->name : "");
    r.thread = thread;
    batch.nvtx.push(r);
    return true;
  }
  if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    if (open_ranges_.size() >= kMaxOpenRanges) {
      ++unmatched_range_ends_;  // a leak of never-ended ranges must not grow memory
      return true;
    }
    const bool nccl = m->domain && std::strcmp(m->domain, "NCCL") == 0;
    const trace::StringId text = strings_.intern(m->name ? m->name : "");
    open_ranges_[m->id] = {ts(m->timestamp), strings_.intern(m->domain ? m->domain : ""), text, thread, nccl};
    if (auto early = early_payloads_.find(m->id); early != early_payloads_.end()) {
      if (nccl) decode_nccl_payload(m->id, text, early->second.domain, early->second.schema_id, early->second.bytes);
      early_payloads_.erase(early);
    }
    return true;
  }
  if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(m->id);
    if (it == open_ranges_.end()) {
      ++unmatched_range_ends_;
      return true;
    }
    trace::NvtxRecord r;
    r.start = it->second.start;
    r.end = ts(m->timestamp);
    r.kind = trace::NvtxKind::kRange;
    r.domain = it->second.domain;
    r.text = it->second.text;
    r.thread = it->second.thread;
    if (it->second.nccl) {
      auto call = marker_calls_.find(m->id);
      std::optional<NcclNvtxCall> c;
      if (call != marker_calls_.end()) {
        c = call->second;
        marker_calls_.erase(call);
      }
      nccl_join_.add_range(r.thread, r.start, r.end, std::move(c));
    }
    open_ranges_.erase(it);
    batch.nvtx.push(r);
    return true;
  }
  return false;
}

inline bool CuptiDecoder::decode_device(const void* raw) {
  const auto* d = static_cast<const CUpti_ActivityDevice5*>(raw);
  trace::DeviceInfo info;
  info.id = d->id;
  info.name = d->name ? d->name : "";
  info.uuid = format_uuid(d->uuid);
  info.sm_count = d->numMultiprocessors;
  info.memory_bytes = d->globalMemorySize;
  info.compute_major = static_cast<int32_t>(d->computeCapabilityMajor);
  info.compute_minor = static_cast<int32_t>(d->computeCapabilityMinor);
  for (auto& known : devices_)
    if (known.id == info.id) {
      known = info;
      return true;
    }
  devices_.push_back(info);
  return true;
}

}  // namespace scalescope::collect
