// Writes the inputs of the golden CLI tests of `analyze` and `diff`
// (tests/golden/analyze/): small runs from the synthetic generator
// (analyze/tests/golden_inputs.hpp, deterministic for its seeds), so no binary trace
// needs to be committed and the goldens follow the current file format.
//   OUT/a.ssrun/rank{0,1}.sstrace   DDP steps, pinned input copies
//   OUT/b.ssrun/rank{0,1}.sstrace   other seeds, input copies from pageable
//                                   memory and synchronous (the case diff is for)
//   OUT/nodes.ssrun/node{a,b}-*.sstrace  two hosts of two ranks: nodeb's clock
//                                   3 ms ahead, its rank 3 late at every
//                                   all-reduce, node 2 of 3 expected missing
// Usage: analyze_golden_inputs OUT_DIR
#include <cstdio>
#include <exception>
#include <filesystem>

#include <fmt/format.h>

#include "analyze/tests/golden_inputs.hpp"
#include "trace/model/trace_file.hpp"

namespace {

namespace fs = std::filesystem;
using namespace scalescope;

void write_run(const fs::path& dir, uint64_t seed, bool pageable) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank)
    trace::write_trace(dir / fmt::format("rank{}.sstrace", rank), analyze::golden::ddp_rank(seed, rank, pageable));
}

void write_two_host_run(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const trace::Trace& t : analyze::golden::two_host_ranks())
    trace::write_trace(dir / fmt::format("{}-{}.sstrace", t.meta.hostname, t.meta.pid), t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: analyze_golden_inputs OUT_DIR\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    write_run(out / "a.ssrun", 11, false);
    write_run(out / "b.ssrun", 21, true);
    write_two_host_run(out / "nodes.ssrun");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "analyze_golden_inputs: %s\n", e.what());
    return 1;
  }
  return 0;
}
