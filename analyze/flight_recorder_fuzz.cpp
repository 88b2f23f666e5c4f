// Fuzzes the reader of PyTorch's flight recorder dumps (pickle and JSON) and
// the hang found from them: any bytes give a dump or a scalescope::Error,
// never a fault, unbounded memory or undefined behaviour (the pickle reader
// refuses code, deep nesting and memo blow-ups within its bounds).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analyze/flight_recorder.hpp"
#include "analyze/pickle_data.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope;
  if (size > (1 << 20)) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string why;
  (void)analyze::read_pickle_data(input, &why);
  try {
    analyze::FlightRecorderDump a = analyze::parse_flight_recorder_dump(input, "fuzz_0", 0);
    analyze::FlightRecorderDump b = a;
    b.rank = 1;
    if (!b.entries.empty()) b.entries.pop_back();  // one rank behind the other
    (void)analyze::find_flight_recorder_hang({a, b});
  } catch (const Error&) {}
  return 0;
}
