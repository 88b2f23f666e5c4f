#pragma once
// The one analysis engine of a rank, read as chunks (chunk_source.hpp): an
// .sstrace file chunk by chunk, memory bounded by the chunks that overlap in
// time and by the rank's distinct names, not by its number of events; or a
// trace in memory as slices of its tables (analyze_rank, analyze.hpp).
//
//   analyze::RankAnalysis r = analyze::analyze_rank_streaming("rank0.sstrace", options);
//
// What it computes, the same to the last bit however the rank is chunked
// (stream_analyzer_test checks every field), over the whole trace or
// Options::window (every WindowSpec kind): the rank's identity
// and data loss, the time breakdown with per-stream busy time, kernel
// classes, launch overhead (gaps, exact medians), copies, synchronization,
// precision, layout, top kernels, NUMA, the iterations (every detection
// source), input starvation, both splits of idle time by cause (idle_cover,
// and idle_breakdown: host wait, kernel wait, other),
// the GPU clocks of the NVML samples, the host sampler's analysis, the NCCL
// collectives by operation and size, the collective list for stragglers
// and, without a window, the steady-state pass
// (RankAnalysis::steady: the same figures over the iterations after warm-up).
//
// How: the chunks are walked; a first pass reads what every window needs
// (the trace's span, each GPU chunk's earliest start, the rows kept below)
// and, without --window, adds up what is a plain sum per row (the
// whole-trace window is the span of those very rows). Once the iterations
// fix the windows, a second pass takes the GPU chunks in order of their
// earliest start and cuts time at the next chunk's earliest start, which no
// later row can precede: the interval unions (breakdown, streams, gaps) are
// summed segment by segment, keeping only rows that reach past the cut; the
// idle gaps of that union in which an input copy ended are input starvation.
// The chunks of host waits (synchronization rows, else such API calls) are
// read in that same order, so every wait that starts before a cut is known
// when the idle gaps before it are split by cause; a gap waits only until
// its gap of compute | communication closes (which says whether it is an
// input gap). The chunks of launch calls (API calls with a correlation id)
// come in that order too, so the call of the activity that ends a gap is
// known when the gap closes, unless it began after the gap did
// (detail::ChunkedLaunches).
// Windows not summed in pass 1 (--window, the steady iterations) are summed in
// pass 2. Medians are exact in two passes: a histogram of durations by 12-bit
// mantissa finds the bucket of the middle rank, whose few distinct values the
// next pass collects (pass 2 for sums of pass 1, else a third pass over the
// kernel and launch-call chunks).
// Iterations, host threads and collectives run the whole-trace code on the
// rows they read, kept from the first pass: NVTX ranges that can mark steps,
// NCCL rows and communication kernels (one collective-list entry each), the
// host tables. Only when no range, annotation or collective marks the steps
// does detection read every kernel's name and start (12 bytes per kernel, in
// one more pass): the repeating-kernel search needs each name's whole
// sequence of gaps, and this is the one state that grows with the trace.
//
// Attribution is streamed too (attribution_stream.hpp: its own passes over
// the chunks, for the window and the steady one in one call).
// A trace whose GPU chunks all span its whole time (not one a writer's
// append() produces, nor a trace in memory whose tables are in time order)
// is still exact but holds those chunks' rows at once.

#include <filesystem>
#include <functional>

#include "analyze/analyze.hpp"
#include "analyze/chunk_source.hpp"
#include "trace/model/chunk_reader.hpp"

namespace scalescope::analyze {

// The one analysis of a rank, whatever its chunks: analyze_rank() gives it a
// trace in memory (slices of its tables), analyze_rank_streaming() a file's chunks.
RankAnalysis analyze_chunks(ChunkSource& chunks, const Options& options,
                            const std::function<void(trace::Trace&)>& name_frames = {});

// Errors as read_trace() (naming the file) and as analyze_rank() (a window
// of iterations the trace does not have). name_frames, when given, names the
// native frames of the host call stacks (trace::FrameNamer::name) on a trace
// of the host tables only, before the host analysis reads them.
RankAnalysis analyze_rank_streaming(const std::filesystem::path& sstrace, const Options& options,
                                    const std::function<void(trace::Trace&)>& name_frames = {});
// The same on a file already opened (analyze_path opens it to count its rows).
RankAnalysis analyze_rank_streaming(trace::ChunkReader reader, const Options& options,
                                    const std::function<void(trace::Trace&)>& name_frames = {});

}  // namespace scalescope::analyze
