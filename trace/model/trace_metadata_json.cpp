// Metadata <-> JSON for the metadata chunk. JSON because metadata is small,
// written rarely, and gains fields often: unknown keys are ignored and
// missing keys keep their defaults, which keeps 1.x readers and writers
// compatible both ways.

#include <nlohmann/json.hpp>

#include "base/json_fields.hpp"
#include "base/json_number.hpp"
#include "trace/model/trace_format.hpp"

namespace scalescope::trace::format {
namespace {

using nlohmann::json;

template <typename V>
void get_if(const json& j, const char* key, V& out) {
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>)
    out = json_integer_or<V>(j, key, out, "trace metadata");
  else if (auto it = j.find(key); it != j.end() && !it->is_null())
    out = it->get<V>();
}

// get_if of each named member from the key of its name: the reading side of
// SCALESCOPE_JSON_FIELDS, so that a key cannot drift from its field.
#define GET_FIELD(field) get_if(nlohmann_json_j, #field, nlohmann_json_t.field);
#define GET_FIELDS(object, value, ...)                                          \
  [](const json& nlohmann_json_j, auto& nlohmann_json_t) {                      \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GET_FIELD, __VA_ARGS__))            \
  }(object, value)

}  // namespace

std::string metadata_to_json(const Metadata& m) {
  json j = SCALESCOPE_JSON_FIELDS(m, source, producer_version, hostname, pid, rank, local_rank, world_size, launcher,
                                  command_line, cpu_affinity, cpu_numa_node, memory_policy);
  auto pages = [](const std::vector<NumaPages>& v) {
    json a = json::array();
    for (const NumaPages& p : v) a.push_back(SCALESCOPE_JSON_FIELDS(p, node, bytes));
    return a;
  };
  j["pages_at_start"] = pages(m.pages_at_start);
  j["pages_at_end"] = pages(m.pages_at_end);
  json devices = json::array();
  for (const DeviceInfo& d : m.devices) {
    devices.push_back(SCALESCOPE_JSON_FIELDS(d, id, name, uuid, pci_bus_id, numa_node, sm_count, memory_bytes,
                                             compute_major, compute_minor));
  }
  j["devices"] = std::move(devices);
  json clock = json::array();
  for (const ClockAnchor& a : m.clock) clock.push_back(SCALESCOPE_JSON_FIELDS(a, trace_ns, unix_ns));
  j["clock"] = std::move(clock);
  json extra = json::object();
  for (const auto& [k, v] : m.extra) extra[k] = v;
  j["extra"] = std::move(extra);
  if (!m.process_groups.empty()) {
    json groups = json::array();
    for (const ProcessGroup& g : m.process_groups)
      groups.push_back(SCALESCOPE_JSON_FIELDS(g, name, description, backend, ranks));
    j["process_groups"] = std::move(groups);
  }
  // Replace invalid UTF-8 (a command line can hold anything) instead of throwing.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Metadata metadata_from_json(std::string_view text) {
  const json j = json::parse(text.begin(), text.end());
  Metadata m;
  GET_FIELDS(j, m, source, producer_version, hostname, pid, rank, local_rank, world_size, launcher, command_line,
             cpu_affinity, cpu_numa_node, memory_policy);
  auto pages = [&](const char* key, std::vector<NumaPages>& out) {
    if (auto it = j.find(key); it != j.end())
      for (const json& p : *it) out.push_back({json_integer_field<int32_t>(p, "node", "trace metadata"),
                      json_integer_field<uint64_t>(p, "bytes", "trace metadata")});
  };
  pages("pages_at_start", m.pages_at_start);
  pages("pages_at_end", m.pages_at_end);
  if (auto it = j.find("devices"); it != j.end()) {
    for (const json& d : *it) {
      DeviceInfo info;
      GET_FIELDS(d, info, id, name, uuid, pci_bus_id, numa_node, sm_count, memory_bytes, compute_major, compute_minor);
      m.devices.push_back(std::move(info));
    }
  }
  if (auto it = j.find("clock"); it != j.end())
    for (const json& a : *it) m.clock.push_back({json_integer_field<Timestamp>(a, "trace_ns", "trace metadata"),
                         json_integer_field<int64_t>(a, "unix_ns", "trace metadata")});
  if (auto it = j.find("extra"); it != j.end())
    for (const auto& [k, v] : it->items()) m.extra[k] = v.get<std::string>();
  if (auto it = j.find("process_groups"); it != j.end())
    for (const json& g : *it) {
      ProcessGroup pg;
      GET_FIELDS(g, pg, name, description, backend, ranks);
      m.process_groups.push_back(std::move(pg));
    }
  return m;
}

}  // namespace scalescope::trace::format
