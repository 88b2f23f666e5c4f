#pragma once
// The tables that show GPU time by operator, module and range
// (analyze/attribution.hpp): `analyze` prints them and the HTML report shows
// the first rank's.
#include <vector>

#include "report/table.hpp"

namespace scalescope::analyze {
struct RunAnalysis;
}

namespace scalescope::report {

// all == false (the terminal): the first rank's `top` operators and ranges.
// all == true (CSV, JSON tables): every rank, every row, plus the tree and
// the per-iteration table.
std::vector<Table> attribution_tables(const analyze::RunAnalysis& run, int top, bool all);

}  // namespace scalescope::report
