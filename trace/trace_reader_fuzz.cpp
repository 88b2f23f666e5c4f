// Feeds arbitrary bytes to the trace reader: it must either return a Trace
// or throw scalescope::Error, within bounded memory, and never crash.

#include <cstddef>
#include <cstdint>
#include <span>

#include "trace/error.hpp"
#include "trace/trace_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scalescope::trace::ReadOptions options;
  options.max_memory_bytes = uint64_t{256} << 20;  // below libFuzzer's default 2 GB RSS limit
  options.max_chunk_bytes = uint64_t{64} << 20;
  try {
    scalescope::trace::Trace t = scalescope::trace::read_trace_from_memory(
        std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz input", options);
    // Touch what analyses would touch: every string id must resolve.
    for (auto id : t.kernels.name) (void)t.strings.view(id);
    for (auto id : t.nvtx.text) (void)t.strings.view(id);
  } catch (const scalescope::Error&) {
  }
  return 0;
}
