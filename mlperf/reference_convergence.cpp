// MLPerf Training v4.1 reference convergence points (RCPs): per benchmark and
// global batch, the olympic mean (fastest and slowest run dropped, as the RCP
// checker computes "RCP Mean") of the progress the reference implementation
// needed to converge. Source: mlcommons/logging,
// mlperf_logging/rcp_checker/training_4.1.0/rcps_<benchmark>.json (rgat is
// "gnn" there, retinanet "ssd"). Units are those of the benchmark's MLLOG
// progress (epoch_num or samples_count at the last evaluation): samples for
// bert, llama2_70b_lora and stable_diffusion, tokens for gpt3, epochs for the
// others; ingest's progress_at_stop has the same units.

#include <initializer_list>
#include <string_view>
#include <utility>

#include "mlperf/mlperf.hpp"

namespace scalescope::mlperf {

namespace {

struct BenchmarkReference {
  std::string_view benchmark;
  std::initializer_list<std::pair<double, double>> points;  // global batch, progress
};

// Figures written out from the JSON files above (olympic means, 10 significant digits).
const BenchmarkReference kV41[] = {
    {"bert",
     {{256, 2549219.556},
      {448, 2414421.333},
      {1536, 2776278.222},
      {3072, 2764498.667},
      {4096, 2843989.333},
      {4608, 2798080},
      {6144, 3319125.333},
      {6912, 3601920},
      {8192, 4186112},
      {8704, 4273706.667},
      {12288, 4465066.667},
      {13056, 4645333.333},
      {16384, 5505422.222}}},
    {"dlrm_dcnv2",
     {{32768, 0.7071428571}, {55296, 0.7614583333}, {65536, 0.7910714286}, {102400, 0.890625}, {135168, 0.9279069767}}},
    {"rgat",
     {{4096, 0.7888888889}, {16384, 0.8611111111}, {32768, 0.9388888889}, {65536, 1.186111111}, {262144, 2.458333333}}},
    {"gpt3",
     {{1536, 1195376640},
      {2048, 1177760563},
      {3072, 1218025882},
      {4096, 1258291200},
      {6144, 1409286144},
      {8192, 1623195648}}},
    {"llama2_70b_lora", {{8, 3178.666667}, {16, 4032}, {32, 6037.333333}, {128, 11264}}},
    {"retinanet",
     {{256, 4},
      {320, 4.111111111},
      {512, 5},
      {768, 5},
      {1024, 6},
      {1280, 6.666666667},
      {2048, 7.888888889},
      {2560, 8.636363636},
      {4096, 15.15384615}}},
    {"stable_diffusion", {{256, 2048000}, {384, 2561280}, {512, 2560000}, {1024, 2839272.727}, {2048, 4002909.091}}},
};

}  // namespace

std::vector<scaling::ReferenceConvergence> reference_convergence(std::string_view benchmark) {
  std::vector<scaling::ReferenceConvergence> out;
  for (const auto& b : kV41)
    if (b.benchmark == benchmark)
      for (const auto& [batch, progress] : b.points) out.push_back({batch, progress});
  return out;
}

}  // namespace scalescope::mlperf
