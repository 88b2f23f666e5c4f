#pragma once
// Private helpers shared by the exporters: escaping, atomic output, names.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "trace/model/trace.hpp"

namespace scalescope::trace::detail {

// Appends `s` as a JSON string body (no quotes): escapes quotes, backslashes
// and control characters, and replaces invalid UTF-8 with U+FFFD so the output
// is always valid JSON.
void append_json_escaped(std::string& out, std::string_view s);

// Appends `s` with invalid UTF-8 replaced by U+FFFD (as append_json_escaped
// does), nothing escaped: text for formats whose strings must be UTF-8.
void append_valid_utf8(std::string& out, std::string_view s);

// Appends one CSV field (RFC 4180: quoted when it holds a comma, quote or newline).
void append_csv_field(std::string& out, std::string_view s);

// A path beside `out` to write to first (trace::temp_path_for), registered
// for removal on SIGINT/SIGTERM/SIGHUP until commit_output.
std::filesystem::path temp_path_for(const std::filesystem::path& out);

// Renames `tmp` onto `out` (replacing a file), or removes `tmp` and throws an
// Error naming `out`.
void commit_output(const std::filesystem::path& tmp, const std::filesystem::path& out);

// A problem severity as CSV, SQLite and `stats` show it: "info", "error", "data loss".
std::string_view severity_name(Severity s);

}  // namespace scalescope::trace::detail
