#pragma once
// The tables of one analysed run, from analyze's and advise's typed results,
// and of a diff between two runs: the one place each is built. `scalescope
// analyze` and `scalescope diff` print them (terminal, CSV, JSON) and the
// HTML report shows the same tables, adding charts beside them.
// Times in ns (the terminal shows *_ns columns as durations), shares in %.
//
//   for (const report::Table& t : report::run_tables(run, findings, 10, false)) t.print(std::cout);
//   for (const report::Table& t : report::diff_tables(analyze::diff(a, b), 15)) t.print(std::cout);

#include <string>
#include <string_view>
#include <vector>

#include "report/table.hpp"

namespace scalescope::advise {
struct Finding;
}
namespace scalescope::analyze {
struct RunAnalysis;
struct RunDiff;
}  // namespace scalescope::analyze

namespace scalescope::report {

// Where each rank's time went: wall, compute, exposed communication,
// copies/sets and idle (the parts add up to wall), and the overlapped
// communication, each with its share.
Table breakdown_table(const analyze::RunAnalysis& run);
// Iterations per rank: all of them and the steady ones (warm-up left out).
Table iterations_table(const analyze::RunAnalysis& run);
// Lateness at matched collectives per rank.
Table straggler_table(const analyze::RunAnalysis& run);
// NCCL collectives of all ranks by operation and message size: count, GPU
// time, algorithm and bus bandwidth.
Table nccl_table(const analyze::RunAnalysis& run);
// GPU idle time inside the iterations: host wait, kernel wait, other.
Table idle_table(const analyze::RunAnalysis& run);
// Each rank's top kernels summed by name over all ranks, the `top` largest:
// calls, time, mean and share of the time of the kernels summed.
Table all_ranks_kernels_table(const analyze::RunAnalysis& run, int top);
// Copies and sets summed over all ranks by kind and memory kinds.
Table all_ranks_copies_table(const analyze::RunAnalysis& run);
// Each rank's host threads by CPU time (the first 20 a rank): state sample
// counts, run-queue wait, context switches and the CPUs seen.
Table host_threads_by_cpu_table(const analyze::RunAnalysis& run);
// The collector's host sampler: none for traces without it; the threads by
// CPU time among them; the stacks table only where some thread has native
// call stacks.
std::vector<Table> host_tables(const analyze::RunAnalysis& run);

// Up to three tables, none for a run of one host: each host's clock against
// the reference (status, offset, drift, uncertainty), the nodes (ranks, mean
// breakdown, steady iteration, lateness at collectives, the slowest node, who
// did not report), and intra- against inter-node communicators.
std::vector<Table> node_tables(const analyze::RunAnalysis& run);
// GPU time by operator, module and range (analyze/attribution.hpp).
// all == false (the terminal): the first rank's `top` operators and ranges.
// all == true (CSV, JSON tables): every rank, every row, plus the tree and
// the per-iteration table.
std::vector<Table> attribution_tables(const analyze::RunAnalysis& run, int top, bool all);
// One table, none when no rank has Python stacks: per rank, process and
// thread (the rank's own first, then its DataLoader workers), the frames
// where samples ended most often ("dataset.py:41 __getitem__"), their share
// of the thread's samples and the stack that ended there most often.
std::vector<Table> python_frame_tables(const analyze::RunAnalysis& run);

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

// Every table `analyze` prints, in its order. all_rows == false (the
// terminal): the attribution tables show the first rank's `top` rows.
std::vector<Table> run_tables(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings, int top,
                              bool all_rows);

// The few lines a person reads first about an analysed run, printed above
// the tables and alone with `analyze --summary`: how many ranks, the steady
// step time, where the GPUs' time went, and the top findings with their
// savings (at most `top_findings`).
//   for (const auto& line : report::run_headline(run, findings, "trace.json.gz")) std::cout << line << "\n";
std::vector<std::string> run_headline(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings,
                                      std::string_view input, size_t top_findings = 3);

}  // namespace scalescope::report
