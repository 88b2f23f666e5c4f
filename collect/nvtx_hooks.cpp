#include "collect/nvtx_hooks.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "collect/collective_ring.hpp"
#include "collect/collector_common.hpp"
#include "collect/cupti_decoder.hpp"

namespace scalescope::collect {

struct NvtxHooks::Schema {
  uint32_t type = 0;  // 1 schema, 2 enum (CUPTI_NVTX_EXT_PAYLOAD_TYPE_*)
  nvtxPayloadSchemaAttr_t schema{};
  std::vector<nvtxPayloadSchemaEntry_t> entries;
  nvtxPayloadEnumAttr_t enumeration{};
  std::vector<nvtxPayloadEnum_t> values;
  std::deque<std::string> names;  // what the copies' name pointers point to
  const char* keep(const char* s) {
    if (!s) return nullptr;
    names.emplace_back(s, strnlen(s, 256));
    return names.back().c_str();
  }
};

namespace {

constexpr size_t kMaxSchemaEntries = 256;
constexpr size_t kMaxDomains = 4096;
constexpr size_t kMaxStrings = size_t{1} << 16;

using Hooks = NvtxHooks;

Hooks::Message message_of(const nvtxEventAttributes_t* a) {
  Hooks::Message m;
  if (!a) return m;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) m.text = a->message.ascii;
  else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)
    m.text = reinterpret_cast<const std::string*>(a->message.registered)->c_str();  // ours: register_string
  if (a->payloadType == NVTX_PAYLOAD_TYPE_EXT && a->payload.ullValue) {
    m.payload = reinterpret_cast<const void*>(static_cast<uintptr_t>(a->payload.ullValue));
    m.payloads = a->reserved0;
  }
  return m;
}

Hooks::Message message_of(const char* text) {
  Hooks::Message m;
  m.text = text;
  return m;
}

const Hooks::Domain* domain_of(nvtxDomainHandle_t d) { return reinterpret_cast<const Hooks::Domain*>(d); }

// The C functions NVTX calls (its table's slots).
void NVTX_API hook_mark_ex(const nvtxEventAttributes_t* a) { Hooks::instance().mark(nullptr, message_of(a)); }
void NVTX_API hook_mark_a(const char* text) { Hooks::instance().mark(nullptr, message_of(text)); }
nvtxRangeId_t NVTX_API hook_range_start_ex(const nvtxEventAttributes_t* a) {
  return Hooks::instance().start(nullptr, message_of(a));
}
nvtxRangeId_t NVTX_API hook_range_start_a(const char* text) {
  return Hooks::instance().start(nullptr, message_of(text));
}
void NVTX_API hook_range_end(nvtxRangeId_t id) { Hooks::instance().end(id); }
int NVTX_API hook_range_push_ex(const nvtxEventAttributes_t* a) {
  return Hooks::instance().push(nullptr, message_of(a));
}
int NVTX_API hook_range_push_a(const char* text) { return Hooks::instance().push(nullptr, message_of(text)); }
int NVTX_API hook_range_pop() { return Hooks::instance().pop(nullptr); }
void NVTX_API hook_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Hooks::instance().mark(domain_of(d), message_of(a));
}
nvtxRangeId_t NVTX_API hook_domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Hooks::instance().start(domain_of(d), message_of(a));
}
void NVTX_API hook_domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) { Hooks::instance().end(id); }
int NVTX_API hook_domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Hooks::instance().push(domain_of(d), message_of(a));
}
int NVTX_API hook_domain_range_pop(nvtxDomainHandle_t d) { return Hooks::instance().pop(domain_of(d)); }
nvtxStringHandle_t NVTX_API hook_domain_register_string_a(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<std::string*>(Hooks::instance().register_string(text)));
}
nvtxDomainHandle_t NVTX_API hook_domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<Hooks::Domain*>(Hooks::instance().create_domain(name)));
}
void NVTX_API hook_domain_destroy(nvtxDomainHandle_t) {}  // handles stay valid: ranges may still refer to them
uint64_t NVTX_API hook_schema_register(nvtxDomainHandle_t d, const nvtxPayloadSchemaAttr_t* attr) {
  return Hooks::instance().register_schema(domain_of(d), attr);
}
uint64_t NVTX_API hook_enum_register(nvtxDomainHandle_t d, const nvtxPayloadEnumAttr_t* attr) {
  return Hooks::instance().register_enum(domain_of(d), attr);
}

