#pragma once
// A process's hang dump: its last collectives (from NCCL's NVTX ranges) and
// its last iterations, written by the collector into the run directory
// (control/hang/<host>-<pid>.json) when the job stops making progress, on
// `scalescope trigger --dump`, or on SIGTERM; read by `scalescope analyze`.
// The one definition of the file's fields, for its writer and its reader.
//
//   HangDump d = ...;                         // the collector's ring
//   std::string text = hang_dump_json(d);     // written whole, then renamed
//   auto back = parse_hang_dump(text, &why);  // nullopt with `why` on bad input

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/python_stacks.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::trace {

struct HangCollective {
  NcclOp op = NcclOp::kUnknown;
  uint64_t communicator = 0;  // NCCL's commHash: equal on every rank of the communicator
  uint64_t sequence = 0;      // this process's count of calls on the communicator, from 1
  uint64_t bytes = 0;
  int64_t enter_unix_ns = 0;
  int64_t leave_unix_ns = 0;  // 0: not left (still inside when the dump was written)
};

struct HangIteration {
  uint64_t index = 0;          // the collector's iteration index (0-based)
  int64_t begin_unix_ns = 0;
};

// One thread's Python stack when the dump was written.
struct HangPythonThread {
  uint32_t tid = 0;                       // native thread id; the main thread's equals the pid
  std::vector<PythonStackFrame> frames;  // leaf first
};

struct HangDump {
  std::string host;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::string reason;  // "hang-after", "trigger" or "sigterm"
  int64_t unix_ns = 0;  // when written
  // The process had found the job stalled for --hang-after when it wrote
  // this (a SIGTERM dump that follows keeps saying so): the run's exit
  // status is then "hung".
  bool stalled = false;
  // False when NCCL's NVTX ranges did not reach the collector's ring (NVTX
  // went to CUPTI): `collectives` is then empty for want of a source.
  bool collectives_recorded = false;
  std::vector<HangCollective> collectives;  // oldest first
  std::vector<HangIteration> iterations;    // oldest first
  // Every Python thread's stack when the dump was written, read as the
  // outside reader reads (no GIL needed: a thread blocked holding it is read
  // too); empty with python_note saying why in a Python process that could
  // not be read, empty without a note in a process that is not Python.
  std::vector<HangPythonThread> python;
  std::string python_note;
};

std::string hang_dump_json(const HangDump& d);
std::optional<HangDump> parse_hang_dump(std::string_view text, std::string* error);

// control/hang/ of a run directory, and the name of one process's dump in it.
std::filesystem::path hang_dump_dir(const std::filesystem::path& run_dir);
std::string hang_dump_name(std::string_view host, uint32_t pid);

// Where `profile` points PyTorch's NCCL flight recorder (TORCH_FR_DUMP_TEMP_FILE,
// a prefix PyTorch appends each rank to) when the job has not chosen a place:
// RUN/control/flight_recorder/rank_<rank>, read by `analyze`.
std::filesystem::path flight_recorder_dir(const std::filesystem::path& run_dir);
std::string flight_recorder_prefix(const std::filesystem::path& run_dir);

}  // namespace scalescope::trace
