#pragma once
// Where a hung job stopped, from the hang dumps its processes wrote
// (trace/model/hang_dump.hpp: --hang-after, `scalescope trigger --dump`, SIGTERM):
// the collective most processes wait in, the processes that never entered
// it, and where each of those was last.
//
//   auto dumps = read_hang_dumps(run_dir, &warnings);
//   HangReport h = find_hang(dumps);  // h.text: "hung: ranks 0-6 wait in all_reduce #18234 of ..."

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analyze/flight_recorder.hpp"
#include "trace/model/hang_dump.hpp"

namespace scalescope::analyze {

struct HangProcess {
  int32_t rank = -1;
  std::string host;
  uint32_t pid = 0;
  std::string state;  // "waiting" (entered the collective), "not entered", "past it", "not in a collective",
                      // "no collectives recorded"
  std::string last;   // where it was last: "all_reduce #18233 of 0xc0ffee (left)", "iteration 411", ...
  // Its main thread's Python stack when the dump was written, innermost
  // first: "__init__.py:1162 synchronize < train.py:43 main"; empty when the
  // dump has none (not a Python process, or not readable: python_note).
  std::string python;
  std::string python_note;
};

struct HangReport {
  size_t dumps = 0;             // 0: no dumps, nothing to report
  std::vector<std::string> reasons;  // why they were written ("hang-after", "trigger", "sigterm"), distinct
  // A collective was found where the job stopped: the highest call on a
  // communicator that some ranks reached and others did not (NCCL's call
  // returns once queued, so the ranks that reached it wait in its kernel),
  // else a call some process is still inside.
  bool in_collective = false;
  trace::NcclOp op = trace::NcclOp::kUnknown;
  uint64_t communicator = 0, sequence = 0;
  std::vector<HangProcess> processes;  // by rank
  std::string text;                    // the one-sentence verdict
  // From PyTorch's NCCL flight recorder dumps, where the run has them
  // (RUN/control/flight_recorder/, or `analyze --flight-recorder`).
  FlightRecorderHang flight_recorder;
  bool any() const { return dumps > 0 || flight_recorder.dumps > 0; }
};

HangReport find_hang(const std::vector<trace::HangDump>& dumps);
// "ranks 0-6, 9": ranks, runs of consecutive ones joined.
std::string rank_list(std::vector<int32_t> ranks);
// Every dump in RUN/control/hang/; a file that cannot be read is named in *warnings.
std::vector<trace::HangDump> read_hang_dumps(const std::filesystem::path& run_dir, std::vector<std::string>* warnings);

}  // namespace scalescope::analyze
