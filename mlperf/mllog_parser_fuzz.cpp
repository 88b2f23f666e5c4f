// libFuzzer target for the MLLOG parser: any bytes, fed whole and in uneven
// chunks, must give the same summary without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "mlperf/mlperf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto whole = scalescope::mlperf::parse_mllog(bytes);
  scalescope::mlperf::MllogParser parser;
  // Chunk sizes from the first byte, so splits land inside markers and events.
  const size_t step = size > 0 ? 1 + data[0] % 13 : 1;
  for (size_t at = 0; at < size; at += step) parser.feed(bytes.substr(at, step));
  const auto chunked = parser.finish();
  if (whole.mllog_lines != chunked.mllog_lines || whole.malformed_lines != chunked.malformed_lines ||
      whole.run_start_ms != chunked.run_start_ms || whole.run_stop_ms != chunked.run_stop_ms ||
      whole.stop_status != chunked.stop_status || whole.benchmark != chunked.benchmark)
    std::abort();
  return 0;
}
