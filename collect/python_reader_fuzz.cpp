// Fuzzes what the outside Python reader decodes from another process's
// memory: the walk over interpreters, thread states, frames, code objects,
// strings and location tables, here over the input taken as that memory (at
// kBase), and the location table decoder on the input itself. A torn or
// hostile image may only yield fewer stacks, never a crash or a read outside
// the image.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "collect/python_reader.hpp"

namespace {
constexpr uint64_t kBase = 0x10000;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope::collect;
  if (size < 40) return 0;
  const std::span<const uint8_t> bytes(data, size);
  int32_t first_line = 0;
  int64_t offset = 0;
  std::memcpy(&first_line, data, 4);
  std::memcpy(&offset, data + 4, 8);
  (void)line_for_offset(bytes.subspan(12), first_line, offset);

  const CPythonLayout* layout = cpython_layout((data[12] & 1) ? 0x030C00F0 : 0x030B00F0);
  CPythonTypes types;  // the type objects' addresses: the image's words 2..4
  std::memcpy(&types.code, data + 16, 8);
  std::memcpy(&types.unicode, data + 24, 8);
  std::memcpy(&types.bytes, data + 32, 8);
  const RemoteRead read = [bytes](uint64_t addr, size_t n, void* out) {
    if (addr < kBase || addr - kBase > bytes.size() || n > bytes.size() - (addr - kBase)) return false;
    if (n) std::memcpy(out, bytes.data() + (addr - kBase), n);
    return true;
  };
  CodeCache cache;
  uint64_t torn = 0;
  for (const auto& t : read_thread_stacks(*layout, types, kBase, read, cache, &torn)) {
    if (t.frames.empty() || t.frames.size() > kMaxPythonDepth) __builtin_trap();
    for (const auto& f : t.frames)
      if (f.line < 0) __builtin_trap();
  }
  return 0;
}
