#pragma once
// The SQLite results file of a sweep (schema: docs/sweep-schema.md). Each
// write is its own committed transaction, so a kill between runs loses nothing.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "sweep/sweep.hpp"
#include "trace/import/sqlite_statement.hpp"

namespace scalescope::sweep {

inline constexpr int32_t kApplicationId = 0x53535750;  // "SSWP"
inline constexpr int kSchemaVersion = 1;

class SweepStore {
 public:
  // A new file, created whole under a temporary name and linked into place;
  // throws Error if it exists (a 0-byte file, left by a killed older build, is replaced).
  static SweepStore create(const std::filesystem::path& path, const std::string& spec_json, const std::string& metric,
                           bool higher_is_better, int planned_runs, const std::string& version);
  // An existing sweep file to continue; throws Error if it is not one, or if
  // its spec differs from spec_json.
  static SweepStore open_for_resume(const std::filesystem::path& path, const std::string& spec_json);
  // Read-only, for read_sweep.
  static SweepStore open_read_only(const std::filesystem::path& path);

  SweepStore(SweepStore&& other) noexcept;
  SweepStore& operator=(SweepStore&&) = delete;
  ~SweepStore();

  int64_t sweep_id() const { return sweep_id_; }
  // Plan indices whose run has finished (any status but "running").
  std::set<int> finished_indices();
  // Records a run as started ("running"), replacing an unfinished row; its
  // note holds `runner_text` (Runner::to_text: who runs it) until it finishes.
  void begin_run(const PlannedRun& run, const std::string& command_json, const std::string& run_dir,
                 const std::string& log_path, double start_unix, const std::string& runner_text = "");
  // Replaces the note of a row still "running" (e.g. "interrupted by signal 2").
  void set_running_note(const PlannedRun& run, const std::string& note);
  // Rows still "running": plan index -> note (the runner text of begin_run).
  std::map<int, std::string> running_rows();
  // Records the outcome of a run.
  void finish_run(const PlannedRun& run, const ProcessResult& result, const RunMetrics& metrics,
                  const std::string& metric_name, const std::string& trace_path);
  // --scheduler slurm: records (or updates) the job of a run.
  void set_slurm_job(int plan_index, const StoredRun::SlurmJob& job, double submit_unix = 0);
  // Drops the job of a run (cancelled by the sweep itself: the run is redone on resume).
  void forget_slurm_job(int plan_index);
  // Runs still "running" that have a job: plan index -> job id.
  std::map<int, std::string> submitted_jobs();
  StoredSweep read();

 private:
  explicit SweepStore(trace::SqliteDatabase db) : db_(std::move(db)) {}
  void init(const std::string& spec_json, const std::string& metric, bool higher_is_better, int planned_runs,
            const std::string& version);
  void check_identity();
  trace::SqliteDatabase db_;
  int64_t sweep_id_ = 0;
};

}  // namespace scalescope::sweep
