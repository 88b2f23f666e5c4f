#pragma once
// Attribution (attribution.hpp) of a rank read as chunks (chunk_source.hpp):
// for each window asked, the same Attribution however the rank is chunked
// (a file's table chunks, or slices of a trace in memory), to the last
// bit, with memory bounded by what must be kept instead of by the number of
// events.
//
//   const std::vector<AttributionWindow> windows{{ws, we, true, &iterations}};
//   std::vector<Attribution> a = stream_attribution(chunks, windows, kernel_info);
//
// How. A first pass over the chunks gives the range names their keys (in
// table order), says whether the trace links backward
// ranges by flows or by emit_nvtx seq, and notes per chunk the earliest start
// and the smallest correlation id, link and seq of its rows. Then two sweeps
// run in time order, each taking its chunks by earliest start and releasing
// the rows that start before the next chunk's earliest start (no later row
// can precede them), sorted in one fixed order (by start, then table and row):
//   - the host sweep: ranges and API calls of every thread, one stack of open
//     ranges per thread, the trie of paths; each API call leaves its
//     correlation id -> path node;
//   - the GPU sweep: kernels, copies and sets per window, through the same
//     ShareSweep. A GPU row takes its node from its correlation id once no
//     API call still to come carries an id at or below it (the host sweep is
//     advanced until then), so a repeated id resolves to its last call.
// State kept, and what bounds it:
//   - stacks of open ranges per thread (depth), the trie and per-node sums of
//     each window (distinct paths), name keys (distinct names) found through
//     a table by string id (32 bytes per string of the file, whose strings
//     the reader holds anyway: emit_nvtx texts with "seq = N" are one string
//     per operator call);
//   - correlation id -> node for API calls whose GPU rows may still come:
//     ids below the smallest id of the GPU rows not yet read are dropped, so
//     with ids that grow with time (CUPTI's and Kineto's counters) this is
//     the work in flight between a launch and its GPU row;
//   - forward contexts of backward links (flow ids or seq numbers): dropped
//     once no range still to come carries one as small, so with ids that grow
//     with time this is the forward ranges whose backward has not run yet;
//   - rows of the chunks read but not yet released (about one chunk per
//     table), and per window the GPU work running at once;
//   - per window, one entry per iteration and path node that had work in it
//     (the per-iteration operator times need every iteration's shares until
//     the top operators are known at the end): bounded by iterations x paths,
//     as the Attribution's own iteration table grows with iterations.
// Ids that do not grow with time stay exact but keep more entries (the stats
// say how many).

#include <cstdint>
#include <vector>

#include "analyze/analyze.hpp"
#include "analyze/chunk_source.hpp"

namespace scalescope::analyze {

// One window to attribute.
struct AttributionWindow {
  trace::Timestamp start = 0, end = 0;
  bool whole_trace = true;                             // every range counts as a call (no --window)
  const std::vector<Iteration>* iterations = nullptr;  // the window's iterations; nullptr: none
};

// The most entries each kind of state held at once (for tests and benchmarks).
struct AttributionStreamStats {
  size_t correlations = 0;      // correlation ids with their call's node kept
  size_t correlation_span = 0;  // ids from the oldest kept to the newest (a deque of 4 bytes each)
  size_t host_rows = 0;         // ranges and API calls read, not yet taken in order
  size_t gpu_rows = 0;          // GPU rows read, not yet taken in order (all windows)
  size_t link_contexts = 0;     // forward contexts of links or seq numbers
  size_t open_ranges = 0;       // ranges on the stacks of all threads
};

// kernel_info: classify_names() of the trace, indexed by kernel name id
// (every kernel's name classified). Reads each chunk twice: in the first pass
// and in the sweep its rows belong to (a chunk of neither, once). One call
// with several windows shares the reads.
std::vector<Attribution> stream_attribution(ChunkSource& chunks, const std::vector<AttributionWindow>& windows,
                                            const std::vector<KernelInfo>& kernel_info,
                                            AttributionStreamStats* stats = nullptr);

}  // namespace scalescope::analyze
