#pragma once
// Tables of the advisor's findings and of a diff between two runs, from
// their typed results (the one place they are formatted): `scalescope
// analyze` and `scalescope diff` print them.
//
//   report::findings_table(advise::advise(run)).print(std::cout);
//   for (const report::Table& t : report::diff_tables(analyze::diff(a, b), 15)) t.print(std::cout);

#include <string>
#include <vector>

#include "report/table.hpp"

namespace scalescope::advise {
struct Finding;
}
namespace scalescope::analyze {
struct RunAnalysis;
struct RunDiff;
}

namespace scalescope::report {

// Per rank, the job the advice is fitted to: framework, NCCL, MPI (its calls
// and their time in the window), launcher, and the names that decided it.
Table job_table(const analyze::RunAnalysis& run);
// Where a hung job stopped (the run directory's hang dumps): one row per
// process, the verdict as the table's note; no rows when there are no dumps.
Table hang_table(const analyze::RunAnalysis& run);
// The same from PyTorch's NCCL flight recorder dumps: one row per rank of
// the stuck group, the verdict as the note; no rows when there are none.
Table flight_recorder_table(const analyze::RunAnalysis& run);

// Per rank, its GPU's clocks over the steady iterations (the window where
// none): SM clock median, min and max, the share of samples NVML held the
// clock down and why (power cap, thermal, hardware slowdown, sync boost,
// application clocks), temperature and power against their limits; a
// skipped rank says why in a note. No rows when no rank has NVML samples
// (callers then leave it out).
Table gpu_clocks_table(const analyze::RunAnalysis& run);

// The ranked findings: each one's own saving and its kind (upper bound or
// estimate), the combined saving of it and every root cause above it, and
// its place in the cause graph; notes state the combined estimate of the
// first root causes and its method.
Table findings_table(const std::vector<advise::Finding>& findings);

// The verdict, then iteration time, time breakdown, kernel classes and
// precision, the named changes, the largest kernel changes, kernels found
// on one side only, and copies; per steady iteration where both runs have
// iterations (RunDiff::basis).
std::vector<Table> diff_tables(const analyze::RunDiff& d, int top);
// What `diff` prints: those tables with the inputs named and the ranks that
// lost data noted under the iteration time.
std::vector<Table> diff_tables(const analyze::RunDiff& d, int top, const std::string& a_input,
                               const analyze::RunAnalysis& a, const std::string& b_input,
                               const analyze::RunAnalysis& b);

}  // namespace scalescope::report
