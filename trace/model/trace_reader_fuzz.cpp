// Feeds arbitrary bytes to the trace reader: it must either return a Trace
// or throw scalescope::Error, within bounded memory, and never crash.

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.hpp"
#include "trace/model/trace_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scalescope::trace::ReadOptions options;
  options.max_memory_bytes = uint64_t{256} << 20;  // below libFuzzer's default 2 GB RSS limit
  options.max_chunk_bytes = uint64_t{64} << 20;
  // Mutated inputs rarely keep a valid XXH64, so also read without checksum
  // checks: that lets the fuzzer reach the length, column and string decoding.
  for (bool verify : {true, false}) {
    options.verify_checksums = verify;
    try {
      scalescope::trace::Trace t = scalescope::trace::read_trace_from_memory(
          std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz input", options);
      // Touch what analyses would touch: every string id must resolve.
      size_t bytes = 0;
      for (auto id : t.kernels.name) bytes += t.strings.view(id).size();
      for (auto id : t.api.name) bytes += t.strings.view(id).size();
      for (auto id : t.nvtx.text) bytes += t.strings.view(id).size();
      for (auto id : t.nccl.communicator) bytes += t.strings.view(id).size();
      for (auto id : t.host_threads.name) bytes += t.strings.view(id).size();  // format 1.2
      for (auto state : t.host_samples.state) bytes += static_cast<size_t>(state);
      if (bytes == size_t(-1)) __builtin_trap();
    } catch (const scalescope::Error&) {}
  }
  return 0;
}
