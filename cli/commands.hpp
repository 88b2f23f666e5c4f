#pragma once
// Each subcommand is a thin function over the libraries (no logic here): it
// adds itself to the app and, when run, stores the process exit code. Errors are
// thrown as scalescope::Error and printed by main as one line.

namespace CLI {
class App;
}

namespace scalescope::cli {

void add_profile_command(CLI::App& app, int& exit_code);   // collect/
void add_import_command(CLI::App& app, int& exit_code);    // trace/ (Kineto importer)
void add_stats_command(CLI::App& app, int& exit_code);     // trace/
void add_export_command(CLI::App& app, int& exit_code);    // trace/
void add_analyze_command(CLI::App& app, int& exit_code);   // analyze/, advise/
void add_diff_command(CLI::App& app, int& exit_code);      // analyze/
void add_sweep_command(CLI::App& app, int& exit_code);     // sweep/
void add_scaling_command(CLI::App& app, int& exit_code);   // scaling/
void add_mlperf_command(CLI::App& app, int& exit_code);    // mlperf/
void add_report_command(CLI::App& app, int& exit_code);    // report/
void add_topo_command(CLI::App& app, int& exit_code);      // collect/ host facts
void add_demo_command(CLI::App& app, int& exit_code);      // everything

}  // namespace scalescope::cli
