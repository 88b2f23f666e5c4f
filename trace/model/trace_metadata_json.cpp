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
  get_if(j, "source", m.source);
  get_if(j, "producer_version", m.producer_version);
  get_if(j, "hostname", m.hostname);
  get_if(j, "pid", m.pid);
  get_if(j, "rank", m.rank);
  get_if(j, "local_rank", m.local_rank);
  get_if(j, "world_size", m.world_size);
  get_if(j, "launcher", m.launcher);
  get_if(j, "command_line", m.command_line);
  get_if(j, "cpu_affinity", m.cpu_affinity);
  get_if(j, "cpu_numa_node", m.cpu_numa_node);
  get_if(j, "memory_policy", m.memory_policy);
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
      get_if(d, "id", info.id);
      get_if(d, "name", info.name);
      get_if(d, "uuid", info.uuid);
      get_if(d, "pci_bus_id", info.pci_bus_id);
      get_if(d, "numa_node", info.numa_node);
      get_if(d, "sm_count", info.sm_count);
      get_if(d, "memory_bytes", info.memory_bytes);
      get_if(d, "compute_major", info.compute_major);
      get_if(d, "compute_minor", info.compute_minor);
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
      get_if(g, "name", pg.name);
      get_if(g, "description", pg.description);
      get_if(g, "backend", pg.backend);
      get_if(g, "ranks", pg.ranks);
      m.process_groups.push_back(std::move(pg));
    }
  return m;
}

}  // namespace scalescope::trace::format
