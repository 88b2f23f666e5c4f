// Fuzzes the ELF build-id reader: the analysing machine reads whatever file
// sits at a module's recorded path (or under SCALESCOPE_SYMFS), which may be
// anything. It may not crash, hang or read past the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/model/elf_build_id.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  const auto id = scalescope::trace::elf_build_id({data, size}, &error);
  if (id && id->size() % 2 != 0) __builtin_trap();  // hex of whole bytes
  return 0;
}
