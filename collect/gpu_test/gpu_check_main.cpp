// collect_gpu_check ground-truth RUN_DIR | ground-truth-kernels RUN_DIR | ddp RUN_DIR WORLD_SIZE |
//                   activities RUN_DIR | window RUN_DIR RANGE STEPS WINDOWS | nvml-map RUN_DIR ORDINALS
// Prints one PASS/FAIL line per check; exits 0 only if all pass.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collect/gpu_test/gpu_check.hpp"
#include "base/error.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

int main(int argc, char** argv) {
  using namespace scalescope;
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s ground-truth RUN_DIR | ground-truth-kernels RUN_DIR | ddp RUN_DIR WORLD_SIZE | "
                 "activities RUN_DIR | window RUN_DIR RANGE STEPS WINDOWS | nvml-map RUN_DIR ORDINALS\n",
                 argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  try {
    auto traces = trace::load_run(argv[2]);
    std::vector<collect::GpuCheck> checks;
    if (mode == "ground-truth") checks = collect::check_ground_truth(traces);
    else if (mode == "ground-truth-kernels") checks = collect::check_ground_truth_kernels(traces);
    else if (mode == "activities") checks = collect::check_activities(traces);
    else if (mode == "ddp" && argc == 4) checks = collect::check_ddp(traces, std::atoi(argv[3]));
    else if (mode == "nvml-map" && argc == 4) checks = collect::check_nvml_map(traces, argv[3]);
    else if (mode == "window" && argc == 6)
      checks = collect::check_window(traces, argv[3], std::strtoull(argv[4], nullptr, 10),
                                     std::strtoull(argv[5], nullptr, 10));
    else return 2;
    return collect::print_checks(checks);
  } catch (const Error& e) {
    std::printf("FAIL loading %s: %s\n", argv[2], e.what());
    return 1;
  }
}
