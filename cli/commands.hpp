#pragma once
// Each subcommand is a thin function over the libraries (no logic here): it
// adds itself to the app; one that runs a job (profile, sweep) stores its exit
// code. Errors are thrown as scalescope::Error and printed by main as one line.

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Formatter;
}  // namespace CLI

namespace scalescope::cli {

void add_profile_command(CLI::App& app, int& exit_code);  // collect/
void add_trigger_command(CLI::App& app, int& exit_code);  // collect/ (a window asked of a running profile)
void add_import_command(CLI::App& app, int& exit_code);   // trace/ (Kineto importer)
void add_stats_command(CLI::App& app, int& exit_code);    // trace/
void add_export_command(CLI::App& app, int& exit_code);   // trace/
void add_analyze_command(CLI::App& app, int& exit_code);  // analyze/, advise/
void add_diff_command(CLI::App& app, int& exit_code);     // analyze/
void add_sweep_command(CLI::App& app, int& exit_code);    // sweep/
void add_scaling_command(CLI::App& app, int& exit_code);  // scaling/
void add_mlperf_command(CLI::App& app, int& exit_code);   // mlperf/
void add_report_command(CLI::App& app, int& exit_code);   // report/
void add_topo_command(CLI::App& app, int& exit_code);     // collect/ host facts
void add_demo_command(CLI::App& app, int& exit_code);     // everything

// The job's command line: everything after the first "--", taken out of argv
// before CLI11 parses, because CLI11 2.1 still matches a subcommand's own
// options there (`sweep ... -- train.py --seed 1` failed on --seed).
// Commands that run a job (profile, sweep) take it; main rejects it elsewhere.
std::vector<std::string>& job_command();
// Moves the job command out (empty if none was given).
std::vector<std::string> take_job_command();

// The help text of every command: wrapped to the terminal's width (80 when
// the output is not a terminal and $COLUMNS is unset), positional arguments
// in capitals as in "Usage: scalescope analyze [OPTIONS] TRACE".
std::shared_ptr<CLI::Formatter> make_help_formatter();

}  // namespace scalescope::cli
