#include "base/text_output.hpp"
#include "base/safe_output.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.hpp"

namespace scalescope::trace::detail {

size_t utf8_sequence(const unsigned char* p, size_t i, size_t n) {
  const unsigned char c = p[i];
  if (c < 0x80) return 1;
  const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  bool ok = len != 0 && i + len <= n;
  for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
  if (ok && len == 3) ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
  if (ok && len == 4) ok = !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
  return ok ? len : 0;
}

namespace {

// Appends s with each byte of a malformed multi-byte sequence replaced by
// U+FFFD; `ascii` appends each byte below 0x80.
template <typename Ascii>
void append_repaired(std::string& out, std::string_view s, Ascii&& ascii) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ascii(p[i++]);
    } else if (const size_t len = utf8_sequence(p, i, n)) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
}

}  // namespace

void append_json_escaped(std::string& out, std::string_view s) {
  append_repaired(out, s, [&](unsigned char c) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    else out += static_cast<char>(c);
  });
}

void append_valid_utf8(std::string& out, std::string_view s) {
  append_repaired(out, s, [&](unsigned char c) { out += static_cast<char>(c); });
}

void append_utf8(std::string& out, uint32_t code_point) {
  const uint32_t c = code_point < 0x110000 ? code_point : 0xFFFD;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

void append_csv_field(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(s);
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::filesystem::path temp_path_for(const std::filesystem::path& out) {
  std::filesystem::path tmp = trace::temp_path_for(out);
  register_temp(tmp);  // removed if a signal ends the export
  return tmp;
}

void commit_output(const std::filesystem::path& tmp, const std::filesystem::path& out) {
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    std::error_code cleanup;  // not ec: its success would replace the reason in the message
    std::filesystem::remove_all(tmp, cleanup);
    unregister_temp(tmp);
    fail("{}: cannot write output: {}", out.string(), ec.message());
  }
  unregister_temp(tmp);
}

}  // namespace scalescope::trace::detail
