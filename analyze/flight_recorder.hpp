#pragma once
// PyTorch's NCCL flight recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE > 0):
// each rank's ring of its last collectives as ProcessGroupNCCL recorded them,
// written on a watchdog timeout (TORCH_NCCL_DUMP_ON_TIMEOUT) to
// TORCH_FR_DUMP_TEMP_FILE (or TORCH_NCCL_DEBUG_INFO_TEMP_FILE) + the rank,
// or returned by torch._C._distributed_c10d._dump_nccl_trace() (pickle) and
// _dump_nccl_trace_json() (JSON). Read here in both formats, and turned into
// where the job stopped: docs/collector.md, "When a job hangs".
//
//   FlightRecorderDump d = read_flight_recorder_dump("run/control/flight_recorder/rank_3");  // throws Error
//   FlightRecorderHang h = find_flight_recorder_hang(dumps);  // h.text: "ranks 0-1, 3 wait in nccl:all_reduce #18 ..."

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace scalescope::analyze {

struct FlightRecorderEntry {
  int64_t record_id = 0;
  std::string pg_name;  // the process group's name ("0" for the default group): equal on every rank of it
  std::string pg_desc;  // "default_pg", "undefined", or the group's description
  int64_t collective_seq_id = 0;  // the group's count of collective kernels, from 1: equal across its ranks
  int64_t p2p_seq_id = 0;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:all_reduce"
  int64_t time_created_ns = 0;
  std::string state;  // "scheduled", "started" (needs TORCH_NCCL_ENABLE_TIMING) or "completed"
};

struct FlightRecorderDump {
  std::string file;
  int32_t rank = -1;  // from the file name: PyTorch writes PREFIX<rank>
  std::string version;
  std::vector<std::pair<std::string, std::vector<int32_t>>> group_ranks;  // pg_config: group name -> global ranks
  std::vector<FlightRecorderEntry> entries;                              // oldest first
};

// One rank's part in the hang, from its flight recorder dump.
struct FlightRecorderRank {
  int32_t rank = -1;
  std::string file;                      // empty: the rank is in the group but wrote no dump
  std::string state;                     // "waiting", "not reached", "past it", "no dump", "no collectives"
  int64_t furthest = 0;                  // the highest collective_seq_id it recorded in the stuck group
  std::optional<FlightRecorderEntry> pending;  // its latest entry started and not completed, else its oldest
                                               // not completed (the first its GPU has not finished)
};

struct FlightRecorderHang {
  size_t dumps = 0;  // 0: none read
  bool in_collective = false;
  std::string pg_name, pg_desc, op;
  int64_t collective_seq_id = 0;
  std::vector<int32_t> never_reached;  // ranks of the group whose dump stops before collective_seq_id
  std::vector<FlightRecorderRank> ranks;
  std::string text;  // the verdict, one sentence
};

// A dump's bytes (pickle or JSON, told apart by the first byte); throws
// scalescope::Error "<file>: <why>" on anything else.
FlightRecorderDump parse_flight_recorder_dump(std::string_view bytes, const std::string& file, int32_t rank);
// Reads one file; its rank is the number its name ends with.
FlightRecorderDump read_flight_recorder_dump(const std::filesystem::path& file);
// A file, a directory (every file in it whose name ends with a number), or a
// prefix as PyTorch's variables give it (/tmp/nccl_trace_rank_: every file
// that name and then a number). Throws Error when none is found or one is bad.
std::vector<FlightRecorderDump> read_flight_recorder_dumps(const std::filesystem::path& where);

// The dumps in a run directory (trace::flight_recorder_dir, where `profile`
// points PyTorch); a file that cannot be read is named in *warnings.
std::vector<FlightRecorderDump> read_run_flight_recorder_dumps(const std::filesystem::path& run_dir,
                                                               std::vector<std::string>* warnings);

FlightRecorderHang find_flight_recorder_hang(const std::vector<FlightRecorderDump>& dumps);

void to_json(nlohmann::json& j, const FlightRecorderHang& v);

}  // namespace scalescope::analyze
