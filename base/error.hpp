#pragma once
// The one exception type that crosses part boundaries: a user-facing error
// whose message is a complete one-line sentence naming the file or input at
// fault. The CLI prints it as "scalescope: error: <message>" and exits 1.
// Internal bugs are not Errors; problems inside data are counted (ProblemCounts),
// not thrown.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace scalescope {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace scalescope
