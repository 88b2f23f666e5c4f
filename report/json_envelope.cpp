#include "report/json_envelope.hpp"

#include <stdexcept>

namespace scalescope::report {

nlohmann::json json_envelope(std::string_view command, nlohmann::json fields) {
  if (!fields.is_object()) throw std::invalid_argument("json_envelope: the fields are not a JSON object");
  if (fields.contains("schema_version") || fields.contains("command"))
    throw std::invalid_argument("json_envelope: the fields already hold the envelope's keys");
  fields["schema_version"] = kJsonSchemaVersion;
  fields["command"] = std::string(command);
  return fields;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace scalescope::report
