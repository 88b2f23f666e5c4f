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
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/trace.hpp"

namespace scalescope::collect {

// Names an API call: (domain, CUPTI callback id) -> "cudaLaunchKernel".
using ApiNameResolver = std::function<std::string(trace::ApiDomain, uint32_t cbid)>;

class CuptiDecoder {
 public:
  // Interns every name into `strings`, which outlives the decoder and is
  // shared by every batch (the trace writer's string table).
  CuptiDecoder(trace::StringTable& strings, ApiNameResolver resolver);

  // Appends what `record` (a CUpti_Activity*, an anonymous struct that cannot
  // be forward-declared) describes to `batch`'s tables; a kernel of NCCL also
  // gets an NcclTable row. Returns false for kinds it does not decode.
  bool decode(const void* record, trace::Trace& batch);

  // Devices seen in DEVICE records, for Metadata::devices.
  const std::vector<trace::DeviceInfo>& devices() const { return devices_; }
  // NVTX ranges started and not yet ended (bounded: see kMaxOpenRanges).
  size_t open_ranges() const { return open_ranges_.size(); }
  // Ranges whose start was never seen or that overflowed the open set.
  uint64_t unmatched_range_ends() const { return unmatched_range_ends_; }

  static constexpr size_t kMaxOpenRanges = 1 << 16;

 private:
  struct OpenRange {
    trace::Timestamp start;
    trace::StringId domain, text;
    uint32_t thread;
  };
  struct CachedName {
    std::string raw;
    trace::StringId id;
    bool is_nccl;
    trace::NcclRecord nccl;  // op, datatype, algorithm, protocol filled
  };

  const CachedName& kernel_name(const char* raw);
  trace::StringId api_name(trace::ApiDomain domain, uint32_t cbid);
  uint32_t device_of_context(uint32_t context_id) const;

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
};

// Demangles a C++ symbol ("_Z6kernelPf" -> "kernel(float*)"); returns the
// input when it is not mangled.
std::string demangle(const char* name);

}  // namespace scalescope::collect
