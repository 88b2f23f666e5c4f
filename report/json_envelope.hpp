#pragma once
// The one envelope of every JSON document that a command, the C library and
// thus Python give: {"schema_version": N, "command": "...", ...the command's
// own keys}, so that a script tells what it reads without guessing.
//
//   std::cout << report::json_text(report::json_envelope("diff", {{"a", a}, {"b", b}, {"diff", d}}), 2) << "\n";

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace scalescope::report {

// The version of that JSON; raised when a field changes meaning or goes away,
// or the envelope changes shape.
inline constexpr int kJsonSchemaVersion = 3;

// `fields` (an object) with "schema_version" and "command" added; `command`
// names what produced it ("analyze", "mlperf analyze", ...). Throws
// std::invalid_argument when fields is not an object or already holds those keys.
nlohmann::json json_envelope(std::string_view command, nlohmann::json fields);

// A JSON document as text: indent < 0 gives one line; text that is not UTF-8
// (names read from traces) is replaced, never a reason to fail.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace scalescope::report
