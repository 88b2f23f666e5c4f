// The streaming benchmark: writes a synthetic N-event rank chunk by
// chunk (never holding more than one batch), and analyses a .sstrace either
// streamed (analyze_rank_streaming) or whole (read_trace + analyze_rank), so
// that /usr/bin/time -v can measure each in its own process
// (bench/analysis_speed/stream.sh runs the rounds; figures in bench/RESULTS.md).
//
//   analyze_stream_bench write 100000000 /tmp/r100m.sstrace
//   analyze_stream_bench stream /tmp/r100m.sstrace
//   analyze_stream_bench whole /tmp/r100m.sstrace
//   analyze_stream_bench stream-noattr /tmp/r100m.sstrace   (--no-attribution)
//
// Both analyses print the same line of figures for the same file.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#ifdef SCALESCOPE_MIMALLOC
#include <mimalloc.h>
#endif

#include "analyze/analyze.hpp"
#include "analyze/stream_analyzer.hpp"
#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

namespace {

using namespace scalescope;

constexpr size_t kBatchEvents = 1'000'000;
constexpr uint32_t kCorrelationsPerBatch = 1'000'000;  // ids of one batch stay below (checked)

// Batches of the same seed intern the same names in the same order, so one
// string table serves them all (checked); each batch is moved past the last.
void write_synthetic(size_t events, const std::filesystem::path& out) {
  trace::SyntheticOptions o;
  o.events = std::min(events, kBatchEvents);
  o.seed = 7;
  trace::Trace first = trace::make_synthetic_trace(o);
  const auto [lo, hi] = first.time_span();
  const int64_t stride = hi - lo + 1'000'000;  // 1 ms between batches
  trace::WriterOptions w;
  trace::TraceWriter writer = trace::TraceWriter::open(out, first.meta, w);
  const trace::StringTable strings = first.strings;
  size_t written = 0;
  for (size_t batch = 0; written < events; ++batch) {
    trace::Trace t;
    if (batch == 0) {
      t = std::move(first);
    } else {
      o.start_ns = trace::SyntheticOptions{}.start_ns + static_cast<int64_t>(batch) * stride;
      o.events = std::min(events - written, kBatchEvents);
      t = trace::make_synthetic_trace(o);
      // Correlation ids count on over the batches, as one process's CUPTI ids do.
      const uint32_t offset = static_cast<uint32_t>(batch) * kCorrelationsPerBatch;
      for (auto* c : {&t.api.correlation, &t.kernels.correlation, &t.memcpys.correlation, &t.memsets.correlation,
                      &t.nvtx.correlation, &t.syncs.correlation, &t.nccl.correlation})
        for (uint32_t& id : *c)
          if (id != 0) id += offset;
      if (t.strings.size() > strings.size()) fail("{}: batch {} has names the first lacks", out.string(), batch);
      for (trace::StringId id = 0; id < t.strings.size(); ++id)
        if (t.strings.view(id) != strings.view(id))
          fail("{}: batch {} interns names in another order", out.string(), batch);
    }
    for (uint32_t id : t.api.correlation)
      if (id >= static_cast<uint32_t>(batch + 1) * kCorrelationsPerBatch)
        fail("{}: batch {} has more correlation ids than a batch's range", out.string(), batch);
    const size_t n = t.event_count();
    writer.append(t, strings);
    written += n;
  }
  writer.close();
  std::printf("wrote %zu events to %s\n", written, out.c_str());
}

void print(const analyze::RankAnalysis& r, double seconds) {
  const auto& b = r.breakdown;
  fmt::print(
      "wall_ns={} compute_ns={} comm_ns={} overlap_ns={} copy_ns={} idle_ns={} streams={} kernels={} "
      "median_kernel_ns={} launches={} median_launch_ns={} gaps={} gap_ns={} sync_ns={} iterations={} "
      "starvation_ns={} collectives={} attributed_ns={} operators={} ranges={} idle_host_wait_ns={} "
      "idle_kernel_wait_ns={} idle_other_ns={} analysis_s={:.3f}\n",
      b.wall_ns, b.compute_ns, b.communication_ns, b.overlap_ns, b.copy_ns, b.idle_ns, b.streams.size(),
      r.launch.kernel_count, r.launch.median_kernel_ns, r.launch.launch_api_count, r.launch.median_launch_ns,
      r.launch.gap_count, r.launch.gpu_gap_ns, r.sync.host_sync_ns, r.iterations.count, r.input.starvation_ns,
      r.collectives.size(), r.attribution.attributed_ns, r.attribution.operators.size(), r.attribution.ranges.size(),
      r.idle_breakdown.host_wait_ns, r.idle_breakdown.kernel_wait_ns, r.idle_breakdown.other_ns, seconds);
}

}  // namespace

#ifdef SCALESCOPE_MIMALLOC
// The allocator the scalescope executable runs on (cli/main.cpp): mimalloc
// with large OS pages from before the first allocation, so that the
// comparison with `scalescope analyze` is of the analyses, not allocators.
namespace {
void use_large_os_pages(int, char**, char**) { mi_option_enable(mi_option_large_os_pages); }
}  // namespace
__attribute__((section(".preinit_array"),
               used)) void (*const stream_bench_preinit_allocator)(int, char**, char**) = use_large_os_pages;
#endif

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 4) {
      write_synthetic(std::stoull(argv[2]), argv[3]);
      return 0;
    }
    if ((mode == "stream" || mode == "stream-noattr" || mode == "whole") && argc == 3) {
      const auto t0 = std::chrono::steady_clock::now();
      analyze::Options o;
      o.attribution = mode != "stream-noattr";
      const analyze::RankAnalysis r = mode == "whole" ? analyze::analyze_rank(trace::read_trace(argv[2]), o)
                                                      : analyze::analyze_rank_streaming(argv[2], o);
      print(r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      return 0;
    }
    std::fprintf(stderr, "usage: %s write EVENTS OUT.sstrace | stream FILE | stream-noattr FILE | whole FILE\n",
                 argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "analyze_stream_bench: %s\n", e.what());
    return 1;
  }
}
