// Fuzzes the sweep's metric extraction: the first line is a --metric regex
// (RE2 syntax), the rest is a job's output, fed in chunks of varying size as
// the pipe delivers it. Any pattern must compile or end in scalescope::Error,
// and no output may crash, overflow the stack or stall the scan.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sweep/metric_scanner.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope::sweep;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos || nl > 512) return 0;
  MetricSpec spec;
  try {
    spec = MetricSpec::parse("regex:" + std::string(in.substr(0, nl)));
  } catch (const scalescope::Error&) {
    return 0;
  }
  std::string_view output = in.substr(nl + 1);
  // The output again, as repeated runs of it: long lines without the input's size.
  const size_t repeat = output.empty() ? 1 : 1 + (static_cast<unsigned char>(output[0]) % 4) * 20;
  MetricScanner scanner(spec);
  size_t chunk = 1;
  for (size_t r = 0; r < repeat; ++r) {
    std::string_view rest = output;
    while (!rest.empty()) {
      const size_t n = std::min(rest.size(), chunk);
      scanner.feed(rest.substr(0, n));
      rest.remove_prefix(n);
      chunk = chunk * 3 % 4093 + 1;
    }
  }
  RunMetrics metrics;
  scanner.finish(metrics);
  if (metrics.values.empty() && metrics.notes.empty()) __builtin_trap();  // a value or a note why not
  return 0;
}
