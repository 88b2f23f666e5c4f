#pragma once
// Writing a struct's fields as a JSON object, each under its member's name: the
// one spelling of `{"wall_ns", v.wall_ns}` for every typed JSON writer, so a key
// cannot drift from its field. Fields under other names, or converted, are
// added with json_with:
//   j = json_with(SCALESCOPE_JSON_FIELDS(v, count, total_ns), {{"kind", to_string(v.kind)}});
// Objects keep their keys sorted (nlohmann::json), so the order written here
// does not show in the output.

#include <optional>

#include <nlohmann/json.hpp>

#define SCALESCOPE_JSON_FIELDS(value, ...)                                   \
  ([](const auto& nlohmann_json_t) {                                         \
    nlohmann::json nlohmann_json_j = nlohmann::json::object();               \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__)) \
    return nlohmann_json_j;                                                  \
  }(value))

namespace scalescope {

// `fields` with the members of the object `extra` added.
inline nlohmann::json json_with(nlohmann::json fields, const nlohmann::json& extra) {
  fields.update(extra);
  return fields;
}

// An optional's value, or null when it has none.
template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace scalescope
