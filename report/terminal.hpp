#pragma once
// What text may reach a terminal, and how wide it may be. Every command that
// prints for a person goes through these (tables, progress lines, errors), so
// data from traces and logs cannot drive the terminal (an ESC]0;...BEL in a
// kernel name sets the window title; ESC[2J clears the screen) and lines fit
// the window. CSV and JSON never use them: they keep the data exact.
//
//   fmt::print("{}\n", report::terminal_safe(kernel_name));
//   size_t w = report::output_width(STDOUT_FILENO);   // 0: no limit
//   report::abbreviate_middle("void at::native::elementwise_kernel<...>", 30);

#include <cstddef>
#include <string>
#include <string_view>

namespace scalescope::report {

// Control characters (C0 but tab, DEL, C1) and the bidirectional formatting
// characters (U+061C, U+200E/F, U+202A-E, U+2066-9) become visible escapes:
// "\x1b", "\x07", "\u009b", "\u202e"; bytes that are not UTF-8 become "\xff".
// Other text is kept.
std::string terminal_safe(std::string_view text);

// Columns available on `fd`: its window width when it is a terminal, else
// $COLUMNS when set, else 0, meaning no limit: output piped to a file or to
// grep keeps whole lines and names.
size_t output_width(int fd);

// Code points of UTF-8 text (the display width of the text the tables hold).
size_t display_width(std::string_view text);

// `text` cut to `width` code points by taking out its middle: the head (the
// namespace and kernel name) and the tail (template arguments and parameters)
// are what tell C++ kernel names apart. `head` code points are kept from the
// start (default: about half), the rest from the end; "..." marks the cut.
std::string abbreviate_middle(std::string_view text, size_t width, size_t head = std::string::npos);

// Words of `text` wrapped to lines of at most `width` code points (a word
// longer than a line is cut); width 0 leaves the text whole.
std::string wrap(std::string_view text, size_t width, std::string_view indent = {});

}  // namespace scalescope::report