template <typename Fn>
void put(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

NvtxHooks& NvtxHooks::instance() {
  static NvtxHooks* hooks = new NvtxHooks;  // never destroyed: NVTX calls may come during exit
  return *hooks;
}

bool NvtxHooks::install(const void* get_export_table) {
  auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(const_cast<void*>(get_export_table));
  if (!get) return false;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable)
    return false;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || !core) return false;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) || !core2) return false;
  put(core, core_size, NVTX_CBID_CORE_MarkEx, hook_mark_ex);
  put(core, core_size, NVTX_CBID_CORE_MarkA, hook_mark_a);
  put(core, core_size, NVTX_CBID_CORE_RangeStartEx, hook_range_start_ex);
  put(core, core_size, NVTX_CBID_CORE_RangeStartA, hook_range_start_a);
  put(core, core_size, NVTX_CBID_CORE_RangeEnd, hook_range_end);
  put(core, core_size, NVTX_CBID_CORE_RangePushEx, hook_range_push_ex);
  put(core, core_size, NVTX_CBID_CORE_RangePushA, hook_range_push_a);
  put(core, core_size, NVTX_CBID_CORE_RangePop, hook_range_pop);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, hook_domain_mark_ex);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, hook_domain_range_start_ex);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, hook_domain_range_end);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, hook_domain_range_push_ex);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, hook_domain_range_pop);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, hook_domain_register_string_a);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, hook_domain_create_a);
  put(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, hook_domain_destroy);
  installed_.store(true);
  CollectiveRing::instance().set_collectives_recorded(true);
  return true;
}

bool NvtxHooks::install_extension(void* module_info) {
  auto* m = static_cast<nvtxExtModuleInfo_t*>(module_info);
  if (!m || m->moduleId != NVTX_EXT_PAYLOAD_MODULEID || m->segmentsCount < 1 || !m->segments) return false;
  nvtxExtModuleSegment_t& s = m->segments[0];
  if (!s.functionSlots || s.slotCount <= NVTX3EXT_CBID_nvtxPayloadEnumRegister) return false;
  s.functionSlots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister] = reinterpret_cast<intptr_t>(hook_schema_register);
  s.functionSlots[NVTX3EXT_CBID_nvtxPayloadEnumRegister] = reinterpret_cast<intptr_t>(hook_enum_register);
  return true;
}

namespace {
// This thread's push stacks, one per domain (NVTX nests per thread and
// domain). The pointer is trivially destructible, so a hook called while the
// thread's storage is torn down (an NVTX call from another thread_local's
// destructor) still reads it safely: the reaper frees the stacks at thread
// exit and leaves kGone, after which the thread's ranges are not recorded.
using Stacks = std::vector<std::vector<NvtxHooks::Open>>;
Stacks* const kGone = reinterpret_cast<Stacks*>(alignof(Stacks));
thread_local Stacks* t_stacks = nullptr;
struct Reaper {
  ~Reaper() {
    if (t_stacks != kGone) delete t_stacks;
    t_stacks = kGone;
  }
};
thread_local Reaper t_reaper;

// This thread's stacks, created at its first push; nullptr once it is exiting.
Stacks* stacks() {
  if (t_stacks == kGone) return nullptr;
  if (!t_stacks) {
    [[maybe_unused]] Reaper* reaper = &t_reaper;  // registers the reaper's destructor for this thread
    t_stacks = new Stacks();
  }
  return t_stacks;
}
}  // namespace

// The range as opened now: timestamped (and its text and first payload
// copied) only inside a window; between windows, an empty placeholder that
// keeps the stack's depth.
NvtxHooks::Open NvtxHooks::open_range(const Domain* domain, const Message& m) {
  Open o;
  if (!recording() || g_in_child.load(std::memory_order_relaxed)) return o;
  HookedNvtxEvent& e = o.event;
  e.start = static_cast<uint64_t>(cupti_now());
  e.text = m.text ? std::string(m.text, strnlen(m.text, 1024)) : std::string();
  e.domain = domain ? domain->index : 0;
  if (domain) e.domain_name = domain->name;
  e.thread = os_thread_id();  // the thread that opened it, as CUPTI's MARKER start record says
  if (m.payload && m.payloads > 0) {
    const auto* data = static_cast<const nvtxPayloadData_t*>(m.payload);
    if (data->payload && data->size > 0) {
      const auto* bytes = static_cast<const uint8_t*>(data->payload);
      e.schema_id = data->schemaId;
      e.payload.assign(bytes, bytes + std::min(data->size, kMaxPayloadBytes));
    }
  }
  return o;
}

