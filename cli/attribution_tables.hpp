#pragma once
// The tables of `analyze` that show GPU time by operator, module and range
// (analyze/attribution.hpp), kept apart from analyze_command.cpp.
#include <vector>

#include "analyze/analyze.hpp"
#include "report/table.hpp"

namespace scalescope::cli {

// all == false (the terminal): the first rank's `top` operators and ranges.
// all == true (CSV, JSON tables): every rank, every row, plus the tree and
// the per-iteration table.
std::vector<report::Table> attribution_tables(const analyze::RunAnalysis& run, int top, bool all);

}  // namespace scalescope::cli
