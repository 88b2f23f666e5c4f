#pragma once
// The tables of one analysed run, from analyze's typed results: the one place
// each is built. `scalescope analyze` prints them (terminal, CSV, JSON) and
// the HTML report shows the same tables, adding charts beside them.
// Times in ns (the terminal shows *_ns columns as durations), shares in %.
//
//   for (const report::Table& t : report::run_tables(run, findings, 10, false)) t.print(std::cout);

#include <vector>

#include "report/table.hpp"

namespace scalescope::advise {
struct Finding;
}
namespace scalescope::analyze {
struct RunAnalysis;
}

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

// Every table `analyze` prints, in its order. all_rows == false (the
// terminal): the attribution tables show the first rank's `top` rows.
std::vector<Table> run_tables(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings, int top,
                              bool all_rows);

}  // namespace scalescope::report