uint64_t NvtxHooks::enter_collective(const Message& m) {
  const auto* data = static_cast<const nvtxPayloadData_t*>(m.payload);
  if (m.payloads == 0 || !data->payload || data->size == 0) return 0;
  const size_t n = nccl_schema_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    if (nccl_schemas_[i].id.load(std::memory_order_acquire) != data->schemaId) continue;
    const NcclPayloadLayout& l = nccl_schemas_[i].layout;
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data->payload),
                                         std::min<size_t>(data->size, kMaxPayloadBytes));
    trace::NcclOp op = m.text ? nccl_op_from_range_name(m.text) : trace::NcclOp::kUnknown;
    if (op == trace::NcclOp::kUnknown) op = nccl_op_from_schema_id(data->schemaId);
    if (op == trace::NcclOp::kUnknown) return 0;  // not a collective or point-to-point call (ncclCommInitRank, ...)
    return CollectiveRing::instance().enter(op, nccl_payload_communicator(l, bytes), nccl_payload_bytes(l, bytes));
  }
  return 0;  // a schema with neither a communicator nor a message size
}

void NvtxHooks::log(HookedNvtxEvent&& e) {
  std::lock_guard lock(log_mutex_);
  if (log_.size() >= kMaxLogged) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  log_.push_back(std::move(e));
}

