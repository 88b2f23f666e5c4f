#pragma once
// What the Python bootstrap wrote in one process of a profiled job
// (<run dir>/python-<host>-<pid>.json): whether its hooks worked, and the
// rank and process groups torch.distributed gave it. `profile` reports the
// problems; the run loader gives the rank and process groups to that process's
// trace.
//
//   for (const PythonRecord& r : read_python_records(run_dir)) ...

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

inline constexpr std::string_view kPythonRecordPrefix = "python-";

struct PythonRecord {
  uint32_t pid = 0;
  std::string hostname;
  int32_t rank = -1, local_rank = -1;       // from torch.distributed, -1 if not initialised
  std::vector<ProcessGroup> process_groups;  // from torch.distributed, by name
  std::string json;                          // the record as written
  std::vector<std::string> problems;         // "optimizer_steps: missing: ...", "torch: import failed: ..."
};

// One record's facts; nullopt for any other JSON (another kind of file, a
// field of the wrong type, a torn write).
std::optional<PythonRecord> parse_python_record(std::string_view text);

// The records in run_dir (only_host: that host's alone), by file name; torn or
// foreign files are skipped.
std::vector<PythonRecord> read_python_records(const std::filesystem::path& run_dir, const std::string& only_host = "");

// What torch.distributed told each traced process, given to its trace (the
// record of the same host name and pid): the process groups, and the rank
// where the launcher's environment gave none. Returns how many traces gained.
size_t attach_python_records(const std::vector<PythonRecord>& records, std::vector<Trace>& traces);
// The same for one process's rank and groups (an analysis made without its
// whole trace); true when either gained.
bool take_python_record(const PythonRecord& record, int32_t& rank, std::vector<ProcessGroup>& groups);
const PythonRecord* record_of_process(const std::vector<PythonRecord>& records, std::string_view hostname,
                                      uint32_t pid);

}  // namespace scalescope::trace
