#pragma once
// One rank's .sstrace analysed chunk by chunk (issue 20): memory bounded by
// the chunks that overlap in time and by the rank's distinct names, not by
// its number of events.
//
//   analyze::RankAnalysis r = analyze::analyze_rank_streaming("rank0.sstrace", options);
//
// What it computes, over the whole trace, equal to analyze_rank() on the
// same file to the last bit (stream_analyzer_test checks every field): the
// rank's identity and data loss, the time breakdown with per-stream busy
// time, kernel classes, launch overhead (gaps, exact medians), copies,
// synchronization, precision, layout, top kernels, NUMA, the iterations
// (every detection source), input starvation, the host sampler's analysis
// and the collective list for stragglers.
//
// How: ChunkReader walks the file; a first pass over the table chunks adds up
// what is a plain sum per row and notes each GPU chunk's earliest start; a
// second pass takes the GPU chunks in order of that start and cuts time at
// the next chunk's earliest start, which no later row can precede: the
// interval unions (breakdown, streams, gaps) are summed segment by segment,
// keeping only rows that reach past the cut; the idle gaps of that union in
// which an input copy ended (their ends sorted, from pass 1) are input
// starvation. Medians are exact in two
// passes: a histogram of durations by 12-bit mantissa finds the bucket of
// the middle rank, whose few distinct values the second pass collects.
// Iterations, host threads and collectives run the whole-trace code on the
// rows they read, kept from the first pass: NVTX ranges that can mark steps,
// NCCL rows and communication kernels (one collective-list entry each), the
// host tables. Only when no range, annotation or collective marks the steps
// does detection read every kernel's name and start (12 bytes per kernel, in
// one more pass): the repeating-kernel search needs each name's whole
// sequence of gaps, and this is the one state that grows with the trace.
//
// Attribution is streamed too (attribution_stream.hpp: its own passes).
// Not computed: the steady-state pass (RankAnalysis::steady stays null);
// --window is refused.
// A trace whose GPU chunks all span its whole time (not one a writer's
// append() produces) is still exact but holds those chunks' rows at once.

#include <filesystem>

#include "analyze/analyze.hpp"

namespace scalescope::analyze {

// Errors as read_trace() (naming the file); Error when options.window is set.
RankAnalysis analyze_rank_streaming(const std::filesystem::path& sstrace, const Options& options);

}  // namespace scalescope::analyze
