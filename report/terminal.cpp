#include "report/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace scalescope::report {

namespace {

// Length of the valid UTF-8 sequence at s[i] and its code point, or 0.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  if (c < 0x80) return code_point = c, 1;
  if ((c & 0xE0) == 0xC0) n = 2, code_point = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, code_point = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, code_point = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kMin[n] || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return n;
}

// Bidirectional formatting characters: a right-to-left override in a kernel
// name turns the rest of the line (other columns, the next words) around.
bool is_bidi_control(uint32_t cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// Start offsets of the code points of `s` (plus s.size() at the end).
std::vector<size_t> code_point_starts(std::string_view s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  starts.push_back(s.size());
  return starts;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if ((cp < 0x20 && cp != '\t') || cp == 0x7F) out += fmt::format("\\x{:02x}", cp);
    else if ((cp >= 0x80 && cp <= 0x9F) || is_bidi_control(cp)) out += fmt::format("\\u{:04x}", cp);
    else out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

size_t output_width(int fd) {
  if (isatty(fd)) {
    winsize ws{};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  }
  if (const char* c = std::getenv("COLUMNS")) {
    const long v = std::strtol(c, nullptr, 10);
    if (v > 0) return static_cast<size_t>(v);
  }
  return 0;
}

size_t display_width(std::string_view s) {
  size_t n = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

std::string abbreviate_middle(std::string_view text, size_t width, size_t head) {
  const std::vector<size_t> starts = code_point_starts(text);
  const size_t length = starts.size() - 1;
  if (length <= width) return std::string(text);
  constexpr std::string_view kCut = "...";
  if (width <= kCut.size()) return std::string(text.substr(0, starts[std::min(width, length)]));
  const size_t keep = width - kCut.size();
  if (head == std::string::npos || head > keep) head = (keep + 1) / 2;
  const size_t tail = keep - head;
  std::string out(text.substr(0, starts[head]));
  out += kCut;
  out.append(text.substr(starts[length - tail]));
  return out;
}

std::string wrap(std::string_view text, size_t width, std::string_view indent) {
  if (width == 0) return std::string(indent) + std::string(text);
  const size_t room = width > display_width(indent) + 10 ? width - display_width(indent) : 10;
  std::string out, line;
  auto flush = [&] {
    if (!out.empty()) out += '\n';
    out += indent;
    out += line;
    line.clear();
  };
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) break;
    while (display_width(word) > room) {  // a word longer than a line: cut it
      if (!line.empty()) flush();
      const auto starts = code_point_starts(word);
      line = std::string(word.substr(0, starts[room]));
      flush();
      word = word.substr(starts[room]);
    }
    if (!line.empty() && display_width(line) + 1 + display_width(word) > room) flush();
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty() || out.empty()) flush();
  return out;
}

}  // namespace scalescope::report
