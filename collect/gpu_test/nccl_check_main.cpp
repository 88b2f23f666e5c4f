// collect_nccl_check ground-truth RUN_DIR | sizes RUN_DIR WORLD_SIZE OP:BYTES:CALLS...
// The NCCL checks of the collector (bytes, communicator, sequence from
// NCCL's NVTX payloads); run by gpu_test/run_nccl_tests.sh on the GPU
// machine. Prints one PASS/FAIL line per check; exits 0 only if all pass.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collect/gpu_test/nccl_check.hpp"
#include "base/error.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

int main(int argc, char** argv) {
  using namespace scalescope;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "ground-truth" && argc == 3) || (mode == "sizes" && argc >= 5))) {
    std::fprintf(stderr, "usage: %s ground-truth RUN_DIR | sizes RUN_DIR WORLD_SIZE OP:BYTES:CALLS...\n", argv[0]);
    return 2;
  }
  try {
    auto traces = trace::load_run(argv[2]);
    std::vector<collect::GpuCheck> checks;
    if (mode == "ground-truth") {
      checks = collect::check_ground_truth_nccl(traces);
    } else {
      std::vector<collect::ExpectedNcclCalls> expected;
      for (int i = 4; i < argc; ++i) expected.push_back(collect::parse_expected_nccl_calls(argv[i]));
      checks = collect::check_nccl_sizes(traces, std::atoi(argv[3]), expected);
    }
    return collect::print_checks(checks);
  } catch (const Error& e) {
    std::printf("FAIL %s: %s\n", argv[2], e.what());
    return 1;
  }
}
