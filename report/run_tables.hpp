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
Table stream_table(const analyze::RunAnalysis& run);
// Iterations per rank: all of them and the steady ones (warm-up left out).
Table iterations_table(const analyze::RunAnalysis& run);
// Lateness at matched collectives per rank.
Table straggler_table(const analyze::RunAnalysis& run);
// NCCL collectives of all ranks by operation and message size: count, GPU
// time, algorithm and bus bandwidth.
Table nccl_table(const analyze::RunAnalysis& run);
Table launch_table(const analyze::RunAnalysis& run);
// GPU idle time inside the iterations: host wait, kernel wait, other.
Table idle_table(const analyze::RunAnalysis& run);
Table copies_table(const analyze::RunAnalysis& run);
Table sync_table(const analyze::RunAnalysis& run);
Table precision_table(const analyze::RunAnalysis& run);
Table layout_table(const analyze::RunAnalysis& run);
Table input_table(const analyze::RunAnalysis& run);
Table numa_table(const analyze::RunAnalysis& run);
// The first rank's `top` kernels by time.
Table top_kernels_table(const analyze::RunAnalysis& run, int top);
// Each rank's top kernels summed by name over all ranks, the `top` largest:
// calls, time, mean and share of the time of the kernels summed.
Table all_ranks_kernels_table(const analyze::RunAnalysis& run, int top);
// Copies and sets summed over all ranks by kind and memory kinds.
Table all_ranks_copies_table(const analyze::RunAnalysis& run);
// Each rank's host threads by CPU time (the first 20 a rank): state sample
// counts, run-queue wait, context switches and the CPUs seen.
Table host_threads_by_cpu_table(const analyze::RunAnalysis& run);
// None for a run without the collector's sampled windows.
std::vector<Table> perturbation_tables(const analyze::RunAnalysis& run);
// The collector's host sampler: none for traces without it; the threads by
// CPU time among them; the stacks table only where some thread has native
// call stacks.
std::vector<Table> host_tables(const analyze::RunAnalysis& run);

// Every table `analyze` prints, in its order. all_rows == false (the
// terminal): the attribution tables show the first rank's `top` rows.
std::vector<Table> run_tables(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings, int top,
                              bool all_rows);

}  // namespace scalescope::report
