// Fuzzes the reader of the Python bootstrap's stacks files
// (python-stacks-<host>-<pid>.json), which `analyze` reads from a run
// directory that may hold anything. It may only return or throw Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "trace/model/python_stacks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto p = scalescope::trace::parse_python_stacks(
        std::string_view(reinterpret_cast<const char*>(data), size), "python-stacks-fuzz-1.json");
    for (const auto& s : p.stacks)
      if (s.frames.empty()) __builtin_trap();  // a stack has its leaf
  } catch (const scalescope::Error&) {
  }
  return 0;
}
