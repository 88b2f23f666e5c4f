// Fuzzes the reader of the hang dumps (control/hang/<host>-<pid>.json) that
// `analyze` reads from a run directory, which may hold anything. It may only
// return a dump or say why not; what it returns writes and reads back equal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/model/hang_dump.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  const auto d = scalescope::trace::parse_hang_dump(std::string_view(reinterpret_cast<const char*>(data), size), &why);
  if (!d) {
    if (why.empty()) __builtin_trap();  // a refusal says why
    return 0;
  }
  const auto back = scalescope::trace::parse_hang_dump(scalescope::trace::hang_dump_json(*d), &why);
  if (!back || back->collectives.size() != d->collectives.size() || back->python.size() != d->python.size() ||
      back->iterations.size() != d->iterations.size())
    __builtin_trap();
  return 0;
}
