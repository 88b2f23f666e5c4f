#pragma once
// The one reader of MLPerf's MLLOG lines (":::MLLOG {json}"), for `mlperf
// ingest` and for a sweep's `--metric mlperf`: a producer fact kept in one
// place so that the two cannot disagree.
//
// The run_stop rule: the first run_start and the first run_stop count. MLPerf's
// compliance checker requires exactly one run_stop, and the reference result
// summarizer (mlcommons/logging result_summarizer.py, "SUM" in docs/mlperf.md)
// times a run from the first run_start and run_stop of the file (re.search); a
// log with a second run_stop (a restarted script appending to the same file)
// is timed as the reference would time it. docs/mlperf.md, "Reading a log".
//
//   trace::LogSummary s = trace::parse_mllog(text);
//   if (s.run_start_ms && s.run_stop_ms) minutes = (*s.run_stop_ms - *s.run_start_ms) / 60000.0;

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace scalescope::trace {

struct LogSummary {
  uint64_t mllog_lines = 0;      // well-formed MLLOG events
  uint64_t malformed_lines = 0;  // ":::MLLOG" followed by something that is not an event
  uint64_t overlong_lines = 0;   // lines over kMaxMllogLineBytes, scanned in part
  std::string benchmark;         // submission_benchmark
  std::string division;          // submission_division
  std::string org;               // submission_org
  std::string platform;          // submission_platform
  std::optional<int64_t> global_batch_size;
  std::optional<int64_t> run_start_ms;  // first run_start
  std::optional<int64_t> run_stop_ms;   // first run_stop (the rule: see above)
  std::string stop_status;              // run_stop metadata.status ("success", "aborted", ...)
  std::optional<double> last_eval_accuracy;
  // Training progress when the run stopped: the epoch_num (or samples_count)
  // of the last eval_accuracy before run_stop. Its unit is the benchmark's
  // (epochs for dlrm_dcnv2, rgat and retinanet, samples for bert, llama2_70b_lora
  // and stable_diffusion, tokens for gpt3); with global_batch_size it tells how
  // the work to converge grows with the batch (docs/scaling.md, "Prediction").
  std::optional<double> progress_at_stop;
};

// Lines longer than this are scanned for events up to this length only, so a
// file without newlines cannot take unbounded memory.
inline constexpr size_t kMaxMllogLineBytes = 1 << 20;

// Incremental parser: feed the bytes of a log in chunks of any size. Events
// may sit behind launcher prefixes ("0: ", "  15: ") or other output on the
// same line; '\r' also ends a line (progress bars). Latin-1 bytes inside an
// event are read as Latin-1.
class MllogParser {
 public:
  MllogParser();
  ~MllogParser();
  MllogParser(const MllogParser&) = delete;
  MllogParser& operator=(const MllogParser&) = delete;

  void feed(std::string_view bytes);
  // Ends the last line and returns the summary; the parser is then reset.
  LogSummary finish();

 private:
  struct Impl;
  Impl* impl_;
};

// Parses a whole log held in memory.
LogSummary parse_mllog(std::string_view bytes);

}  // namespace scalescope::trace
