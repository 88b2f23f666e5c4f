#pragma once
// Tables of a multi-node run, from analyze's typed results (the one place
// they are formatted): `scalescope analyze` prints them and the HTML report
// shows them in its per-node view.
//
//   for (const report::Table& t : report::node_tables(analyze::analyze_path("job.ssrun", {}))) t.print(std::cout);

#include <vector>

#include "report/table.hpp"

namespace scalescope::analyze {
struct RunAnalysis;
}

namespace scalescope::report {

// Up to three tables, none for a run of one host: each host's clock against
// the reference (status, offset, drift, uncertainty), the nodes (ranks, mean
// breakdown, steady iteration, lateness at collectives, the slowest node, who
// did not report), and intra- against inter-node communicators. Times in ns.
std::vector<Table> node_tables(const analyze::RunAnalysis& run);

}  // namespace scalescope::report
