// libFuzzer target: any bytes into the Kineto importer must give a Trace or a
// scalescope::Error, never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace/error.hpp"
#include "trace/kineto_importer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scalescope::trace::KinetoImportOptions options;
  options.max_string_bytes = 4096;
  try {
    scalescope::trace::ImportReport report;
    auto t = scalescope::trace::import_kineto_json(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", &report, options);
    (void)t.event_count();
  } catch (const scalescope::Error&) {
  }
  return 0;
}