void NvtxHooks::log_end(HookedNvtxEvent&& e) {
  if (!recording()) {
    cut_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  e.end = static_cast<uint64_t>(cupti_now());
  log(std::move(e));
}

int NvtxHooks::push(const Domain* domain, const Message& m) {
  if (g_in_child.load(std::memory_order_relaxed)) return 0;
  // First the window (the range that opens one is recorded in it), then the range.
  if (NvtxListener* l = listener_.load(std::memory_order_acquire)) l->on_nvtx(NvtxOp::kPush, m.text, 0);
  Stacks* mine = stacks();
  if (!mine) return 0;
  const uint32_t index = domain ? domain->index : 0;
  if (mine->size() <= index) mine->resize(index + 1);
  auto& stack = (*mine)[index];
  Open o = open_range(domain, m);
  if (domain && domain->nccl && m.payload) o.ring_ticket = enter_collective(m);
  stack.push_back(std::move(o));
  return static_cast<int>(stack.size()) - 1;
}

int NvtxHooks::pop(const Domain* domain) {
  if (g_in_child.load(std::memory_order_relaxed)) return 0;
  const uint32_t index = domain ? domain->index : 0;
  int level = -1;
  Stacks* mine = t_stacks == kGone ? nullptr : t_stacks;
  if (mine && index < mine->size() && !(*mine)[index].empty()) {
    auto& stack = (*mine)[index];
    level = static_cast<int>(stack.size()) - 1;
    Open o = std::move(stack.back());
    stack.pop_back();
    CollectiveRing::instance().leave(o.ring_ticket);
    // First the range (the range that closes a window is recorded in it), then the window.
    if (o.event.start != 0) log_end(std::move(o.event));
  }
  if (NvtxListener* l = listener_.load(std::memory_order_acquire)) l->on_nvtx(NvtxOp::kPop, nullptr, 0);
  return level;
}

uint64_t NvtxHooks::start(const Domain* domain, const Message& m) {
  if (g_in_child.load(std::memory_order_relaxed)) return 0;
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (NvtxListener* l = listener_.load(std::memory_order_acquire)) l->on_nvtx(NvtxOp::kStart, m.text, id);
  Open o = open_range(domain, m);
  if (o.event.start != 0) {
    std::lock_guard lock(started_mutex_);
    if (started_.size() < kMaxLogged) started_.emplace(id, std::move(o));
  }
  return id;
}

void NvtxHooks::end(uint64_t id) {
  if (g_in_child.load(std::memory_order_relaxed)) return;
  std::optional<Open> o;
  {
    std::lock_guard lock(started_mutex_);
    if (auto it = started_.find(id); it != started_.end()) {
      o = std::move(it->second);
      started_.erase(it);
    }
  }
  if (o) log_end(std::move(o->event));
  if (NvtxListener* l = listener_.load(std::memory_order_acquire)) l->on_nvtx(NvtxOp::kEnd, nullptr, id);
}

void NvtxHooks::mark(const Domain* domain, const Message& m) {
  if (g_in_child.load(std::memory_order_relaxed) || !recording()) return;
  HookedNvtxEvent e = std::move(open_range(domain, m).event);
  if (e.start == 0) return;
  e.end = e.start;
  e.mark = true;
  log(std::move(e));
}

const NvtxHooks::Domain* NvtxHooks::create_domain(const char* name) {
  const std::string n = name ? std::string(name, strnlen(name, 256)) : std::string();
  std::lock_guard lock(registry_mutex_);
  for (const auto& d : domains_)
    if (d.name == n) return &d;                        // NVTX: the same name gives the same domain
  if (domains_.size() >= kMaxDomains) return nullptr;  // the default domain
  domains_.push_back({static_cast<uint32_t>(domains_.size() + 1), n, n == "NCCL"});
  return &domains_.back();
}

const std::string* NvtxHooks::register_string(const char* text) {
  const std::string s = text ? std::string(text, strnlen(text, 1024)) : std::string();
  std::lock_guard lock(registry_mutex_);
  for (const auto& known : strings_)
    if (known == s) return &known;
  if (strings_.size() >= kMaxStrings) return nullptr;
  strings_.push_back(s);
  return &strings_.back();
}

uint64_t NvtxHooks::schema_id(bool given, uint64_t given_id) {
  return given ? given_id : NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START + next_schema_id_++;
}

uint64_t NvtxHooks::register_schema(const Domain* domain, const void* attr_ptr) {
  const auto* attr = static_cast<const nvtxPayloadSchemaAttr_t*>(attr_ptr);
  if (!attr) return 0;
  auto s = std::make_unique<Schema>();
  s->type = 1;
  s->schema = *attr;
  s->schema.name = s->keep(attr->name);
  s->schema.extension = nullptr;
  if (attr->entries) {
    size_t n = attr->numEntries;
    if (n == 0)  // no count: the array ends with an entry of type 0
      while (n < kMaxSchemaEntries && attr->entries[n].type != 0) ++n;
    n = std::min(n, kMaxSchemaEntries);
    s->entries.assign(attr->entries, attr->entries + n);
    for (auto& e : s->entries) {
      e.name = s->keep(e.name);
      e.description = nullptr;
      e.semantics = nullptr;
      e.reserved = nullptr;
    }
    s->schema.entries = s->entries.data();
    s->schema.numEntries = n;
  }
  std::lock_guard lock(registry_mutex_);
  const uint64_t id = schema_id(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID, attr->schemaId);
  s->schema.schemaId = id;
  if (domain && domain->nccl && id != 0) {
    const size_t n = nccl_schema_count_.load(std::memory_order_relaxed);
    auto layout = nccl_payload_layout(schema_from_nvtx(id, s->schema));
    if (layout && n < kMaxNcclSchemas) {
      nccl_schemas_[n].layout = *layout;
      nccl_schemas_[n].id.store(id, std::memory_order_release);
      nccl_schema_count_.store(n + 1, std::memory_order_release);
    }
  }
  schemas_[{domain ? domain->index : 0, id}] = std::move(s);
  return id;
}

uint64_t NvtxHooks::register_enum(const Domain* domain, const void* attr_ptr) {
  const auto* attr = static_cast<const nvtxPayloadEnumAttr_t*>(attr_ptr);
  if (!attr) return 0;
  auto s = std::make_unique<Schema>();
  s->type = 2;
  s->enumeration = *attr;
  s->enumeration.name = s->keep(attr->name);
  s->enumeration.extension = nullptr;
  if (attr->entries) {
    const size_t n = std::min(attr->numEntries, kMaxSchemaEntries);
    s->values.assign(attr->entries, attr->entries + n);
    for (auto& v : s->values) v.name = s->keep(v.name);
    s->enumeration.entries = s->values.data();
    s->enumeration.numEntries = n;
  }
  std::lock_guard lock(registry_mutex_);
  const uint64_t id = schema_id(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID, attr->schemaId);
  s->enumeration.schemaId = id;
  schemas_[{domain ? domain->index : 0, id}] = std::move(s);
  return id;
}

bool NvtxHooks::payload_attr(uint32_t domain, uint64_t id, uint32_t* type, const void** attributes) {
  std::lock_guard lock(registry_mutex_);
  auto it = schemas_.find({domain, id});
  if (it == schemas_.end()) return false;
  *type = it->second->type;
  *attributes = it->second->type == 1 ? static_cast<const void*>(&it->second->schema)
                                      : static_cast<const void*>(&it->second->enumeration);
  return true;
}

void NvtxHooks::drain(std::vector<HookedNvtxEvent>& out) {
  std::lock_guard lock(log_mutex_);
  if (out.empty()) {
    out.swap(log_);
  } else {
    for (auto& e : log_) out.push_back(std::move(e));
    log_.clear();
  }
}

}  // namespace scalescope::collect
