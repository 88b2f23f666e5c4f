#pragma once
// Reading text inputs: a whole file (refused by its size before it is read
// when it is larger than what it should be can be), trimmed and split.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

// The text of `path`. Throws an Error naming the file when it cannot be read
// or holds more than `max_bytes` ("PATH is N bytes, more than WHAT can be").
std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// Reads up to `size` bytes of the open file `fd` into `out`, fewer only at
// its end, retrying interrupted reads: how many, or -1 with errno set.
ssize_t read_up_to(int fd, void* out, size_t size);

// `s` in lower case (std::tolower, byte by byte).
std::string lowercase(std::string_view s);

// `s` without the white space (std::isspace) at either end.
std::string_view trim(std::string_view s);

// The pieces of `s` between the `sep`s: n separators give n + 1 pieces, empty
// ones kept.
std::vector<std::string_view> split(std::string_view s, char sep);

}  // namespace scalescope::trace
