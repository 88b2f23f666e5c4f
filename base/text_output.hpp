#pragma once
// Helpers for the writers of text outputs (exporters, tables, CSV files):
// escaping, and an output written beside its place and renamed into it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace scalescope::trace::detail {

// Appends `s` as a JSON string body (no quotes): escapes quotes, backslashes
// and control characters, and replaces invalid UTF-8 with U+FFFD so the output
// is always valid JSON.
void append_json_escaped(std::string& out, std::string_view s);

// Appends `s` with invalid UTF-8 replaced by U+FFFD (as append_json_escaped
// does), nothing escaped: text for formats whose strings must be UTF-8.
void append_valid_utf8(std::string& out, std::string_view s);

// The length of the well-formed UTF-8 sequence at p[i] of p's n bytes, or 0:
// no overlongs, no surrogates, nothing above U+10FFFF.
size_t utf8_sequence(const unsigned char* p, size_t i, size_t n);

// Appends one code point as UTF-8; one past U+10FFFF (not a character) as U+FFFD.
void append_utf8(std::string& out, uint32_t code_point);

// Appends one CSV field (RFC 4180: quoted when it holds a comma, quote or newline).
void append_csv_field(std::string& out, std::string_view s);

// A path beside `out` to write to first (trace::temp_path_for), registered
// for removal on SIGINT/SIGTERM/SIGHUP until commit_output.
std::filesystem::path temp_path_for(const std::filesystem::path& out);

// Renames `tmp` onto `out` (replacing a file), or removes `tmp` and throws an
// Error naming `out`.
void commit_output(const std::filesystem::path& tmp, const std::filesystem::path& out);

}  // namespace scalescope::trace::detail
