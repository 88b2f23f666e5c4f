// libFuzzer target: any bytes as an nsys SQLite export (through
// sqlite3_deserialize, no file) must give Traces or a scalescope::Error,
// never a crash, a hang or unbounded memory. Seeds: tests/fuzz/nsys_importer/
// (small exports of each schema variant).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace/error.hpp"
#include "trace/nsys_importer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scalescope::trace::NsysImportOptions options;
  options.max_string_bytes = 4096;
  options.max_sql_steps = 20'000'000;  // a hostile schema cannot make a query endless
  try {
    scalescope::trace::NsysImportReport report;
    auto traces = scalescope::trace::import_nsys_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                                       "fuzz.sqlite", &report, options);
    for (const auto& t : traces) (void)t.event_count();
  } catch (const scalescope::Error&) {}
  return 0;
}
