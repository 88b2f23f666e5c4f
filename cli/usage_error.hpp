#pragma once
// A wrong option or argument, as opposed to bad data: main prints it like any
// scalescope::Error but exits 2 (README, "Exit codes"), with a pointer to the
// command's --help.

#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace scalescope {

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

template <typename... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> format, Args&&... args) {
  throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace scalescope
