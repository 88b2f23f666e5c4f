#pragma once
// Windows asked of a running profiled job, and the job's progress, through
// small files in the run directory's control/ folder: no daemon, and on a
// shared filesystem every node's processes see the same requests.
//
//   control/window-<id>.json    a request (from `scalescope trigger`, or a
//                               time-based window that one process of the
//                               job claimed for all)
//   control/progress/<host>-<pid>.json   each process's last iteration, once a second
//   control/dump-<id>.json      a request for hang dumps (`scalescope trigger --dump`)
//   control/hang/<host>-<pid>.json       a process's hang dump (trace/model/hang_dump.hpp)
//
// Files are written whole under a temporary name and then linked or renamed
// into place, so a reader never sees half a file and two writers of the same
// request id cannot both win.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/model/hang_dump.hpp"

namespace scalescope::collect {

struct WindowRequest {
  std::string id;                 // "3" (a trigger) or "time-29491" (a time-based window): the file's name
  uint64_t start_iteration = 0;   // the iteration index every process opens the window at
  uint64_t iterations = 20;       // how many iterations it traces
  std::vector<int32_t> ranks;     // empty: every process
  std::string reason;             // "trigger" or "time"
  std::string note;               // the user's words (--note)
  std::string requested_by;       // user@host of the trigger, or the process that claimed a time window
  int64_t requested_unix_ns = 0;  // when
};

// Parses a request file's text; nullopt with *error set on anything malformed.
std::optional<WindowRequest> parse_window_request(std::string_view text, std::string* error);
std::string window_request_json(const WindowRequest& r);

struct Progress {
  std::string host;
  uint32_t pid = 0;
  int32_t rank = -1;
  uint64_t iteration = 0;     // index of the last iteration begun
  double step_ns = 0;         // median iteration time so far (0: not known yet)
  int64_t unix_ns = 0;        // when this was written
  int64_t iteration_unix_ns = 0;  // when the last iteration began (0: not known, an older collector)
};
std::optional<Progress> parse_progress(std::string_view text, std::string* error);
std::string progress_json(const Progress& p);

std::filesystem::path control_dir(const std::filesystem::path& run_dir);

// Writes `text` to `path` under a temporary name beside it, then renames it
// into place: a reader sees the old file or the new one, never half of one.
// Throws trace::Error naming the file on an I/O failure.
void write_file_whole(const std::filesystem::path& path, const std::string& text);

// Asks every process of the run for a hang dump now: control/dump-<id>.json
// (id as a window request's). False when the id is taken.
bool create_dump_request(const std::filesystem::path& run_dir, const std::string& id, const std::string& requested_by);
// Writes this process's dump as control/hang/<host>-<pid>.json.
void write_hang_dump(const std::filesystem::path& run_dir, const trace::HangDump& dump);

// Whether the job has stalled: every process that reported has begun no
// iteration for `after_s` seconds at `now_unix_ns` (from the progress files'
// iteration times). False while no process has reported an iteration time.
bool job_stalled(const std::vector<Progress>& progress, double after_s, int64_t now_unix_ns);

// Writes the request as control/window-<id>.json unless that file exists.
// Returns true when written, false when the id is taken (another writer
// won); throws trace::Error on an I/O failure.
bool create_window_request(const std::filesystem::path& run_dir, const WindowRequest& r);
// Every request in the folder, by file name; malformed ones are skipped and
// named in *skipped (one line each).
std::vector<WindowRequest> read_window_requests(const std::filesystem::path& run_dir,
                                                std::vector<std::string>* skipped = nullptr);
void write_progress(const std::filesystem::path& run_dir, const Progress& p);
std::vector<Progress> read_progress(const std::filesystem::path& run_dir, std::vector<std::string>* skipped = nullptr);

// The iteration a window asked for at `now_unix_ns` should start at so that
// every process can see the request first: each process's last report moved
// on to now at its step time, then `lead` seconds of iterations (at the
// fastest step time) past the furthest; at least 2 iterations, 2 when no
// step time is known.
uint64_t aligned_start(const std::vector<Progress>& progress, double lead_s, int64_t now_unix_ns);

// What a process does at an iteration boundary: looks at control/ at most
// every `period` (one stat of the folder when nothing changed) and hands
// back the requests not seen before.
class ControlWatcher {
 public:
  ControlWatcher(std::filesystem::path run_dir, std::chrono::milliseconds period);
  // New requests since the last call that found any; empty most of the time.
  std::vector<WindowRequest> poll(std::chrono::steady_clock::time_point now);
  void look_now() { next_ = {}; }  // the next poll looks, whatever the period
  uint64_t checks() const { return checks_; }  // folder looks (stat calls)
  uint64_t scans() const { return scans_; }    // folder reads after a change
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Dump requests (control/dump-<id>.json) found by poll() and not taken yet.
  std::vector<std::string> take_dump_requests() { return std::exchange(dump_requests_, {}); }

 private:
  std::filesystem::path run_dir_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point next_{};
  int64_t seen_mtime_ns_ = -1;
  std::vector<std::string> seen_ids_;
  std::vector<std::string> seen_dumps_, dump_requests_;
  std::vector<std::string> skipped_;
  uint64_t checks_ = 0, scans_ = 0;
};

}  // namespace scalescope::collect
