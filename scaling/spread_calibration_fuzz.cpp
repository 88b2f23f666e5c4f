// Fuzzes the reader of a prediction calibration (a user's JSON file, `--calibration`):
// it must return or throw scalescope::Error, and what it returns must give
// predictions without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scaling/scaling.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope::scaling;
  try {
    const SpreadCalibration c =
        read_spread_calibration(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    CurveFitOptions o;
    o.calibration = &c;
    o.group = "bert";
    (void)fit_curve(ModelKind::kStepConverge, {{8, 30.0, 256.0, 2e6}, {16, 17.0, 512.0, 2.4e6}, {32, 10.0, {}, {}}},
                    {64, 1024}, o);
    (void)write_spread_calibration(c);
  } catch (const scalescope::Error&) {
  }
  return 0;
}
