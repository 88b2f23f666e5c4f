#pragma once
// Private to the sweep runner: talking to Slurm through its own commands
// (sbatch, scontrol, sacct, scancel), as a user would. Each run of a
// `--scheduler slurm` sweep is one batch job whose script execs the run's
// launch line; its state is read with `scontrol show job` while slurmctld
// still knows the job (MinJobAge, 300 s by default), else with `sacct`.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep.hpp"

namespace scalescope::sweep {

// What Slurm says about one job.
struct SlurmJobState {
  std::string job_id;
  std::string state;              // "PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", ...
  int exit_code = 0, signal = 0;  // ExitCode=CODE:SIGNAL of the batch script
  std::string nodelist;           // "" until it runs
  std::optional<int> gpus;        // GPUs allocated (gres/gpu in the allocation's TRES)
  std::optional<double> submit_unix, start_unix, end_unix;
  bool finished() const;  // a final state: it will not run (again) on its own
};

// One line of `scontrol show job -o ID`; nullopt when it names no job.
std::optional<SlurmJobState> parse_scontrol_job(std::string_view line);
// One line of `sacct -X -n -P -o JobID,State,ExitCode,NodeList,Submit,Start,End,AllocTRES`.
std::optional<SlurmJobState> parse_sacct_line(std::string_view line);
// Slurm's local "2026-12-06T09:05:11"; nullopt for "Unknown", "None", "".
std::optional<double> parse_slurm_time(std::string_view text);

// The run's outcome as a sweep records it: COMPLETED is ok, FAILED failed
// (crashed when the script died by a signal), TIMEOUT/DEADLINE timeout,
// OUT_OF_MEMORY failed, anything else (CANCELLED, PREEMPTED, NODE_FAIL,
// BOOT_FAIL, ...) error; the note names the job and its state.
ProcessResult slurm_result(const SlurmJobState& job);

// The batch script of a run: exports the run's SCALESCOPE_SWEEP_* variables
// and execs argv (each token quoted for sh).
std::string batch_script(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

// sbatch's argv for one run (script last).
std::vector<std::string> sbatch_command(const SweepSpec& spec, const PlannedRun& run, const SlurmOptions& slurm,
                                        const std::string& job_name, const std::string& comment,
                                        const std::filesystem::path& log_path, const std::filesystem::path& script);

// The commands themselves. Errors (sbatch refusing a job, a missing command)
// throw Error with Slurm's own message.
std::string slurm_submit(const std::vector<std::string>& sbatch_argv);  // the job id
// nullopt when neither scontrol nor sacct knows the job.
std::optional<SlurmJobState> slurm_query(const std::string& job_id);
void slurm_cancel(const std::vector<std::string>& job_ids);

}  // namespace scalescope::sweep
