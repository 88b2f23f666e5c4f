// The collector's own NVTX handler (SCALESCOPE_NVTX_RECORDS=hooks): NVTX
// hands its function table to the library NVTX_INJECTION64_PATH names
// (InitializeInjectionNvtx2), and these hooks take the ranges, marks,
// domains, registered strings and payload schemas themselves instead of
// passing NVTX on to CUPTI (whose MARKER and MARKER_DATA records and NVTX
// callbacks they replace). Between windows a hook only keeps the thread's
// push stack and tells the capture window about markers (ProfilerStep#N,
// capture ranges); inside a window it also timestamps the range with CUPTI's
// clock and logs it for the encoder. One piece of libscalescope-collector.so.
//
// Threads and locks: the hooks run on the job's threads; each thread keeps
// its push stacks (one per domain) in thread-local storage. Three locks of
// the one process-wide instance, never nested: registry_mutex_ (domains,
// registered strings, payload schemas and enums: handed out to the job, never
// freed), started_mutex_ (ranges started with nvtxRangeStart, which may end on
// another thread) and log_mutex_ (ranges and marks waiting for the encoder).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collect/cupti_decoder.hpp"
#include "collect/nccl_nvtx_payload.hpp"

namespace scalescope::collect {

enum class NvtxOp : uint8_t { kPush, kPop, kStart, kEnd };

// Who is told about every range (markers and capture ranges): the capture
// window. Called on the job's threads; `id` is the range id of kStart/kEnd.
class NvtxListener {
 public:
  virtual void on_nvtx(NvtxOp op, const char* text, uint64_t id) = 0;

 protected:
  ~NvtxListener() = default;
};

class NvtxHooks {
 public:
  static NvtxHooks& instance();  // one per process, never destroyed (the job may call NVTX during exit)

  // InitializeInjectionNvtx2: puts the hooks into NVTX's core tables. False
  // when the export table lacks them (NVTX then makes every call a no-op).
  bool install(const void* get_export_table);
  // InitializeInjectionNvtxExtension: the payload extension's schema and
  // enum registration. False for other extensions.
  bool install_extension(void* module_info);
  bool installed() const { return installed_.load(); }

  void set_listener(NvtxListener* listener) { listener_.store(listener); }
  // A window with NVTX records is open (the capture window switches it).
  void set_recording(bool on) { recording_.store(on); }
  bool recording() const { return recording_.load(std::memory_order_relaxed); }

  // The encoder: what was recorded since the last call.
  void drain(std::vector<HookedNvtxEvent>& out);
  uint64_t dropped() const { return dropped_.load(); }  // log full: the encoder stalled
  // Recorded starts whose end came after their window closed (or never).
  uint64_t cut_by_window() const { return cut_.load(); }

  // As CUPTI's cuptiActivityGetNvtxExtPayloadAttr, for the decoder: the
  // schema (type 1, nvtxPayloadSchemaAttr_t*) or enum (type 2,
  // nvtxPayloadEnumAttr_t*) registered under `id` in `domain`.
  bool payload_attr(uint32_t domain, uint64_t id, uint32_t* type, const void** attributes);

  // The hooks' work, public for the C hooks in nvtx_hooks.cpp.
  struct Domain {
    uint32_t index = 0;
    std::string name;
    bool nccl = false;  // NCCL's: its ranges with payloads go to the collective ring
  };
  struct Message {
    const char* text = nullptr;     // the job's, valid during the call
    const void* payload = nullptr;  // nvtxPayloadData_t array of the extended payload
    uint32_t payloads = 0;
  };
  int push(const Domain* domain, const Message& m);
  int pop(const Domain* domain);
  uint64_t start(const Domain* domain, const Message& m);
  void end(uint64_t id);
  void mark(const Domain* domain, const Message& m);
  const Domain* create_domain(const char* name);
  const std::string* register_string(const char* text);
  uint64_t register_schema(const Domain* domain, const void* attr);
  uint64_t register_enum(const Domain* domain, const void* attr);

  static constexpr size_t kMaxLogged = size_t{1} << 20;
  static constexpr size_t kMaxPayloadBytes = 4096;

  // A range pushed or started and not yet ended.
  struct Open {
    HookedNvtxEvent event;     // as far as known; start 0: not recorded (outside a window)
    uint64_t ring_ticket = 0;  // an NCCL call in the collective ring (0: none)
  };

 private:
  Open open_range(const Domain* domain, const Message& m);
  // An NCCL range with a payload of a known schema: into the collective ring.
  uint64_t enter_collective(const Message& m);
  void log(HookedNvtxEvent&& e);
  // A recorded range ends: logged inside a window, else counted as cut by its close.
  void log_end(HookedNvtxEvent&& e);
  // The schema or enum id the job gave, or the next dynamic one; under registry_mutex_.
  uint64_t schema_id(bool given, uint64_t given_id);

  std::atomic<bool> installed_{false};
  std::atomic<bool> recording_{false};
  std::atomic<NvtxListener*> listener_{nullptr};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> dropped_{0}, cut_{0};

  std::mutex registry_mutex_;
  std::deque<Domain> domains_;  // stable addresses: the job holds them as handles
  std::deque<std::string> strings_;
  struct Schema;  // a deep copy of a registered schema or enum
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<Schema>> schemas_;
  uint64_t next_schema_id_ = 0;

  // Where NCCL's schemas put the communicator and the bytes, computed once at
  // registration and read without a lock by every NCCL range: an entry is
  // published by its id's release store after its layout is written.
  struct NcclSchema {
    std::atomic<uint64_t> id{0};
    NcclPayloadLayout layout;
  };
  static constexpr size_t kMaxNcclSchemas = 64;  // NCCL registers about a dozen
  std::array<NcclSchema, kMaxNcclSchemas> nccl_schemas_;
  std::atomic<size_t> nccl_schema_count_{0};  // written under registry_mutex_

  std::mutex started_mutex_;
  std::unordered_map<uint64_t, Open> started_;  // recorded nvtxRangeStart ranges by id

  std::mutex log_mutex_;
  std::vector<HookedNvtxEvent> log_;
};

}  // namespace scalescope::collect
