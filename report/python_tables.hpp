#pragma once
// The hottest Python frames of each rank's processes and threads, from the
// Python bootstrap's stacks (analyze's typed results; the one place they are
// formatted): `scalescope analyze` prints the table and the HTML report shows
// it in its host view.
//
//   for (const report::Table& t : report::python_frame_tables(analyze::analyze_path("run.ssrun", {}))) t.print(std::cout);

#include <vector>

#include "report/table.hpp"

namespace scalescope::analyze {
struct RunAnalysis;
}

namespace scalescope::report {

// One table, none when no rank has Python stacks: per rank, process and
// thread (the rank's own first, then its DataLoader workers), the frames
// where samples ended most often ("dataset.py:41 __getitem__"), their share
// of the thread's samples and the stack that ended there most often.
std::vector<Table> python_frame_tables(const analyze::RunAnalysis& run);

}  // namespace scalescope::report
