#pragma once
// A sweep's progress on the terminal or in a log, drawn from the events the
// sweep reports (sweep::SweepEvent): a redrawn bar on a terminal, one line
// per run elsewhere. Config values come from the command line and are
// escaped here, before they reach the terminal.
//
//   sweep::run_sweep(spec, db, options, report::sweep_progress_printer(stderr, ::isatty(2)));

#include <cstdio>
#include <string>

#include "sweep/sweep.hpp"

namespace scalescope::report {

// bar: redraw one line (at most once a second while a run is in flight)
// instead of printing a line per run start and end.
sweep::SweepObserver sweep_progress_printer(std::FILE* out, bool bar);

// "42s", "3m05s", "1h02m"; "?" when unknown.
std::string format_eta(double seconds);

}  // namespace scalescope::report
